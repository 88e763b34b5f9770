"""The app's inputs: the menus (drafters, prompts to try) and the one place the run endpoint's raw values become a
validated DecodeConfig, which the rest of the UI passes on as it is.

The run event runs with preprocess=False, so API callers get these messages in the status instead of Gradio's
component errors. Checked here only what the API can send that the UI cannot (a model outside the menu, values
of the wrong type); the ranges are checked by DecodeConfig's one validator when it is made, with the UI's limits
(generation length up to gen_max, the menu's budgets and drafters, temperature up to TEMPERATURE_MAX)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..drafter.registry import PROPOSERS, registered
from ..engine import DRAFTERS
from ..samplers.config import DecodeConfig, DecodeError, Limits

from ..samplers.config import AUTO

# a race's tree budget when the budget is auto, and the budget of "Run it again with larger trees" (the recorded
# examples' too)
LARGER_TREES = 16
# the tau of "Run it again at tau 0.99": offered after a threshold run where every pass filled its window by itself
STRICTER_TAU = 0.99
# the tau slider's start: at the usual 0.9 math-bd commits about half a block a pass by itself (SPOT-Sets has
# little to guess, 1.23x fewer passes) and, on problems of its own, more wrong digits; at 0.99 SPOT-Sets cuts the
# threshold decoder's passes 1.57x (docs/bench-math-bd-tau099.md), the recorded threshold example's tau
APP_TAU = STRICTER_TAU
TAU_INFO = ("a pass commits every slot at least this sure; starts at 0.99: at 0.9 (a common setting) math-bd already "
            "fills about half of each block of slots a pass by itself, leaving SPOT-Sets little to guess")
RACE_AT_LARGER = (f". A race gives every drafter tree budget {LARGER_TREES} (auto would size each lane's trees by "
                  "its own timings: not a like-for-like race)")
PROMPT_EXAMPLES = ["ROMEO.\n", "HAMLET.\nTo be", "KING LEAR.\n", "JULIET.\nO Romeo,", "MACBETH.\nIs this a"]
CODE_PROMPTS = ["def fibonacci(n):\n", "def is_prime(n):\n    \"\"\"", "class Stack:\n", "def quicksort(items):\n",
                "import os\n\n\ndef main():\n"]
# word problems the default model answers right (GSM8K's first problem, the marbles, and four of the generator's
# training families: a three-step chain, two goods, eating and giving, saving up); its held-out families it mostly
# does not (README, Results). (The chain's third person is Owen: with Ella the model wrote "Owen has 38 x 2 = 76".)
MATH_PROMPTS = ["Natalia sold 48 clips in April and half as many clips in May. How many clips did Natalia sell in all?",
                "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?",
                "Sofia has 26 toy cars. Priya has 12 more toy cars than Sofia. Owen has twice as many toy cars as "
                "Priya. How many toy cars does Owen have?",
                "One cake costs $20 and one hat costs $14. Jack buys 4 cakes and 6 hats. How much does Jack spend in "
                "total?",
                "Layla has 34 apples. She eats 19 and gives 7 to a friend. How many apples does Layla have left?",
                "Ava wants a ball that costs $42. She has $14 and saves $14 each week. How many weeks does Ava need "
                "to save?"]
DRAFTER_HELP = {
    "spot": "SPOT: the learned drafter predicts the commit order, hedged by the calibrated template (exact mode)",
    "spot-sets": "SPOT-Sets: drafts whole commit sets, hedged by the stale threshold rule (threshold mode)",
    "training-free": "baseline: order by the stale confidence of the previous pass",
    "calibrated": "baseline: a static draft-graph template calibrated offline",
    "none": "the standard decoder (one decision per pass)",
}


def drafter_order() -> list[str]:
    """The drafter menu: the built-in drafters, those registered by the files SPOTVIZ_PLUGINS names (app.py;
    drafter/registry.register_proposer), then the standard decoder. The app reads it once, when it is built
    (AppContext.drafters)."""
    built_in = [d for d in DRAFTER_HELP if d in DRAFTERS and d != "none"]
    return built_in + registered() + ["none"]


def drafter_help(name: str) -> str:
    """The drafter menu's note on `name` (a registered drafter's own help)."""
    spec = PROPOSERS.get(name)
    if name in DRAFTER_HELP or spec is None:
        return DRAFTER_HELP.get(name, "")
    return (f"{spec.help} · " if spec.help else "") + f"a drafter of your own ({' or '.join(spec.modes)} mode)"


RACE_BASELINES = [d for d in ("training-free", "calibrated") if d in DRAFTERS]  # raced against SPOT
# what each baseline is, in the race's few words (a first visitor met the names there before the drafter menu's help)
BASELINE_GLOSS = {"training-free": "training-free (guesses by the model's own confidence)",
                  "calibrated": "calibrated (a fixed template of likely orders)"}
TEMPERATURE_INFO = "0: greedy (the likeliest token every time); above 0: sampled, more freely the higher it is"
TEMPERATURE_MAX = 2.0  # the temperature slider's range (the library's limit, samplers.config.MAX_TEMPERATURE, is higher)
GEN_STEP = 8


# what each embedded model is, in a newcomer's words (the model banner): what its answers are worth, since SPOT's
# output is exactly the model's, right or wrong (README, Models)
MODEL_ABOUT = {
    "math-bd": "writes worked grade-school word problems, in English. It answers 98% of new problems of the 32 kinds "
               "it was taught right, 70% of them phrased another way, and few of other kinds: a problem of your own "
               "may get a wrong answer, and SPOT then gives the same wrong answer. It is sure of most tokens, so at "
               "temperature 1 it often writes the same text as at 0.",
    "python-bd": "is a small Python model, the low-confidence regime: recognisably Python, not correct Python, and "
                 "it often loops (SPOT has less to work with).",
    "shakespeare-bd": "is a small play-text model, the low-confidence regime: short, repetitive lines (SPOT has less to "
                      "work with).",
    "shakespeare-mdlm": "is a small play-text model with full bidirectional attention (LLaDA / MDLM style), the "
                        "low-confidence regime.",
}


# under the prompt box, after the model's name: what to type for it (the Model box in Settings describes each model)
_PLAY_TEXT = ("continues play text: a speaker's name in capitals, a full stop, a new line, then the first words of a "
              "line if you like")
PROMPT_INFO = {"math-bd": "knows grade-school word problems; other text gets a confident wrong answer (SPOT's is the "
                          "standard decoder's, word for word)",
               "python-bd": "continues Python code: start a function, a class or a statement",
               "shakespeare-bd": _PLAY_TEXT, "shakespeare-mdlm": _PLAY_TEXT}


def prompt_info(model: str) -> str:
    """The note under the prompt box for `model` (none for a published model or a folder: its own card says)."""
    about = PROMPT_INFO.get(str(model))
    return f"{model} {about}" if about else ""


def prompts_for(model: str) -> list[str]:
    """Prompts to try with `model`: code for a code model (its name says python or code), word problems for a math
    model and for a published model (its short name or a hub name: SPOT's own demo is a GSM8K problem), else play
    text."""
    from ..targets.published import PUBLISHED

    name = str(model).lower()
    if "python" in name or "code" in name:
        return CODE_PROMPTS
    if "math" in name or name in PUBLISHED or "/" in name and not name.startswith(("/", ".")):
        return MATH_PROMPTS
    return PROMPT_EXAMPLES


def _number(name: str, v, whole: bool = False):
    """A finite int/float from the API (never a bool or a string); whole numbers for integer settings."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise DecodeError(f"{name} must be a {'whole ' if whole else ''}number, got {v!r}")
    if whole:
        if isinstance(v, float) and not v.is_integer():
            raise DecodeError(f"{name} must be a whole number, got {v!r}")
        return int(v)
    try:
        return float(v)
    except OverflowError:  # an int too large for a float
        raise DecodeError(f"{name} is out of range (a {len(str(v))}-digit number)") from None


def parse_run_inputs(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune=None,
                     *, models: list[str], budgets: list, gen_max: int,
                     drafter_dirs: dict | None = None, drafters: list | None = None) -> DecodeConfig:
    """The run's DecodeConfig from the run endpoint's raw values, checked once when it is made against the app's
    limits (raises DecodeError with the message to show). `drafter_dirs`: model -> the folder of its own drafters
    (set by whoever runs the app, never by a request; given whatever the drafter: a race's lanes take it from this
    config). `drafters`: the Drafter menu's (default: drafter_order())."""
    if prompt is not None and not isinstance(prompt, str):
        raise DecodeError(f"the prompt must be text, got {type(prompt).__name__}")
    if not isinstance(model, str) or model not in models:
        raise DecodeError(f"unknown model {model!r}; choose one of: {', '.join(models)}")
    coupled = True if coupled is None else coupled
    if not isinstance(coupled, bool):
        raise DecodeError(f"coupled noise must be true or false, got {coupled!r}")
    gen = _number("generation length", gen_length, whole=True)
    limits = Limits(gen_max=gen_max, temperature_max=TEMPERATURE_MAX,
                    budgets=tuple(b for b in budgets if b != AUTO),
                    drafters=tuple(drafter_order() if drafters is None else drafters))
    return DecodeConfig(mode=mode, threshold=_number("tau (threshold)", tau),
                        temperature=_number("temperature", temperature),
                        seed=0 if seed is None else _number("seed", seed, whole=True), gen_length=gen,
                        drafter=drafter, budget=budget if budget == AUTO else _number("tree budget", budget, whole=True),
                        coupled_noise=coupled,
                        min_path_prob=0.0 if prune is None else _number("prune threshold", prune),
                        limits=limits, drafter_dir=(drafter_dirs or {}).get(model))


@dataclass(frozen=True)
class RunPlan:
    """What one Run press decodes: the shown run's config, then the race's other drafters, then (when a drafter
    is chosen) the standard decoder on the same prompt and seed."""

    cfg: DecodeConfig
    race: tuple[str, ...] = ()
    note: str = ""  # what the final status adds about the plan (a race at auto: the budget it ran at)

    @property
    def runs(self) -> list[tuple[str, DecodeConfig]]:
        """(role, config) in decoding order; roles are "main", the race drafters' names and "baseline"."""
        out = [("main", self.cfg)] + [(d, replace(self.cfg, drafter=d)) for d in self.race]
        if self.cfg.drafter != "none":
            out.append(("baseline", replace(self.cfg, drafter="none")))
        return out


def plan_run(cfg: DecodeConfig, race: bool = False, drafters: list | None = None) -> RunPlan:
    """A race decodes SPOT (SPOT-Sets in threshold mode) against the training-free and calibrated drafters, the
    drafters of one's own that draft in the chosen mode (registered: app.py's $SPOTVIZ_PLUGINS) and the standard
    decoder, all in the chosen mode and at one tree budget (budget auto: LARGER_TREES, since auto sizes each lane's
    trees by that lane's own timings); otherwise the chosen drafter against the standard decoder. `drafters`: the
    Drafter menu's (default: drafter_order()), whose drafters of one's own race."""
    if not race:
        return RunPlan(cfg)
    spot = "spot-sets" if cfg.mode == "threshold" else "spot"
    lead = spot if spot in DRAFTERS else (RACE_BASELINES[0] if RACE_BASELINES else "none")
    auto = cfg.budget == AUTO
    yours = [n for n in (drafter_order() if drafters is None else drafters) if n in registered(cfg.mode)]
    return RunPlan(replace(cfg, drafter=lead, budget=LARGER_TREES if auto else cfg.budget),
                   tuple(d for d in RACE_BASELINES + yours if d != lead), note=RACE_AT_LARGER if auto else "")

"""Grade-school word problems with worked solutions: the training text of the embedded `math-bd` model.

A problem is generated from a *family* (one kind of reasoning: "n times as many", "money left after buying",
"how many boxes are needed", ...) and one of the family's *phrasings* (one wording of its question). Names,
objects, units and numbers are drawn from a seeded `random.Random`, so a (seed, index) pair always gives the
same problem on every machine. The solution is written the way GSM8K writes its own: one computed step per
line, the operation and its result on that line (``In May she sold 48 / 2 = 24 clips.``), and a last line
``The answer is N.`` followed by the end-of-text token.

    Question: Natalia sold 48 clips in April and half as many clips in May. How many clips did she sell in all?
    Answer: In May she sold 48 / 2 = 24 clips.
    In all she sold 48 + 24 = 72 clips.
    The answer is 72.

Numbers stay small (operands mostly below 100, results below 1000, divisions exact, no negative result), so
that a model of a few million parameters can learn the arithmetic digit by digit.

Held out for evaluation, never trained on:
* whole families (``HELDOUT_FAMILIES``): what a person typing a kind of problem the model never saw meets;
* one phrasing of every training family (its last one): a known kind of problem, worded anew;
* one problem in ``SAMPLE_BUCKETS`` of the training families and phrasings, chosen by a hash of the question
  text (so the same question is never both trained on and tested).

The prompt template the model is trained with, and that a target applies to a bare question, is
``CHAT_TEMPLATE`` (a chat template, as a published model's): ``Question: {question}\\nAnswer:``.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Callable

QUESTION_PREFIX = "Question: "
ANSWER_PREFIX = "\nAnswer:"
# the tokenizer's chat template (Jinja, as transformers stores it): the last user message is the question
CHAT_TEMPLATE = ("{{ 'Question: ' }}{{ messages[-1]['content'] | trim }}"
                 "{% if add_generation_prompt %}{{ '\\nAnswer:' }}{% endif %}")
SAMPLE_BUCKETS = 50  # one problem in 50 of the training families / phrasings is held out by the hash of its text


@dataclass(frozen=True)
class Problem:
    family: str
    phrasing: int  # index into the family's phrasings
    question: str
    solution: str  # the worked solution lines, ending "The answer is N."
    answer: int

    @property
    def prompt(self) -> str:
        """The templated prompt a model continues."""
        return f"{QUESTION_PREFIX}{self.question}{ANSWER_PREFIX}"

    @property
    def text(self) -> str:
        """The full training document (without the end-of-text token)."""
        return f"{self.prompt} {self.solution}"


# ---------------------------------------------------------------------------------------------- vocabulary
PEOPLE = [  # (name, subject, object, possessive)
    ("Tom", "he", "him", "his"), ("Mia", "she", "her", "her"), ("Sam", "he", "him", "his"),
    ("Lily", "she", "her", "her"), ("Ben", "he", "him", "his"), ("Emma", "she", "her", "her"),
    ("Jack", "he", "him", "his"), ("Ava", "she", "her", "her"), ("Leo", "he", "him", "his"),
    ("Zoe", "she", "her", "her"), ("Max", "he", "him", "his"), ("Nora", "she", "her", "her"),
    ("Omar", "he", "him", "his"), ("Ruby", "she", "her", "her"), ("Liam", "he", "him", "his"),
    ("Grace", "she", "her", "her"), ("Noah", "he", "him", "his"), ("Chloe", "she", "her", "her"),
    ("Ethan", "he", "him", "his"), ("Maya", "she", "her", "her"), ("Lucas", "he", "him", "his"),
    ("Ella", "she", "her", "her"), ("Ravi", "he", "him", "his"), ("Sofia", "she", "her", "her"),
    ("Carlos", "he", "him", "his"), ("Hana", "she", "her", "her"), ("David", "he", "him", "his"),
    ("Aisha", "she", "her", "her"), ("Kenji", "he", "him", "his"), ("Priya", "she", "her", "her"),
    ("Felix", "he", "him", "his"), ("Julia", "she", "her", "her"), ("Owen", "he", "him", "his"),
    ("Anna", "she", "her", "her"), ("Mateo", "he", "him", "his"), ("Layla", "she", "her", "her"),
    ("Henry", "he", "him", "his"), ("Isla", "she", "her", "her"), ("Yusuf", "he", "him", "his"),
    ("Natalia", "she", "her", "her"),
]
ITEMS = [  # (singular, plural)
    ("apple", "apples"), ("marble", "marbles"), ("sticker", "stickers"), ("book", "books"),
    ("pencil", "pencils"), ("cookie", "cookies"), ("card", "cards"), ("shell", "shells"), ("stamp", "stamps"),
    ("balloon", "balloons"), ("toy car", "toy cars"), ("bead", "beads"), ("egg", "eggs"), ("flower", "flowers"),
    ("candy", "candies"), ("crayon", "crayons"), ("orange", "oranges"), ("button", "buttons"),
    ("ribbon", "ribbons"), ("cupcake", "cupcakes"), ("comic", "comics"), ("rock", "rocks"),
    ("clip", "clips"), ("muffin", "muffins"), ("plum", "plums"), ("puzzle", "puzzles"), ("kite", "kites"),
    ("pear", "pears"), ("badge", "badges"), ("coin", "coins"),
]
GOODS = [  # things bought, with a price range in dollars
    ("notebook", "notebooks", 2, 9), ("pen", "pens", 1, 5), ("sandwich", "sandwiches", 3, 9),
    ("ticket", "tickets", 4, 15), ("toy", "toys", 3, 12), ("shirt", "shirts", 8, 25), ("plant", "plants", 3, 14),
    ("ball", "balls", 2, 10), ("cake", "cakes", 6, 20), ("game", "games", 9, 30), ("hat", "hats", 5, 18),
    ("lamp", "lamps", 9, 28), ("mug", "mugs", 3, 11), ("scarf", "scarves", 6, 16), ("pizza", "pizzas", 7, 16),
]
CONTAINERS = [("box", "boxes"), ("bag", "bags"), ("basket", "baskets"), ("pack", "packs"), ("jar", "jars"),
              ("crate", "crates"), ("tray", "trays"), ("bucket", "buckets")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
TIMES = {2: "twice", 3: "three times", 4: "four times", 5: "five times"}
FRACTIONS = {2: "half", 3: "a third", 4: "a quarter", 5: "a fifth"}
WORKS = [  # (verb, past, base form, unit, what is finished)
    ("reads", "read", "read", "pages", "a book of"), ("swims", "swam", "swim", "laps", "a race of"),
    ("walks", "walked", "walk", "miles", "a trail of"), ("writes", "wrote", "write", "lines", "a poem of")]
VEHICLES = [("drives", "drove", "miles"), ("cycles", "cycled", "miles"), ("runs", "ran", "kilometers"),
            ("sails", "sailed", "miles")]


SMALL_CAP = 9  # a "small-number" problem draws every number from [lo, min(hi, max(SMALL_CAP, lo + 6))]


class Draw:
    """The random choices of one problem: people, things and numbers (a thin, readable wrapper of Random).

    `small` narrows every number range to its low end (``Sam has 8 marbles. He finds 5 more.``): the families'
    ranges make two one-digit operands rare (about 1 `add` problem in 100), so a model trained on them alone
    gets small sums wrong that a person types first."""

    def __init__(self, rng: random.Random, small: bool = False):
        self.rng = rng
        self.small = small

    def n(self, lo: int, hi: int) -> int:
        if self.small:
            hi = min(hi, max(SMALL_CAP, lo + 6))
        return self.rng.randint(lo, hi)

    def pick(self, seq):
        return self.rng.choice(seq)

    def people(self, k: int):
        return self.rng.sample(PEOPLE, k)

    def items(self, k: int = 1):
        return self.rng.sample(ITEMS, k)


# A family builds (variables, answer lines) from a Draw; its phrasings are format strings over the variables.
# `steps` returns the solution lines (each with one computed operation) and the answer.
@dataclass(frozen=True)
class Family:
    name: str
    phrasings: tuple[str, ...]
    build: Callable[[Draw], tuple[dict, list[str], int]]


def _person(v: dict, key: str, who) -> None:
    name, sub, obj, pos = who
    v[key], v[key + "_sub"], v[key + "_obj"], v[key + "_pos"] = name, sub, obj, pos
    v[key + "_Sub"] = sub.capitalize()
    v[key + "_Pos"] = pos.capitalize()


def _base(d: Draw, people: int = 1) -> dict:
    v: dict = {}
    for i, who in enumerate(d.people(people)):
        _person(v, "ab"[i], who)
    (v["item"], v["items"]), = d.items(1)
    return v


def _fam_add(d: Draw):
    v = _base(d)
    v["x"], v["y"] = d.n(3, 80), d.n(2, 60)
    c = v["x"] + v["y"]
    return v, [f"{v['a']} has {v['x']} + {v['y']} = {c} {v['items']} now."], c


def _fam_sub(d: Draw):
    v = _base(d)
    v["x"] = d.n(12, 95)
    v["y"] = d.n(2, v["x"] - 2)
    c = v["x"] - v["y"]
    return v, [f"{v['a']} has {v['x']} - {v['y']} = {c} {v['items']} left."], c


def _fam_together(d: Draw):
    v = _base(d, 2)
    v["x"], v["y"] = d.n(3, 80), d.n(3, 80)
    c = v["x"] + v["y"]
    return v, [f"Together they have {v['x']} + {v['y']} = {c} {v['items']}."], c


def _fam_more_than(d: Draw):
    v = _base(d, 2)
    v["x"], v["y"] = d.n(4, 70), d.n(2, 40)
    c = v["x"] + v["y"]
    return v, [f"{v['b']} has {v['x']} + {v['y']} = {c} {v['items']}."], c


def _fam_fewer_than(d: Draw):
    v = _base(d, 2)
    v["x"] = d.n(15, 90)
    v["y"] = d.n(2, v["x"] - 3)
    c = v["x"] - v["y"]
    return v, [f"{v['b']} has {v['x']} - {v['y']} = {c} {v['items']}."], c


def _fam_how_many_more(d: Draw):
    v = _base(d, 2)
    v["y"] = d.n(3, 60)
    v["x"] = v["y"] + d.n(2, 40)
    c = v["x"] - v["y"]
    return v, [f"{v['a']} has {v['x']} - {v['y']} = {c} more {v['items']} than {v['b']}."], c


def _fam_times_as_many(d: Draw):
    v = _base(d, 2)
    k = d.pick([2, 2, 3, 4, 5])
    v["x"], v["k"], v["times"] = d.n(3, 40), k, TIMES[k]
    c = v["x"] * k
    return v, [f"{v['b']} has {v['x']} x {k} = {c} {v['items']}."], c


def _fam_fraction_of(d: Draw):
    v = _base(d, 2)
    k = d.pick([2, 2, 3, 4])
    c = d.n(2, 30)
    v["x"], v["k"], v["frac"] = c * k, k, FRACTIONS[k]
    return v, [f"{v['b']} has {v['x']} / {k} = {c} {v['items']}."], c


def _fam_groups(d: Draw):
    v = _base(d)
    (v["box"], v["boxes"]), = [d.pick(CONTAINERS)]
    v["g"], v["per"] = d.n(2, 12), d.n(2, 15)
    c = v["g"] * v["per"]
    return v, [f"{v['a']} has {v['g']} x {v['per']} = {c} {v['items']}."], c


def _fam_share(d: Draw):
    v = _base(d)
    v["k"] = d.n(2, 9)
    c = d.n(2, 15)
    v["x"] = c * v["k"]
    return v, [f"Each friend gets {v['x']} / {v['k']} = {c} {v['items']}."], c


def _fam_boxes_needed(d: Draw):
    v = _base(d)
    (v["box"], v["boxes"]), = [d.pick(CONTAINERS)]
    v["per"] = d.n(2, 12)
    c = d.n(2, 15)
    v["x"] = c * v["per"]
    return v, [f"{v['a_Sub']} needs {v['x']} / {v['per']} = {c} {v['boxes']}."], c


def _goods(d: Draw, v: dict, key: str = "") -> None:
    s, p, lo, hi = d.pick(GOODS)
    v["good" + key], v["goods" + key], v["price" + key] = s, p, d.n(lo, hi)


def _fam_buy(d: Draw):
    v = _base(d)
    _goods(d, v)
    v["q"] = d.n(2, 9)
    c = v["q"] * v["price"]
    return v, [f"{v['a_Sub']} spent {v['q']} x ${v['price']} = ${c}."], c


def _fam_change(d: Draw):
    v = _base(d)
    _goods(d, v)
    v["q"] = d.n(2, 6)
    cost = v["q"] * v["price"]
    v["m"] = cost + d.n(1, 40)
    c = v["m"] - cost
    return v, [f"{v['a_Sub']} spent {v['q']} x ${v['price']} = ${cost}.",
               f"{v['a_Sub']} has ${v['m']} - ${cost} = ${c} left."], c


def _fam_earn(d: Draw):
    v = _base(d)
    v["p"], v["days"] = d.n(4, 30), d.n(2, 9)
    c = v["p"] * v["days"]
    return v, [f"{v['a_Sub']} earns {v['days']} x ${v['p']} = ${c}."], c


def _fam_distance(d: Draw):
    v = _base(d)
    v["verb"], v["past"], v["unit"] = d.pick(VEHICLES)
    v["r"], v["h"] = d.n(3, 60), d.n(2, 8)
    c = v["r"] * v["h"]
    return v, [f"{v['a_Sub']} {v['past']} {v['r']} x {v['h']} = {c} {v['unit']}."], c


def _fam_days_to_finish(d: Draw):
    v = _base(d)
    v["verb"], v["past"], v["base"], v["unit"], v["whole"] = d.pick(WORKS)
    v["r"] = d.n(3, 25)
    c = d.n(2, 12)
    v["total"] = v["r"] * c
    return v, [f"{v['a_Sub']} needs {v['total']} / {v['r']} = {c} days."], c


def _fam_per_day_week(d: Draw):
    v = _base(d)
    v["r"] = d.n(2, 25)
    v["days"] = d.pick([5, 6, 7])
    c = v["r"] * v["days"]
    return v, [f"In {v['days']} days {v['a_sub']} makes {v['r']} x {v['days']} = {c} {v['items']}."], c


def _fam_half_then_total(d: Draw):
    v = _base(d)
    i = d.n(0, len(MONTHS) - 2)
    v["m1"], v["m2"] = MONTHS[i], MONTHS[i + 1]
    half = d.n(3, 45)
    v["x"] = 2 * half
    c = v["x"] + half
    return v, [f"In {v['m2']} {v['a_sub']} sold {v['x']} / 2 = {half} {v['items']}.",
               f"In all {v['a_sub']} sold {v['x']} + {half} = {c} {v['items']}."], c


def _fam_buy_packs(d: Draw):
    v = _base(d)
    (v["box"], v["boxes"]), = [d.pick(CONTAINERS)]
    v["x"], v["g"], v["per"] = d.n(2, 50), d.n(2, 8), d.n(2, 12)
    new = v["g"] * v["per"]
    c = v["x"] + new
    return v, [f"{v['a_Sub']} bought {v['g']} x {v['per']} = {new} {v['items']}.",
               f"Now {v['a_sub']} has {v['x']} + {new} = {c} {v['items']}."], c


def _fam_eat_give(d: Draw):
    v = _base(d)
    v["y"], v["z"] = d.n(2, 20), d.n(2, 20)
    c = d.n(1, 40)
    v["x"] = v["y"] + v["z"] + c
    after = v["x"] - v["y"]
    return v, [f"After eating, {v['a_sub']} has {v['x']} - {v['y']} = {after} {v['items']}.",
               f"After giving some away, {v['a_sub']} has {after} - {v['z']} = {c} {v['items']}."], c


def _fam_half_then_more(d: Draw):
    v = _base(d)
    half = d.n(3, 40)
    v["x"] = 2 * half
    v["y"] = d.n(2, half - 1) if half > 3 else 1
    c = half - v["y"]
    return v, [f"{v['a_Sub']} kept {v['x']} / 2 = {half} {v['items']}.",
               f"Then {v['a_sub']} had {half} - {v['y']} = {c} {v['items']} left."], c


def _fam_chain_three(d: Draw):
    v = _base(d, 2)
    _person(v, "c", d.pick([p for p in PEOPLE if p[0] not in (v["a"], v["b"])]))
    v["x"], v["y"] = d.n(3, 30), d.n(2, 20)
    k = d.pick([2, 3])
    v["k"], v["times"] = k, TIMES[k]
    mid = v["x"] + v["y"]
    c = mid * k
    return v, [f"{v['b']} has {v['x']} + {v['y']} = {mid} {v['items']}.",
               f"{v['c']} has {mid} x {k} = {c} {v['items']}."], c


def _fam_two_goods(d: Draw):
    v = _base(d)
    _goods(d, v, "1")
    _goods(d, v, "2")
    while v["good2"] == v["good1"]:
        _goods(d, v, "2")
    v["q1"], v["q2"] = d.n(2, 6), d.n(2, 6)
    c1, c2 = v["q1"] * v["price1"], v["q2"] * v["price2"]
    c = c1 + c2
    return v, [f"The {v['goods1']} cost {v['q1']} x ${v['price1']} = ${c1}.",
               f"The {v['goods2']} cost {v['q2']} x ${v['price2']} = ${c2}.",
               f"In total {v['a_sub']} spent ${c1} + ${c2} = ${c}."], c


def _fam_savings(d: Draw):
    v = _base(d)
    _goods(d, v)
    v["s"] = d.n(3, 15)
    weeks = d.n(2, 10)
    v["have"] = d.n(5, 60)
    v["cost"] = v["have"] + v["s"] * weeks
    need = v["cost"] - v["have"]
    return v, [f"{v['a_Sub']} still needs ${v['cost']} - ${v['have']} = ${need}.",
               f"{v['a_Sub']} needs ${need} / ${v['s']} = {weeks} weeks."], weeks


def _fam_age(d: Draw):
    v = _base(d, 2)
    v["x"], v["y"], v["z"] = d.n(5, 40), d.n(2, 30), d.n(2, 20)
    now = v["x"] + v["y"]
    c = now + v["z"]
    return v, [f"{v['b']} is {v['x']} + {v['y']} = {now} years old now.",
               f"In {v['z']} years {v['b']} will be {now} + {v['z']} = {c} years old."], c


def _fam_seats(d: Draw):
    v = _base(d)
    v["rows"], v["per"] = d.n(3, 12), d.n(4, 15)
    total = v["rows"] * v["per"]
    v["taken"] = d.n(2, total - 1)
    c = total - v["taken"]
    return v, [f"There are {v['rows']} x {v['per']} = {total} chairs.",
               f"There are {total} - {v['taken']} = {c} empty chairs."], c


def _fam_two_days(d: Draw):
    v = _base(d)
    v["verb"], v["past"], v["base"], v["unit"], _ = d.pick(WORKS)
    i = d.n(0, len(DAYS) - 2)
    v["d1"], v["d2"] = DAYS[i], DAYS[i + 1]
    k = d.pick([2, 3])
    v["k"], v["times"] = k, TIMES[k]
    v["x"] = d.n(3, 40)
    second = v["x"] * k
    c = v["x"] + second
    return v, [f"On {v['d2']} {v['a_sub']} {v['past']} {v['x']} x {k} = {second} {v['unit']}.",
               f"In all {v['a_sub']} {v['past']} {v['x']} + {second} = {c} {v['unit']}."], c


def _fam_distractor(d: Draw):
    v = _base(d)
    (v["item2"], v["items2"]), = [d.pick([it for it in ITEMS if it[1] != v["items"]])]
    v["x"], v["w"], v["y"] = d.n(3, 60), d.n(2, 60), d.n(2, 40)
    c = v["x"] + v["y"]
    return v, [f"{v['a_Sub']} has {v['x']} + {v['y']} = {c} {v['items']}."], c


def _fam_bake_sell(d: Draw):
    v = _base(d)
    (v["box"], v["boxes"]), = [("tray", "trays")]
    v["item"], v["items"] = d.pick([("cookie", "cookies"), ("muffin", "muffins"), ("cupcake", "cupcakes")])
    v["g"], v["per"] = d.n(2, 6), d.n(6, 12)
    total = v["g"] * v["per"]
    v["sold"] = d.n(2, total // 2)
    v["gave"] = d.n(1, total - v["sold"] - 1)
    left1 = total - v["sold"]
    c = left1 - v["gave"]
    return v, [f"{v['a_Sub']} baked {v['g']} x {v['per']} = {total} {v['items']}.",
               f"After selling, {v['a_sub']} had {total} - {v['sold']} = {left1} {v['items']}.",
               f"After giving some away, {v['a_sub']} had {left1} - {v['gave']} = {c} {v['items']}."], c


def _fam_class_fraction(d: Draw):
    v = _base(d)
    k = d.pick([2, 3, 4, 5])
    v["k"], v["frac"], v["Frac"] = k, FRACTIONS[k], FRACTIONS[k].capitalize()
    part = d.n(2, 8)
    v["n"] = part * k
    c = v["n"] - part
    return v, [f"{part * k} / {k} = {part} students walk to school.",
               f"{v['n']} - {part} = {c} students take the bus."], c


def _fam_wage(d: Draw):
    v = _base(d)
    v["h"], v["w"], v["days"] = d.n(2, 8), d.n(5, 15), d.n(2, 6)
    day = v["h"] * v["w"]
    c = day * v["days"]
    return v, [f"{v['a_Sub']} earns {v['h']} x ${v['w']} = ${day} each day.",
               f"In {v['days']} days {v['a_sub']} earns {v['days']} x ${day} = ${c}."], c


def _fam_spend_daily(d: Draw):
    v = _base(d)
    v["s"], v["days"] = d.n(2, 12), d.n(2, 7)
    spent = v["s"] * v["days"]
    v["m"] = spent + d.n(1, 50)
    c = v["m"] - spent
    return v, [f"{v['a_Sub']} spends {v['days']} x ${v['s']} = ${spent}.",
               f"{v['a_Sub']} has ${v['m']} - ${spent} = ${c} left."], c


def _fam_pick_together(d: Draw):
    v = _base(d, 2)
    v["x"], v["y"], v["h"] = d.n(3, 20), d.n(3, 20), d.n(2, 6)
    both = v["x"] + v["y"]
    c = both * v["h"]
    return v, [f"Together they pick {v['x']} + {v['y']} = {both} {v['items']} each hour.",
               f"In {v['h']} hours they pick {both} x {v['h']} = {c} {v['items']}."], c


def _fam_temperature(d: Draw):
    v = _base(d)
    v["x"], v["y"], v["z"] = d.n(30, 70), d.n(2, 25), d.n(2, 15)
    noon = v["x"] + v["y"]
    c = noon - v["z"]
    return v, [f"At noon it was {v['x']} + {v['y']} = {noon} degrees.",
               f"In the evening it was {noon} - {v['z']} = {c} degrees."], c


def _fam_shared_cost(d: Draw):
    v = _base(d)
    _goods(d, v)
    v["k"] = d.n(3, 6)
    each = d.n(2, 12)
    v["q"] = d.n(2, 5)
    v["total"] = each * v["k"]
    c = each
    return v, [f"Each friend pays ${v['total']} / {v['k']} = ${c}."], c


def _fam_more_then_total(d: Draw):
    v = _base(d, 2)
    v["x"], v["y"] = d.n(4, 50), d.n(2, 30)
    other = v["x"] + v["y"]
    c = v["x"] + other
    return v, [f"{v['b']} has {v['x']} + {v['y']} = {other} {v['items']}.",
               f"Together they have {v['x']} + {other} = {c} {v['items']}."], c


def _fam_times_then_total(d: Draw):
    v = _base(d, 2)
    k = d.pick([2, 3, 4])
    v["x"], v["k"], v["times"] = d.n(3, 30), k, TIMES[k]
    other = v["x"] * k
    c = v["x"] + other
    return v, [f"{v['b']} has {v['x']} x {k} = {other} {v['items']}.",
               f"Together they have {v['x']} + {other} = {c} {v['items']}."], c


def _fam_arithmetic(d: Draw):
    """A bare computation ("What is 48 + 25?"): the operations the families use, in their number ranges, with
    or without dollars, one or two steps. Not one of FAMILIES: a training run mixes it in on purpose (the share
    is `train-target --drills`), as dense practice of the digit-by-digit arithmetic the stories need."""
    cur = "$" if d.n(0, 3) == 0 else ""
    op = d.pick("+-x/")
    if op == "+":
        x, y = d.n(2, 200), d.n(2, 200)
        c = x + y
    elif op == "-":
        x = d.n(12, 400)
        y = d.n(2, x - 1)
        c = x - y
    elif op == "x":
        x, y = d.n(2, 60), d.n(2, 12)
        c = x * y
    else:
        y, c = d.n(2, 12), d.n(2, 30)
        x = y * c
    words = {"+": "plus", "-": "minus", "x": "times", "/": "divided by"}
    v = {"x": f"{cur}{x}", "op": op, "op_word": words[op], "y": f"{cur}{y}" if op in "+-" else str(y),
         "tail": ""}
    lines = [f"{v['x']} {op} {v['y']} = {cur}{c}."]
    if op in "x/" and d.n(0, 2) == 0:  # a second step on the result
        op2 = d.pick("+-")
        z = d.n(2, 90) if op2 == "+" else d.n(1, max(1, c - 1))
        v["tail"] = f" {words[op2]} {cur}{z}"
        c2 = c + z if op2 == "+" else c - z
        lines.append(f"{cur}{c} {op2} {cur}{z} = {cur}{c2}.")
        c = c2
    return v, lines, c


F = Family
FAMILIES: tuple[Family, ...] = (
    F("add", (
        "{a} has {x} {items}. {a_Sub} finds {y} more. How many {items} does {a} have now?",
        "{a} had {x} {items} and got {y} more {items} from a friend. How many {items} does {a} have now?",
        "{a} keeps {x} {items} in {a_pos} room and brings in {y} more. How many {items} does {a} have now?",
        "{a} starts with {x} {items}. Later {a_sub} gets {y} more. How many {items} does {a} have now?",
        "There are {x} {items} in {a_pos} box. {a} puts in {y} more {items}. How many {items} does {a} have now?",
        "{a} had {x} {items}. A friend gave {a} {y} more. How many {items} does {a} have now?",
        "{a} collected {x} {items} last week and {y} {items} this week. How many {items} does {a} have now?",
    ), _fam_add),
    F("subtract", (
        "{a} has {x} {items}. {a_Sub} gives {y} of them to a friend. How many {items} does {a} have left?",
        "{a} had {x} {items} and lost {y} of them. How many {items} does {a} have left?",
        "{a} had {x} {items} in {a_pos} bag and used {y} of them. How many {items} are left?",
        "{a} started with {x} {items} and then gave away {y}. How many {items} does {a} have left?",
        "There were {x} {items} on {a_pos} shelf. {a} took {y} of them away. How many {items} are left?",
        "{a} owns {x} {items}. After {a_sub} loses {y}, how many {items} does {a} have left?",
        "{a} bought {x} {items} and sold {y} of them. How many {items} does {a_sub} have left?",
    ), _fam_sub),
    F("together", (
        "{a} has {x} {items} and {b} has {y} {items}. How many {items} do they have together?",
        "{a} found {x} {items}. {b} found {y} {items}. How many {items} did they find in all?",
        "{a} brings {x} {items} and {b} brings {y} {items} to a party. How many {items} do they bring together?",
        "There are {x} {items} with {a} and {y} {items} with {b}. How many {items} is that in all?",
        "{a} and {b} collect {items}. {a} has {x} and {b} has {y}. How many {items} do they have altogether?",
    ), _fam_together),
    F("more-than", (
        "{a} has {x} {items}. {b} has {y} more {items} than {a}. How many {items} does {b} have?",
        "{b} has {y} more {items} than {a}. {a} has {x} {items}. How many {items} does {b} have?",
        "{a} counted {x} {items}. {b} counted {y} more {items} than {a}. How many {items} did {b} count?",
        "{a} has {x} {items}, and {b} has {y} more. How many {items} does {b} have?",
        "{a} owns {x} {items}, and {b} owns {y} more than that. How many {items} does {b} own?",
    ), _fam_more_than),
    F("fewer-than", (
        "{a} has {x} {items}. {b} has {y} fewer {items} than {a}. How many {items} does {b} have?",
        "{b} has {y} fewer {items} than {a}, who has {x}. How many {items} does {b} have?",
        "{a} owns {x} {items}, and {b} owns {y} fewer. How many {items} does {b} own?",
        "{a} collected {x} {items}. {b} collected {y} fewer {items} than {a}. How many {items} did {b} collect?",
        "{a} picked {x} {items}. {b} picked {y} less than {a}. How many {items} does {b} have?",
    ), _fam_fewer_than),
    F("how-many-more", (
        "{a} has {x} {items} and {b} has {y} {items}. How many more {items} does {a} have than {b}?",
        "{b} has {y} {items}. {a} has {x} {items}. How many more {items} does {a} have than {b}?",
        "{a} found {x} {items}. {b} found {y} {items}. How many more {items} did {a} find than {b}?",
        "{a} owns {x} {items} and {b} owns {y}. How many more {items} does {a} own than {b}?",
        "{a} collected {x} {items} and {b} collected {y}. How many more {items} does {a} have than {b}?",
    ), _fam_how_many_more),
    F("times-as-many", (
        "{a} has {x} {items}. {b} has {times} as many {items} as {a}. How many {items} does {b} have?",
        "{b} has {times} as many {items} as {a}. {a} has {x} {items}. How many {items} does {b} have?",
        "{b} collected {times} as many {items} as {a}. {a} collected {x} {items}. How many {items} did {b} collect?",
        "{a} has {x} {items}, and {b} has {times} as many {items}. How many {items} does {b} have?",
        "{a} owns {x} {items}, and {b} owns {times} as many. How many {items} does {b} have?",
    ), _fam_times_as_many),
    F("fraction-of", (
        "{a} has {x} {items}. {b} has {frac} as many {items} as {a}. How many {items} does {b} have?",
        "{b} has {frac} as many {items} as {a}. {a} has {x} {items}. How many {items} does {b} have?",
        "{a} collected {x} {items}. {b} collected {frac} as many {items}. How many {items} did {b} collect?",
        "{a} has {x} {items}, and {b} has {frac} as many. How many {items} does {b} have?",
        "{a} owns {x} {items}, and {b} owns {frac} as many. How many {items} does {b} have?",
    ), _fam_fraction_of),
    F("groups", (
        "{a} has {g} {boxes} of {items}. Each {box} holds {per} {items}. How many {items} does {a} have?",
        "There are {per} {items} in each {box}. {a} has {g} {boxes}. How many {items} does {a} have?",
        "{a} fills {g} {boxes} with {per} {items} each. How many {items} is that in all?",
        "Each of {a_pos} {g} {boxes} has {per} {items} in it. How many {items} does {a} have?",
        "{a} buys {g} {boxes} with {per} {items} in each. How many {items} does {a} have?",
    ), _fam_groups),
    F("share", (
        "{a} has {x} {items} and shares them equally among {k} friends. How many {items} does each friend get?",
        "{x} {items} are split equally among {k} friends by {a}. How many {items} does each friend get?",
        "{a} splits {x} {items} equally among {k} friends. How many {items} does each friend get?",
        "There are {x} {items} to share equally among {k} friends. How many {items} does each friend get?",
        "{a} gives {x} {items} to {k} friends so that each gets the same number. How many {items} does each friend "
        "get?",
    ), _fam_share),
    F("boxes-needed", (
        "{a} has {x} {items}. Each {box} holds {per} {items}. How many {boxes} does {a} need?",
        "{a} wants to pack {x} {items} into {boxes} of {per}. How many {boxes} does {a} need?",
        "{a} puts {x} {items} into {boxes}, {per} in each {box}. How many {boxes} does {a} need?",
        "{x} {items} go into {boxes} that hold {per} each. How many {boxes} does {a} need?",
        "A {box} holds {per} {items}. How many {boxes} does {a} need for {x} {items}?",
    ), _fam_boxes_needed),
    F("buy", (
        "{a} buys {q} {goods} for ${price} each. How much money does {a} spend?",
        "One {good} costs ${price}. {a} buys {q} {goods}. How much does {a} spend?",
        "{a} pays ${price} for each {good} and buys {q} {goods}. How much money does {a} spend?",
        "{goods} cost ${price} each. {a} buys {q} of them. How much does {a} spend?",
        "{a} bought {q} {goods} at ${price} per {good}. How many dollars did {a_sub} spend?",
    ), _fam_buy),
    F("change", (
        "{a} has ${m}. {a_Sub} buys {q} {goods} for ${price} each. How much money does {a} have left?",
        "{a} went to the store with ${m} and bought {q} {goods} at ${price} each. How much money is left?",
        "{a} has ${m} and spends it on {q} {goods} that cost ${price} each. How much money does {a} have left?",
        "With ${m}, {a} buys {q} {goods} at ${price} each. How much money does {a} have left?",
        "One {good} costs ${price}. {a} has ${m} and buys {q} {goods}. How much money does {a} have left?",
    ), _fam_change),
    F("earn", (
        "{a} earns ${p} a day. How much does {a} earn in {days} days?",
        "{a} gets ${p} for each day of work. {a_Sub} works {days} days. How much does {a} earn?",
        "{a} is paid ${p} a day for {days} days. How much does {a} earn?",
        "{a} works for {days} days and earns ${p} each day. How much money does {a} earn?",
        "Every day {a} makes ${p}. How many dollars does {a} make in {days} days?",
    ), _fam_earn),
    F("distance", (
        "{a} {verb} {r} {unit} every hour. How many {unit} does {a} go in {h} hours?",
        "{a} {past} for {h} hours at {r} {unit} per hour. How many {unit} did {a} go?",
        "{a} travels for {h} hours. {a_Sub} {verb} {r} {unit} each hour. How many {unit} does {a} go?",
        "At {r} {unit} an hour, how many {unit} does {a} go in {h} hours?",
        "In one hour {a} {verb} {r} {unit}. How far does {a_sub} go in {h} hours, in {unit}?",
    ), _fam_distance),
    F("days-to-finish", (
        "{a} {verb} {r} {unit} a day. How many days does {a} need for {whole} {total} {unit}?",
        "{a} has {whole} {total} {unit}. {a_Sub} {verb} {r} {unit} each day. How many days does {a} need?",
        "{a} needs to {base} {whole} {total} {unit} and does {r} {unit} a day. How many days does {a} need?",
        "Each day {a} {verb} {r} {unit}. How many days does {a} need to finish {whole} {total} {unit}?",
        "To finish {whole} {total} {unit}, {a} {verb} {r} {unit} per day. How many days does {a} need?",
    ), _fam_days_to_finish),
    F("per-day-week", (
        "{a} makes {r} {items} every day. How many {items} does {a} make in {days} days?",
        "Each day {a} makes {r} {items}. How many {items} does {a_sub} make in {days} days?",
        "For {days} days {a} makes {r} {items} a day. How many {items} does {a} make in all?",
        "{a} makes {r} {items} each day. How many {items} does {a} make after {days} days?",
        "{a} makes {r} {items} a day for {days} days. How many {items} does {a} make?",
    ), _fam_per_day_week),
    F("half-then-total", (
        "{a} sold {x} {items} in {m1} and half as many {items} in {m2}. How many {items} did {a} sell in all?",
        "In {m1} {a} sold {x} {items}. In {m2} {a_sub} sold half as many. How many {items} did {a_sub} sell in all?",
        "{a} sold {x} {items} in {m1}. In {m2}, {a_sub} sold half that many. How many {items} did {a} sell in all?",
        "In {m1}, {a} sold {x} {items}, and in {m2} half as many {items}. How many {items} did {a} sell in the two "
        "months?",
        "{a} sold {x} {items} in {m1}. In {m2} {a_sub} sold half as many {items} as in {m1}. How many {items} did {a} "
        "sell in all?",
    ), _fam_half_then_total),
    F("buy-packs", (
        "{a} has {x} {items}. {a_Sub} buys {g} {boxes} with {per} {items} in each. How many {items} does {a} have now?",
        "{a} had {x} {items}. Then {a_sub} bought {g} {boxes} of {per} {items}. How many {items} does {a} have now?",
        "{a} has {x} {items} and buys {g} {boxes} of {items}. Each {box} has {per} {items}. How many {items} does {a} "
        "have now?",
        "{a} starts with {x} {items}. {a_Sub} adds {g} {boxes} with {per} {items} in each. How many {items} does {a} "
        "have now?",
        "{a} owns {x} {items} and gets {g} more {boxes} of {items}, {per} in each {box}. How many {items} does {a} "
        "have now?",
    ), _fam_buy_packs),
    F("eat-give", (
        "{a} has {x} {items}. {a_Sub} eats {y} and gives {z} to a friend. How many {items} does {a} have left?",
        "{a} had {x} {items}. {a_Sub} ate {y} of them and gave away {z}. How many {items} are left?",
        "{a} buys {x} {items}. {a_Sub} eats {y} of them and gives {z} to a friend. How many {items} are left?",
        "{a} starts with {x} {items}, eats {y}, and gives {z} away. How many {items} does {a} have left?",
        "There are {x} {items}. {a} eats {y} and then gives {z} away. How many {items} does {a} have left?",
    ), _fam_eat_give),
    F("half-then-more", (
        "{a} has {x} {items}. {a_Sub} gives half of them to a friend, then loses {y}. How many {items} does {a} have "
        "left?",
        "{a} had {x} {items} and gave away half. Then {a_sub} lost {y} more. How many {items} does {a} have left?",
        "{a} had {x} {items}. {a_Sub} gave half of them away and then lost {y}. How many {items} does {a} have left?",
        "{a} has {x} {items}, gives away half, and then uses {y} more. How many {items} are left?",
        "{a} starts with {x} {items}, keeps half of them, and then uses {y}. How many {items} does {a} have left?",
    ), _fam_half_then_more),
    F("chain-three", (
        "{a} has {x} {items}. {b} has {y} more {items} than {a}. {c} has {times} as many {items} as {b}. How many "
        "{items} does {c} have?",
        "{c} has {times} as many {items} as {b}. {b} has {y} more {items} than {a}, who has {x}. How many {items} "
        "does {c} have?",
        "{a} has {x} {items}. {b} has {y} more {items} than {a}, and {c} has {times} as many {items} as {b}. How many "
        "{items} does {c} have?",
        "{a} owns {x} {items}. {b} owns {y} more than {a}, and {c} owns {times} as many as {b}. How many {items} does "
        "{c} own?",
    ), _fam_chain_three),
    F("two-goods", (
        "{a} buys {q1} {goods1} for ${price1} each and {q2} {goods2} for ${price2} each. How much does {a} spend in "
        "total?",
        "One {good1} costs ${price1} and one {good2} costs ${price2}. {a} buys {q1} {goods1} and {q2} {goods2}. How "
        "much does {a} spend in total?",
        "{a} buys {q1} {goods1} that cost ${price1} each and {q2} {goods2} that cost ${price2} each. How much does "
        "{a} spend in total?",
        "{goods1} cost ${price1} each and {goods2} cost ${price2} each. {a} buys {q1} {goods1} and {q2} {goods2}. "
        "How much does {a} spend in total?",
        "{a} bought {q1} {goods1} at ${price1} each and {q2} {goods2} at ${price2} each. How many dollars did {a_sub} "
        "spend in total?",
    ), _fam_two_goods),
    F("savings", (
        "{a} wants a {good} that costs ${cost}. {a_Sub} has ${have} and saves ${s} each week. How many weeks does {a} "
        "need to save?",
        "A {good} costs ${cost}. {a} has saved ${have} and puts away ${s} a week. How many weeks until {a_sub} can "
        "buy it?",
        "{a} saves ${s} each week. {a_Sub} already has ${have}. A {good} costs ${cost}. How many weeks does {a} need "
        "to save?",
        "{a} has ${have} and wants to buy a {good} for ${cost}. If {a_sub} saves ${s} a week, how many weeks does {a} "
        "need?",
        "{a} has ${have} and needs ${cost} for a {good}. {a_Sub} saves ${s} every week. How many weeks does {a} need "
        "to save?",
    ), _fam_savings),
    F("age", (
        "{a} is {x} years old. {b} is {y} years older than {a}. How old will {b} be in {z} years?",
        "{b} is {y} years older than {a}, who is {x}. How old will {b} be in {z} years?",
        "{a} is {x} years old, and {b} is {y} years older. How old will {b} be in {z} years?",
        "{b} is {y} years older than {a}. {a} is {x} years old. How old will {b} be in {z} years?",
        "{a} is {x}. {b} is {y} years older. In {z} years, how old will {b} be?",
    ), _fam_age),
    F("seats", (
        "A room has {rows} rows of {per} chairs. {taken} chairs are taken. How many chairs are empty?",
        "There are {rows} rows with {per} chairs in each row. {a} counts {taken} people sitting. How many chairs are "
        "empty?",
        "A hall has {rows} rows with {per} seats in each row. {taken} seats are taken. How many seats are empty?",
        "{a} counts {rows} rows of {per} chairs, and {taken} of the chairs are taken. How many chairs are empty?",
        "{a} sets up {rows} rows of {per} chairs. {taken} guests sit down. How many chairs are empty?",
    ), _fam_seats),
    F("two-days", (
        "{a} {past} {x} {unit} on {d1} and {times} as many on {d2}. How many {unit} did {a} {base} in all?",
        "On {d1} {a} {past} {x} {unit}. On {d2} {a_sub} {past} {times} as many. How many {unit} did {a_sub} {base} in "
        "all?",
        "{a} {past} {x} {unit} on {d1}. On {d2}, {a_sub} {past} {times} as many {unit}. How many {unit} did {a_sub} "
        "{base} in all?",
    ), _fam_two_days),
    F("distractor", (
        "{a} has {x} {items} and {w} {items2}. {a_Sub} buys {y} more {items}. How many {items} does {a} have?",
        "{a} has {w} {items2} and {x} {items}. Then {a_sub} gets {y} more {items}. How many {items} does {a} have?",
        "{a} has {w} {items2}. {a_Sub} also has {x} {items} and gets {y} more {items}. How many {items} does {a} have?",
        "{a} owns {x} {items} and {w} {items2}. {a_Sub} finds {y} more {items}. How many {items} does {a} have now?",
        "{a} keeps {x} {items} and {w} {items2} in a box. {a_Sub} adds {y} {items}. How many {items} are in the box?",
    ), _fam_distractor),
    F("bake-sell", (
        "{a} bakes {g} {boxes} of {per} {items}. {a_Sub} sells {sold} and gives {gave} to friends. How many {items} "
        "are left?",
        "{a} made {g} {boxes} of {items} with {per} on each {box}. {a_Sub} sold {sold} {items} and gave {gave} away. "
        "How many {items} are left?",
        "{a} bakes {g} {boxes} of {items} with {per} {items} on each {box}. {a_Sub} sells {sold} and gives away "
        "{gave}. How many {items} are left?",
        "{a} made {g} {boxes} of {per} {items}. After selling {sold} and giving {gave} to friends, how many {items} "
        "are left?",
        "There are {g} {boxes} of {per} {items}. {a} sells {sold} and gives away {gave}. How many {items} are left?",
    ), _fam_bake_sell),
    F("class-fraction", (
        "A class has {n} students. {Frac} of them walk to school and the rest take the bus. How many students take "
        "the bus?",
        "There are {n} students in {a_pos} class. {Frac} of them walk to school. The rest take the bus. How many take "
        "the bus?",
        "In a class of {n} students, {frac} walk to school. The rest take the bus. How many students take the bus?",
        "{a_Pos} class has {n} students. {Frac} of them walk and the others take the bus. How many students take the "
        "bus?",
        "Of the {n} students in a class, {frac} walk to school. The others take the bus. How many students take the "
        "bus?",
    ), _fam_class_fraction),
    F("wage", (
        "{a} works {h} hours a day and earns ${w} an hour. How much does {a} earn in {days} days?",
        "{a} earns ${w} per hour and works {h} hours each day. How much does {a_sub} earn in {days} days?",
        "For {days} days {a} works {h} hours a day at ${w} an hour. How much does {a} earn?",
    ), _fam_wage),
    F("spend-daily", (
        "{a} has ${m}. {a_Sub} spends ${s} each day for {days} days. How much money does {a} have left?",
        "{a} starts with ${m} and spends ${s} a day for {days} days. How much money is left?",
        "For {days} days {a} spends ${s} a day. {a_Sub} had ${m}. How much money does {a} have left?",
    ), _fam_spend_daily),
    F("pick-together", (
        "{a} picks {x} {items} an hour and {b} picks {y} {items} an hour. How many {items} do they pick together in "
        "{h} hours?",
        "Each hour {a} picks {x} {items} and {b} picks {y}. How many {items} do they pick in {h} hours?",
        "{a} and {b} pick {items} for {h} hours. {a} picks {x} an hour and {b} picks {y} an hour. How many {items} do "
        "they pick?",
    ), _fam_pick_together),
    F("temperature", (
        "In the morning it was {x} degrees. By noon it rose {y} degrees, and in the evening it fell {z} degrees. What "
        "was the temperature in the evening?",
        "The temperature was {x} degrees in the morning. It went up {y} degrees by noon and down {z} degrees by "
        "evening. What was the temperature in the evening?",
        "At 8 in the morning it was {x} degrees. It warmed up {y} degrees by noon and cooled {z} degrees by evening. "
        "What was the temperature in the evening?",
        "The morning temperature was {x} degrees. It went up {y} degrees and then down {z} degrees. What was the "
        "temperature in the evening?",
        "It was {x} degrees at dawn. It got {y} degrees warmer by noon, then {z} degrees colder by evening. What was "
        "the temperature in the evening?",
    ), _fam_temperature),
    F("shared-cost", (
        "{a} and {k_minus} friends buy {goods} for ${total} in all and split the cost equally among the {k} of them. "
        "How much does each friend pay?",
        "A group of {k} friends spends ${total} on {goods}. They split the cost equally. How much does each friend "
        "pay?",
        "{k} friends buy {goods} for ${total} and share the cost equally. How much does each friend pay?",
        "The {goods} cost ${total}. {k} friends split the cost equally. How much does each friend pay?",
        "{k} friends share a bill of ${total} for {goods} equally. How much does each friend pay?",
    ), _fam_shared_cost),
    F("more-then-total", (
        "{a} has {x} {items}. {b} has {y} more {items} than {a}. How many {items} do they have together?",
        "{b} has {y} more {items} than {a}, who has {x}. How many {items} do they have together?",
        "{a} owns {x} {items}, and {b} owns {y} more. How many {items} do they own together?",
    ), _fam_more_then_total),
    F("times-then-total", (
        "{a} has {x} {items}. {b} has {times} as many {items} as {a}. How many {items} do they have together?",
        "{b} has {times} as many {items} as {a}, who has {x}. How many {items} do they have together?",
        "{a} has {x} {items}, and {b} has {times} as many. How many {items} do they have together?",
        "{a} collected {x} {items}. {b} collected {times} as many {items}. How many {items} did they collect together?",
        "{a} owns {x} {items}, and {b} owns {times} as many. How many {items} do they own together?",
    ), _fam_times_then_total),
)
# bare arithmetic drills, mixed into training on purpose (not visited by `generate`'s round robin)
DRILL = Family("arithmetic", (
    "What is {x} {op_word} {y}{tail}?",
    "Work out {x} {op} {y}{tail}.",
    "Compute {x} {op_word} {y}{tail}.",
    "How much is {x} {op_word} {y}{tail}?",
), _fam_arithmetic)
FAMILY_BY_NAME = {f.name: f for f in FAMILIES + (DRILL,)}
# whole families never trained on: each combines steps the training families teach, in a new story
HELDOUT_FAMILIES = ("more-then-total", "two-days", "wage", "spend-daily", "pick-together")
HELDOUT_PHRASING = -1  # the last phrasing of every training family is held out
SPLITS = ("train", "heldout-problems", "heldout-phrasings", "heldout-families")


def _sample_bucket(question: str) -> int:
    return int(hashlib.sha1(question.encode()).hexdigest(), 16) % SAMPLE_BUCKETS


def make_problem(family: Family, phrasing: int, rng: random.Random, small: bool = False) -> Problem:
    v, lines, answer = family.build(Draw(rng, small))
    if "k" in v:
        v["k_minus"] = v["k"] - 1
    q = family.phrasings[phrasing].format(**v)
    q = q[0].upper() + q[1:]
    return Problem(family.name, phrasing % len(family.phrasings), q,
                   "\n".join(lines + [f"The answer is {answer}."]), answer)


def split_of(p: Problem) -> str:
    """Which split a problem belongs to (families, then phrasings, then the hash of the question)."""
    if p.family in HELDOUT_FAMILIES:
        return "heldout-families"
    if p.family not in FAMILY_BY_NAME:  # a compositional story (embedded/stories.py): training data only
        return "train"
    if p.phrasing == range(len(FAMILY_BY_NAME[p.family].phrasings))[HELDOUT_PHRASING]:
        return "heldout-phrasings"
    return "heldout-problems" if _sample_bucket(p.question) == 0 else "train"


def generate(n: int, split: str = "train", seed: int = 0, families: tuple[str, ...] | None = None,
             small: float = 0.0) -> list[Problem]:
    """`n` problems of one split, deterministic in (n, split, seed, small). Families are visited round robin.
    `small`: the share of problems whose numbers are all drawn small (see Draw); at 0 (the default) no extra
    random draw is made, so the held-out problems of earlier releases are the same problems."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    if not 0.0 <= small <= 1.0:
        raise ValueError(f"small {small:g}: give a share in [0, 1]")
    if families is None:
        if split == "heldout-families":
            families = HELDOUT_FAMILIES
        else:
            families = tuple(f.name for f in FAMILIES if f.name not in HELDOUT_FAMILIES)
    rng = random.Random(f"{split}:{seed}")
    out: list[Problem] = []
    i = 0
    while len(out) < n:
        fam = FAMILY_BY_NAME[families[i % len(families)]]
        i += 1
        last = range(len(fam.phrasings))[HELDOUT_PHRASING]  # (the held-out one)
        if split == "heldout-phrasings":
            phrasing = last
        elif split == "heldout-families":
            phrasing = rng.randrange(len(fam.phrasings))
        else:
            phrasing = rng.randrange(last)
        p = make_problem(fam, phrasing, rng, small=bool(small) and rng.random() < small)
        if split_of(p) == split:
            out.append(p)
    return out


def parse_answer(text: str) -> int | None:
    """The number in the first "The answer is N." of a generated solution (None when there is none)."""
    import re

    m = re.search(r"The answer is \$?(\d+)\.", text)
    return int(m.group(1)) if m else None

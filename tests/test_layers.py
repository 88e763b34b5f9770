"""The package's layering (docs/ARCHITECTURE.md): no import cycles between modules, no import from a lower
layer up into a higher one, views without torch. Read from the source (every import, including the ones inside
functions, since a lazy import is still a dependency), so nothing is imported to check it."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "spotviz"

# low -> high; a module may import from its own layer and the layers below it. Prefixes, longest match wins.
LAYERS = [
    ("core", ["spotviz", "spotviz.paths", "spotviz.noise", "spotviz.decision", "spotviz.trace",
              "spotviz.errors", "spotviz.threads"]),
    ("views", ["spotviz.views"]),  # pure functions of a trace: they need nothing above the core
    ("embedded models", ["spotviz.embedded.corpus", "spotviz.embedded.tokenizer", "spotviz.embedded.modeling",
                         "spotviz.embedded.prompts", "spotviz.embedded"]),
    ("targets", ["spotviz.targets"]),
    ("registry", ["spotviz.registry"]),
    ("speculation", ["spotviz.drafter"]),
    ("decoding", ["spotviz.samplers"]),
    ("engine", ["spotviz.engine"]),
    ("training and evaluation", ["spotviz.training", "spotviz.eval"]),
    ("ui", ["spotviz.ui"]),
    ("command line", ["spotviz.cli", "spotviz.__main__"]),
]

# Known violations, each with its fix; remove an entry when its fix lands (the test reports stale entries).
KNOWN: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    mods = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, f in mods.items():
        here = mod.split(".") if f.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                if base.split(".")[0] != "spotviz":
                    continue
                for alias in node.names:
                    name = f"{base}.{alias.name}"
                    graph[mod].add(name if name in mods else base)
            elif isinstance(node, ast.Import):
                graph[mod].update(a.name for a in node.names if a.name.split(".")[0] == "spotviz")
    return {m: {t for t in targets if t != m} for m, targets in graph.items()}


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{module} is in no layer: add it to LAYERS (and docs/ARCHITECTURE.md)"
    return rank


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)


def test_no_upward_imports():
    graph = import_graph()
    upward = sorted((m, t) for m, ts in graph.items() for t in ts
                    if layer_of(t) > layer_of(m) and (m, t) not in KNOWN)
    assert not upward, "imports from a lower layer up: " + ", ".join(
        f"{m} ({LAYERS[layer_of(m)][0]}) -> {t} ({LAYERS[layer_of(t)][0]})" for m, t in upward)


def test_no_import_cycles():
    graph = import_graph()
    pruned = {m: {t for t in ts if (m, t) not in KNOWN} for m, ts in graph.items()}
    assert not _cycles(pruned), f"import cycles: {_cycles(pruned)}"


def test_views_and_the_core_never_import_torch_or_the_engine():
    for module, f in _modules().items():
        if not (module.startswith("spotviz.views")
                or module in ("spotviz", "spotviz.paths", "spotviz.trace", "spotviz.errors")):
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not any(n.split(".")[0] in ("torch", "transformers", "gradio") for n in names), (module, names)


def test_the_checker_sees_a_cycle_and_an_upward_import():
    graph = {"spotviz.noise": {"spotviz.engine"}, "spotviz.engine": {"spotviz.noise"}}
    assert _cycles(graph) == [["spotviz.engine", "spotviz.noise"]]
    assert layer_of("spotviz.engine") > layer_of("spotviz.noise")


def test_known_violations_still_exist():
    """An entry of KNOWN whose import is gone should be removed from KNOWN (a warning, so a fix never fails CI)."""
    import warnings

    graph = import_graph()
    stale = [edge for edge in KNOWN if edge[1] not in graph.get(edge[0], set())]
    if stale:
        warnings.warn(f"fixed, remove from tests/test_layers.py KNOWN: {stale}")

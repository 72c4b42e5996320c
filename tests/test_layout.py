"""The house's layout: imports run one way between the rooms and never in a circle, and the
experiment code is out of the package's top level (docs ARCHITECTURE.md, issue 11 item 7).

The imports are read with ``ast`` from the source, function-level (lazy) imports included, so
a lazy import that runs back up is caught like a top-level one.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "metricfit"

# pairs (the data model) is the ground floor; then the rooms that import only it (and each
# other, without a circle); learners; experiments; the command line.
RANK = {
    "_validation": 0, "_version": 0, "pairs": 0,
    "losses": 1, "mappings": 1, "cnn": 1, "optim": 1, "metrics": 1, "whitening": 1,
    "features": 1, "objective": 1, "datasets": 1, "backend": 1,
    "learners": 2,
    "experiments": 3,
    "cli": 4,
}


def _name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(module):
    """The metricfit modules ``module`` imports. ``from pkg import sub`` names the submodule;
    the package itself counts only if it is not an ancestor of ``module`` (an ancestor's
    ``__init__`` always runs first) or if a name other than a submodule is taken from it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in MODULES:
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
            ancestor = module == target or module.startswith(target + ".")
            found.update(subs)
            if len(subs) < len(node.names) or not ancestor:
                found.add(target)
    found.discard(module)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""  # "" is the package root


def test_every_room_has_a_rank():
    rooms = {_room(m) for m in MODULES} - {""}
    assert rooms <= RANK.keys(), f"rooms without a rank: {rooms - RANK.keys()}"


def test_imports_run_one_way():
    upward = []
    for module, imported in GRAPH.items():
        room = _room(module)
        if room == "":
            continue
        for target in imported:
            other = _room(target)
            if other == room:
                continue
            if other == "" or RANK[other] > RANK[room]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that run back up:\n" + "\n".join(sorted(upward))


def _cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_circle_among_the_imports():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_dask_passes_and_index_pairs_are_not_a_circle():
    assert "metricfit.pairs.index" in GRAPH["metricfit.pairs._dask"]
    assert "metricfit.pairs._dask" not in GRAPH["metricfit.pairs.index"]


@pytest.mark.parametrize("gone", ["verification.py", "applications.py", "cli.py",
                                  "_dask.py", "pairs/lfw.py"])
def test_experiment_code_is_out_of_the_top_level(gone):
    assert not (PACKAGE / gone).exists()


def test_fusion_is_among_the_learners():
    from metricfit.learners import ScoreFusion

    assert ScoreFusion.__module__ == "metricfit.learners.fusion"
    assert not (PACKAGE / "fusion.py").exists()


def test_the_pair_data_model_reads_no_files():
    for module, path in MODULES.items():
        if _room(module) == "pairs":
            text = path.read_text()
            assert "np.load(" not in text and "open(" not in text, module

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
    "_validation": 0, "_version": 0, "_files": 0, "_deprecation": 0, "parallel": 0, "_array_api": 0,
    "_blas_env": 0, "_numba_layer": 0, "_numba_target": 0, "_simd": 0,
    "pairs": 0,
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


def _room_graph():
    """Room -> the other rooms its modules import (the package root left out)."""
    graph = {room: set() for room in RANK}
    for module, imported in GRAPH.items():
        room = _room(module)
        if room:
            graph[room].update(_room(t) for t in imported if _room(t) not in ("", room))
    return graph


def test_no_circle_among_the_rooms():
    """Rooms of one rank may import each other, but never round in a circle (issue 25: the
    losses -> mappings -> cnn -> losses circle is gone)."""
    assert _cycles(_room_graph()) == []
    assert "mappings" not in _room_graph()["losses"]


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


# -- No learner branches on the kind of pairs or on the mapping's name (issue 11) ---------
# The pair kind is asked in metricfit.pairs (map_pair_vectors, score_pairs, ...) and the
# objective factory; the mapping answers for itself (is_matrix, fitted_attribute, ...).

def _dotted(node):
    """``a.b.c`` for a Name/Attribute chain, else ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _is_string(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_string(e) for e in node.elts)
    return False


def _names_a_mapping(node):
    return _dotted(node).split(".")[-1] in {"mapping", "mapping_"}


def _kind_branches(source):
    """(line, what) of every ``isinstance(..., IndexPairs)`` (alone or in a tuple), every
    duck-typed ``getattr(pairs, "index", ...)``, and every comparison of a mapping
    (``mapping``, ``self.mapping``, ...) with a string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and _dotted(node.func) == "isinstance"
                and len(node.args) == 2):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(_dotted(kind).split(".")[-1] == "IndexPairs" for kind in kinds):
                found.append((node.lineno, "isinstance(..., IndexPairs)"))
        elif (isinstance(node, ast.Call) and _dotted(node.func) == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in {"index", "points"}):
            found.append((node.lineno, "getattr(pairs, 'index' or 'points', ...)"))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(_names_a_mapping, operands)) and any(map(_is_string, operands)):
                found.append((node.lineno, "mapping compared with a string"))
    return found


LEARNER_MODULES = sorted((PACKAGE / "learners").glob("*.py"))


@pytest.mark.parametrize("path", LEARNER_MODULES, ids=lambda p: p.name)
def test_no_learner_branches_on_the_pair_kind_or_the_mapping_name(path):
    assert _kind_branches(path.read_text()) == [], path.name


def test_the_branch_finder_finds_planted_branches():
    planted = (
        "def f(self, pairs, mapping):\n"
        "    if isinstance(pairs, IndexPairs):\n"
        "        pass\n"
        "    if isinstance(pairs, (np.ndarray, index.IndexPairs)):\n"
        "        pass\n"
        "    if self.mapping == 'linear':\n"
        "        pass\n"
        "    if 'mlp' != mapping:\n"
        "        pass\n"
        "    rows = getattr(pairs, 'index', pairs)\n"
        "    return self.mapping_ in ('tanh', 'mlp')\n"
    )
    assert sorted(line for line, _ in _kind_branches(planted)) == [2, 4, 6, 8, 10, 11]
    clean = (
        "def f(self, pairs, mapping):\n"
        "    if isinstance(mapping, Mapping) and mapping.is_matrix:\n"
        "        pass\n"
        "    return self.solver == 'lbfgs' and isinstance(pairs, np.ndarray)\n"
    )
    assert _kind_branches(clean) == []


# -- fit stays short: validate, build the objective, minimise, unpack (issue 11) ----------

MAX_FIT_LINES = 60
FIT_MODULES = sorted([*(PACKAGE / "learners").glob("*.py"), *(PACKAGE / "backend").glob("*.py"),
                      *(PACKAGE / "whitening").glob("*.py")])


def _long_fits(source, limit=MAX_FIT_LINES):
    """(class, lines) of every ``fit`` method longer than ``limit`` lines (docstring
    included)."""
    found = []
    for cls in ast.walk(ast.parse(source)):
        if isinstance(cls, ast.ClassDef):
            for node in cls.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "fit":
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found.append((cls.name, lines))
    return found


@pytest.mark.parametrize("path", FIT_MODULES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_fit_is_at_most_60_lines(path):
    assert _long_fits(path.read_text()) == [], path.name


def test_the_fit_length_check_finds_a_long_fit():
    body = "".join(f"        x{i} = {i}\n" for i in range(60))
    source = ("class Long:\n    def fit(self, X):\n" + body
              + "class Short:\n    def fit(self, X):\n        return self\n"
              + "def fit(X):\n" + body)  # a function, not a method: not counted
    assert _long_fits(source) == [("Long", 61)]


# -- No room takes another room's private names (issue 25) --------------------------------
# A name with a leading underscore is its module's own business. What two rooms share lives
# under a public name (``metricfit.pairs.checks.check_scores``, ``metrics.llr_response``); the
# package root's shared modules (``_validation``, ``_files``, ``_version``) are rooms of their
# own whose public names anyone may import.

def _private_imports(module):
    """``(line, "target: name")`` of every ``from target import _name`` (dunders aside) that
    ``module`` takes from a module of another room."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target not in MODULES or _room(target) == _room(module):
            continue
        for alias in node.names:
            name = alias.name
            if name.startswith("_") and not name.startswith("__"):
                found.append((node.lineno, f"{target}: {name}"))
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_another_rooms_private_name(module):
    assert _private_imports(module) == [], module


def test_the_private_import_check_finds_one(tmp_path, monkeypatch):
    planted = tmp_path / "planted.py"
    planted.write_text("from ..metrics import _check_scores, max_decision_accuracy\n"
                       "from .plda import _symmetric\n"
                       "from .._version import __version__\n")
    monkeypatch.setitem(MODULES, "metricfit.backend.planted", planted)
    found = _private_imports("metricfit.backend.planted")
    assert found == [(1, "metricfit.metrics: _check_scores")]


# -- No room imports another room's private module (issue 25) -----------------------------
# A module with a leading underscore anywhere in its path (``metricfit.cnn._kernels``) is its
# room's own business, whatever names it holds; what another room needs has a public home
# (``metricfit.cnn.activations``, ``metricfit.pairs.rows``). The package root's shared helpers
# at rank 0 are rooms of their own that anyone may import.

SHARED_HELPERS = {"_validation", "_files", "_deprecation", "_version", "_array_api", "_blas_env",
                  "_numba_layer", "_numba_target", "_simd"}
# being made public (issue 25): each leaves this set when its importer takes a public module;
# no other pair may join it.
PRIVATE_MODULE_EXCEPTIONS = set()


def _is_private_module(module):
    return any(part.startswith("_") for part in module.split(".")[1:])


def _private_module_imports(module, graph=GRAPH):
    """The modules of another room with a private path that ``module`` imports (the shared
    helpers at the package root aside)."""
    room = _room(module)
    return sorted(target for target in graph[module]
                  if _room(target) not in (room, *SHARED_HELPERS) and _is_private_module(target))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_another_rooms_private_module(module):
    found = [t for t in _private_module_imports(module)
             if (module, t) not in PRIVATE_MODULE_EXCEPTIONS]
    assert found == [], module


def test_the_private_module_exceptions_are_still_taken():
    """An exception that was made public leaves the set, so the rule applies to it again."""
    done = sorted(pair for pair in PRIVATE_MODULE_EXCEPTIONS
                  if pair[1] not in _private_module_imports(pair[0]))
    assert done == [], f"made public (or gone): remove {done} from PRIVATE_MODULE_EXCEPTIONS"


def test_the_private_module_check_finds_one():
    graph = {"metricfit.mappings.planted": {"metricfit.cnn._tanh", "metricfit.cnn.activations",
                                            "metricfit.mappings._base", "metricfit._validation",
                                            "metricfit.pairs.rows"}}
    assert _private_module_imports("metricfit.mappings.planted", graph) == [
        "metricfit.cnn._tanh"]


# -- No module over 500 lines (issue 25) ---------------------------------------------------

MAX_MODULE_LINES = 500
# being split (issue 25): each belongs to the developer splitting it; remove it from here
# when it is under the limit. No other module may grow past it.
OVERSIZE_BEING_SPLIT = set()


def _oversize(modules=MODULES, limit=MAX_MODULE_LINES):
    return {module: n for module, path in modules.items()
            if (n := len(path.read_text().splitlines())) > limit}


def test_no_module_exceeds_500_lines():
    new = {m: n for m, n in _oversize().items() if m not in OVERSIZE_BEING_SPLIT}
    assert new == {}, f"modules over {MAX_MODULE_LINES} lines (split them): {new}"


def test_the_oversize_exceptions_are_still_oversize():
    """An exception that was split leaves the set, so the limit applies to it again."""
    done = sorted(OVERSIZE_BEING_SPLIT - _oversize().keys())
    assert done == [], f"split (or gone): remove {done} from OVERSIZE_BEING_SPLIT"


def test_the_line_count_check_finds_a_long_module(tmp_path):
    long, short = tmp_path / "long.py", tmp_path / "short.py"
    long.write_text("x = 1\n" * 501)
    short.write_text("x = 1\n" * 500)
    assert _oversize({"long": long, "short": short}) == {"long": 501}

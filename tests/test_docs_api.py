"""The API reference documents every exported name, and the CLI page every option.

Runs without Sphinx: ``docs/_apigen.py`` writes the reST sources the build reads; this test
parses them and compares the documented names with what the package exports, collected here
independently (a walk over the package's public modules and their ``__all__``).
"""

import argparse
import doctest
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
import types
from pathlib import Path

import pytest

import metricfit

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def apigen():
    spec = importlib.util.spec_from_file_location("_apigen", DOCS / "_apigen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def api_dir(apigen, tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    apigen.write_api(out)
    return out


def _exports():
    """``{(module name, name): object}`` for every name in ``__all__`` of ``metricfit``,
    of its public child modules, and of modules exported by name (``losses.tsml``); a child
    module without ``__all__`` exports the public functions and classes it defines."""
    modules = [metricfit] + [
        importlib.import_module(f"metricfit.{info.name}")
        for info in pkgutil.iter_modules(metricfit.__path__)
        if not info.name.startswith("_") and info.name not in ("cli",)
    ]
    found, queue = {}, list(modules)
    while queue:
        module = queue.pop()
        if hasattr(module, "__all__"):
            names = module.__all__
        else:
            names = [n for n, o in vars(module).items() if not n.startswith("_")
                     and (inspect.isfunction(o) or inspect.isclass(o))
                     and o.__module__ == module.__name__]
        for name in names:
            value = getattr(module, name)  # a name in __all__ that does not exist fails here
            found[(module.__name__, name)] = value
            if isinstance(value, types.ModuleType) and value.__name__.startswith("metricfit."):
                if value not in modules:
                    modules.append(value)
                    queue.append(value)
    return found


def _documented(api_dir):
    """Full names with a description in the generated sources: autosummary entries (resolved
    against the module in force: the page's ``automodule`` or the last ``currentmodule``
    before the table, as in the index), ``py:data`` directives and ``automodule`` directives."""
    names = set()
    directive = re.compile(r"^\.\. (automodule|currentmodule):: (\S+)\n"
                           r"|^\.\. autosummary::\n((?:   .*\n|\n)+)", re.M)
    for page in api_dir.glob("*.rst"):
        if page.name == "cli.rst":  # the command's page, checked below
            continue
        text = page.read_text()
        names.update(re.findall(r"^\.\. py:data:: (\S+)", text, re.M))
        module = None
        for match in directive.finditer(text):
            if match.group(1):
                module = match.group(2)
                if match.group(1) == "automodule":
                    names.add(module)
                continue
            for line in match.group(3).splitlines():
                entry = line.strip()
                if not entry or entry.startswith(":"):
                    continue
                if module and not entry.startswith("metricfit"):
                    entry = f"{module}.{entry}"
                names.add(entry)
    return names


def _resolve(full_name):
    parts = full_name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(full_name)


def test_every_exported_name_is_documented(api_dir):
    documented = _documented(api_dir)
    objects = {}
    for name in documented:
        objects.setdefault(id(_resolve(name)), set()).add(name)
    missing = []
    for (module, name), value in _exports().items():
        full = f"{module}.{name}"
        if full in documented:
            continue
        if isinstance(value, (types.ModuleType, type)) or callable(value):
            if id(value) in objects:  # documented under the name it was first exported as
                continue
        missing.append(full)
    assert not missing, f"exported but without an API page: {missing}"


def test_every_documented_name_exists_and_is_exported(api_dir):
    exports = _exports()
    exported_objects = {id(v) for v in exports.values()}
    exported_names = {f"{m}.{n}" for m, n in exports}
    modules = {v.__name__ for v in exports.values() if isinstance(v, types.ModuleType)}
    modules.update(m for m, _ in exports)
    for name in _documented(api_dir):
        obj = _resolve(name)  # raises if the docs name something that is gone
        assert (name in exported_names or name in modules or id(obj) in exported_objects), name


def test_each_page_lists_its_module_exports(api_dir):
    """Grouped as the package is: the page of a module names each of its exports."""
    for (module, name), value in _exports().items():
        page = (api_dir / f"{module}.rst").read_text()
        if isinstance(value, types.ModuleType):
            assert f":mod:`{value.__name__}`" in page, (module, name)
        else:
            assert re.search(rf"(^|[\s.`]){re.escape(name)}(\s|`|$)", page, re.M), (module, name)


def test_new_sub_package_gets_a_page(apigen, tmp_path, monkeypatch):
    """A package added later with an ``__all__`` is picked up without editing the docs."""
    package = tmp_path / "fakepkg"
    (package / "backend").mkdir(parents=True)
    (package / "__init__.py").write_text('"""Fake."""\nfrom .backend import PLDA\n'
                                         '__all__ = ["PLDA"]\n')
    (package / "backend" / "__init__.py").write_text(
        '"""Back-ends."""\n\n\nclass PLDA:\n    """Two-covariance PLDA."""\n\n\n'
        'def calibrate(scores):\n    """Calibrate."""\n\n\n__all__ = ["PLDA", "calibrate"]\n')
    (package / "_private.py").write_text('__all__ = ["hidden"]\nhidden = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(apigen, "SKIP_MODULES", set())
    sections = {name: entries for name, _, entries in apigen.plan("fakepkg")}
    assert set(sections) == {"fakepkg", "fakepkg.backend"}
    assert ("PLDA", "class", "fakepkg.PLDA", True) in sections["fakepkg"]
    assert ("PLDA", "class", "fakepkg.PLDA", False) in sections["fakepkg.backend"]
    assert ("calibrate", "function", "fakepkg.backend.calibrate", True) in sections[
        "fakepkg.backend"]


def test_cli_page_documents_every_option(apigen, api_dir):
    text = (api_dir / "cli.rst").read_text()
    parser = apigen.cli_parser()
    commands = apigen.subcommands(parser)
    assert set(commands) >= {"verify", "fuse", "bench"}
    for name, (_, sub) in commands.items():
        assert f"metricfit {name}\n" in text
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings or [action.dest]:
                assert f"``{option}``" in text, (name, option)


def test_gallery_has_the_required_examples():
    gallery = DOCS.parent / "examples"
    examples = sorted(gallery.glob("*/plot_*.py"))
    assert len(examples) >= 8, examples
    # the gallery's sections: one folder each, with a README.rst (title + one sentence)
    assert not list(gallery.glob("*.py")), "examples live in a section folder"
    for section in (p for p in gallery.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (section / "README.rst").is_file(), section
    for script in examples:
        text = script.read_text()
        assert text.startswith('"""\n'), script  # sphinx-gallery needs the title docstring
        assert "plt.show()" in text or "print(" in text, script


# -- Examples sections and doctests (issue 29 item 7) -------------------------------------------

MIN_DOCTESTS = 60


@functools.lru_cache(maxsize=None)
def _all_modules():
    """Every module of the package, private ones included (their docstrings run as doctests
    too: pytest's ``--doctest-modules`` over ``metricfit/``), but no ``__main__``."""
    names = [info.name for info in pkgutil.walk_packages(metricfit.__path__, "metricfit.")
             if not info.name.endswith("__main__")]
    return (metricfit,) + tuple(importlib.import_module(name) for name in names)


def test_every_public_class_has_examples():
    """A class named in any module's ``__all__`` has a numpydoc ``Examples`` section."""
    classes = {}
    for module in _all_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and obj.__module__.startswith("metricfit"):
                classes.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    assert len(classes) >= 50, sorted(classes)  # the walk found the package's classes
    missing = [name for name, obj in sorted(classes.items())
               if not re.search(r"^\s*Examples\n\s*-{8,}$", obj.__doc__ or "", re.M)]
    assert not missing, f"public classes without an Examples section: {missing}"


def test_package_has_enough_doctests():
    """At least MIN_DOCTESTS docstrings with examples, counted as pytest's doctest collection
    counts them: one item per docstring holding ``>>>`` examples, of objects defined in the
    module that holds them."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {test.name for module in _all_modules() for test in finder.find(module)
             if test.examples}
    assert len(found) >= MIN_DOCTESTS, f"{len(found)} doctests: {sorted(found)}"

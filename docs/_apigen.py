"""Write the API reference's sources from the package's ``__all__`` lists.

Plain Python (no Sphinx import), so ``tests/test_docs_api.py`` can run it without the docs
dependencies. ``conf.py`` calls :func:`write_api` before Sphinx reads the sources.

The public API is what ``metricfit.__all__`` and every public child module's ``__all__``
export (``metricfit.learners``, ``metricfit.losses``, ``metricfit.metrics``, ...), plus the
``__all__`` of modules exported as names (``metricfit.losses.tsml``). A child module without
``__all__`` exports the public functions and classes it defines. A new sub-package with an
``__all__`` gets its page on the next build; nothing here names the modules.

Each object gets one page, under the first name it is exported as (``metricfit.TSML``, not
``metricfit.learners.TSML``); the sections that re-export it link to that page.
"""

import argparse
import importlib
import inspect
import pkgutil
import re
import types
from pathlib import Path

PACKAGE = "metricfit"
# Documented on their own page (the command's options), not as Python API.
SKIP_MODULES = {"metricfit.cli"}
GENERATED = "generated"


def public_children(package):
    """Names of the public modules directly under ``package`` (no leading underscore)."""
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        name = f"{package.__name__}.{info.name}"
        if not info.name.startswith("_") and name not in SKIP_MODULES:
            found.append(name)
    return sorted(found)


def exported_names(module):
    """``module.__all__``, or the public functions and classes the module defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    ]


def api_modules(package_name=PACKAGE):
    """The modules whose exports make the API, in page order.

    The package, then each public child in alphabetical order; a module exported as a name
    (``metricfit.losses.tsml``) follows the module exporting it.
    """
    order, seen = [], set()

    def visit(name):
        if name in seen or name in SKIP_MODULES:
            return
        seen.add(name)
        module = importlib.import_module(name)
        order.append(module)
        for export in exported_names(module):
            value = getattr(module, export)
            if isinstance(value, types.ModuleType) and value.__name__.startswith(package_name):
                if value.__name__ != name and _is_child_of_package(value, package_name):
                    if value.__name__.count(".") > 1:  # sub-sub-module: right after its parent
                        visit(value.__name__)

    package = importlib.import_module(package_name)
    visit(package_name)
    for child in public_children(package):
        visit(child)
    return order


def _is_child_of_package(module, package_name):
    return module.__name__ == package_name or module.__name__.startswith(package_name + ".")


def kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return "data"


def plan(package_name=PACKAGE):
    """``[(module_name, docstring, [(exported_name, kind, canonical_name, is_new)])]``.

    ``canonical_name`` is the full name the object's page has (the first export of it);
    ``is_new`` says whether this section owns that page.
    """
    canonical = {}
    sections = []
    for module in api_modules(package_name):
        entries = []
        for name in exported_names(module):
            obj = getattr(module, name)
            full = f"{module.__name__}.{name}"
            what = kind(obj)
            if what == "module":
                entries.append((name, what, obj.__name__, False))
                continue
            key = id(obj) if what in ("class", "function") else full
            is_new = key not in canonical
            if is_new:
                canonical[key] = full
            entries.append((name, what, canonical[key], is_new))
        sections.append((module.__name__, module.__doc__ or "", entries))
    return sections


def _title(text, char="="):
    return f"{text}\n{char * len(text)}\n"


def _summary(doc):
    lines = []
    for line in inspect.cleandoc(doc).splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


def _data_description(obj):
    if isinstance(obj, dict):
        parts = []
        for key, value in obj.items():
            if isinstance(value, types.ModuleType):
                parts.append(f"``{key!r}``: :mod:`{value.__name__}`")
            elif inspect.isclass(value) or inspect.isfunction(value):
                parts.append(f"``{key!r}``: :obj:`{value.__module__}.{value.__qualname__}`")
            else:
                parts.append(f"``{key!r}``")
        return "A dict, name to implementation: " + ", ".join(parts) + "."
    return f"``{obj!r}``"


GROUPS = (("class", "Classes"), ("function", "Functions"), ("data", "Data"),
          ("module", "Modules"))


def _relative(name, module_name):
    """The name autosummary wants inside ``module_name``'s page (no current-module prefix)."""
    prefix = module_name + "."
    return name[len(prefix):] if name.startswith(prefix) else name


def section_rst(module_name, doc, entries):
    module = importlib.import_module(module_name)
    out = [_title(module_name), f".. automodule:: {module_name}\n   :no-members:\n"]
    for what, heading in GROUPS:
        rows = [e for e in entries if e[1] == what]
        if not rows:
            continue
        out.append(_title(heading, "-"))
        if what == "module":
            for _, _, canonical, _ in rows:
                summary = _summary(importlib.import_module(canonical).__doc__ or "")
                out.append(f"- :mod:`{canonical}`: {summary}\n")
            out.append("")
            continue
        if what == "data":
            for name, _, canonical, is_new in rows:
                if is_new:
                    description = _data_description(getattr(module, name))
                    out.append(f".. py:data:: {canonical}\n\n   {description}\n")
                else:
                    out.append(f"- :data:`{canonical}`\n")
            continue
        new = [_relative(c, module_name) for _, _, c, is_new in rows if is_new]
        old = [_relative(c, module_name) for _, _, c, is_new in rows if not is_new]
        if new:
            out.append(f".. autosummary::\n   :toctree: {GENERATED}\n   :nosignatures:\n\n"
                       + "".join(f"   {name}\n" for name in new))
        if old:
            out.append("Also exported here (documented under the name shown):\n\n"
                       ".. autosummary::\n   :nosignatures:\n\n"
                       + "".join(f"   {name}\n" for name in old))
    return "\n".join(out)


INDEX_HEAD = """\
API reference
=============

Every name that ``metricfit`` and its sub-packages export in ``__all__``, grouped by the
module that exports it, with the first line of its docstring. An object exported in several
places (``metricfit.TSML`` is also ``metricfit.learners.TSML``) has one page, under the first
name, and is listed here once, there. The command-line options are on :doc:`cli`.

This page and the ones it lists are generated at build time by ``docs/_apigen.py`` from the
package's ``__all__`` lists.

"""


def index_rst(sections):
    """The API index: a table of the modules, then each module's classes and functions.

    Autosummary tables (name and the first line of the docstring), without ``:toctree:``:
    the objects' pages are generated by the module pages.
    """
    out = [INDEX_HEAD, _title("Modules", "-"),
           ".. autosummary::\n   :nosignatures:\n\n"
           + "".join(f"   {name}\n" for name, _, _ in sections)]
    for module_name, _, entries in sections:
        names = [canonical for what, heading in GROUPS[:2]
                 for _, kind_, canonical, is_new in entries if kind_ == what and is_new]
        if not names:
            continue
        out.append(_title(module_name, "-"))
        out.append(f"Page: :doc:`{module_name}`.\n")
        # the summaries' relative references (:func:`select`) resolve as on the module page
        out.append(f".. currentmodule:: {module_name}\n")
        out.append(".. autosummary::\n   :nosignatures:\n\n"
                   + "".join(f"   {_relative(name, module_name)}\n" for name in names))
    out.append(".. toctree::\n   :hidden:\n   :maxdepth: 1\n\n"
               + "".join(f"   {name}\n" for name, _, _ in sections) + "   cli\n")
    return "\n".join(out)


def write_api(out_dir, package_name=PACKAGE):
    """Write ``index.rst``, one ``<module>.rst`` per API module and ``cli.rst`` in out_dir.

    Returns the list of files written. Files are only rewritten when their text changes, so
    Sphinx's incremental build stays incremental.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    sections = plan(package_name)
    for module_name, doc, entries in sections:
        page = section_rst(module_name, doc, entries)
        written.append(_write(out_dir / f"{module_name}.rst", page))
    written.append(_write(out_dir / "cli.rst", cli_rst()))
    written.append(_write(out_dir / "index.rst", index_rst(sections)))
    return written


def _write(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


# -- the command line ----------------------------------------------------------------------

def cli_parser():
    """The ``metricfit`` command's ``argparse`` parser."""
    cli = importlib.import_module(f"{PACKAGE}.cli")
    for name in ("build_parser", "make_parser", "_parser"):
        if callable(getattr(cli, name, None)):
            return getattr(cli, name)()
    raise RuntimeError("metricfit.cli has no parser factory (build_parser / _parser): the "
                       "CLI page cannot be generated; update docs/_apigen.py.")


def subcommands(parser):
    """``{name: (help, subparser)}`` of the parser's sub-commands, in definition order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}
    return {}


def _option_rst(action):
    names = ", ".join(f"``{s}``" for s in action.option_strings) or f"``{action.dest}``"
    details = []
    if action.choices is not None:
        details.append("one of " + ", ".join(f"``{c}``" for c in action.choices))
    elif action.metavar and action.option_strings:
        details.append(f"value ``{action.metavar}``")
    if action.nargs in ("+", "*"):
        details.append("several values")
    default = action.default
    if default not in (None, False, argparse.SUPPRESS) and not isinstance(action,
                                                                          argparse._HelpAction):
        details.append(f"default ``{default}``")
    text = _help_rst((action.help or "").replace("%(prog)s", "metricfit"))
    if details:
        text = (text + " (" if text else "(") + "; ".join(details) + ")"
    return f"{names}\n   {text or 'see the usage line'}\n"


def _help_rst(text):
    """Help text as reST: option names (``--data``) and `quoted` commands become literals, so
    that smartquotes do not turn ``--`` into an en dash; ``*`` outside literals is escaped."""
    text = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
    parts = re.split(r"(``.+?``)", text)
    for i in range(0, len(parts), 2):  # the parts outside literals
        escaped = parts[i].replace("*", r"\*")
        parts[i] = re.sub(r"(?<![\w-])--[A-Za-z][\w-]*", r"``\g<0>``", escaped)
    return "".join(parts)


def cli_rst():
    parser = cli_parser()
    out = [_title("The metricfit command"),
           "Generated from the command's ``argparse`` parser (``docs/_apigen.py``). Install the "
           "package (``pip install -e .``) to get the ``metricfit`` command; "
           "``python -m metricfit.cli`` works too.\n",
           "::\n\n" + _indent(parser.format_usage()) + "\n",
           f".. automodule:: {PACKAGE}.cli\n   :no-members:\n"]
    for name, (help_text, sub) in subcommands(parser).items():
        out.append(_title(f"metricfit {name}", "-"))
        if help_text:
            out.append(_help_rst(help_text[0].upper() + help_text[1:]) + ".\n")
        out.append("::\n\n" + _indent(sub.format_usage()) + "\n")
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            out.append(_option_rst(action))
    return "\n".join(out)


def _indent(text):
    return "".join(f"    {line}\n" for line in text.strip("\n").splitlines())

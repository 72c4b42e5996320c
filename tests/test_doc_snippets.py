"""Every Python code block of the site runs as written (issue 29).

The blocks are read from ``README.md`` and every ``.rst`` / ``.md`` page under ``docs/``
(not the generated ``docs/_build``, ``docs/api``, ``docs/auto_examples``):

- Markdown: fences ```` ```python ```` (or ``py``, ``python3``, MyST's ``{code-block} python``);
- reST: ``.. code-block:: python`` (or ``code`` / ``sourcecode``, ``py``, ``python3``) and
  literal blocks introduced by ``::``, which Sphinx highlights as Python unless a
  ``.. highlight::`` directive says otherwise.

Each block runs in a fresh namespace (``__name__ == "__main__"``) in a temporary working
directory with matplotlib's Agg backend and one BLAS thread. Comment lines at the top of a
block steer the test (the conventions are documented in ``docs/contributing.rst``):

``# excerpt: runnable in <path>``
    Not run; ``<path>`` must be a file of the repository (the runnable script).
``# continued from the block above``
    Runs in the namespace of the previous block of the same page (a tutorial page runs top
    to bottom as one test, ``page:first-line..last-line``).
``# needs: face data``
    Skipped when the face data sets are not under ``$METRICFIT_DATA``.
``# slow``
    Marked ``slow`` (deselect with ``-m 'not slow'``).

A block that imports a module which is not installed (matplotlib, dask, ...) is skipped with
the module's name. Tracebacks point at the page's own line numbers.
"""

import ast
import importlib.util
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

os.environ.setdefault("MPLBACKEND", "Agg")

import metricfit  # noqa: E402
from metricfit.datasets import get_data_home  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = ("_build", "api", "auto_examples")
PYTHON = {"python", "python3", "py", "py3"}
# Fewer blocks than this means the extractor broke, not that the site has no code.
MIN_BLOCKS = 20

EXCERPT = re.compile(r"#\s*excerpt\b(?::\s*runnable in\s+(?P<path>\S+))?", re.I)
CONTINUED = re.compile(r"#\s*continued from the block above\b", re.I)
FACE_DATA = re.compile(r"#\s*needs:\s*face data\b", re.I)
SLOW = re.compile(r"#\s*slow\b", re.I)


@dataclass
class Block:
    path: str  # relative to the repository root
    line: int  # 1-based line of the block's first code line in the page
    code: str  # dedented
    markers: dict = field(default_factory=dict)

    def header(self):
        """The leading comment lines (where the markers live)."""
        lines = []
        for text in self.code.splitlines():
            if not text.strip():
                continue
            if not text.lstrip().startswith("#"):
                break
            lines.append(text.strip())
        return lines


# -- extraction --------------------------------------------------------------------------------

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
MYST_DIRECTIVE = re.compile(r"^\{(code-block|code|sourcecode)\}\s*(?P<lang>\S*)")


def markdown_blocks(text, path):
    """The Python fenced blocks of a Markdown page."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        lang = info.split()[0].lower() if info else ""
        myst = MYST_DIRECTIVE.match(info)
        if myst:
            lang = myst["lang"].lower()
        start, i = i + 1, i + 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and set(lines[i].strip()) == {fence[0]}):
            i += 1
        body = lines[start:i]
        if myst:  # drop the directive's ":option: value" lines
            while body and re.match(r"^\s*:\w[\w-]*:", body[0]):
                body, start = body[1:], start + 1
        if lang in PYTHON:
            blocks.append(Block(path, start + 1, textwrap.dedent("\n".join(body))))
        i += 1
    return blocks


CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode)::\s*(?P<lang>\S*)")
HIGHLIGHT = re.compile(r"^\s*\.\.\s+highlight::\s*(?P<lang>\S+)")


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _indented_body(lines, i, parent_indent):
    """``(first, stop)``: the block content after line ``i`` (options and blank lines
    skipped), i.e. lines ``first..stop-1`` indented deeper than ``parent_indent``."""
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or re.match(r"^\s*:[\w-]+:", lines[j])
                              and _indent(lines[j]) > parent_indent):
        j += 1
    first = j
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > parent_indent):
        j += 1
    stop = j
    while stop > first and not lines[stop - 1].strip():
        stop -= 1
    return first, stop


def rst_blocks(text, path):
    """The Python code-block directives and ``::`` literal blocks of a reST page."""
    lines = text.splitlines()
    blocks, default, i = [], "python", 0
    while i < len(lines):
        line = lines[i]
        highlight = HIGHLIGHT.match(line)
        directive = CODE_DIRECTIVE.match(line)
        if highlight:
            default = highlight["lang"].lower()
        if directive:
            lang = directive["lang"].lower() or default
        elif line.rstrip().endswith("::") and not re.match(r"^\s*\.\.\s", line):
            lang = default  # a literal block ("text::" or "::")
        else:
            i += 1
            continue
        first, stop = _indented_body(lines, i, _indent(line))
        if lang in PYTHON and stop > first:
            code = textwrap.dedent("\n".join(lines[first:stop]))
            blocks.append(Block(path, first + 1, code))
        i = max(stop, i + 1)
    return blocks


def doc_files(root=ROOT):
    files = [root / "README.md"]
    for suffix in ("*.rst", "*.md"):
        for page in sorted((root / "docs").rglob(suffix)):
            if page.relative_to(root / "docs").parts[0] not in GENERATED:
                files.append(page)
    return files


def mark(block):
    """Read the block's marker comments into ``block.markers``."""
    header = block.header()
    for name, pattern in (("excerpt", EXCERPT), ("continued", CONTINUED),
                          ("face_data", FACE_DATA), ("slow", SLOW)):
        hits = [pattern.match(h) for h in header if pattern.match(h)]
        if hits:
            block.markers[name] = hits[0]
    return block


def all_blocks(root=ROOT):
    blocks = []
    for page in doc_files(root):
        reader = markdown_blocks if page.suffix == ".md" else rst_blocks
        for block in reader(page.read_text(encoding="utf-8"), str(page.relative_to(root))):
            blocks.append(mark(block))
    return blocks


def chains(blocks):
    """The runnable blocks grouped into tests: a block "continued from the block above"
    joins the previous block of its page."""
    groups = []
    for block in blocks:
        if "excerpt" in block.markers:
            continue
        if "continued" in block.markers:
            if not groups or groups[-1][-1].path != block.path:
                raise ValueError(f"{block.path}:{block.line}: continues no block above")
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


BLOCKS = all_blocks()
CHAINS = chains(BLOCKS)


def _chain_id(chain):
    last = f"..{chain[-1].line}" if len(chain) > 1 else ""
    return f"{chain[0].path}:{chain[0].line}{last}"


def _params():
    params = []
    for chain in CHAINS:
        marks = [pytest.mark.slow] if any("slow" in b.markers for b in chain) else []
        params.append(pytest.param(chain, id=_chain_id(chain), marks=marks))
    return params


# -- the checks of the extractor itself ---------------------------------------------------------

def test_the_site_has_code_blocks():
    """The extractor finds the blocks (a test over zero blocks would pass silently)."""
    assert len(BLOCKS) >= MIN_BLOCKS, [f"{b.path}:{b.line}" for b in BLOCKS]
    pages = {b.path for b in BLOCKS}
    for page in ("README.md", "docs/index.rst", "docs/getting_started.rst",
                 "docs/user_guide/pairs.rst", "docs/user_guide/sklearn.md"):
        assert page in pages, f"no Python block found in {page}"
    assert metricfit.__file__.startswith(str(ROOT)), "runs another checkout's metricfit"


def test_extractor_reads_rst_and_markdown():
    rst = textwrap.dedent("""\
        Title
        =====

        .. note::

           Not code.

        .. code-block:: python
           :caption: one

           a = 1
           if a:
               b = 2

        Text::

            c = 3

        .. code-block:: bash

           ls

        .. highlight:: text

        Output::

            d = 4
        """)
    blocks = rst_blocks(rst, "x.rst")
    assert [(b.line, b.code) for b in blocks] == [(11, "a = 1\nif a:\n    b = 2"),
                                                  (17, "c = 3")]
    md = ("# T\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n\n```{code-block} python\n"
          ":caption: c\ny = 2\n```\n")
    found = [(b.line, b.code) for b in markdown_blocks(md, "x.md")]
    assert found == [(4, "x = 1"), (13, "y = 2")]


def test_markers_and_chains():
    md = ("```python\n# excerpt: runnable in examples/x.py\nf()\n```\n"
          "```python\n# needs: face data\n# slow: 20 s\na = 1\n```\n"
          "```python\n# continued from the block above\nb = a\n```\n"
          "```python\nc = 1  # slow\n```\n")
    blocks = [mark(b) for b in markdown_blocks(md, "x.md")]
    assert [sorted(b.markers) for b in blocks] == [
        ["excerpt"], ["face_data", "slow"], ["continued"], []]
    assert blocks[0].markers["excerpt"]["path"] == "examples/x.py"
    assert [[b.line for b in chain] for chain in chains(blocks)] == [[6, 11], [15]]
    with pytest.raises(ValueError, match="continues no block"):
        chains(blocks[2:3])


def test_excerpts_name_a_runnable_script():
    for block in BLOCKS:
        excerpt = block.markers.get("excerpt")
        if excerpt is not None:
            where = f"{block.path}:{block.line}"
            assert excerpt["path"], f"{where}: say '# excerpt: runnable in <path>'"
            assert (ROOT / excerpt["path"]).is_file(), f"{where}: no file {excerpt['path']}"


def test_command_page_keeps_double_dashes():
    """Option names on the generated command page are literals: in plain reST text
    smartquotes would print ``--data`` with an en dash."""
    spec = importlib.util.spec_from_file_location("_apigen", DOCS / "_apigen.py")
    apigen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(apigen)
    page = apigen.cli_rst()
    prose = [line for line in page.splitlines()
             if line.strip() and not line.startswith("    ") and set(line) != {"-"}]
    bare = [line for line in prose if "--" in re.sub(r"``.+?``", "", line)]
    assert not bare, bare
    assert sum("``--" in line for line in prose) > 30  # the options are there
    assert apigen._help_rst("save for `metricfit fuse --x` (see --dims, *all*)") == (
        r"save for ``metricfit fuse --x`` (see ``--dims``, \*all\*)")


# -- running the blocks ------------------------------------------------------------------------

def _missing_modules(code):
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []  # exec reports it, with the page's line
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


def _face_data_present():
    home = get_data_home()
    return all((home / name).is_dir() for name in ("lfw", "att_faces", "yale_faces"))


@pytest.mark.parametrize("chain", _params())
def test_code_block_runs(chain, tmp_path, monkeypatch):
    if any("face_data" in b.markers for b in chain) and not _face_data_present():
        pytest.skip(f"face data not found under {get_data_home()} (set METRICFIT_DATA)")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    limits = threadpool_limits(1)  # one BLAS thread, as the gallery's (docs/conf.py)
    try:
        for k, block in enumerate(chain):
            missing = _missing_modules(block.code)
            if missing:  # the blocks above it ran; this one and the rest cannot
                pytest.skip(f"{block.path}:{block.line} needs {', '.join(missing)} "
                            f"({k} of {len(chain)} blocks ran)")
            code = compile("\n" * (block.line - 1) + block.code, str(ROOT / block.path), "exec")
            exec(code, namespace)
    finally:
        limits.restore_original_limits()
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")

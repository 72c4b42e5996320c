"""Sphinx configuration of the metricfit documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (after ``pip install -e ".[docs]"``).
The API pages are generated from the package's ``__all__`` lists (``_apigen.py``); the
examples gallery runs every script in the section folders of ``../examples`` (sphinx-gallery).
Links to NumPy / SciPy / scikit-learn / Dask objects come from ``_offline_links.py`` (no
intersphinx: the build runs offline).
"""

import os
import sys
from pathlib import Path

# One BLAS thread for the gallery (set before NumPy loads): the examples' small GEMMs gain
# nothing from more, and the printed tables do not depend on the machine's core count.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the package from this checkout, installed or not

import _apigen  # noqa: E402

import metricfit  # noqa: E402

# -- project --------------------------------------------------------------------------------
project = "metricfit"
author = "the metricfit developers"
copyright = "metricfit developers, BSD-3-Clause"
release = version = metricfit.__version__

# -- API pages from __all__ (before Sphinx reads the sources) --------------------------------
_apigen.write_api(HERE / "api")

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "_offline_links",  # NumPy / SciPy / scikit-learn / Dask links without objects.inv
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store", "**/README.md"]
myst_heading_anchors = 3
# No "smart" typography: ``--data`` must stay two hyphens (not an en dash) in prose, usage
# lines and tables, and quotes stay straight, so what a reader copies runs.
smartquotes = False
myst_enable_extensions = []

# -- autodoc / autosummary / numpydoc ---------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
numpydoc_xref_param_type = False
add_module_names = False


# -- examples gallery ----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    # one section per folder of examples/ (each with a README.rst), in this order
    "subsection_order": ["../examples/linear", "../examples/backend", "../examples/convnet",
                         "../examples/scale", "*"],
    "filename_pattern": r"/plot_",
    "doc_module": ("metricfit",),
    "backreferences_dir": "api/generated/backreferences",
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "min_reported_time": 1,
    "abort_on_example_error": True,
}

# -- HTML -------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"metricfit {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# Top-level pages have no section navigation: no left sidebar, so the code has the width.
html_sidebars = {"index": [], "install": [], "getting_started": [], "data": [], "changelog": [],
                 "contributing": []}
html_show_sourcelink = False

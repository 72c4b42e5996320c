"""Links to NumPy, SciPy, scikit-learn and Dask objects without downloading an inventory.

intersphinx needs each project's ``objects.inv`` from the web; the documentation is built
offline (CI and the developers' machines have no access to those sites). This extension
answers Sphinx's ``missing-reference`` event instead: a Python cross-reference whose target
starts with ``numpy.``, ``np.``, ``scipy.``, ``sklearn.`` or ``dask.`` becomes a link to the
object's page, built from the URL pattern each project documents, **only when the name
exists in the installed package** (the module imports and the attributes are found). Any
other name is left unresolved, as before (rendered as code, and reported by ``-n``).

URL patterns (the ``stable`` documentation of each project):

- NumPy: ``https://numpy.org/doc/stable/reference/generated/numpy.X.html`` (methods and
  attributes have their own page: ``numpy.ndarray.astype.html``);
- SciPy: ``https://docs.scipy.org/doc/scipy/reference/generated/scipy.X.html``;
- scikit-learn: ``https://scikit-learn.org/stable/modules/generated/sklearn.MODULE.Name.html``;
- Dask: ``https://docs.dask.org/en/stable/generated/dask.X.html``.

NumPy's scalar types (``numpy.float32``) link to their anchor on the scalars page. For
SciPy, scikit-learn and Dask a method or attribute links to its anchor on the page of its
class (``...sklearn.pipeline.Pipeline.html#sklearn.pipeline.Pipeline.fit``). Modules are not
linked (their pages follow no common pattern), nor private names (a component starting with
``_``), nor ``dask.distributed`` (documented on another site).
"""

import importlib
import types

from docutils import nodes

ALIASES = {"np": "numpy"}
PAGES = {
    "numpy": "https://numpy.org/doc/stable/reference/generated/{page}.html",
    "scipy": "https://docs.scipy.org/doc/scipy/reference/generated/{page}.html",
    "sklearn": "https://scikit-learn.org/stable/modules/generated/{page}.html",
    "dask": "https://docs.dask.org/en/stable/generated/{page}.html",
}
# NumPy documents methods and attributes on pages of their own; the others on the class page.
OWN_PAGE_FOR_MEMBERS = {"numpy"}
EXCLUDED_PREFIXES = ("dask.distributed",)


def canonical_target(target):
    """``target`` with a leading alias (``np.``) expanded; ``None`` if not one of ours."""
    target = target.lstrip("~.")
    root, _, rest = target.partition(".")
    root = ALIASES.get(root, root)
    if root not in PAGES or not rest:
        return None
    full = f"{root}.{rest}"
    if any(part.startswith("_") for part in full.split(".")):
        return None
    if full.startswith(EXCLUDED_PREFIXES):
        return None
    return full


def split_existing(full):
    """``(module, object_path, object)`` of an existing object, or ``None``.

    ``module`` is the longest importable prefix, ``object_path`` the attributes after it
    (at least one: modules are not linked).
    """
    parts = full.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - any import failure means "not this prefix"
            continue
        attrs = parts[cut:]
        for attr in attrs:
            try:
                obj = getattr(obj, attr)
            except Exception:  # noqa: BLE001
                return None
        if isinstance(obj, types.ModuleType):
            return None
        return module_name, attrs, obj
    return None


def url_for(target):
    """The documentation URL of ``target`` (a dotted name), or ``None``."""
    full = canonical_target(target)
    if full is None:
        return None
    found = split_existing(full)
    if found is None:
        return None
    module_name, attrs, obj = found
    root = full.split(".")[0]
    if root == "numpy" and _is_numpy_scalar_type(obj):
        return f"https://numpy.org/doc/stable/reference/arrays.scalars.html#{full}"
    if root in OWN_PAGE_FOR_MEMBERS or len(attrs) == 1:
        return PAGES[root].format(page=full)
    page = PAGES[root].format(page=f"{module_name}.{attrs[0]}")
    return f"{page}#{full}"


def _is_numpy_scalar_type(obj):
    """NumPy's scalar types (``numpy.float32``) share one page, not one each."""
    import numpy

    return isinstance(obj, type) and issubclass(obj, numpy.generic)


def missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    url = url_for(node.get("reftarget", ""))
    if url is None:
        return None
    link = nodes.reference("", "", internal=False, refuri=url,
                           reftitle=f"(in {url.split('/')[2]})")
    link.append(contnode)
    return link


def setup(app):
    app.connect("missing-reference", missing_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

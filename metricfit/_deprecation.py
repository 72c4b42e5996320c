"""Deprecated aliases of renamed public names: a module-level ``__getattr__`` that warns.

A public name that is renamed keeps working for one release cycle: the module that exported
it serves the old name through :func:`deprecated_aliases`, which emits a ``FutureWarning``
naming the version that removes it and the name to use instead (scikit-learn's and
metric-learn's policy), and the changelog says so under "Unreleased".

Examples
--------
>>> import warnings
>>> from metricfit._deprecation import deprecated_aliases
>>> def normalize(x):
...     return x
>>> __getattr__ = deprecated_aliases("mymodule", {"normalise": ("normalize", normalize)})
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     old = __getattr__("normalise")
>>> old is normalize, caught[0].category.__name__
(True, 'FutureWarning')
>>> print(caught[0].message)
mymodule.normalise is deprecated and will be removed in 0.3; use mymodule.normalize instead.
"""

import warnings

__all__ = ["deprecated_aliases", "REMOVAL_VERSION"]

#: The release that removes the aliases deprecated in this one.
REMOVAL_VERSION = "0.3"


def deprecated_aliases(module_name, aliases, removal=REMOVAL_VERSION):
    """A module-level ``__getattr__`` serving ``aliases`` with a ``FutureWarning``.

    Parameters
    ----------
    module_name : str
        The module's ``__name__``, for the message and the ``AttributeError``.
    aliases : dict of str to (str, object)
        ``{old name: (new name, the object)}``.
    removal : str, default="0.3"
        The version that removes the old names.

    Returns
    -------
    __getattr__ : callable
        Assign it to the module's ``__getattr__`` (PEP 562): called only for names the
        module does not define, so the new names cost nothing.
    """
    def __getattr__(name):
        if name not in aliases:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        new_name, value = aliases[name]
        warnings.warn(f"{module_name}.{name} is deprecated and will be removed in {removal}; "
                      f"use {module_name}.{new_name} instead.", FutureWarning, stacklevel=2)
        return value

    return __getattr__

r"""Which processor numba compiles metricfit's kernels for, against what this processor offers.

numba compiles for the CPU that LLVM detects, unless told otherwise: ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` (``NUMBA_CPU_NAME=generic``, which container images set so that a numba
cache can move between machines, means plain x86-64: SSE2 and nothing wider), and numba turns
every AVX feature off where LLVM names the CPU ``sandybridge``, ``ivybridge``, ``corei7-avx``,
``core-avx-i`` or ``nocona`` (some virtual machines report the last) or where
``/proc/cpuinfo`` lists no ``avx`` (``NUMBA_ENABLE_AVX=1`` overrides it). Then every compiled
kernel runs without the vector units the processor has. On the project's 2-core AMD EPYC
(AVX-512), the convnet's training step and inference at one thread (``benchmarks/
bench_cnn.py``) took 55-56 / 20 ms compiled for the host, 67-68 / 27-28 ms for ``x86-64-v3``
(AVX2), 67-70 / 28-29 ms with AVX turned off and 135-138 / 49-50 ms with
``NUMBA_CPU_NAME=generic`` (docs/results/timing.md, "What numba compiles for").

:func:`numba_target` says what numba compiles for and what the processor offers, from three
witnesses of the latter: LLVM's host features, ``/proc/cpuinfo``'s flags and the core that
OpenBLAS chose at run time (threadpoolctl). :func:`codegen_warning` turns a gap into a message
that names its cause and the setting that removes it. Nothing here compiles anything.
"""

import os
import platform
import warnings
from typing import NamedTuple

SIMD_LEVELS = ("sse2", "sse4.2", "avx", "avx2", "avx512f")
"""x86 vector levels, narrowest first (LLVM's feature names)."""

NAMED_LEVELS = {"generic": "sse2", "x86-64": "sse2", "x86-64-v2": "sse4.2",
                "x86-64-v3": "avx2", "x86-64-v4": "avx512f"}
"""The level of LLVM's generic CPU names when no feature is given."""

OPENBLAS_LEVELS = {"sandybridge": "avx", "haswell": "avx2", "zen": "avx2",
                   "skylakex": "avx512f", "cooperlake": "avx512f", "sapphirerapids": "avx512f"}
"""The level of OpenBLAS's run-time core types (threadpoolctl's ``architecture``)."""

SETTINGS = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX")

__all__ = ["NumbaTarget", "numba_target", "codegen_warning", "warn_if_narrower", "SIMD_LEVELS"]

_WARNED = []  # [True] once warn_if_narrower has looked, in this process


class NumbaTarget(NamedTuple):
    """What numba compiles for (``cpu_name``, ``simd``: the widest level of
    :data:`SIMD_LEVELS` in its features, None where a named CPU with no feature list leaves it
    to LLVM) and what the processor offers (``host_cpu_name``: LLVM's name; ``host_simd``: the
    widest level any witness reports, None off x86; ``witnesses``: each witness's level),
    with the numba settings in force (``settings``: the environment variables set, and
    ``avx_enabled``).

    Examples
    --------
    Plain x86-64 code on an AVX-512 processor is narrower than it could be:

    >>> from metricfit.parallel import NumbaTarget
    >>> target = NumbaTarget("generic", "sse2", "skylake-avx512", "avx512f",
    ...                      {"llvm": "avx512f", "cpuinfo": "avx512f", "openblas": "avx512f"},
    ...                      {"NUMBA_CPU_NAME": "generic"}, avx_enabled=True)
    >>> target.narrower
    True
    """

    cpu_name: str
    simd: object
    host_cpu_name: str
    host_simd: object
    witnesses: dict
    settings: dict
    avx_enabled: bool

    @property
    def narrower(self):
        """True where numba compiles for a narrower vector level than the processor has."""
        return (self.simd is not None and self.host_simd is not None
                and _rank(self.simd) < _rank(self.host_simd))


def _rank(level):
    return SIMD_LEVELS.index(level)


def widest(names):
    """The widest of :data:`SIMD_LEVELS` among feature or flag ``names`` (``sse4_2`` as
    ``/proc/cpuinfo`` writes it counts as ``sse4.2``); None where none is there."""
    found = {str(name).strip().lower().replace("sse4_2", "sse4.2") for name in names}
    levels = [level for level in SIMD_LEVELS if level in found]
    return levels[-1] if levels else None


def enabled_features(flat):
    """The features a flat LLVM feature string (``+avx2,-avx512f,...``) turns on."""
    return {part[1:] for part in str(flat).split(",") if part.startswith("+")}


def _numba_features(config):
    """numba's feature string for its code: ``NUMBA_CPU_FEATURES`` if set, else the host's as
    numba takes them (all ``avx*`` off where it turned AVX off)."""
    if config.CPU_FEATURES is not None:
        return config.CPU_FEATURES
    from numba.core import codegen

    return codegen.get_host_cpu_features()


def _x86():
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _llvm_host():
    import llvmlite.binding as llvm

    try:
        features = {name for name, on in llvm.get_host_cpu_features().items() if on}
    except RuntimeError:  # LLVM cannot read this host's features
        features = set()
    return llvm.get_host_cpu_name(), features


def _cpuinfo_flags(path="/proc/cpuinfo"):
    try:
        with open(path) as lines:
            for line in lines:
                head, _, body = line.partition(":")
                if head.strip() == "flags":
                    return body.split()
    except OSError:
        pass
    return []


def _openblas_levels():
    from threadpoolctl import threadpool_info

    return [OPENBLAS_LEVELS.get(str(pool.get("architecture")).lower())
            for pool in threadpool_info() if pool.get("internal_api") == "openblas"]


def numba_target():
    """The :class:`NumbaTarget` of this process (reads numba's configuration; compiles
    nothing).

    Examples
    --------
    >>> from metricfit.parallel import numba_target
    >>> target = numba_target()
    >>> isinstance(target.cpu_name, str), isinstance(target.narrower, bool)
    (True, True)
    """
    from numba.core import config

    host_name, host_features = _llvm_host()
    name = config.CPU_NAME or host_name
    features = enabled_features(_numba_features(config))
    simd = widest(features) if features else (NAMED_LEVELS.get(name.lower()) if _x86() else None)
    witnesses = {"llvm": widest(host_features), "cpuinfo": widest(_cpuinfo_flags())}
    blas = [level for level in _openblas_levels() if level]
    witnesses["openblas"] = max(blas, key=_rank) if blas else None
    seen = [level for level in witnesses.values() if level]
    return NumbaTarget(
        cpu_name=name, simd=simd, host_cpu_name=host_name,
        host_simd=max(seen, key=_rank) if seen else None, witnesses=witnesses,
        settings={key: os.environ[key] for key in SETTINGS if key in os.environ},
        avx_enabled=bool(config.ENABLE_AVX))


def codegen_warning(target=None):
    """A message where numba compiles for a narrower vector level than the processor has
    (:func:`numba_target`), naming the cause and the setting that removes it; else None."""
    target = numba_target() if target is None else target
    if not target.narrower:
        return None
    head = (f"numba compiles metricfit's kernels for '{target.cpu_name}' ({target.simd}), but "
            f"this processor has {target.host_simd} (LLVM, /proc/cpuinfo, OpenBLAS: "
            f"{target.witnesses['llvm']}, {target.witnesses['cpuinfo']}, "
            f"{target.witnesses['openblas']}); the compiled kernels run without its wider "
            f"vector units (the convnet's training step was 2.4-2.5x slower on a 2-core AMD "
            f"EPYC with NUMBA_CPU_NAME=generic). ")
    if "NUMBA_CPU_NAME" in target.settings or "NUMBA_CPU_FEATURES" in target.settings:
        set_here = ", ".join(f"{k}={v!r}" for k, v in target.settings.items())
        return head + (f"Cause: {set_here}. Unset NUMBA_CPU_NAME and NUMBA_CPU_FEATURES to "
                       f"compile for this processor (numba's cache keeps code per target: "
                       f"nothing to clear).")
    if not target.avx_enabled:
        return head + (f"Cause: numba turns AVX off for the CPU that LLVM names "
                       f"'{target.host_cpu_name}', or where /proc/cpuinfo lists no avx. "
                       f"NUMBA_ENABLE_AVX=1 turns it on.")
    named = {"avx2": "x86-64-v3", "avx512f": "x86-64-v4"}.get(target.host_simd, "x86-64-v2")
    return head + (f"Cause: LLVM's detection of this processor ('{target.host_cpu_name}'). "
                   f"NUMBA_CPU_NAME={named} NUMBA_CPU_FEATURES=+{target.host_simd} compiles "
                   f"for its level.")


def warn_if_narrower(stacklevel=3):
    """Once a process (the first fit that runs numba's kernels at length): a RuntimeWarning
    with :func:`codegen_warning`'s message where numba's code is narrower than the processor.
    Never an error: where the look itself fails, nothing is said."""
    if _WARNED:
        return
    _WARNED.append(True)
    try:
        message = codegen_warning()
    except Exception:  # an unusual platform: the fit goes on without the advice
        return
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)

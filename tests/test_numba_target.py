"""What numba compiles metricfit's kernels for (metricfit._numba_target): the vector level of
numba's code against the processor's, and a warning naming the cause where it is narrower."""

import json
import os
import subprocess
import sys

import pytest

from metricfit import _numba_target as nt
from metricfit.cli.bench import print_target
from metricfit.parallel import NumbaTarget, codegen_warning, numba_target


def _target(simd="sse2", host="avx512f", settings=None, avx=True, cpu="generic"):
    return NumbaTarget(cpu, simd, "sapphirerapids", host,
                       {"llvm": host, "cpuinfo": host, "openblas": host}, settings or {}, avx)


@pytest.mark.parametrize("names, level", [
    (["sse2", "sse4_2", "avx2", "fma"], "avx2"),  # /proc/cpuinfo spelling
    (["sse2", "sse4.2", "avx", "avx2", "avx512f", "avx512bw"], "avx512f"),
    (["SSE2"], "sse2"), (["neon", "fp16"], None), ([], None)])
def test_the_widest_level_of_features_or_flags(names, level):
    assert nt.widest(names) == level


def test_the_features_a_flat_feature_string_turns_on():
    assert nt.enabled_features("+sse2,-avx512f,+avx2,,+fma") == {"sse2", "avx2", "fma"}
    assert nt.enabled_features("") == set()


def test_this_process_compiles_for_a_level_no_narrower_than_its_settings_allow():
    target = numba_target()
    assert isinstance(target.cpu_name, str) and target.cpu_name
    assert target.simd in (None, *nt.SIMD_LEVELS)
    assert target.host_simd in (None, *nt.SIMD_LEVELS)
    assert set(target.witnesses) == {"llvm", "cpuinfo", "openblas"}
    expected = (target.simd is not None and target.host_simd is not None
                and nt.SIMD_LEVELS.index(target.simd) < nt.SIMD_LEVELS.index(target.host_simd))
    assert target.narrower == expected
    assert (codegen_warning(target) is not None) == target.narrower
    if not target.settings and target.avx_enabled and target.witnesses["llvm"]:
        assert target.simd == target.witnesses["llvm"]  # numba takes LLVM's host features


def test_generic_code_on_a_wide_processor_is_narrower(monkeypatch):
    """numba's configuration as NUMBA_CPU_NAME=generic leaves it (features ''), on a processor
    whose witnesses report AVX-512: sse2 code, narrower, the warning names the variable."""
    from numba.core import config

    monkeypatch.setattr(config, "CPU_NAME", "generic")
    monkeypatch.setattr(config, "CPU_FEATURES", "")
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
    monkeypatch.setattr(nt, "_llvm_host", lambda: ("sapphirerapids", {"sse2", "avx512f"}))
    monkeypatch.setattr(nt, "_cpuinfo_flags", lambda: ["sse2", "sse4_2", "avx2"])
    monkeypatch.setattr(nt, "_openblas_levels", lambda: ["avx512f", None])
    target = numba_target()
    assert (target.cpu_name, target.simd, target.host_simd) == ("generic", "sse2", "avx512f")
    assert target.witnesses == {"llvm": "avx512f", "cpuinfo": "avx2", "openblas": "avx512f"}
    assert target.narrower and target.settings == {"NUMBA_CPU_NAME": "generic"}
    message = codegen_warning(target)
    assert "'generic' (sse2)" in message and "NUMBA_CPU_NAME='generic'" in message
    assert "Unset NUMBA_CPU_NAME" in message


def test_avx_turned_off_by_numba_is_narrower(monkeypatch):
    """numba strips every avx feature where it turned AVX off (a CPU name some virtual machines
    report): the host's features without them are sse4.2; NUMBA_ENABLE_AVX=1 is the remedy."""
    from numba.core import codegen, config

    for name in nt.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(config, "CPU_NAME", None)
    monkeypatch.setattr(config, "CPU_FEATURES", None)
    monkeypatch.setattr(config, "ENABLE_AVX", False)
    monkeypatch.setattr(codegen, "get_host_cpu_features",
                        lambda: "+sse2,+sse4.2,-avx,-avx2,-avx512f,+fma")
    monkeypatch.setattr(nt, "_llvm_host", lambda: ("nocona", {"sse2", "sse4.2", "avx2"}))
    monkeypatch.setattr(nt, "_cpuinfo_flags", lambda: [])
    monkeypatch.setattr(nt, "_openblas_levels", lambda: [])
    target = numba_target()
    assert (target.simd, target.host_simd, target.narrower) == ("sse4.2", "avx2", True)
    assert "NUMBA_ENABLE_AVX=1" in codegen_warning(target)
    assert "'nocona'" in codegen_warning(target)


def test_the_warning_names_the_cause():
    assert codegen_warning(_target(simd="avx512f")) is None  # as wide as the host
    assert codegen_warning(_target(simd=None, cpu="skylake")) is None  # left to LLVM's name
    assert codegen_warning(_target(host=None)) is None  # off x86: nothing to compare
    by_setting = codegen_warning(_target(settings={"NUMBA_CPU_FEATURES": "+sse2"}))
    assert "NUMBA_CPU_FEATURES='+sse2'" in by_setting
    by_detection = codegen_warning(_target(simd="sse4.2", host="avx2", cpu="x86-64-v2"))
    assert "LLVM's detection" in by_detection
    assert "NUMBA_CPU_NAME=x86-64-v3 NUMBA_CPU_FEATURES=+avx2" in by_detection


def test_bench_prints_the_target_and_warns_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(nt, "numba_target", lambda: _target())
    monkeypatch.setattr("metricfit.parallel.numba_target", lambda: _target())
    print_target()
    out, err = capsys.readouterr()
    assert "numba compiles for 'generic' (sse2)" in out and "(avx512f)" in out
    assert err.startswith("warning: numba compiles metricfit's kernels for 'generic'")


@pytest.mark.skipif(sys.platform != "linux", reason="x86-64 Linux: NUMBA_CPU_NAME=generic")
def test_numba_cpu_name_generic_in_a_fresh_process():
    """numba's own configuration from the environment, read by a new process."""
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    env.pop("NUMBA_CPU_FEATURES", None)
    code = ("import json; from metricfit.parallel import numba_target; t = numba_target(); "
            "print(json.dumps([t.cpu_name, t.simd, t.settings]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    name, simd, settings = json.loads(out.strip().splitlines()[-1])
    assert name == "generic" and settings["NUMBA_CPU_NAME"] == "generic"
    assert simd == ("sse2" if os.uname().machine == "x86_64" else None)


def _fit_tsml():
    import numpy as np

    from metricfit import TSML

    rng = np.random.default_rng(0)
    pairs = rng.standard_normal((40, 2, 5))
    y = np.repeat([1, -1], 20)
    TSML(max_iter=3).fit(pairs, y)


def test_the_first_fit_of_a_process_warns_once(monkeypatch, recwarn):
    monkeypatch.setattr(nt, "_WARNED", [])
    monkeypatch.setattr(nt, "codegen_warning", lambda: "numba compiles narrower (test)")
    _fit_tsml()
    _fit_tsml()
    ours = [w for w in recwarn if issubclass(w.category, RuntimeWarning)
            and "narrower (test)" in str(w.message)]
    assert len(ours) == 1 and ours[0].filename == __file__  # points at the caller of fit


def test_a_failing_look_never_stops_a_fit(monkeypatch, recwarn):
    def broken():
        raise OSError("no /proc here")

    monkeypatch.setattr(nt, "_WARNED", [])
    monkeypatch.setattr(nt, "codegen_warning", broken)
    _fit_tsml()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)
                and "numba compiles" in str(w.message)]

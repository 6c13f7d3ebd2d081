"""``auto`` precision: bfloat16 only where the hardware computes it natively."""

from __future__ import annotations

from pathlib import Path

import pytest

from openforge.presets import load_preset
from training.precision import cpu_has_native_bf16, resolve_dtype

AVX2_EPYC = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma f16c bmi2\n"
SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n"


@pytest.mark.parametrize(("cpuinfo", "native"), [(AVX2_EPYC, False), (SAPPHIRE_RAPIDS, True),
                                                  ("processor\t: 0\n", False)])
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path, cpuinfo: str, native: bool) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert cpu_has_native_bf16(path) is native


def test_auto_resolves_to_bf16_only_on_a_cpu_that_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import training.precision as precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    assert resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    assert resolve_dtype("auto", "cpu") == "bfloat16"
    # explicit values are kept whatever the CPU; None is float32
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16" and resolve_dtype(None, "cpu") == "float32"


def test_the_local_preset_leaves_precision_to_the_machine() -> None:
    preset = load_preset("local")
    assert preset.engine.dtype == "auto" and preset.train.compute_dtype == "auto"

"""Which floating-point type a forward pass runs in: ``auto`` resolved for this machine.

bfloat16 halves the bytes a CPU moves per weight, but only a CPU with bfloat16 instructions
(AVX512-BF16 or AMX) computes it natively; elsewhere (AVX2-only x86, most laptops) PyTorch
emulates it and the same pass is several times *slower* than float32 (the main job's SFT step
on a 2-core AVX2 EPYC ran > 8 min under bf16 autocast, ~1 min in float32). ``auto`` takes
bfloat16 where it is native — a CUDA device that supports it, or a CPU with those flags —
and float32 everywhere else.
"""

from __future__ import annotations

import functools
from pathlib import Path

#: CPU flags (as /proc/cpuinfo spells them) that mean bfloat16 matmuls run natively.
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has bfloat16 instructions (AVX512-BF16 or AMX-BF16).

    Read from the kernel's CPU flags; where there is no /proc/cpuinfo, PyTorch's own probe."""
    try:
        for line in cpuinfo.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("flags"):
                return bool(NATIVE_BF16_FLAGS & set(line.partition(":")[2].split()))
        return False
    except OSError:
        import torch  # noqa: PLC0415

        probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
        return bool(probe and probe())


def resolve_dtype(name: str | None, device: str) -> str:
    """The dtype name a pass on ``device`` runs in for the preset value ``name``.

    ``None`` is float32; ``"auto"`` is bfloat16 where it is native (see the module
    docstring), else float32; any other name is returned as given."""
    if name is None:
        return "float32"
    if name != "auto":
        return name
    if device.startswith("cuda"):
        import torch  # noqa: PLC0415

        return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if device == "cpu" and cpu_has_native_bf16() else "float32"

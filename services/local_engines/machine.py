"""This machine's CPU as the local engines meet it: the instruction sets it reports and its
kernel enables (the llama.cpp build's flags and its proof, services/engines/llamacpp/build.py;
SGLang's dtype), a fingerprint that changes with them (a copied engines folder is proven
again), and how a process that died of a signal (SIGILL: an instruction this CPU does not run)
is told in words. Below the engine kinds, so that the launcher reads it without them."""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

#: ggml's x86 options and the /proc/cpuinfo flags each one needs (ggml's CMake adds
#: -mavx512f/cd/vl/dq/bw for GGML_AVX512, so all five must be there).
X86_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512vbmi",)),
    ("GGML_AVX512_VNNI", ("avx512_vnni",)),
    ("GGML_AVX512_BF16", ("avx512_bf16",)),
    ("GGML_AMX_TILE", ("amx_tile",)),
    ("GGML_AMX_INT8", ("amx_int8",)),
    ("GGML_AMX_BF16", ("amx_bf16",)),
)

# XSAVE state components (Intel SDM vol. 1, 13.1): what the kernel must enable for the
# instructions that use those registers.
_XSTATE_YMM = 1 << 2
_XSTATE_AVX512 = (1 << 5) | (1 << 6) | (1 << 7)
_XSTATE_AMX = (1 << 17) | (1 << 18)
_SYS_ARCH_PRCTL = 158  # x86-64
_ARCH_GET_XCOMP_SUPP = 0x1021


@dataclass(frozen=True)
class CpuFeatures:
    flags: frozenset[str]
    #: The XSAVE components the kernel supports for user space; None when it does not say
    #: (kernels before 5.16, or not x86-64), and then AMX counts as unusable.
    xstate: int | None

    def usable(self, option: str, needed: tuple[str, ...]) -> bool:
        if not all(flag in self.flags for flag in needed):
            return False
        if option.startswith("GGML_AMX"):
            return self.xstate is not None and self.xstate & _XSTATE_AMX == _XSTATE_AMX
        if option.startswith("GGML_AVX512") and self.xstate is not None:
            return self.xstate & _XSTATE_AVX512 == _XSTATE_AVX512
        if option.startswith("GGML_AVX") and self.xstate is not None:
            return bool(self.xstate & _XSTATE_YMM)
        return True


def _kernel_xstate() -> int | None:
    if os.uname().machine != "x86_64":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        # Reads the mask only; unlike ARCH_REQ_XCOMP_PERM it changes nothing for this process.
        if libc.syscall(_SYS_ARCH_PRCTL, _ARCH_GET_XCOMP_SUPP, ctypes.byref(mask)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return int(mask.value)


def detect_cpu(cpuinfo: str | None = None, xstate: int | None | bool = True) -> CpuFeatures:
    """This machine's CPU as the kernel presents it. Tests pass `cpuinfo` and `xstate`."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
            break
    mask = _kernel_xstate() if xstate is True else (None if xstate is False else xstate)
    return CpuFeatures(frozenset(flags), mask)


def cpu_fingerprint(cpu: CpuFeatures) -> str:
    """Changes when the machine's usable instruction sets do (a copied engines folder)."""
    usable = [option for option, needed in X86_OPTIONS if cpu.usable(option, needed)]
    return hashlib.sha256(" ".join([os.uname().machine, *usable]).encode()).hexdigest()[:12]


def this_cpu() -> str:
    """This machine's fingerprint: what a smoke run's record holds and is checked against."""
    return cpu_fingerprint(detect_cpu())


def describe_exit(returncode: int) -> tuple[str, str | None]:
    """ "killed by SIGILL (illegal instruction)" for -4 (or a shell's 132), else "exit N"."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        meaning = {
            "SIGILL": "illegal instruction",
            "SIGSEGV": "segmentation fault",
            "SIGBUS": "bus error",
            "SIGKILL": "killed",
            "SIGABRT": "aborted",
        }.get(name)
        return (f"killed by {name} ({meaning})" if meaning else f"killed by {name}"), name
    return f"exit {returncode}", None

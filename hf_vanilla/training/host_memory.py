"""How a CPU run's process allocates memory. Every training update frees and allocates again the same large tensors
(activations, gradients); glibc's malloc hands each block over its mmap threshold (at most 32 MiB) back to the kernel
when it is freed and maps it anew, zeroed page by page, at the next update: tens of thousands of page faults an update
(docs/experiments.md, 2026-11-26). `keep_freed_memory` asks malloc to serve large blocks from its heap and keep freed
memory for the next update instead. Where each tensor lies in memory changes; no value computed does."""

import ctypes
import ctypes.util
import platform
import sys

HOST_MALLOC_CHOICES = ("reuse", "system")

# mallopt(3) parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4

TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top kept for reuse before any is returned to the kernel
TOP_PAD = 64 << 20  # extra bytes each time the heap grows, so that it grows seldom


def keep_freed_memory() -> bool:
    """Make this process's malloc (glibc on Linux) allocate every block from its heap, never a fresh mapping of its
    own, and keep up to `TRIM_THRESHOLD` bytes of freed memory instead of returning them to the kernel. The process's
    resident memory then stays near its peak rather than falling between updates. Whether the setting is in force:
    False where the C library is not glibc, which then keeps its own behaviour."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    applied = [libc.mallopt(_M_MMAP_MAX, 0), libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)]
    applied.append(libc.mallopt(_M_TOP_PAD, TOP_PAD))
    return all(flag == 1 for flag in applied)


def apply_host_malloc(choice: str, device_type: str) -> str:
    """The allocator a run uses, as results.json records it: `choice` "reuse" on a CPU run keeps freed memory
    (`keep_freed_memory`) and gives "reuse", or "system" where the C library is not glibc; "system", or a run whose
    tensors live on an accelerator, leaves malloc as it is."""
    if choice not in HOST_MALLOC_CHOICES:
        raise ValueError(f"host_malloc must be one of {HOST_MALLOC_CHOICES}, not {choice!r}")
    if choice == "reuse" and device_type == "cpu" and keep_freed_memory():
        return "reuse"
    return "system"

"""How a CPU run's process allocates memory. Every training update frees and allocates again the same large tensors
(activations, gradients); glibc's malloc hands each block over its mmap threshold (at most 32 MiB) back to the kernel
when it is freed and maps it anew, zeroed page by page, at the next update: tens of thousands of page faults an update
(docs/experiments.md, 2026-11-26). `keep_freed_memory` asks malloc to serve large blocks from its heap and keep freed
memory for the next update instead. Where each tensor lies in memory changes; no value computed does."""

import ctypes
import os
import platform
import sys

HOST_MALLOC_CHOICES = ("reuse", "system")

# mallopt(3) parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4

TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top kept for reuse before any is returned to the kernel
TOP_PAD = 64 << 20  # extra bytes each time the heap grows, so that it grows seldom


def allocator_chosen_by_user() -> str | None:
    """What in the environment already decides this process's allocation (an allocator preloaded in place of glibc's
    malloc, such as jemalloc or tcmalloc, or malloc's own settings), which `keep_freed_memory` then leaves alone."""
    if os.environ.get("LD_PRELOAD", "").strip():
        return f"LD_PRELOAD={os.environ['LD_PRELOAD']}"
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return f"GLIBC_TUNABLES={os.environ['GLIBC_TUNABLES']}"
    settings = sorted(name for name in os.environ if name.startswith("MALLOC_") and name.endswith("_"))
    return f"{settings[0]}={os.environ[settings[0]]}" if settings else None


def keep_freed_memory() -> bool:
    """Make this process's malloc (glibc on Linux) allocate every block from its heap, never a fresh mapping of its
    own, and keep up to `TRIM_THRESHOLD` bytes of freed memory instead of returning them to the kernel, for the rest
    of the process's life. Its resident memory then stays near its peak rather than falling between updates. Whether
    the setting is in force: False where the C library is not glibc or the environment chose the allocation
    (`allocator_chosen_by_user`), which then stays as it is."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc" or allocator_chosen_by_user():
        return False
    libc = ctypes.CDLL(None)  # the C library this process runs on
    # The trim and pad first: mmap is turned off only when both took, so a False leaves large blocks mapped as before.
    for parameter, value in ((_M_TRIM_THRESHOLD, TRIM_THRESHOLD), (_M_TOP_PAD, TOP_PAD), (_M_MMAP_MAX, 0)):
        if libc.mallopt(parameter, value) != 1:
            return False
    return True


def apply_host_malloc(choice: str, device_type: str) -> str:
    """The allocator a run uses, as results.json records it: `choice` "reuse" on a CPU run keeps freed memory
    (`keep_freed_memory`, for the whole process) and gives "reuse", or "system" where the C library is not glibc or
    the environment chose the allocation; "system", or a run whose tensors live on an accelerator, leaves malloc as
    it is."""
    if choice not in HOST_MALLOC_CHOICES:
        raise ValueError(f"host_malloc must be one of {HOST_MALLOC_CHOICES}, not {choice!r}")
    if choice == "reuse" and device_type == "cpu" and keep_freed_memory():
        return "reuse"
    return "system"

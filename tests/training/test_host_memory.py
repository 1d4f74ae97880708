"""A CPU run's memory allocation (`hf_vanilla.training.host_memory`): with `reuse`, a large tensor freed and allocated
again comes from the memory malloc kept, without the page faults of a fresh mapping; elsewhere nothing changes."""

import json
import os
import platform
import subprocess
import sys

import pytest

from hf_vanilla.training import host_memory

# Allocate, write and free a 64 MiB tensor ten times and count the process's page faults. glibc's malloc maps any block
# over 32 MiB anew each time (16,384 faults of 4 KiB pages a time); kept memory needs none once the heap has grown to
# hold the block beside the interpreter's small objects (up to seven rounds of warm-up here).
FAULTS = """
import json, resource, sys
import torch
from hf_vanilla.training.host_memory import apply_host_malloc
in_force = apply_host_malloc(sys.argv[1], "cpu")
for _ in range(10):
    torch.ones(16 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    torch.ones(16 << 20)
print(json.dumps([in_force, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before]))
"""


def page_faults(choice: str) -> tuple[str, int]:
    output = subprocess.run([sys.executable, "-c", FAULTS, choice], capture_output=True, text=True, check=True).stdout
    in_force, faults = json.loads(output.strip().splitlines()[-1])
    return in_force, faults


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc malloc's (mallopt)")
@pytest.mark.skipif(host_memory.allocator_chosen_by_user() is not None, reason="the environment chose the allocation")
def test_reuse_serves_a_freed_large_tensor_again_without_page_faults():
    system, reuse = page_faults("system"), page_faults("reuse")
    assert (system[0], reuse[0]) == ("system", "reuse")
    if system[1] < 10 * 16384 // 4:
        pytest.skip(f"this kernel maps fresh memory with few faults ({system[1]} for 640 MiB): nothing to save")
    assert reuse[1] < system[1] // 4, (system, reuse)


def test_reuse_applies_only_to_a_cpu_run_under_glibc(monkeypatch):
    assert host_memory.apply_host_malloc("system", "cpu") == "system"
    calls = []
    monkeypatch.setattr(host_memory, "keep_freed_memory", lambda: calls.append(1) or True)
    assert host_memory.apply_host_malloc("reuse", "cuda") == "system" and calls == []
    assert host_memory.apply_host_malloc("reuse", "cpu") == "reuse" and calls == [1]
    monkeypatch.undo()
    monkeypatch.setattr(host_memory.platform, "libc_ver", lambda: ("", ""))  # musl, or another C library
    assert host_memory.keep_freed_memory() is False
    assert host_memory.apply_host_malloc("reuse", "cpu") == "system"
    with pytest.raises(ValueError, match="host_malloc must be one of"):
        host_memory.apply_host_malloc("jemalloc", "cpu")


@pytest.mark.parametrize(
    "variable, value",
    [
        ("LD_PRELOAD", "/usr/lib/libjemalloc.so.2"),
        ("MALLOC_ARENA_MAX_", "2"),
        ("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0"),
    ],
)
def test_an_allocation_the_environment_chose_is_left_alone(variable, value, monkeypatch):
    for name in [n for n in os.environ if n == "LD_PRELOAD" or n.startswith(("MALLOC_", "GLIBC_TUNABLES"))]:
        monkeypatch.delenv(name)
    assert host_memory.allocator_chosen_by_user() is None
    monkeypatch.setenv(variable, value)
    assert host_memory.allocator_chosen_by_user() == f"{variable}={value}"
    assert host_memory.keep_freed_memory() is False  # before any mallopt: this process keeps its allocation
    assert host_memory.apply_host_malloc("reuse", "cpu") == "system"

"""correlate's allocator settings reach jemalloc only if they are in the environment before
polars loads: ``import polars`` writes its own default there when it finds none."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from correlate.frames import allocator

#: main() loads polars (its commands import it), and polars puts its own default in front of
#: the value it found (in jemalloc's conf string the last setting of a key wins)
SHOW = ("import correlate.cli, os, sys; correlate.cli.main([]); assert 'polars' in sys.modules; "
        "print(os.environ[{v!r}].removeprefix(correlate.frames.allocator.POLARS_DEFAULT + ','))")


def _child(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != allocator.VARIABLE}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]  # (after main([])'s usage text)


def test_the_cli_sets_ours_before_polars_can_set_its_own() -> None:
    # if anything imported by correlate.cli loaded polars first, polars' default would be here
    assert _child(SHOW.format(v=allocator.VARIABLE)) == allocator.settings()


def test_importing_the_cli_changes_nothing() -> None:
    code = f"import correlate.cli, os; print(os.environ.get({allocator.VARIABLE!r}))"
    assert _child(code) == "None"


def test_polars_default_passed_on_by_a_parent_is_no_ones_choice() -> None:
    # a parent that imported polars (a notebook, a pipeline script) hands this to its children
    polars_wrote = _child(f"import polars, os; print(os.environ[{allocator.VARIABLE!r}])")
    assert polars_wrote == allocator.POLARS_DEFAULT
    assert _child(SHOW.format(v=allocator.VARIABLE),
                  **{allocator.VARIABLE: polars_wrote}) == allocator.settings()


def test_a_users_own_setting_wins() -> None:
    mine = "dirty_decay_ms:1000"
    assert _child(SHOW.format(v=allocator.VARIABLE), **{allocator.VARIABLE: mine}) == mine


def test_one_arena_per_core_the_job_may_use() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert allocator.settings().endswith(f",narenas:{cores}")


REUSE = """
import resource, sys
from correlate.frames import allocator
kept = sys.argv[1] != "default" and allocator.keep_freed_c_memory()
block = bytearray(64 << 20)  # 64 MiB, every page touched
del block
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = bytearray(64 << 20)
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults_of_second_block(mode: str, **env: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", REUSE, mode], check=True, capture_output=True,
                         text=True, env={**os.environ, **env}).stdout.split()
    return out[0], int(out[1])


def test_freed_c_memory_is_reused_instead_of_faulted_in_again() -> None:
    kept, faults_kept = _faults_of_second_block("keep")
    if kept != "True":
        pytest.skip("the C library has no mallopt (not glibc)")
    _, faults_default = _faults_of_second_block("default")
    # by default a 64 MiB block is mapped on its own and unmapped when freed: all 16k pages
    # are faulted in again; kept, the freed block is reused
    assert faults_default > 4000
    assert faults_kept < faults_default / 10


def test_a_users_own_heap_count_leaves_the_other_settings() -> None:
    if _faults_of_second_block("keep")[0] != "True":
        pytest.skip("the C library has no mallopt (not glibc)")
    kept, faults = _faults_of_second_block("keep", MALLOC_ARENA_MAX="4")
    # the freed 64 MiB block is still kept and reused: only the heap count is theirs
    assert kept == "True"
    assert faults < 4000


def test_a_users_own_malloc_tunables_win() -> None:
    if _faults_of_second_block("keep")[0] != "True":
        pytest.skip("the C library has no mallopt (not glibc)")
    # the user asks glibc to map every block over 1 MiB on its own: kept as they asked, the
    # freed 64 MiB block is unmapped and its pages faulted in again
    mine = {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1048576"}
    kept, faults = _faults_of_second_block("keep", **mine)
    assert kept == "False"
    assert faults > 4000


THREAD = """
import os, sys, threading
from correlate.frames import allocator
kept = allocator.keep_freed_c_memory()
PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE
def work():  # as a thread decoding Darshan logs does: blocks it frees once done
    blocks = [bytearray(1 << 20) for _ in range(256)]  # 256 MiB, every page touched
    del blocks
before = rss()
t = threading.Thread(target=work)
t.start()
t.join()
allocator.release_freed_c_memory()
print(kept, (rss() - before) >> 20)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="no /proc (not Linux)")
def test_memory_a_thread_freed_is_given_back_on_release() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", THREAD], check=True, capture_output=True,
                         text=True, env=env).stdout.split()
    if out[0] != "True":
        pytest.skip("the C library has no mallopt (not glibc)")
    # a heap of the thread's own would keep what it freed (about 64 MiB) for the whole run
    assert int(out[1]) < 16

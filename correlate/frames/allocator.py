"""Settings of polars' allocator (its bundled jemalloc) for correlate's own processes.

correlate frees and reallocates gigabytes between stages. Freed pages are kept for reuse and go
back to the kernel over 2 s: a page faulted in fresh costs far more than one reused (with no
delay a run takes far longer); a longer delay carries a stage's freed gigabytes into the next
stages' peaks. They are huge pages where the kernel allows (madvise), which makes faulting
them in cheaper. One arena per core the job may use (its cpuset, as polars counts cores;
jemalloc's default is four per core): memory one thread freed is reused by the next stage's
threads instead of faulted in fresh.

The C allocator (glibc's malloc: numpy arrays, Python bytes, the Darshan logs inflated) gets
the same treatment: by default it maps every block over 32 MiB (an inflated DXT region is
larger) fresh from the kernel and unmaps it when freed, and gives back freed memory at the top
of its heap; ``keep_freed_c_memory`` makes it take every block from its heaps and keep what is
freed for the next one, in one heap for every thread: glibc gives each thread that allocates
a heap of its own (the threads that decode Darshan logs), and what those keep,
``release_freed_c_memory`` does not give back, for the rest of the run. What each setting
saves: docs/performance.md.

jemalloc reads ``_RJEM_MALLOC_CONF`` once, when polars loads, and ``import polars`` writes its
own default there when it finds none (and appends a value it finds to that default): so
``configure`` runs before polars loads, and treats polars' bare default, which any parent
process that imported polars passes on (a notebook, a pipeline script, our benchmarks), as
no one's choice. Imports nothing heavy.
"""

from __future__ import annotations

import ctypes
import os

VARIABLE = "_RJEM_MALLOC_CONF"
#: what ``import polars`` writes into ``VARIABLE`` when it finds nothing there
POLARS_DEFAULT = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def settings() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"thp:always,dirty_decay_ms:2000,muzzy_decay_ms:0,narenas:{cores or 1}"


#: ``mallopt`` parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX = -1, -4, -8


def configure() -> None:
    """Use ``settings()`` unless the user set their own (theirs wins), and keep the C
    allocator's freed memory."""
    if os.environ.get(VARIABLE, POLARS_DEFAULT) == POLARS_DEFAULT:
        os.environ[VARIABLE] = settings()
    keep_freed_c_memory()


def keep_freed_c_memory() -> bool:
    """glibc's malloc: no block mapped on its own, freed memory kept (up to 1 GiB at the top
    of the heap), and one heap for every thread unless the user chose how many
    (``MALLOC_ARENA_MAX``: theirs wins). False where the C library has no ``mallopt`` (not
    glibc), and when the user tuned glibc's malloc through ``GLIBC_TUNABLES`` (theirs wins)."""
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no C library to open by None (Windows)
        return False
    heaps = "MALLOC_ARENA_MAX" in os.environ or bool(mallopt(M_ARENA_MAX, 1))
    return heaps and bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def release_freed_c_memory() -> None:
    """Give the C allocator's freed memory back to the kernel now (glibc's ``malloc_trim``):
    after a stage that used it for the last time (the run folder's stream bytes and the
    Darshan logs inflated), so that the stages after it, whose memory is polars' own, do not
    carry it. Nothing where the C library has no ``malloc_trim``."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass

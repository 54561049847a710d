"""The environment of a job under ``collect`` (and what ``collect env`` prints): every
scheduler and worker the job starts loads ``collectors.preload`` after the job's own preloads,
the collector options as variables, and Darshan's variables when a runtime is found."""

from __future__ import annotations

import argparse
import os
import site
import sys
from pathlib import Path

from collectors import darshan_env, options

PRELOAD = "collectors.preload"


def dask_may_set_preloads() -> bool:
    """Whether Dask's settings could name a preload: a ``DASK_DISTRIBUTED…`` variable (or a
    config inherited from a parent Dask process), or a config file that mentions one, in the
    folders ``dask.config`` reads (``/etc/dask`` or ``$DASK_ROOT_CONFIG``, ``<prefix>/etc/dask``,
    ``~/.config/dask``, ``$DASK_CONFIG``). Without any, ``import dask`` (most of `collect`'s
    start-up, paid before the job may start) is not needed to know that there are none."""
    if any(k.upper().startswith(("DASK_DISTRIBUTED", "DASK_INTERNAL_INHERIT_CONFIG"))
           for k in os.environ):
        return True
    for place in dask_config_places():
        files = ([os.path.join(place, f) for f in os.listdir(place)]
                 if os.path.isdir(place) else [place] if os.path.isfile(place) else [])
        for f in files:
            try:
                with open(f, "rb") as fh:
                    if b"preload" in fh.read():
                        return True
            except OSError:  # dask reads what it can; a file we cannot read, it cannot either
                continue
    return False


def dask_config_places() -> list[str]:
    """The files and folders ``dask.config`` reads its YAML from (``dask.config.paths``; a
    test checks that this covers them, so a Dask that reads a new place fails it)."""
    places = [os.environ.get("DASK_ROOT_CONFIG", "/etc/dask"),
              os.path.join(sys.prefix, "etc", "dask"),
              *(os.path.join(prefix, "etc", "dask") for prefix in site.PREFIXES),
              os.path.join(os.path.expanduser("~"), ".config", "dask"),
              os.environ.get("DASK_CONFIG")]
    return list(dict.fromkeys(p for p in places if p))


def preload_variables() -> dict[str, str]:
    """``DASK_DISTRIBUTED__<ROLE>__PRELOAD`` for the scheduler and the worker, each naming the
    job's own preloads for that role (from its Dask config files and variables) and then ours;
    the variable wins over the files, so theirs must be in it. Their ``preload-argv`` is kept
    per preload (ours takes none)."""
    roles = ("scheduler", "worker")
    if not dask_may_set_preloads():
        return {f"DASK_DISTRIBUTED__{r.upper()}__PRELOAD": repr([PRELOAD]) for r in roles}
    import dask.config

    out = {}
    for role in roles:
        name = f"DASK_DISTRIBUTED__{role.upper()}__PRELOAD"
        theirs = dask.config.get(f"distributed.{role}.preload", default=None) or []
        theirs = [p for p in ([theirs] if isinstance(theirs, str) else theirs)
                  if p != PRELOAD]
        out[name] = repr([*theirs, PRELOAD])
        argv = dask.config.get(f"distributed.{role}.preload-argv", default=None) or []
        if argv:  # one list for every preload, or one list per preload (Dask's own rule)
            per = [argv] * len(theirs) if isinstance(argv[0], str) else list(argv)
            out[f"{name}_ARGV"] = repr([*per, []])
    return out


def job_environment(run_dir: Path, args: argparse.Namespace, darshan_lib: str | None
                    ) -> dict[str, str]:
    """The child's environment: this one plus the collectors' and Darshan's variables (those
    are also what `collect env` prints)."""
    env = dict(os.environ)
    env.update({
        "DASK_CORRELATE_RUN_DIR": str(run_dir.resolve()),
        **options.Options.from_args(args).environment(),
        **preload_variables(),
    })
    if darshan_lib:
        env.update(darshan_env.environment(darshan_lib, run_dir.resolve(), args.dxt_segments,
                                           args.dxt == "on"))
    return env

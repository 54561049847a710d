"""The collectors' options, defined once: what the user chooses (``collect`` flags, the
``collectors.record`` arguments, or the environment ``collect`` sets for the preload), checked
where the user passes them, so that a typo fails there with one clear message instead of
inside a guarded hook of every worker.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PROFILE_MODES = ("off", "sample", "yappi", "yappi-all", "yappi-cpu")
PROFILE_HELP = """function profiles per task execution (default: sample).
CPU added to a job of many short tasks (benchmarks/bench_many_tasks.py, workload
'tiles': 3,000 tasks of 1-20 ms, 2 workers x 2 threads; all processes, start-up
included, medians of 5 runs in several runs on a shared 2-core VM whose speed
varies by several %% between runs; docs/performance.md); Python-call-heavy tasks
pay Yappi more (benchmarks/bench_yappi.py):
  off        +0-5%%   no function profiles (transitions + per-task CPU only)
  sample     +5-7%%   stacks of task threads sampled every 5 ms: per-task
                     functions, statistical, no per-call hook
  yappi      +24-28%% Yappi wall clock on every thread but the event loop: exact
                     call counts per task (Yappi alone: +10-14%%)
  yappi-all  +81%%    the same including the event loop's coroutines (Dask's own work)
  yappi-cpu  +60%%    yappi on Yappi's CPU clock"""
#: DXT segments (reads, writes) Darshan traces per process by default
DXT_SEGMENTS = 1_000_000

#: environment variables `collect` sets for the preload of every Dask process
ENV_PROFILE = "DASK_CORRELATE_PROFILE"
ENV_FLUSH_INTERVAL = "DASK_CORRELATE_FLUSH_INTERVAL"
ENV_MARKERS = "DASK_CORRELATE_MARKERS"
ENV_DARSHAN = "DASK_CORRELATE_DARSHAN"
ENV_DXT = "DASK_CORRELATE_DXT"
ENV_DXT_SEGMENTS = "DASK_CORRELATE_DXT_SEGMENTS"
ENV_STALL_AFTER = "DASK_CORRELATE_STALL_AFTER"
#: the options that are seconds above 0, and what a message calls them
SECONDS = {"flush_interval": "flush interval", "stall_after": "stall time"}
#: those ``Options.environment`` sets (``markers`` is set with Darshan's environment)
ENV_NAMES = (ENV_PROFILE, ENV_FLUSH_INTERVAL, ENV_DARSHAN, ENV_DXT, ENV_DXT_SEGMENTS,
             ENV_STALL_AFTER)


def darshan_in_preload(env: Mapping[str, str] = os.environ) -> str | None:
    """The libdarshan a process with ``env`` preloads (LD_PRELOAD, entries separated by colons
    or spaces), if any: an entry whose file name says darshan (a folder named after Darshan
    holding another library is not one)."""
    return next((p for p in env.get("LD_PRELOAD", "").replace(":", " ").split()
                 if "darshan" in os.path.basename(p)), None)


class OptionsError(ValueError):
    """An option the user gave is not valid (the message names it and what is expected)."""


@dataclass(frozen=True)
class Options:
    #: function profiles per task execution (``collectors.profiling``)
    profile: str = "sample"
    #: seconds between flushes of each process's buffers
    flush_interval: float = 5.0
    #: write Darshan clock markers (set when Darshan is on)
    markers: bool = False
    #: darshan-runtime: "auto" (find one), "off", a libdarshan.so path; in a Dask process,
    #: "environment" (the job's own LD_PRELOAD) or "off"
    darshan: str = "auto"
    #: Darshan's DXT per-call tracing (False: its counters only); None where not known
    dxt: bool | None = True
    #: DXT segments traced per process; None where not known
    dxt_segments: int | None = DXT_SEGMENTS
    #: seconds without progress of an event loop or a collector thread that make a stall
    #: (``collectors.watchdog``)
    stall_after: float = 10.0

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_MODES:
            raise OptionsError(f"profile {self.profile!r} is not one of "
                               f"{', '.join(PROFILE_MODES)}")
        for field, what in SECONDS.items():
            value = getattr(self, field)
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or value <= 0):
                raise OptionsError(f"{what} {value!r} is not a number of seconds above 0")
            object.__setattr__(self, field, float(value))
        if self.dxt_segments is not None and (isinstance(self.dxt_segments, bool)
                                              or not isinstance(self.dxt_segments, int)
                                              or self.dxt_segments <= 0):
            raise OptionsError(f"DXT segments {self.dxt_segments!r} is not a whole number "
                               f"above 0")

    @classmethod
    def from_args(cls, args: Any) -> Options:
        """The options of `collect` / `collect env` (``add_arguments``)."""
        return cls(profile=args.profile, flush_interval=args.flush_interval,
                   darshan=args.darshan, dxt=args.dxt == "on", dxt_segments=args.dxt_segments,
                   stall_after=args.stall_after)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Options:
        """The options `collect` passed to this process (unset variables: the defaults)."""
        kwargs: dict[str, Any] = {}
        if env.get(ENV_PROFILE):
            kwargs["profile"] = env[ENV_PROFILE]
        if env.get(ENV_FLUSH_INTERVAL):
            kwargs["flush_interval"] = seconds_value(env[ENV_FLUSH_INTERVAL], "flush_interval")
        if env.get(ENV_STALL_AFTER):
            kwargs["stall_after"] = seconds_value(env[ENV_STALL_AFTER], "stall_after")
        kwargs["markers"] = env.get(ENV_MARKERS) == "1"
        # Darshan as `collect` chose it; a job that preloads Darshan itself: its environment
        kwargs["darshan"] = env.get(ENV_DARSHAN) or (
            "environment" if darshan_in_preload(env) else "off")
        kwargs["dxt"] = {"on": True, "off": False}.get(env.get(ENV_DXT, ""))
        segments = env.get(ENV_DXT_SEGMENTS, "")
        kwargs["dxt_segments"] = int(segments) if segments.isdigit() and int(segments) else None
        return cls(**kwargs)

    def environment(self) -> dict[str, str]:
        """The variables that carry these options to the preload (markers: set with Darshan's
        environment)."""
        env = {ENV_PROFILE: self.profile, ENV_FLUSH_INTERVAL: str(self.flush_interval),
               ENV_DARSHAN: self.darshan, ENV_STALL_AFTER: str(self.stall_after)}
        if self.dxt is not None:
            env[ENV_DXT] = "on" if self.dxt else "off"
        if self.dxt_segments is not None:
            env[ENV_DXT_SEGMENTS] = str(self.dxt_segments)
        return env

    def manifest(self) -> dict[str, Any]:
        """The options as ``manifest.json`` records them (``dxt``: "on"/"off", null where this
        process cannot know)."""
        return {"profile": self.profile, "flush_interval_s": self.flush_interval,
                "stall_after_s": self.stall_after,
                "darshan": self.darshan, "dxt_segments": self.dxt_segments,
                "dxt": None if self.dxt is None else ("on" if self.dxt else "off")}


DEFAULTS = Options()


def add_arguments(parser: Any) -> None:
    """The options' flags, for `collect` and `collect env` alike (``darshan_env`` adds
    Darshan's)."""
    parser.add_argument("--profile", "--yappi", dest="profile", choices=PROFILE_MODES,
                        default=DEFAULTS.profile, help=PROFILE_HELP)
    parser.add_argument("--flush-interval", type=seconds_arg("flush_interval"),
                        default=DEFAULTS.flush_interval,
                        help="seconds between flushes of each process's buffers (default "
                             f"{DEFAULTS.flush_interval:g})")
    parser.add_argument("--stall-after", type=seconds_arg("stall_after"),
                        default=DEFAULTS.stall_after,
                        help="seconds without progress of a Dask event loop or a collector "
                             "thread after which the process's stall and every thread's stack "
                             f"are recorded (default {DEFAULTS.stall_after:g})")


def seconds_arg(field: str) -> Callable[[str], float]:
    """The argparse type of the option ``field``: argparse prints the message and exits."""
    import argparse

    def parse(text: str) -> float:
        try:
            return seconds_value(text, field)
        except OptionsError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def seconds_value(text: str, field: str) -> float:
    """The option ``field`` (seconds) given as text (a ``collect`` flag, an environment
    variable), checked as ``Options`` checks it."""
    try:
        value = float(text)
    except ValueError:
        raise OptionsError(f"{SECONDS[field]} {text!r} is not a number of seconds above 0"
                           ) from None
    kwargs: dict[str, Any] = {field: value}
    Options(**kwargs)  # checked as Options checks it
    return value


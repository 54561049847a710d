"""The collectors' options, defined once: what the user chooses (``collect`` flags, the
``collectors.record`` arguments, or the environment ``collect`` sets for the preload), checked
where the user passes them, so that a typo fails there with one clear message instead of
inside a guarded hook of every worker.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROFILE_MODES = ("off", "sample", "yappi", "yappi-all", "yappi-cpu")

#: environment variables `collect` sets for the preload of every Dask process
ENV_PROFILE = "DASK_CORRELATE_PROFILE"
ENV_FLUSH_INTERVAL = "DASK_CORRELATE_FLUSH_INTERVAL"
ENV_MARKERS = "DASK_CORRELATE_MARKERS"


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

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_MODES:
            raise OptionsError(f"profile {self.profile!r} is not one of "
                               f"{', '.join(PROFILE_MODES)}")
        interval = self.flush_interval
        if (isinstance(interval, bool) or not isinstance(interval, int | float)
                or not math.isfinite(interval) or interval <= 0):
            raise OptionsError(f"flush interval {interval!r} is not a number of seconds "
                               f"above 0")
        object.__setattr__(self, "flush_interval", float(interval))

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Options:
        """The options `collect` passed to this process (unset variables: the defaults)."""
        kwargs: dict[str, Any] = {}
        if env.get(ENV_PROFILE):
            kwargs["profile"] = env[ENV_PROFILE]
        if env.get(ENV_FLUSH_INTERVAL):
            kwargs["flush_interval"] = flush_interval_value(env[ENV_FLUSH_INTERVAL])
        kwargs["markers"] = env.get(ENV_MARKERS) == "1"
        return cls(**kwargs)

    def environment(self) -> dict[str, str]:
        """The variables that carry these options to the preload (markers: set with Darshan's
        environment)."""
        return {ENV_PROFILE: self.profile, ENV_FLUSH_INTERVAL: str(self.flush_interval)}

    def manifest(self) -> dict[str, Any]:
        """The options as ``manifest.json`` records them."""
        return {"profile": self.profile, "flush_interval_s": self.flush_interval}


DEFAULTS = Options()


def flush_interval_arg(text: str) -> float:
    """``collect --flush-interval``: argparse prints the message and exits."""
    import argparse

    try:
        return flush_interval_value(text)
    except OptionsError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def flush_interval_value(text: str) -> float:
    """A flush interval given as text (a ``collect`` flag, an environment variable)."""
    try:
        value = float(text)
    except ValueError:
        raise OptionsError(f"flush interval {text!r} is not a number of seconds above 0"
                           ) from None
    Options(flush_interval=value)
    return value

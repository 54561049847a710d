"""The ``correlate`` command: an explicit list of subcommands, one module each.

``correlate RUN_DIR`` is short for ``correlate run RUN_DIR``. A folder named like a subcommand
(``correlate run`` where ``./run`` exists) is still a folder when the words do not make a
valid subcommand call. Every user error is raised as a ``CorrelateError`` somewhere below and
printed here as one line; ``--debug`` re-raises it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from correlate import __version__
from correlate.errors import CorrelateError, no_space_left
from correlate.frames import allocator

#: name -> (module under correlate.commands, one-line help). Each module has
#: ``add_arguments(parser)`` and ``run(args) -> int``.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "correlate a run folder (ours or imported) and write tables and reports"),
    "darshan": ("darshan", "decode Darshan logs (every DXT layout) into a parquet table"),
    "story": ("story", "print one task's life: transitions, executions, transfers"),
    "lifecycles": ("lifecycles", "write task_lifecycles.jsonl (one JSON object per task) for a "
                   "run of any size"),
    "report": ("report", "re-render report.md, report.html and trace.json from an output folder"),
    "compare": ("compare", "compare two runs: what got slower, where, and why"),
}
DEFAULT_COMMAND = "run"


EPILOG = ("`correlate RUN_DIR` is short for `correlate run RUN_DIR`. A folder named like a "
          "command (e.g. ./run) is taken as the folder when it exists and the command's own "
          "arguments are missing; `correlate run run` or `correlate ./run` always mean the "
          "folder.")


class _ParseError(Exception):
    """An argparse error while trying whether the words make a subcommand call."""


class _TryingParser(argparse.ArgumentParser):
    """Raises instead of exiting, so ``main`` can try the other reading of the words."""

    def error(self, message: str) -> NoReturn:
        raise _ParseError(message)


def build_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
                 ) -> argparse.ArgumentParser:
    parser = parser_class(
        prog="correlate",
        description="Per-task CPU, I/O, functions and waiting for Dask runs.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
        _command_module(module).add_arguments(p)
    return parser


def _command_module(module: str) -> ModuleType:
    return importlib.import_module(f"correlate.commands.{module}")


def _with_default_command(argv: list[str]) -> list[str]:
    first = _first_word(argv)
    if first is None or first in COMMANDS:
        return argv
    return [DEFAULT_COMMAND, *argv]


def _first_word(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """A first word that names both a command and an existing folder is the command when the
    rest parses as that command's arguments, else the folder (``correlate run`` with a folder
    ``run`` here: the ``run`` command alone lacks its folder, so the folder is meant)."""
    first = _first_word(argv)
    if first in COMMANDS and Path(first).is_dir():
        trying = build_parser(_TryingParser)
        try:
            return trying, trying.parse_args(argv)
        except _ParseError:
            argv = [DEFAULT_COMMAND, *argv]
    parser = build_parser()
    return parser, parser.parse_args(_with_default_command(argv))


def main(argv: Sequence[str] | None = None) -> int:
    allocator.configure()  # before polars loads: the command modules import it
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser, args = _parse(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(_command_module(COMMANDS[args.command][0]).run(args) or 0)
    except CorrelateError as err:
        if args.debug:
            raise
        from correlate.console import error_line

        error_line(str(err))
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug, not a user error: one line, traceback with --debug
        if args.debug:
            raise
        from correlate.console import error_line

        if no_space_left(err):  # (the user's to fix: where correlate writes)
            error_line(_no_space(args))
            return 1
        error_line(f"internal error: {type(err).__name__}: {err} (rerun with --debug for the "
                   "traceback and report it)")
        return 3


def _no_space(args: argparse.Namespace) -> str:
    """The line for a disk that filled: the folders correlate writes to (the output, the
    spill folder) and what each has free, since the error itself names neither."""
    import shutil
    import tempfile

    out = getattr(args, "out", None) or getattr(args, "out_dir", None)
    if args.command in ("run", "compare"):  # (their default output folders)
        out = _command_module(args.command).output_folder(args)
    said = []
    for what, path in (("its output", out), ("its spill folder (TMPDIR)", tempfile.gettempdir())):
        if path is None:
            said.append(what)
            continue
        path = Path(path)
        where = next((p for p in (path, *path.parents) if p.exists()), path)
        try:
            free = f"{shutil.disk_usage(where).free / 1e9:.1f} GB free"
        except OSError:
            free = "free space not known"
        said.append(f"{what} {path} ({free})")
    return (f"no space left on device: correlate writes {' and '.join(said)}; free some, or "
            "give -o or TMPDIR a folder on a larger disk")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

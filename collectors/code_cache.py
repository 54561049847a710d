"""One code object per function text in a worker process, for Yappi (yappi modes only).

A function cloudpickle sends by value (one of a script's ``__main__``, a lambda, a closure,
and the ``__main__`` helpers such a function calls, which come along in its own new
``__globals__``) is unpickled as a new function with a new code object for every task. Yappi
1.7.6 on Python 3.10+ keeps every code object it sees called alive
(``profiling._keeps_code_alive``), so each task left its code objects behind for good, and
Yappi filed new entries for them. ``canonicalise`` gives such functions, before the task runs,
the code object an earlier task brought for the same text: Yappi then sees one code object per
function text however many tasks ran.

Same text: code objects compare equal when their bytecode, constants, names, variable names,
flags, first line and line table are equal; CPython's comparison leaves out the file and the
qualified name, so they are part of the key (the function rows name both). A code object is
only ever replaced by an equal one with the same free and cell variables, so the function
runs the same instructions on the same closure. Functions of importable modules are left
alone: their code object is already the module's one. Called on the executors' threads, with
Yappi's hook off and outside any execution's tag: the cache's dict reads and writes are atomic;
two threads filing one text at once leave a task with its own code object (it runs the same).
Standard library only."""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterator
from typing import Any

#: distinct code objects kept; past it new texts are left as they come (a job that makes
#: new source per task: Yappi keeps those alive anyway)
MAX_CODES = 10_000
#: objects looked at per task at most: a task's arguments can be large containers
MAX_NODES = 2_000
#: containers in a task's arguments are looked into only when this small (a subgraph's
#: dict of tasks, a list of tasks); data is not walked
MAX_CONTAINER = 64

_FUNCTION = types.FunctionType
_TASK_MODULE = "dask._task_spec"


class CodeCache:
    """The code objects of this process, by (file, qualified name, code)."""

    def __init__(self, max_codes: int = MAX_CODES) -> None:
        self.codes: dict[tuple[str, str, types.CodeType], types.CodeType] = {}
        self.max_codes = max_codes
        #: functions whose code object was replaced (for tests and the benchmark)
        self.replaced = 0

    def canonical(self, code: types.CodeType) -> types.CodeType:
        """The process's code object equal to ``code`` (filed under its file and name)."""
        key = (code.co_filename, getattr(code, "co_qualname", code.co_name), code)
        got = self.codes.get(key)
        if got is None:
            if len(self.codes) < self.max_codes:
                self.codes[key] = code
            return code
        return got

    def function(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        canon = self.canonical(code)
        if canon is code or canon.co_freevars != code.co_freevars \
                or canon.co_cellvars != code.co_cellvars:
            return
        fn.__code__ = canon
        self.replaced += 1

    def canonicalise(self, spec: Any) -> None:
        """Give the functions a task brings (``spec``: its run spec, a function, a partial)
        the process's code objects. Never raises; what cannot be looked at is left."""
        try:
            _Walk(self).value(spec, 0)
        except Exception:  # noqa: BLE001, S110 - a task runs the same with its own code
            pass

    def canonicalise_call(self, fn: Any, args: tuple) -> None:
        """``canonicalise`` the run spec an executor call carries: among its first arguments,
        or in the closure of ``fn`` (Dask submits ``lambda: context.run(_run_task, run_spec,
        ...)``); data is not walked."""
        try:
            found = list(args[:3])
            for content in _closure(fn):
                found.extend(content[:3] if type(content) is tuple else (content,))
            for arg in found:
                if type(arg).__module__ == _TASK_MODULE:
                    self.canonicalise(arg)
                    return
        except Exception:  # noqa: BLE001, S110 - a task runs the same with its own code
            pass


def _closure(fn: Any) -> Iterator[Any]:
    """What the cells of ``fn``'s closure hold (empty cells left out)."""
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue


class _Walk:
    """One task's walk: each object once, at most ``MAX_NODES`` of them."""

    __slots__ = ("cache", "seen", "budget")

    def __init__(self, cache: CodeCache) -> None:
        self.cache = cache
        self.seen: set[int] = set()
        self.budget = MAX_NODES

    def value(self, obj: Any, depth: int) -> None:
        if depth > 6 or self.budget <= 0:
            return
        kind = type(obj)
        if kind is _FUNCTION:
            self.function(obj, depth)
        elif kind is functools.partial:
            self.value(obj.func, depth + 1)
            for arg in obj.args:
                self.value(arg, depth + 1)
            for arg in obj.keywords.values():
                self.value(arg, depth + 1)
        elif kind is types.MethodType:
            self.value(obj.__func__, depth + 1)
        elif kind.__module__ == _TASK_MODULE:
            self.task(obj, depth)
        elif kind in (list, tuple) and len(obj) <= MAX_CONTAINER:
            for item in obj:
                self.value(item, depth + 1)
        elif kind is dict and len(obj) <= MAX_CONTAINER:
            for item in obj.values():
                self.value(item, depth + 1)

    def task(self, node: Any, depth: int) -> None:
        """A dask._task_spec node: a Task's function, arguments and keywords (a subgraph's
        tasks are among its arguments); other nodes (data, aliases) bring no function."""
        if id(node) in self.seen:
            return
        self.seen.add(id(node))
        self.budget -= 1
        func = getattr(node, "func", None)
        if func is None:
            return
        self.value(func, depth + 1)
        for arg in getattr(node, "args", ()):
            self.value(arg, depth + 1)
        for arg in getattr(node, "kwargs", {}).values():
            self.value(arg, depth + 1)

    def function(self, fn: types.FunctionType, depth: int) -> None:
        if id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        self.budget -= 1
        glob = fn.__globals__
        module = sys.modules.get(fn.__module__) if type(fn.__module__) is str else None
        if module is not None and getattr(module, "__dict__", None) is glob:
            return  # a module's own function: one code object already
        try:
            self.cache.function(fn)
        except (TypeError, ValueError):
            pass  # left with its own code object: runs the same
        for content in _closure(fn):
            self.value(content, depth + 1)
        if id(glob) not in self.seen:
            self.seen.add(id(glob))
            for item in list(glob.values()):
                kind = type(item)
                if kind is _FUNCTION or kind is functools.partial:
                    self.value(item, depth + 1)
                elif isinstance(item, type):
                    self.klass(item, depth + 1)

    def klass(self, cls: type, depth: int) -> None:
        """A class cloudpickle made for this task (not its module's own): its methods."""
        if id(cls) in self.seen:
            return
        self.seen.add(id(cls))
        module = sys.modules.get(cls.__module__)
        if module is not None and getattr(module, cls.__name__, None) is cls:
            return
        self.budget -= 1
        for item in list(vars(cls).values()):
            if isinstance(item, (staticmethod, classmethod)):
                item = item.__func__
            elif isinstance(item, property):
                for part in (item.fget, item.fset, item.fdel):
                    if type(part) is _FUNCTION:
                        self.value(part, depth + 1)
                continue
            if type(item) is _FUNCTION:
                self.value(item, depth + 1)


#: this process's cache (the worker plugin's copies share it)
CACHE = CodeCache()
canonicalise = CACHE.canonicalise
canonicalise_call = CACHE.canonicalise_call

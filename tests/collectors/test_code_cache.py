"""One code object per function text (``collectors.code_cache``): functions cloudpickle sends
by value come with new code objects per task; in yappi modes the worker gives them the
process's code objects before the task runs (Yappi keeps every code object it saw alive), with
the same results, each file and qualified name kept, and exact function rows."""

from __future__ import annotations

import functools
import gc
import pickle
import types

import cloudpickle
import polars as pl
import pytest

from collectors.code_cache import CodeCache

SOURCE = """
def f1(x):
    return x + 1


def work(x):
    return f1(x) + f1(x + 1)


def make_adder(n):
    def add(x):
        return f1(x) + n
    return add
"""


def script(name: str = "a_script") -> dict:
    """The functions of a script whose module cannot be imported: pickled by value."""
    ns: dict = {"__name__": name}
    exec(compile(SOURCE, f"/jobs/{name}.py", "exec"), ns)  # noqa: S102
    return ns


def by_value(obj):
    """What a worker unpickles for one task."""
    return pickle.loads(cloudpickle.dumps(obj))


def helpers(fn: types.FunctionType) -> types.FunctionType:
    return fn.__globals__["f1"]


def test_a_function_pickled_by_value_twice_shares_one_code_object():
    work = script()["work"]
    one, two = by_value(work), by_value(work)
    # the premise: each unpickling makes its own function, helper and code objects
    assert one.__code__ is not two.__code__ and helpers(one).__code__ is not helpers(two).__code__
    assert one.__code__ == two.__code__
    cache = CodeCache()
    cache.canonicalise(one)
    cache.canonicalise(two)
    assert two.__code__ is one.__code__
    assert helpers(two).__code__ is helpers(one).__code__  # found in its new __globals__
    assert cache.replaced == 2
    assert [one(i) for i in range(5)] == [two(i) for i in range(5)] == [2 * i + 3
                                                                          for i in range(5)]


def test_closures_partials_and_tasks_keep_their_own_values():
    from dask._task_spec import Task

    ns = script()
    add1, add5 = by_value(ns["make_adder"](1)), by_value(ns["make_adder"](5))
    part = by_value(functools.partial(ns["work"], 10))
    task = by_value(Task("k", ns["work"], 3))
    first = by_value(ns["work"])
    cache = CodeCache()
    for spec in (first, add1, add5, part, task):
        cache.canonicalise(spec)
    assert add5.__code__ is add1.__code__ and helpers(add5).__code__ is helpers(add1).__code__
    assert (add1(2), add5(2)) == (4, 8)  # same code, each its own closure
    assert part.func.__code__ is first.__code__ and part() == 23
    assert task.func.__code__ is first.__code__ and task() == 9


def test_equal_code_in_other_files_or_names_keeps_its_own():
    """Code compiled in the worker (cloudpickle 3.1 files what it sends by value under
    ``<dynamic-code>``, whatever its file)."""
    a, b = script("a_script")["work"], script("b_script")["work"]
    assert a.__code__ == b.__code__  # CPython's equality leaves the file out
    renamed = types.FunctionType(a.__code__.replace(co_qualname="other"), a.__globals__)
    assert renamed.__code__ == a.__code__
    cache = CodeCache()
    for fn in (a, b, renamed):
        cache.canonicalise(fn)
    assert a.__code__.co_filename == "/jobs/a_script.py"
    assert b.__code__.co_filename == "/jobs/b_script.py"
    assert renamed.__code__.co_qualname == "other"
    assert cache.replaced == 0
    assert {(c.co_filename, c.co_qualname) for c in cache.codes.values()} >= {
        ("/jobs/a_script.py", "work"), ("/jobs/b_script.py", "work"), ("/jobs/a_script.py", "f1"),
        ("/jobs/b_script.py", "f1"), ("/jobs/a_script.py", "other")}


def test_functions_of_importable_modules_and_data_are_left_alone():
    import json

    cache = CodeCache()
    cache.canonicalise(json.dumps)
    cache.canonicalise(functools.partial(json.loads, "1"))
    cache.canonicalise([object(), 1, "x", list(range(10_000))])
    cache.canonicalise(None)
    assert cache.codes == {} and cache.replaced == 0


def test_a_bounded_cache_leaves_new_texts_as_they_come():
    cache = CodeCache(max_codes=1)
    one, two = by_value(script()["work"]), by_value(script()["work"])
    cache.canonicalise(one)
    cache.canonicalise(two)
    assert len(cache.codes) == 1
    # the one filed is shared, the other keeps its own, both still right
    assert (two.__code__ is one.__code__) != (helpers(two).__code__ is helpers(one).__code__)
    assert one(1) == two(1) == 5


def _code_objects(dask_worker) -> dict[str, int]:
    """Distinct code objects of the live ``work`` and ``f1`` functions of this worker."""
    gc.collect()
    codes: dict[str, set[int]] = {"work": set(), "f1": set()}
    functions = 0
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType and obj.__name__ in codes \
                and obj.__module__ == "a_script":
            codes[obj.__name__].add(id(obj.__code__))
            functions += 1
    return {"functions": functions, **{name: len(ids) for name, ids in codes.items()}}


@pytest.mark.cluster
@pytest.mark.parametrize("mode", ["yappi", "off"])
def test_a_real_cluster_keeps_one_code_object_per_function(tmp_path, mode):
    """2 workers x 2 threads, tasks of a script's functions (pickled by value) run 100 and then
    400 more times, their futures held (so each task's functions stay alive): in yappi mode
    each worker holds one code object of ``work`` and one of ``f1`` whatever the tasks, and
    every execution's rows are exact (work 1, f1 2); without Yappi the tasks keep their own."""
    from distributed import Client, LocalCluster

    import collectors
    from testing.raw_parts import calls_per_execution

    work = script()["work"]
    run = tmp_path / "run"
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with collectors.record(client, run, profile=mode):
            first = client.map(work, range(100))
            assert client.gather(first) == [2 * i + 3 for i in range(100)]
            after_100 = client.run(_code_objects)
            more = client.map(work, range(100, 500))
            assert client.gather(more) == [2 * i + 3 for i in range(100, 500)]
            after_500 = client.run(_code_objects)
            del first, more
    live = sum(c["functions"] for c in after_500.values())
    assert live >= 900  # the premise: each task's own work and f1 are still alive
    if mode == "off":  # by-value functions bring their own code objects
        assert sum(c["work"] for c in after_500.values()) >= 400
        return
    assert [(c["work"], c["f1"]) for c in after_100.values()] == [(1, 1), (1, 1)]
    assert [(c["work"], c["f1"]) for c in after_500.values()] == [(1, 1), (1, 1)]
    joined = calls_per_execution(run, ["work", "f1"])
    assert joined.height == 500
    wrong = joined.filter(pl.col("work").is_null() | (pl.col("work") != 1)
                          | (pl.col("f1") != 2))
    assert wrong.is_empty(), wrong

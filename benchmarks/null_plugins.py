"""A Dask preload that registers a scheduler and a worker plugin whose hooks do nothing
(bench_many_tasks.py's ``null`` mode): what Dask itself spends calling a plugin on every
transition, the floor under any collector built on Dask's plugin API."""

from distributed import Scheduler, SchedulerPlugin, Worker, WorkerPlugin


class NullSchedulerPlugin(SchedulerPlugin):
    name = "bench-null-scheduler"

    def transition(self, key, start, finish, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        pass


class NullWorkerPlugin(WorkerPlugin):
    name = "bench-null-worker"

    def transition(self, key, start, finish, **kwargs):  # noqa: ANN001, ANN003
        pass


def dask_setup(server):  # noqa: ANN001
    if isinstance(server, Scheduler):
        server.add_plugin(NullSchedulerPlugin())
    elif isinstance(server, Worker):
        return server.plugin_add(plugin=NullWorkerPlugin())
    return None

"""correlate: join Dask task executions with Darshan I/O, thread CPU and Yappi profiles.

This top-level module stays light (no polars import) so that ``collectors`` can import
``correlate.schema`` inside the user's worker processes.
"""

__version__ = "0.1.0"

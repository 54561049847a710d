"""What every family does with polars frames: ``scalars`` (Python numbers out of scalars, a null
kept None), ``grouping`` (group-by sums that are the same in every run), ``per_process``
(per-process values over rows grouped by process), ``sorting`` (every output table in its
deterministic order), ``rows`` (rows kept by a mask, no copy when all are), ``keys`` and
``prefixes`` (Dask keys and task prefixes as Dask renders them); and running a function over
partitions of frames: ``mappers`` (here or on a Dask cluster, ``cluster``) with ``allocator``
(the allocator settings of correlate's processes).

A helper goes here when two families need it and it knows no family's meaning; a helper of
one family stays in that family's package.
"""

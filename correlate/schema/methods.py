"""The attribution methods, one row each, most exact first: a method's rank is its place here
(an execution's ``attribution`` is the least exact method that gave it I/O). The ``attribution``
Enum of the output tables and every list of methods the code uses derive from this table;
what each method does: ``correlate.schema.outputs`` and docs/attribution.md.

A new method is a row here (and its module in ``correlate/attribution/``, whose pass
registers itself under the row's label: ``correlate.attribution.passes``). Stdlib only, like
the rest of ``correlate.schema``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Exactness = Literal["thread", "file", "time", "none"]
Destination = Literal["execution", "shares", "none"]


@dataclass(frozen=True)
class Method:
    label: str
    #: what ties the bytes to an execution: the thread that issued them ran it ("thread"), a
    #: file it opened or a path that names it ("file"), overlap in time only ("time": an
    #: estimate), nothing ("none")
    exactness: Exactness
    #: where the bytes of one record go: whole to one execution, in shares to several, or to
    #: no execution
    destination: Destination
    #: the method a process whose segments carry this label allowed (None: the label says
    #: nothing of its process's threads)
    process: str | None = None
    #: bytes given against the file Darshan filed them under (its record contradicts the
    #: record of opens): named in a warning
    against_record: bool = False
    #: the place, among the attribution's passes after the exact one, of the pass that gives
    #: this method's bytes (``correlate.attribution.passes``; the order of evidence, not the
    #: rank); None: another row's pass gives them, or the exact one
    step: int | None = None


METHODS = (
    Method("exact-thread", "thread", "execution", process="exact-thread"),
    Method("inferred-thread", "thread", "execution", process="inferred-thread", step=2),
    Method("helper-context", "thread", "execution", process="exact-thread", step=1),
    Method("helper-file", "file", "shares", process="exact-thread"),
    Method("helper-shared", "file", "shares", process="exact-thread"),
    Method("stdio-file", "file", "execution", step=4),
    Method("counter-file", "file", "execution", step=5),
    Method("helper-split", "time", "shares", process="exact-thread"),
    Method("window-split", "time", "shares", process="window-split"),
    Method("stdio-split", "file", "shares"),
    Method("stdio-reassigned", "file", "shares", against_record=True),
    Method("stdio-refiled", "file", "shares", against_record=True),
    Method("counter-split", "time", "shares"),
    Method("counter-window", "time", "shares"),
    Method("inconsistent-split", "time", "shares", against_record=True),
    Method("p2p-shuffle", "file", "execution", step=3),
    Method("none", "none", "none"),
    Method("spill", "file", "none"),
)

LABELS = tuple(m.label for m in METHODS)
#: label -> rank (0: the most exact)
RANK = {label: i for i, label in enumerate(LABELS)}
#: the ``attribution`` column's dtype (its order is the rank)
ENUM = "Enum:" + ",".join(LABELS)
#: methods that give a segment whole to one execution (its ``execution_id``); the others give
#: it in shares (``IOAttribution.split``) or to none
WHOLE = tuple(m.label for m in METHODS if m.destination == "execution")
#: methods by which a thread tied the bytes to the execution that issued them
THREAD_EXACT = tuple(m.label for m in METHODS if m.exactness == "thread")
#: label -> the method it shows its process allowed
PROCESS = {m.label: m.process for m in METHODS if m.process is not None}
#: the methods a process allows that need the execution's thread id (an execution recorded
#: without one gets ``window-split``)
BY_THREAD = tuple(m.label for m in METHODS if m.exactness == "thread" and m.process == m.label)
#: methods of bytes given against the file Darshan filed them under
AGAINST_RECORD = tuple(m.label for m in METHODS if m.against_record)

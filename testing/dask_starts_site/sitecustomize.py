"""First on the test session's PYTHONPATH: records the Dask servers this process makes.

Loads ``testing/dask_starts.py`` by its path (so ``testing`` need not be importable here), then
runs the ``sitecustomize`` this one shadows, if any.
"""

import importlib.util
import os
import runpy
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "_dask_starts", os.path.join(os.path.dirname(_here), "dask_starts.py"))
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _module.watch()

for _entry in sys.path:
    _other = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _here and os.path.isfile(_other):
        runpy.run_path(_other)
        break

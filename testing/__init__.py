"""Support code for the tests and benchmarks; not part of the installed package.

``testing.darshan_writer`` writes genuine ``.darshan`` logs through libdarshan-util;
``testing.synthetic`` writes schema-exact run folders of any size with known expected totals.
Importable from the repository root: pytest puts it on ``sys.path`` (``pythonpath`` in
pyproject.toml) and each benchmark that needs it inserts the repository root itself.
"""

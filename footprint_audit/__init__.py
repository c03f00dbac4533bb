"""footprint-audit: agentfootprint recordings in, Parquet readings out, on Apache Beam.

The package's modules live in the repository's top-level folders, one per room of the
design: `readers/` (pure readers), `schemas/` (shapes), `transforms/` (Beam steps and the
pure code they run) and `pipelines/` (the jobs and the command line). In the source tree
this folder holds a link to each (`footprint_audit/readers -> ../readers`), so Python, mypy
and import-graph tools see one package, `footprint_audit`, with its four subpackages;
installed (a wheel, `pip install -e .`, or `--setup_file` on Dataflow), setuptools maps the
folders under this name (pyproject.toml, `package-dir`).
"""

from __future__ import annotations

__all__: list[str] = []

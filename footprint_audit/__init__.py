"""footprint-audit: agentfootprint recordings in, Parquet readings out, on Apache Beam.

The package's modules live in the repository's top-level folders, one per room of the
design: `readers/` (pure readers), `schemas/` (shapes), `transforms/` (Beam steps and the
pure code they run) and `pipelines/` (the jobs and the command line). Installed (a wheel,
`pip install -e .`, or `--setup_file` on Dataflow), setuptools maps them under this name
(pyproject.toml, `package-dir`). In a source tree with no install, the repository root is
added to this package's path, so `footprint_audit.readers` is the same import either way.
"""

from __future__ import annotations

import os

__all__: list[str] = []

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if not os.path.isdir(os.path.join(_here, "readers")) and os.path.isfile(os.path.join(_root, "readers", "__init__.py")):
    __path__.append(_root)  # a source tree: the folders are the repository's own

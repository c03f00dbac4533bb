"""The locally assembled Flink job server, used only when it is there or asked for.

Role: between `reassess` and Beam's FlinkRunner. Beam's FlinkRunner fetches its job
server jar itself, or takes `--flink_job_server_jar`. The jars that
`tools/fetch_jars.py` assembles with Maven (`pipelines.jars`) stand in for that jar
where Maven Central serves none (tools/README.md); they are never required:

* `--flink_job_server_jar` given: left as it is;
* the cache holds a finished job server (`$FOOTPRINT_AUDIT_JARS`, default
  `~/.cache/footprint-audit/jars`): that jar is filled in;
* `FOOTPRINT_AUDIT_FLINK_JARS=cached` asks for the cache: it is made when missing
  (this needs `mvn`; an error is one sentence, exit 2);
* otherwise (or with `FOOTPRINT_AUDIT_FLINK_JARS=beam`) nothing is added: Beam's own
  behaviour. No `mvn`, no Java is needed to run the product.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cached_job_server", "cached_job_server_jar", "USE_ENV"]

#: `cached` (make the cache when missing), `beam` (never use it); unset: use it when there.
USE_ENV = "FOOTPRINT_AUDIT_FLINK_JARS"


def cached_job_server_jar() -> str | None:
    """The cached launcher `job-server.jar` when its folder is complete, else None (never fetches)."""
    from . import jars

    folder = Path(jars.default_cache_dir()) / jars.beam_spec()["name"]
    jar = folder / "job-server.jar"
    return str(jar) if (folder / ".complete").is_file() and jar.is_file() else None


def cached_job_server(beam_args: list[str]) -> list[str]:
    """Beam's arguments with `--flink_job_server_jar` filled in from the cache when the runner is
    Flink, none was given, and the cache has one (or `FOOTPRINT_AUDIT_FLINK_JARS=cached` asks for it).

    Raises `jars.FetchError` (a RuntimeError) only when the cache was asked for and cannot be made.
    """
    from . import jars

    runner = jars.runner_of(beam_args)
    if runner is None or not runner.lower().startswith("flink"):
        return beam_args
    if any(a.startswith("--flink_job_server_jar") for a in beam_args):
        return beam_args
    use = os.environ.get(USE_ENV, "").strip().lower()
    if use == "beam":
        return beam_args
    jar = cached_job_server_jar()
    if jar is None and use == "cached":
        jar = jars.ensure_jars()["flink_job_server_jar"]
    return beam_args if jar is None else [*beam_args, f"--flink_job_server_jar={jar}"]

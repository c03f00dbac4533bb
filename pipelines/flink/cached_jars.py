"""The locally assembled Flink job server, used only when it is there or asked for.

Role: between the jobs and Beam's FlinkRunner. Beam's FlinkRunner fetches its job
server jar itself, or takes `--flink_job_server_jar`. The jars that
`tools/fetch_jars.py` assembles with Maven (`tools/jars.py`) stand in for that jar
where Maven Central serves none (tools/README.md); they are never required:

* `--flink_job_server_jar` given: left as it is;
* the cache holds a finished job server (`$FOOTPRINT_AUDIT_JARS`, default
  `~/.cache/footprint-audit/jars`): that jar is filled in;
* `FOOTPRINT_AUDIT_FLINK_JARS=cached` asks for the cache: when it is missing that is
  one sentence naming `tools/fetch_jars.py` (exit 2);
* otherwise (or with `FOOTPRINT_AUDIT_FLINK_JARS=beam`) nothing is added: Beam's own
  behaviour. No `mvn`, no Java is needed to run the product.
"""

from __future__ import annotations

import os
from pathlib import Path

from footprint_audit.pipelines.options import flag_value

__all__ = [
    "cached_job_server",
    "cached_job_server_jar",
    "default_cache_dir",
    "job_server_folder",
    "on_flink",
    "runner_of",
    "FlinkStartError",
    "NOT_CACHED",
    "USE_ENV",
]

#: `cached` (use the cache, and say so when it is missing), `beam` (never use it); unset: use it when there.
USE_ENV = "FOOTPRINT_AUDIT_FLINK_JARS"

#: The Beam Java and Flink versions of the cached job server (`tools/jars.py` assembles them; tools/README.md).
BEAM_JAVA_VERSION = "2.70.0"
FLINK_VERSION = "1.19"  # beam-runners-flink-1.19 pulls Flink 1.19.0

#: The sentence for a job server that is needed and not cached.
NOT_CACHED = ("the Flink job server jar is not cached: run `python tools/fetch_jars.py` from the repository "
              "(it needs java and mvn), or give --flink_job_server_jar")


class FlinkStartError(RuntimeError):
    """The Flink side could not be started (no Java, no job server)."""


def default_cache_dir() -> Path:
    """Where the jars are cached: `$FOOTPRINT_AUDIT_JARS`, default `~/.cache/footprint-audit/jars`."""
    return Path(os.environ.get("FOOTPRINT_AUDIT_JARS") or "~/.cache/footprint-audit/jars").expanduser()


def job_server_folder() -> Path:
    """The cache's Beam/Flink folder (`lib/`, `job-server.jar`, `expansion-service.jar`)."""
    return default_cache_dir() / f"beam-{BEAM_JAVA_VERSION}-flink-{FLINK_VERSION}"


def runner_of(beam_args: list[str]) -> str | None:
    """The `--runner` among Beam's arguments, or None."""
    return flag_value(beam_args, "runner")


def on_flink(beam_args: list[str]) -> bool:
    """Whether Beam's arguments name a Flink runner."""
    return (runner_of(beam_args) or "").lower().startswith("flink")


def cached_job_server_jar() -> str | None:
    """The cached launcher `job-server.jar` when its folder is complete, else None (never fetches)."""
    folder = job_server_folder()
    jar = folder / "job-server.jar"
    return str(jar) if (folder / ".complete").is_file() and jar.is_file() else None


def cached_job_server(beam_args: list[str]) -> list[str]:
    """Beam's arguments with `--flink_job_server_jar` filled in from the cache when the runner is
    Flink, none was given, and the cache has one (or `FOOTPRINT_AUDIT_FLINK_JARS=cached` asks for it).

    Raises `FlinkStartError` (`NOT_CACHED`) only when the cache was asked for and holds no job server.
    """
    use = os.environ.get(USE_ENV, "").strip().lower()
    if not on_flink(beam_args) or use == "beam" or any(a.startswith("--flink_job_server_jar") for a in beam_args):
        return beam_args
    jar = cached_job_server_jar()
    if jar is None and use == "cached":
        raise FlinkStartError(NOT_CACHED)
    return beam_args if jar is None else [*beam_args, f"--flink_job_server_jar={jar}"]

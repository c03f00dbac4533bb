"""The Flink job server as a child of the launcher: it dies with it, and says nothing on the terminal.

Role: `stream` (and any job on `--runner FlinkRunner`) needs Beam's Flink job
server, a JVM that with `--flink_master=[local]` also holds the embedded Flink
cluster. Beam starts it itself and stops it only at a clean interpreter exit,
so a launcher killed with SIGKILL would leave it running (and restarting the job).
Here the launcher starts it with a parent-death signal (Linux `prctl`), its
logs go to a file, and the job is sent to it through `--job_endpoint`. `with_job_server`
is where a job's Flink job server is chosen, for `reassess` and `stream` alike (`JobRunner`
asks it): one given by `--job_endpoint`, the launcher's own (`OwnJobServer`, `stream`'s), or
the cached jar Beam starts itself (`reassess`'s).
Its heap is capped (`-Xmx`, `heap_mb`; `default_heap_mb` sizes it from the machine):
without a cap the JVM takes up to a quarter of the machine's memory before it collects in
earnest, and an out-of-memory error ends the JVM (and so the job, with a sentence) rather than
leaving it half alive.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from footprint_audit.pipelines.options import flag_given, flag_value

from .cached_jars import NOT_CACHED, FlinkStartError, cached_job_server, cached_job_server_jar, on_flink

__all__ = ["JobServer", "OwnJobServer", "default_heap_mb", "with_job_server"]

_PR_SET_PDEATHSIG = 1
STARTUP_SECONDS = 180.0  # how long the job server has to listen


@dataclass(frozen=True)
class OwnJobServer:
    """A job server the launcher starts itself (`stream`): where it logs, the Flink configuration the
    embedded cluster starts with (a restore point), its heap (None: `default_heap_mb`), and whether the
    job is bounded (its JVM then compiles with C1 only: bench/README.md, "Where the stream's time goes")."""

    log: Path
    conf_dir: Path | None = None
    heap_mb: int | None = None
    bounded: bool = False


def _die_with_parent() -> None:  # runs in the child, between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def default_heap_mb() -> int:
    """The job server's heap when none is given: an eighth of the machine's memory, 1-8 GiB."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    return max(1024, min(8192, total // 8))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class JobServer:
    """`java -jar JAR --flink-master MASTER` on free loopback ports, tied to this process's life."""

    def __init__(
        self, jar: str, flink_master: str, log_path: Path, conf_dir: Path | None = None, heap_mb: int | None = None,
        c1_only: bool = False,
    ) -> None:
        self.jar = jar
        self.flink_master = flink_master
        self.conf_dir = conf_dir  # Flink's configuration for the embedded cluster (a restore point, for one)
        self.log_path = log_path
        self.heap_mb = heap_mb or default_heap_mb()
        self.c1_only = c1_only  # no C2 compiling: a short job never earns its cost back
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"localhost:{self.port}"

    def command(self) -> list[str]:
        """The job server's command line (on `self.port`)."""
        cmd = [
            "java", f"-Xmx{self.heap_mb}m", "-XX:+ExitOnOutOfMemoryError", *(["-XX:TieredStopAtLevel=1"] * self.c1_only),
            "-jar", self.jar,
            "--flink-master", self.flink_master,
            "--job-host", "localhost",
            "--job-port", str(self.port),
            "--artifact-port", "0",
            "--expansion-port", "0",
        ]  # fmt: skip
        if self.conf_dir is not None:
            cmd += ["--flink-conf-dir", str(self.conf_dir)]
        return cmd

    def start(self) -> "JobServer":
        self.port = _free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        cmd = self.command()
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
            )
        except FileNotFoundError as exc:
            raise FlinkStartError("`java` is not on PATH: the Flink job server needs Java 11 or newer") from exc
        finally:
            log.close()
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise FlinkStartError(f"the Flink job server exited with code {self.proc.returncode} (log: {self.log_path})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise FlinkStartError(f"the Flink job server did not listen within {STARTUP_SECONDS:.0f} s (log: {self.log_path})")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def with_job_server(beam_args: list[str], own: OwnJobServer | None) -> tuple[list[str], JobServer | None]:
    """Beam's arguments with the job server a Flink job is sent to, and the one started here (None:
    none). A `--job_endpoint` given is kept; with `own`, the launcher's job server is started and named
    by `--job_endpoint`; else the cached jar is given to Beam to start (`cached_job_server`). Not on
    Flink: the arguments as they are. `FlinkStartError` (one sentence) when no job server can be had."""
    if not on_flink(beam_args) or flag_given(beam_args, "job_endpoint"):
        return beam_args, None
    if own is None:
        return cached_job_server(beam_args), None
    jar = flag_value(beam_args, "flink_job_server_jar") or cached_job_server_jar()
    if jar is None:
        raise FlinkStartError(NOT_CACHED)
    master = flag_value(beam_args, "flink_master") or "[local]"
    server = JobServer(jar, "[local]" if master == "[auto]" else master, own.log, conf_dir=own.conf_dir,
                       heap_mb=own.heap_mb, c1_only=own.bounded).start()
    kept = [a for a in beam_args if not a.startswith("--flink_job_server_jar")]
    return [*kept, f"--job_endpoint={server.endpoint}"], server

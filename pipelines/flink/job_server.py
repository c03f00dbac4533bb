"""The Flink job server as a child of the launcher: it dies with it, and says nothing on the terminal.

Role: `stream` (and any job on `--runner FlinkRunner`) needs Beam's Flink job
server, a JVM that with `--flink_master=[local]` also holds the embedded Flink
cluster. Beam starts it itself and stops it only at a clean interpreter exit,
so a launcher killed with SIGKILL left it running (and restarting the job).
Here the launcher starts it with a parent-death signal (Linux `prctl`), its
logs go to a file, and the job is sent to it through `--job_endpoint`.
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
from pathlib import Path

__all__ = ["JobServer", "JobServerError", "default_heap_mb"]

_PR_SET_PDEATHSIG = 1


class JobServerError(RuntimeError):
    """The job server did not start."""


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
        self, jar: str, flink_master: str, log_path: Path, startup_seconds: float = 180.0, conf_dir: Path | None = None,
        heap_mb: int | None = None,
    ) -> None:
        self.jar = jar
        self.flink_master = flink_master
        self.conf_dir = conf_dir  # Flink's configuration for the embedded cluster (a restore point, for one)
        self.log_path = log_path
        self.startup_seconds = startup_seconds
        self.heap_mb = heap_mb or default_heap_mb()
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"localhost:{self.port}"

    def command(self) -> list[str]:
        """The job server's command line (on `self.port`)."""
        cmd = [
            "java", f"-Xmx{self.heap_mb}m", "-XX:+ExitOnOutOfMemoryError", "-jar", self.jar,
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
            raise JobServerError("`java` is not on PATH: the Flink job server needs Java 11 or newer") from exc
        finally:
            log.close()
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise JobServerError(f"the Flink job server exited with code {self.proc.returncode} (log: {self.log_path})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise JobServerError(f"the Flink job server did not listen within {self.startup_seconds:.0f} s (log: {self.log_path})")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "JobServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

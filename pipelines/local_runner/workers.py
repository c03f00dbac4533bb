"""Python worker processes on this machine for Beam's local runner: `reassess --workers N`.

Role: gives the local runner (FnApiRunner) N SDK worker processes through Beam's
EXTERNAL environment: the runner asks a worker pool (Beam's `BeamFnExternalWorkerPool`
gRPC service, as `apache_beam.runners.worker.worker_pool_main` serves it) to start
each worker, and the worker is Beam's own `SdkHarness`, connected to the runner's
control endpoint. The runner hands each stage's input out to the N workers and
groups between stages as usual (one `GroupByKey` stays one keyed step).

What this pool does differently from `worker_pool_main`: its workers are made when
the pool is, before the job is built, not when the runner asks; the runner's request
only tells a waiting worker where to connect. Beam's pool (and the local runner's
`multi_processing` mode) starts a new interpreter per worker, which imports Beam,
pyarrow and the project again (bench/README.md, "Worker processes"). Here, when the launcher runs no other thread yet (a
`footprint-audit` process: the pool is made before Beam starts any), each worker is
`fork()`ed from it with everything imported. Otherwise (a test session or a library
caller that already ran Beam, whose gRPC threads a fork would not carry over) each
worker is a new interpreter started at once (`spawned_main`, after the quiet of log lines), so its
imports overlap with the building of the job.

Workers die with the launcher (`PR_SET_PDEATHSIG` on Linux) and are waited for, or
killed, when the pool is closed: no orphans. They ignore Ctrl-C and SIGTERM, which the launcher
handles. A worker's stderr passes the project's own lines (progress); anything else
printed there (Beam's harness prints each failed bundle's traceback besides logging
it) only when `$FOOTPRINT_AUDIT_LOG` shows errors (`pipelines.launch.quiet`): by default a
failed job is the launcher's one sentence.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from typing import Any

import pyarrow  # noqa: F401 - its threads start at import, before `_IMPORT_THREADS` is taken

from footprint_audit.pipelines.launch import ignore_stop_signals
from footprint_audit.transforms.process import WORKER_ENV

__all__ = ["WorkerPool", "cores", "default_workers", "can_fork", "die_with_parent", "WORKERS_ENV"]

#: Environment variable giving `--workers`' default (else every core of this machine).
WORKERS_ENV = "FOOTPRINT_AUDIT_WORKERS"


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_workers() -> int:
    """`--workers`' default: `$FOOTPRINT_AUDIT_WORKERS` when it is a positive number, else every core."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return cores()


def _threads() -> set[str]:
    """This process's OS threads (Linux; empty where /proc cannot tell)."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


#: The threads this process had once its modules were imported: pyarrow starts two (jemalloc's
#: background thread and Arrow's own), both made safe to fork by their libraries' fork handlers.
_IMPORT_THREADS = _threads()
#: How gRPC's threads are named (a process that has run gRPC is not forked).
_GRPC_THREADS = ("grpc", "default-executo", "resolver-execu", "timer")


def _thread_name(tid: str) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def can_fork() -> bool:
    """True when a fork copies a consistent process: no Python thread but this one, and no OS
    thread but those the imports started (no gRPC, no runner: Beam has not run here yet)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    now = _threads()
    if not now or not now <= _IMPORT_THREADS | {str(threading.get_native_id())}:
        return False
    return not any(_thread_name(t).startswith(_GRPC_THREADS) for t in now)


def die_with_parent(parent: int | None = None) -> None:
    """Ask Linux to kill this process when its parent dies (no orphans after a crash or SIGKILL).

    `parent`: the parent's process id, taken before the fork. Linux watches the parent this process
    has when it asks: a parent that died between the fork and the request is never reported, so a
    child that finds itself handed to another process already is killed here.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


#: How the project's own lines on stderr begin (progress lines: `transforms.process.progress.Ticker`).
OWN_LINES = "footprint-audit"


class _WorkerStderr:
    """A worker's `sys.stderr`: the project's own lines pass; other text passes only when
    `$FOOTPRINT_AUDIT_LOG` shows errors (`pipelines.launch.quiet`), like the log lines it stands beside."""

    def __init__(self, stream: Any) -> None:
        from footprint_audit.pipelines.launch import shown_level

        level = shown_level()
        self._stream = stream
        self._all = level is not None and level <= logging.ERROR

    def write(self, text: str) -> int:
        if self._all or text.startswith(OWN_LINES):
            return self._stream.write(text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding: the terminal's
        return getattr(self._stream, name)


def _serve(assignment: bytes) -> int:
    """Run one SDK worker for the runner named in `assignment` (`control URL\\nworker id`)."""
    if not assignment.strip():
        return 0  # the pool closed before the runner asked for this worker
    url, _, worker_id = assignment.decode().strip().partition("\n")
    from apache_beam.runners.worker.sdk_worker import SdkHarness

    sys.stderr = _WorkerStderr(sys.stderr)
    os.environ[WORKER_ENV] = worker_id.replace("_", " ")  # its progress lines say whose counts they are
    SdkHarness(url, worker_id=worker_id).run()
    return 0


def _forked_worker(read_fd: int, parent: int) -> None:
    """The body of a forked worker: wait for its assignment, serve it, exit without the parent's atexit."""
    code = 1
    try:
        ignore_stop_signals()
        die_with_parent(parent)
        with os.fdopen(read_fd, "rb") as f:
            assignment = f.read()
        code = _serve(assignment)
    except BaseException:  # noqa: BLE001 - a worker's error is the runner's to report
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class _Worker:
    """One waiting worker process and the pipe that tells it where to connect."""

    def __init__(self, pid: int, pipe: int, proc: subprocess.Popen | None = None) -> None:
        self.pid = pid
        self.pipe: int | None = pipe
        self.proc = proc

    def assign(self, control_url: str, worker_id: str) -> None:
        assert self.pipe is not None
        os.write(self.pipe, f"{control_url}\n{worker_id}".encode())
        self.release()

    def release(self) -> None:
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None

    def poll(self) -> bool:
        """True once the process has exited (and was reaped)."""
        if self.proc is not None:
            return self.proc.poll() is not None
        try:
            pid, _status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        return pid != 0

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class WorkerPool:
    """N SDK worker processes behind Beam's worker-pool service on 127.0.0.1.

    `address` is the pool's endpoint for `ExternalEnvironment`; `forked` says how the
    workers were made.
    """

    def __init__(self, n: int, beam_args: list[str] | None = None) -> None:
        self.forked = can_fork()
        self._beam_args = list(beam_args or [])
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._server: Any = None
        self.address = ""
        try:
            for _ in range(n):
                worker = self._fork() if self.forked else self._spawn()
                self._idle.append(worker)
                self._all.append(worker)
            self._start_service()
        except BaseException:
            self.close()
            raise

    def _fork(self) -> _Worker:
        read_fd, write_fd = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            os.close(write_fd)
            for other in self._all:
                other.release()
            _forked_worker(read_fd, parent)
        os.close(read_fd)
        return _Worker(pid, write_fd)

    def _spawn(self) -> _Worker:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SPAWNED],
            stdin=subprocess.PIPE,
            env=_worker_env(self._beam_args),
        )
        assert proc.stdin is not None
        pipe = os.dup(proc.stdin.fileno())
        proc.stdin.close()
        return _Worker(proc.pid, pipe, proc)

    def _start_service(self) -> None:
        import grpc
        from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc

        pool = self

        class Service(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
            def StartWorker(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
                if not pool._idle:
                    return beam_fn_api_pb2.StartWorkerResponse(error="footprint-audit: no idle worker left")
                pool._idle.pop(0).assign(request.control_endpoint.url, request.worker_id)
                return beam_fn_api_pb2.StartWorkerResponse()

            def StopWorker(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
                return beam_fn_api_pb2.StopWorkerResponse()  # a worker ends when the runner hangs up

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(Service(), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.address = f"127.0.0.1:{port}"

    def close(self, timeout: float = 10.0) -> None:
        """Stop the service; wait for the workers (they end when the runner hangs up), then kill the rest."""
        for worker in self._idle:
            worker.release()  # an unassigned worker reads end-of-file and exits
        self._idle.clear()
        if self._server is not None:
            self._server.stop(None)
            self._server = None
        deadline = time.monotonic() + timeout
        waiting = list(self._all)
        while waiting and time.monotonic() < deadline:
            waiting = [w for w in waiting if not w.poll()]
            if waiting:
                time.sleep(0.01)
        for worker in waiting:
            worker.kill()
            while not worker.poll():
                time.sleep(0.01)
        self._all.clear()


#: A spawned worker's program: log lines quieted before any import of Beam, then `spawned_main`.
_SPAWNED = ("from footprint_audit.pipelines.launch import install; install(); "
            "from footprint_audit.pipelines.local_runner import workers; raise SystemExit(workers.spawned_main())")


#: A spawned worker's Beam options (JSON), for its file systems (a forked one has the launcher's).
_BEAM_ARGS_ENV = "FOOTPRINT_AUDIT_WORKER_BEAM_ARGS"


def _worker_env(beam_args: list[str]) -> dict[str, str]:
    """A spawned worker's environment: the launcher's, with the project importable and the job's Beam options."""
    top = sys.modules[(__package__ or "pipelines").split(".")[0]]  # the project's top-level package
    root = os.path.dirname(os.path.dirname(os.path.abspath(top.__file__ or "")))
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""), **{_BEAM_ARGS_ENV: json.dumps(beam_args)})


def spawned_main() -> int:
    """A spawned worker: import what the job's steps use while the launcher builds the job, then serve."""
    ignore_stop_signals()
    die_with_parent()
    import apache_beam.runners.worker.sdk_worker  # noqa: F401
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    # The launcher's file systems (s3://, gs://) take their endpoint and credentials from these.
    FileSystems.set_options(PipelineOptions(json.loads(os.environ.get(_BEAM_ARGS_ENV) or "[]")))

    # The steps' rooms, imported before the runner asks for them.
    import footprint_audit.pipelines.inputs  # noqa: F401
    import footprint_audit.transforms.decode  # noqa: F401
    import footprint_audit.transforms.join  # noqa: F401
    import footprint_audit.transforms.read  # noqa: F401
    import footprint_audit.transforms.write  # noqa: F401

    return _serve(sys.stdin.buffer.read())


if __name__ == "__main__":
    sys.exit(spawned_main())

#!/usr/bin/env python3
"""A local Flink session cluster of separate processes, with a Beam Python worker pool.

Role: where `footprint-audit reassess` and `stream` run on a real Flink cluster on this
machine (`--flink_master localhost:PORT`), and what `tests/integration/test_flink_cluster.py`
starts. Three processes, each in its own process group, each logging to a file under
the state folder:

* the JobManager, `java ... StandaloneSessionClusterEntrypoint` (Flink's REST on PORT);
* one TaskManager, `java ... TaskManagerRunner`, with `--slots` slots (default 2);
* Beam's worker pool, `python -m apache_beam.runners.worker.worker_pool_main`, which
  starts one Python SDK worker process per slot the job asks for
  (`--environment_type=EXTERNAL --environment_config=localhost:POOL`).

The JVMs run from the jars `tools/fetch_jars.py` caches (Flink 1.19.0's runtime,
clients and RPC modules from Maven Central; `flink-dist` is not served), with the
configuration in `STATE/conf/config.yaml`: every TaskManager memory size set
explicitly (without Flink's shell scripts the TaskManager computes none) and 256m of
network memory (64m is too few buffers for two slots). Everything binds to localhost,
on free ports unless given.

    python tools/flink_cluster.py start     # prints the flags for reassess / stream
    python tools/flink_cluster.py status
    python tools/flink_cluster.py stop

The state folder defaults to `$FOOTPRINT_AUDIT_FLINK_STATE`, else
`~/.cache/footprint-audit/flink-cluster`. `start` waits (generously) until the
TaskManager's slots are registered and the pool accepts connections; a process that
dies on the way stops the others and is reported with its log's tail. `stop` sends
SIGTERM to each process group, then SIGKILL after `--grace` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["start", "stop", "status", "beam_flags", "ClusterError", "default_state"]

JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"

#: TaskManager memory, every component given (Flink's scripts would otherwise derive them).
TASKMANAGER_MEMORY = {
    "taskmanager.memory.framework.heap.size": "128m",
    "taskmanager.memory.task.heap.size": "512m",
    "taskmanager.memory.managed.size": "128m",
    "taskmanager.memory.framework.off-heap.size": "128m",
    "taskmanager.memory.task.off-heap.size": "64m",
    "taskmanager.memory.network.min": "256m",
    "taskmanager.memory.network.max": "256m",
    "taskmanager.memory.jvm-metaspace.size": "256m",
    "taskmanager.memory.jvm-overhead.min": "192m",
    "taskmanager.memory.jvm-overhead.max": "192m",
}
JOBMANAGER_JVM = ["-Xms256m", "-Xmx768m", "-XX:MaxMetaspaceSize=256m"]
TASKMANAGER_JVM = ["-Xms640m", "-Xmx640m", "-XX:MaxDirectMemorySize=512m", "-XX:MaxMetaspaceSize=256m"]


class ClusterError(RuntimeError):
    """The cluster could not be started or stopped; the message is one sentence (plus a log tail)."""


def default_state() -> Path:
    env = os.environ.get("FOOTPRINT_AUDIT_FLINK_STATE")
    return Path(env).expanduser() if env else Path("~/.cache/footprint-audit/flink-cluster").expanduser()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(state: Path, ports: dict[str, int], slots: int) -> str:
    values: dict[str, Any] = {
        "jobmanager.rpc.address": "localhost",
        "jobmanager.bind-host": "localhost",
        "jobmanager.rpc.port": ports["rpc"],
        "jobmanager.memory.process.size": "1024m",
        "rest.address": "localhost",
        "rest.bind-address": "localhost",
        "rest.port": ports["rest"],
        "blob.server.port": ports["blob"],
        "taskmanager.host": "localhost",
        "taskmanager.bind-host": "localhost",
        "taskmanager.rpc.port": ports["taskmanager"],
        "taskmanager.data.port": ports["data"],
        "taskmanager.numberOfTaskSlots": slots,
        "taskmanager.cpu.cores": slots,
        "parallelism.default": slots,
        "io.tmp.dirs": str(state / "tmp"),
        "web.tmpdir": str(state / "tmp" / "web"),
        "env.java.opts.all": " ".join(_java17_flags()),
        **TASKMANAGER_MEMORY,
    }
    return "".join(f"{k}: {json.dumps(v) if isinstance(v, str) else v}\n" for k, v in values.items())


def _java17_flags() -> list[str]:
    from tools import jars

    return list(jars.JAVA17_FLAGS)


def _lib() -> Path:
    """The cached Flink/Beam class path; fetched by `tools/fetch_jars.py` (Maven) when missing."""
    from tools import jars

    lib = Path(jars.default_cache_dir()) / jars.beam_spec()["name"] / "lib"
    if not (lib.parent / ".complete").is_file():
        lib = Path(jars.ensure_jars()["beam_lib"])
    return lib


def beam_flags(info: dict) -> list[str]:
    """The Beam options that run a job on this cluster, its Python steps in the pool's workers."""
    return [
        "--runner=FlinkRunner",
        f"--flink_master=localhost:{info['rest_port']}",
        "--environment_type=EXTERNAL",
        f"--environment_config=localhost:{info['pool_port']}",
    ]


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our child (started by another `start`): ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _launch(name: str, cmd: list[str], state: Path, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> dict:
    log = state / "log" / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd or state, env=env, start_new_session=True)
    return {"name": name, "pid": proc.pid, "log": str(log)}


def _wait(what: str, ready, procs: list[dict], timeout: float) -> None:
    """Poll `ready()` until true; fail at once when one of `procs` has died, or at `timeout`."""
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        for p in procs:
            if not _alive(p["pid"]):
                raise ClusterError(f"the {p['name']} exited while waiting for {what}; its log "
                                   f"({p['log']}) ends:\n{_tail(Path(p['log']))}")
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} not ready after {timeout:.0f} s; logs are under {Path(procs[0]['log']).parent}")
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)


def _rest(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://localhost:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


def _slots_ready(port: int, slots: int) -> bool:
    managers = _rest(port, "/taskmanagers").get("taskmanagers", [])
    return sum(m.get("slotsNumber", 0) for m in managers) >= slots


def _port_open(port: int) -> bool:
    with socket.create_connection(("localhost", port), timeout=2):
        return True


def start(state: Path | None = None, rest_port: int = 0, pool_port: int = 0, slots: int = 2,
          timeout: float = 300.0) -> dict:
    """Start JobManager, TaskManager and worker pool; return what `status` prints (ports, pids, flags)."""
    state = Path(state) if state else default_state()
    if (state / "cluster.json").exists() and status(state)["running"]:
        raise ClusterError(f"a cluster is already running from {state}; stop it first")
    java = shutil.which("java")
    if not java:
        raise ClusterError("`java` not found on PATH: install a JDK 17 (Debian: apt-get install -y openjdk-17-jdk-headless)")
    lib = _lib()
    for sub in ("conf", "log", "tmp"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    ports = {"rest": rest_port or _free_port(), "rpc": _free_port(), "blob": _free_port(),
             "taskmanager": _free_port(), "data": _free_port(), "pool": pool_port or _free_port()}
    (state / "conf" / "config.yaml").write_text(_config(state, ports, slots))
    classpath = f"{lib}{os.sep}*"
    base = [java, *_java17_flags(), "-cp", classpath]
    conf = ["--configDir", str(state / "conf")]
    # The pool starts its workers as `python -c ...` from PATH: this interpreter's folder goes first.
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    procs: list[dict] = []
    info = {"state": str(state), "rest_port": ports["rest"], "pool_port": ports["pool"], "slots": slots,
            "processes": procs}
    try:
        procs.append(_launch("jobmanager", [*base, *JOBMANAGER_JVM, JOBMANAGER_MAIN, *conf], state))
        procs.append(_launch("taskmanager", [*base, *TASKMANAGER_JVM, TASKMANAGER_MAIN, *conf], state))
        # The workers run in the folder the cluster was started from: relative input and output
        # paths of a job submitted from there mean the same files as on the local runner.
        procs.append(_launch("worker-pool", [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                                             f"--service_port={ports['pool']}"], state, env, cwd=Path.cwd()))
        _write(state, info)
        _wait("the worker pool", lambda: _port_open(ports["pool"]), procs, timeout)
        _wait(f"{slots} TaskManager slots", lambda: _slots_ready(ports["rest"], slots), procs, timeout)
    except BaseException:
        stop(state)
        raise
    info["flags"] = beam_flags(info)
    _write(state, info)
    return info


def _write(state: Path, info: dict) -> None:
    tmp = state / "cluster.json.tmp"
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, state / "cluster.json")


def status(state: Path | None = None) -> dict:
    """What `cluster.json` says, with `running` true when every process is alive."""
    state = Path(state) if state else default_state()
    try:
        info = json.loads((state / "cluster.json").read_text())
    except (OSError, ValueError):
        return {"state": str(state), "running": False, "processes": []}
    info["running"] = bool(info["processes"]) and all(_alive(p["pid"]) for p in info["processes"])
    return info


def stop(state: Path | None = None, grace: float = 30.0) -> list[str]:
    """SIGTERM each process group, SIGKILL what is left after `grace` s; returns the names stopped."""
    state = Path(state) if state else default_state()
    info = status(state)
    procs = [p for p in info.get("processes", []) if _alive(p["pid"])]
    for p in reversed(procs):
        _signal_group(p["pid"], signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p["pid"]) for p in procs):
        time.sleep(0.1)
    for p in procs:
        _signal_group(p["pid"], signal.SIGKILL)
    # The pool's workers are in its group; wait until the group is gone too.
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_group_alive(p["pid"]) for p in procs):
        time.sleep(0.1)
    try:
        (state / "cluster.json").unlink()
    except FileNotFoundError:
        pass
    return [p["name"] for p in procs]


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if _alive(pgid):
        return True
    # Only zombies or exited processes may remain in the group: reap ours.
    try:
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                fields = (proc / "stat").read_text().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["start", "stop", "status"])
    ap.add_argument("--state", help="state folder (default: $FOOTPRINT_AUDIT_FLINK_STATE or "
                    "~/.cache/footprint-audit/flink-cluster)")
    ap.add_argument("--port", type=int, default=0, help="Flink's REST port (default: a free one)")
    ap.add_argument("--pool-port", type=int, default=0, help="the worker pool's port (default: a free one)")
    ap.add_argument("--slots", type=int, default=2, help="TaskManager slots: the job's parallelism (default 2)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the cluster (default 300)")
    ap.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL on stop")
    args = ap.parse_args(argv)
    state = Path(args.state).expanduser() if args.state else default_state()
    try:
        if args.command == "start":
            info = start(state, args.port, args.pool_port, args.slots, args.timeout)
            print(f"flink cluster: running (REST localhost:{info['rest_port']}, worker pool "
                  f"localhost:{info['pool_port']}, {info['slots']} slots; logs in {state / 'log'})")
            print("run a job on it with: " + " ".join(info["flags"]) + f" --parallelism={info['slots']}")
        elif args.command == "stop":
            stopped = stop(state, args.grace)
            print(f"flink cluster: stopped {', '.join(stopped)}" if stopped else "flink cluster: nothing running")
        else:
            info = status(state)
            if not info["running"]:
                print(f"flink cluster: not running ({state})")
                return 1
            print("flink cluster: running; " + " ".join(info["flags"]) + f" --parallelism={info['slots']}")
    except (ClusterError, RuntimeError) as exc:
        print(f"flink_cluster: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

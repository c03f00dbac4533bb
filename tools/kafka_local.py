#!/usr/bin/env python3
"""A local single-node Kafka broker (KRaft) on 127.0.0.1, from the jars tools/fetch_jars.py caches.

As a command, a broker that outlives it, for trying `footprint-audit stream`::

    python tools/kafka_local.py start [--dir DIR] [--port 9092]   # prints "bootstrap 127.0.0.1:9092"
    python tools/kafka_local.py status | stop                     # same --dir
    python tools/kafka_local.py topic NAME [--partitions N]
    python tools/kafka_local.py produce-file 'examples/recordings/**' --topic agent-events

DIR (default ``~/.cache/footprint-audit/kafka``) holds the config, the data,
``broker.log`` and ``kafka.json`` (pid and ports of the running broker).

As a library, the integration tests' broker (own temporary dir, free ports)::

    with KafkaBroker(jars["kafka_lib"]) as broker:
        broker.create_topic("runs", partitions=2)
        broker.produce("runs", [b'{"a": 1}'], keys=[b"run-1"])
        broker.bootstrap  # "127.0.0.1:PORT"

Records up to 64 MiB are accepted (``message.max.bytes``); there is no fsync
per record. Clients: ``kafka-python`` when importable, else Kafka's own Java
tools (``FOOTPRINT_AUDIT_KAFKA_CLIENT=java|python`` forces one). ``stop()``
sends SIGTERM to the broker's process group, then SIGKILL after a timeout.
"""
from __future__ import annotations

import argparse
import logging
import base64
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Sequence

try:  # optional: pure-Python client (pip install kafka-python==3.0.12)
    import kafka as _kafka_python  # type: ignore
except ImportError:  # pragma: no cover - exercised when absent
    _kafka_python = None

REPO = Path(__file__).resolve().parents[1]

#: The largest record batch the broker accepts and the producer sends (64 MiB).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_PORT = 9092
DEFAULT_DIR = "~/.cache/footprint-audit/kafka"
STATE_FILE = "kafka.json"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as the broker's own listener does: connections of a broker just stopped, still in
        # TIME_WAIT, do not keep the port from being listened on again
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def new_cluster_id() -> str:
    """A random KRaft cluster id (base64url of a UUID) that does not start with '-'.

    kafka-storage's argument parser takes an id starting with '-' for an option and fails
    ("argument --cluster-id/-t: expected one argument"), about one format in 64; Kafka's own
    id generator skips such ids the same way.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class BrokerError(RuntimeError):
    pass


_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
"""


def _as_bytes(v: bytes | str | None) -> bytes | None:
    if v is None:
        return None
    return v.encode() if isinstance(v, str) else bytes(v)


def _aligned(name: str, items: Sequence | None, n: int) -> Iterable:
    if items is None:
        return itertools.repeat(None, n)
    if len(items) != n:
        raise ValueError(f"{name} has {len(items)} items for {n} values")
    return items


class KafkaBroker:
    """One broker+controller JVM on 127.0.0.1; a context manager (see the module doc)."""

    def __init__(self, kafka_lib: str | os.PathLike, *, java: str | None = None,
                 workdir: str | os.PathLike | None = None, port: int | None = None,
                 heap: str = "512m", startup_timeout: float = 120.0,
                 use_python_client: bool | None = None) -> None:
        self.lib = Path(kafka_lib)
        if not any(self.lib.glob("kafka_2.13-*.jar")):
            raise BrokerError(f"no kafka_2.13 jar in {self.lib}: run tools/fetch_jars.py")
        self.java = java or shutil.which("java")
        if not self.java:
            raise BrokerError("`java` not found on PATH (Kafka 4.x needs Java 17+)")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kafka-broker-"))
        self.requested_port = port
        self.heap = heap
        self.startup_timeout = startup_timeout
        if use_python_client is None:
            forced = os.environ.get("FOOTPRINT_AUDIT_KAFKA_CLIENT", "").lower()
            use_python_client = (_kafka_python is not None if forced not in ("java", "python")
                                 else forced == "python")
        if use_python_client and _kafka_python is None:
            raise BrokerError("kafka-python is not installed (pip install kafka-python==3.0.12)")
        self.use_python_client = use_python_client
        self.port: int | None = None
        self.controller_port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "broker.log"
        self.started_in: float | None = None
        #: Called with the broker once its JVM is spawned, before it serves (the CLI records its pid).
        self.on_spawn: Callable[["KafkaBroker"], None] | None = None

    # -- lifecycle ---------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _classpath(self) -> str:
        return str(self.lib) + os.sep + "*"

    def _java_cmd(self, main: str, *args: str, heap: str = "256m") -> list[str]:
        return [self.java, f"-Xmx{heap}", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",  # short-lived tools: start fast
                f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
                "-cp", self._classpath(), main, *args]

    def _write_config(self) -> None:
        self.port = self.requested_port or free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        data = self.workdir / "data"
        # No log.flush.interval.messages: the OS flushes (an fsync per record
        # made producing 100k records take minutes).  No time retention: records
        # replayed from history carry their events' (old) times, and the default
        # seven days deleted them within minutes of the broker's start.
        props = f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{self.controller_port}
listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
message.max.bytes={MAX_MESSAGE_BYTES}
replica.fetch.max.bytes={MAX_MESSAGE_BYTES}
log.retention.ms=-1
"""
        (self.workdir / "server.properties").write_text(props)
        (self.workdir / "log4j.properties").write_text(_LOG4J)

    def start(self) -> "KafkaBroker":
        """Start the broker (formatting its data dir unless already formatted); wait until it serves."""
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        if not (self.workdir / "data" / "meta.properties").exists():
            cluster_id = new_cluster_id()
            fmt = subprocess.run(
                self._java_cmd("kafka.tools.StorageTool", "format", "-t", cluster_id,
                               "-c", str(self.workdir / "server.properties")),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            if fmt.returncode != 0:
                raise BrokerError(f"kafka-storage format failed ({fmt.returncode}):\n{fmt.stdout}")
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                [self.java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC",
                 "-Djava.awt.headless=true",
                 f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
                 "-cp", self._classpath(), "kafka.Kafka",
                 str(self.workdir / "server.properties")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)  # own session and process group: kill it whole
        finally:
            log.close()
        try:
            if self.on_spawn is not None:
                self.on_spawn(self)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - t0
        return self

    def _log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no broker log)"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerError(f"Kafka broker exited with {self.proc.returncode}:\n"
                                  f"{self._log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.25)
                continue
            if "Kafka Server started" in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.25)
        raise BrokerError(f"Kafka broker not ready after {self.startup_timeout:.0f}s:\n"
                          f"{self._log_tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the broker's process group, wait `timeout` s, then SIGKILL it."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)
        if self._own_workdir and not os.environ.get("FOOTPRINT_AUDIT_KEEP_BROKER_DIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def detach(self) -> int:
        """Forget the broker process without stopping it (the CLI's `start`); returns its pid."""
        proc, self.proc = self.proc, None
        proc.returncode = 0  # deliberate: it runs on; Popen.__del__ must not warn or reap it
        return proc.pid

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc: object) -> bool:
        self.stop()
        return False

    # -- topics and records ------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> None:
        if self.use_python_client:
            from kafka.admin import KafkaAdminClient, NewTopic
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                     client_id="footprint-audit-kafka-local")
            try:
                admin.create_topics([NewTopic(name, partitions, 1)])
            finally:
                admin.close()
        else:
            out = subprocess.run(
                self._java_cmd("org.apache.kafka.tools.TopicCommand",
                               "--bootstrap-server", self.bootstrap, "--create",
                               "--topic", name, "--partitions", str(partitions),
                               "--replication-factor", "1"),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            if out.returncode != 0:
                raise BrokerError(f"TopicCommand --create {name} failed:\n{out.stdout}")

    def topics(self) -> set[str]:
        """The names of the topics the broker has (Python client only)."""
        from kafka.admin import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                 client_id="footprint-audit-kafka-local")
        try:
            return set(admin.list_topics())
        finally:
            admin.close()

    def produce(self, topic: str, values: Iterable[bytes | str],
                keys: Sequence[bytes | str | None] | None = None,
                timestamps_ms: Sequence[int | None] | None = None,
                partitions: Sequence[int | None] | None = None,
                timeout: float = 300.0) -> int:
        """Append records (bytes or str) to `topic`; returns how many, once all are acked.

        `keys`, `timestamps_ms` (each record's CreateTime; None: the producer's
        clock) and `partitions` (None: chosen from the key) are aligned with
        `values`. The Python client batches (all sent, then one flush), so 100k
        small records take seconds; records up to `MAX_MESSAGE_BYTES` pass.
        """
        values = [_as_bytes(v) for v in values]
        n = len(values)
        keys = None if keys is None else [_as_bytes(k) for k in keys]
        if self.use_python_client:
            from kafka import KafkaProducer
            config = dict(bootstrap_servers=self.bootstrap, acks="all",
                          linger_ms=50, batch_size=1024 * 1024,
                          max_request_size=MAX_MESSAGE_BYTES,
                          request_timeout_ms=120_000, delivery_timeout_ms=int(timeout * 1000))
            if "buffer_memory" in KafkaProducer.DEFAULT_CONFIG:  # kafka-python < 3 only
                config["buffer_memory"] = 4 * MAX_MESSAGE_BYTES
            producer = KafkaProducer(**config)
            try:
                send = producer.send
                futures = [send(topic, value=v, key=k, timestamp_ms=t, partition=p)
                           for v, k, t, p in zip(values, _aligned("keys", keys, n),
                                                 _aligned("timestamps_ms", timestamps_ms, n),
                                                 _aligned("partitions", partitions, n))]
                producer.flush(timeout)
                for i, f in enumerate(futures):
                    if not f.is_done:
                        raise BrokerError(f"record {i} of {n} not acked after {timeout:.0f}s")
                    if f.failed():
                        raise BrokerError(f"record {i} of {n} to {topic} failed: {f.exception!r}")
            finally:
                producer.close(timeout=30)
            return n
        if timestamps_ms is not None or partitions is not None:
            raise ValueError("record timestamps and partitions need the Python client "
                             "(pip install kafka-python)")
        # Java console producer: one record per line, so no newlines inside.
        for v in values:
            if b"\n" in v:
                raise ValueError("the Java fallback producer needs single-line values; "
                                 "install kafka-python for arbitrary bytes")
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic,
                "--producer-property", "acks=all",
                "--producer-property", f"max.request.size={MAX_MESSAGE_BYTES}",
                "--producer-property", f"buffer.memory={2 * MAX_MESSAGE_BYTES}",
                "--producer-property", "linger.ms=50",
                "--producer-property", f"batch.size={1024 * 1024}"]
        if keys is None:
            payload = b"\n".join(values) + b"\n"
        else:
            if len(keys) != n or any(k is None or b"\t" in k for k in keys):
                raise ValueError("the Java fallback producer needs one tab-free, non-null key per value")
            args += ["--property", "parse.key=true",
                     "--property", "key.separator=\t"]
            payload = b"".join(k + b"\t" + v + b"\n" for k, v in zip(keys, values))
        out = subprocess.run(self._java_cmd("org.apache.kafka.tools.ConsoleProducer", *args,
                                            heap="512m"),
                             input=payload, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=timeout)
        if out.returncode != 0:
            raise BrokerError(f"ConsoleProducer failed:\n{out.stdout.decode(errors='replace')}")
        return n


# ---------------------------------------------------------------------------
# The command line: a detached broker whose pid and ports are in DIR/kafka.json.

class CliError(Exception):
    """A refusal printed as one sentence (no traceback); `code` is the exit code."""

    def __init__(self, sentence: str, code: int = 1) -> None:
        super().__init__(sentence)
        self.code = code


def _process_alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): kill(0) is all we know
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _is_our_broker(pid: int, workdir: Path) -> bool:
    """Is `pid` a live Kafka broker of `workdir` (not a reused pid)?"""
    if not _process_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the state file
    return b"kafka.Kafka" in cmdline and str(workdir / "server.properties").encode() in cmdline


def _read_state(workdir: Path) -> dict | None:
    """The running broker's state, or None (a stale state file is removed)."""
    path = workdir / STATE_FILE
    try:
        state = json.loads(path.read_text())
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if _is_our_broker(pid, workdir):
        return state
    path.unlink(missing_ok=True)
    return None


def _write_state(workdir: Path, state: dict) -> None:
    tmp = workdir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(workdir / STATE_FILE)


def _repo_on_path() -> None:
    """Make `pipelines` and `transforms` importable when run as `python tools/kafka_local.py`."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def _cached_kafka_lib() -> Path:
    _repo_on_path()
    from tools import jars
    if not jars.is_fetched():
        raise CliError("The Kafka jars are not cached: run `python tools/fetch_jars.py` first.", 2)
    return Path(jars.ensure_jars(log=lambda _msg: None)["kafka_lib"])


def _attached(workdir: Path) -> KafkaBroker:
    """A KafkaBroker handle on the broker running in `workdir` (not owned: never stopped)."""
    state = _read_state(workdir)
    if state is None:
        raise CliError(f"No Kafka broker runs in {workdir}: start one with "
                       f"`python tools/kafka_local.py start`.")
    try:
        broker = KafkaBroker(state["kafka_lib"], workdir=workdir, port=state["port"])
    except BrokerError as e:
        raise CliError(str(e), 2) from None
    broker.port = state["port"]
    return broker


def cmd_start(args: argparse.Namespace) -> int:
    workdir: Path = args.dir
    running = _read_state(workdir)
    if running is not None:
        if args.port is not None and args.port != running["port"]:
            raise CliError(f"A broker already runs in {workdir} on port {running['port']}; "
                           f"stop it first to use port {args.port}.")
        print(f"already running (pid {running['pid']}, dir {workdir})", file=sys.stderr)
        print(f"bootstrap {running['bootstrap']}")
        return 0
    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 < port < 65536:
        raise CliError(f"--port {port}: not a TCP port.", 2)
    lib = _cached_kafka_lib()
    if not port_is_free(port):
        raise CliError(f"Port {port} on 127.0.0.1 is in use: choose another with --port.")
    try:
        broker = KafkaBroker(lib, workdir=workdir, port=port, heap=args.heap,
                             startup_timeout=args.timeout)
    except BrokerError as e:
        raise CliError(str(e), 2) from None
    if args.fresh:
        shutil.rmtree(workdir / "data", ignore_errors=True)

    def record(b: KafkaBroker, ready: bool = False) -> None:  # `stop` finds it even mid-start
        _write_state(workdir, {"pid": b.proc.pid, "port": b.port,
                               "controller_port": b.controller_port, "ready": ready,
                               "bootstrap": b.bootstrap, "kafka_lib": str(lib),
                               "log": str(b.log_path), "started_at": time.time()})

    broker.on_spawn = record
    try:
        broker.start()
    except BrokerError as e:
        (workdir / STATE_FILE).unlink(missing_ok=True)
        raise CliError(f"The Kafka broker did not start (log: {broker.log_path}):\n{e}") from None
    except BaseException:
        (workdir / STATE_FILE).unlink(missing_ok=True)
        raise
    record(broker, ready=True)
    pid = broker.detach()
    print(f"started in {broker.started_in:.1f}s (pid {pid}, log {broker.log_path})",
          file=sys.stderr)
    print(f"bootstrap {broker.bootstrap}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = _read_state(args.dir)
    if state is None:
        print(f"not running (dir {args.dir})")
        return 1
    serving = state.get("ready") or _answers(state["port"])
    print(f"{'running' if serving else 'starting'}: bootstrap {state['bootstrap']} "
          f"(pid {state['pid']}, dir {args.dir}, log {state['log']})")
    return 0


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _process_alive(pid):
            return True
        time.sleep(0.2)
    return not _process_alive(pid)


def _signal_group(pid: int, sig: int) -> None:
    try:
        if os.getpgid(pid) == pid:  # started with start_new_session: its own group
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def cmd_stop(args: argparse.Namespace) -> int:
    state = _read_state(args.dir)
    if state is None:
        print(f"not running (dir {args.dir})")
        return 0
    pid = int(state["pid"])
    _signal_group(pid, signal.SIGTERM)
    how = "stopped"
    if not _wait_gone(pid, args.timeout):
        _signal_group(pid, signal.SIGKILL)
        how = f"killed (no exit {args.timeout:.0f}s after SIGTERM)"
        if not _wait_gone(pid, 30):
            raise CliError(f"The broker (pid {pid}) survived SIGKILL.")
    (args.dir / STATE_FILE).unlink(missing_ok=True)
    print(f"{how} (pid {pid}, dir {args.dir})")
    return 0


def _ensure_topic(broker: KafkaBroker, name: str, partitions: int) -> bool:
    """Create `name` unless it exists; True when created."""
    if not broker.use_python_client:
        broker.create_topic(name, partitions)
        return True
    from kafka.errors import TopicAlreadyExistsError
    if name in broker.topics():
        return False
    try:
        broker.create_topic(name, partitions)
    except TopicAlreadyExistsError:
        return False
    return True


def cmd_topic(args: argparse.Namespace) -> int:
    broker = _attached(args.dir)
    if args.partitions < 1:
        raise CliError(f"--partitions {args.partitions}: must be at least 1.", 2)
    created = _ensure_topic(broker, args.name, args.partitions)
    print(f"topic {args.name} {'created' if created else 'already exists'} on {broker.bootstrap}")
    return 0


def recording_events(pattern: str) -> tuple[list[tuple[int | None, bytes | None, bytes]], int]:
    """`(wallClockMs or None, run id, JSON envelope)` of every event the recordings
    `pattern` names (a file, folder or glob, as `--input` takes), sorted by event
    time (events without one last, in file order); and how many files were read."""
    _repo_on_path()
    logging.disable(logging.WARNING)  # Beam's import-time "apitools not found" warning
    try:
        import orjson
        from footprint_audit.pipelines.launch.errors import UsageError
        from footprint_audit.pipelines.inputs.patterns import expand_inputs
        from footprint_audit.transforms.decode.sources import read_source
    finally:
        logging.disable(logging.NOTSET)
    try:
        files = [path for path, _size in expand_inputs([pattern])]
    except UsageError as e:
        raise CliError(str(e).replace("--input ", "", 1), 2) from None
    items = []
    for order, path in enumerate(files):
        for run in read_source(path).runs:
            for ev in run.events:
                ms = ev.meta.get("wallClockMs")
                ms = int(ms) if type(ms) in (int, float) else None
                body = orjson.dumps({"type": "agentfootprint." + ev.type,
                                     "payload": ev.payload, "meta": ev.meta})
                key = run.run_id.encode() if run.run_id else None
                items.append((ms is None, ms or 0, order, ev.index, ms, key, body))
    items.sort(key=lambda t: t[:4])
    return [(ms, key, body) for *_order, ms, key, body in items], len(files)


def cmd_produce_file(args: argparse.Namespace) -> int:
    broker = _attached(args.dir)
    events, n_files = recording_events(args.pattern)
    if not events:
        raise CliError(f"{args.pattern}: {n_files} file(s) but no readable event in them.")
    if _ensure_topic(broker, args.topic, args.partitions):
        print(f"topic {args.topic} created ({args.partitions} partition(s))", file=sys.stderr)
    too_big = [len(body) for _ms, _key, body in events if len(body) > MAX_MESSAGE_BYTES - 1024]
    if too_big:
        raise CliError(f"{len(too_big)} event(s) are larger than the broker's {MAX_MESSAGE_BYTES} "
                       f"bytes limit (largest {max(too_big)} bytes).")
    t0 = time.monotonic()
    n = broker.produce(args.topic, [b for _ms, _k, b in events],
                       keys=[k for _ms, k, _b in events] if broker.use_python_client else None,
                       timestamps_ms=[ms for ms, _k, _b in events] if broker.use_python_client else None)
    print(f"produced {n} events from {n_files} file(s) to {args.topic} on {broker.bootstrap} "
          f"in {time.monotonic() - t0:.1f}s")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence, exit 2, no usage block
        raise CliError(f"{self.prog}: {message}", 2)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="kafka_local.py",
                 description="A local single-node Kafka (KRaft) on 127.0.0.1 for trying "
                             "`footprint-audit stream`.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", type=lambda s: Path(s).expanduser().absolute(),
                        default=Path(DEFAULT_DIR).expanduser(),
                        help=f"the broker's config, data, log and state (default {DEFAULT_DIR})")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("start", parents=[common], help="start a detached broker; print its bootstrap")
    p.add_argument("--port", type=int, default=None, help=f"listener port (default {DEFAULT_PORT})")
    p.add_argument("--heap", default="512m", help="broker JVM heap (default 512m)")
    p.add_argument("--fresh", action="store_true", help="delete DIR's topics and records first")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait until it serves")
    p.set_defaults(func=cmd_start)
    p = sub.add_parser("status", parents=[common], help="whether a broker runs (exit 0) or not (1)")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("stop", parents=[common], help="stop it (SIGTERM, then SIGKILL)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL (default 30)")
    p.set_defaults(func=cmd_stop)
    p = sub.add_parser("topic", parents=[common], help="create a topic (no-op when it exists)")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, default=1)
    p.set_defaults(func=cmd_topic)
    p = sub.add_parser("produce-file", parents=[common],
                       help="produce every event of recordings (file, folder or glob), one record each")
    p.add_argument("pattern", metavar="FILE_GLOB")
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=1,
                   help="partitions if the topic must be created (default 1)")
    p.set_defaults(func=cmd_produce_file)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except CliError as e:
        print(str(e), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the broker or the client failed: one line, not a traceback
        if _kafka_python is not None:
            from kafka.errors import KafkaError
            if isinstance(e, KafkaError):
                print(f"Kafka client error: {e!r}", file=sys.stderr)
                return 1
        if isinstance(e, BrokerError):
            print(str(e), file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())

"""A real single-node Kafka broker (KRaft, combined broker+controller) for tests.

Runs the jars that tools/fetch_jars.py caches (``kafka_2.13`` + ``kafka-tools``
runtime classpath) as ``java -cp 'lib/*' kafka.Kafka server.properties``, on
127.0.0.1 only, with two free ports, in a temporary directory::

    with KafkaBroker(jars["kafka_lib"]) as broker:
        broker.create_topic("runs", partitions=1)
        broker.produce("runs", [b'{"a": 1}', ...])
        ... broker.bootstrap  # "127.0.0.1:PORT"

Producing and topic creation use the pure-Python client ``kafka-python`` when
it is importable (FOOTPRINT_AUDIT_KAFKA_CLIENT=java|python forces one), else
Kafka's own Java tools from the same classpath
(``org.apache.kafka.tools.TopicCommand`` / ``ConsoleProducer``: about 1-2 s of
JVM start each).  ``stop()`` sends SIGTERM to the broker's process group,
waits, then SIGKILLs; ``__exit__`` always stops it, also when the test failed
or the broker never came up (its log is then put in the exception text).
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

try:  # optional: pure-Python client (pip install kafka-python==3.0.12)
    import kafka as _kafka_python  # type: ignore
except ImportError:  # pragma: no cover - exercised when absent
    _kafka_python = None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


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


class KafkaBroker:
    def __init__(self, kafka_lib: str | os.PathLike, *, java: str | None = None,
                 workdir: str | os.PathLike | None = None, heap: str = "512m",
                 startup_timeout: float = 120.0, use_python_client: bool | None = None):
        self.lib = Path(kafka_lib)
        if not any(self.lib.glob("kafka_2.13-*.jar")):
            raise BrokerError(f"no kafka_2.13 jar in {self.lib}: run tools/fetch_jars.py")
        self.java = java or shutil.which("java")
        if not self.java:
            raise BrokerError("`java` not found on PATH (Kafka 4.x needs Java 17+)")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kafka-broker-"))
        self.heap = heap
        self.startup_timeout = startup_timeout
        if use_python_client is None:
            forced = os.environ.get("FOOTPRINT_AUDIT_KAFKA_CLIENT", "").lower()
            use_python_client = (_kafka_python is not None if forced not in ("java", "python")
                                 else forced == "python")
        if use_python_client and _kafka_python is None:
            raise BrokerError("kafka-python is not installed (pip install kafka-python==3.0.12)")
        self.use_python_client = use_python_client
        self.port = None
        self.controller_port = None
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "broker.log"
        self.started_in: float | None = None

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

    def _write_config(self):
        self.port, self.controller_port = free_port(), free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        data = self.workdir / "data"
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
log.flush.interval.messages=1
"""
        (self.workdir / "server.properties").write_text(props)
        (self.workdir / "log4j.properties").write_text(_LOG4J)

    def start(self) -> "KafkaBroker":
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
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
                start_new_session=True)  # own process group: kill it whole
        finally:
            log.close()
        try:
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

    def _wait_ready(self):
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

    def stop(self, timeout: float = 30.0):
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

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- topics and records ------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1):
        if self.use_python_client:
            from kafka.admin import KafkaAdminClient, NewTopic
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                     client_id="footprint-audit-tests")
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

    def produce(self, topic: str, values, keys=None, timestamps_ms=None):
        """Append records (bytes or str) to `topic`; returns when all are acked.

        `timestamps_ms` sets each record's CreateTime (the Python client only).
        """
        values = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
        keys = None if keys is None else [
            None if k is None else (k.encode() if isinstance(k, str) else bytes(k))
            for k in keys]
        if self.use_python_client:
            from kafka import KafkaProducer
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                     linger_ms=5)
            try:
                futures = [producer.send(topic, value=v,
                                         key=None if keys is None else keys[i],
                                         timestamp_ms=None if timestamps_ms is None else timestamps_ms[i])
                           for i, v in enumerate(values)]
                producer.flush(60)
                for f in futures:
                    f.get(timeout=60)
            finally:
                producer.close()
            return
        if timestamps_ms is not None:
            raise ValueError("record timestamps need the Python client (pip install kafka-python)")
        # Java console producer: one record per line, so no newlines inside.
        for v in values:
            if b"\n" in v:
                raise ValueError("the Java fallback producer needs single-line values; "
                                 "install kafka-python for arbitrary bytes")
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic,
                "--producer-property", "acks=all"]
        if keys is None:
            payload = b"\n".join(values) + b"\n"
        else:
            if any(k is None or b"\t" in k for k in keys):
                raise ValueError("the Java fallback producer needs tab-free, non-null keys")
            args += ["--property", "parse.key=true",
                     "--property", "key.separator=\t"]
            payload = b"".join(k + b"\t" + v + b"\n" for k, v in zip(keys, values))
        out = subprocess.run(self._java_cmd("org.apache.kafka.tools.ConsoleProducer", *args),
                             input=payload, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=120)
        if out.returncode != 0:
            raise BrokerError(f"ConsoleProducer failed:\n{out.stdout.decode(errors='replace')}")

"""`stream`'s watch on its running job: a progress line, a metrics endpoint, and the brokers' outages.

Role: a thread of the launcher that every few seconds gathers the stream's figures — records read,
consumer lag per topic, the event-time watermark, calls held in the join's state, failed offset
commits, the age of the last completed checkpoint, whether the read has started — and

- prints them as one line on stderr every `--progress-seconds` (default 60; 0: never);
- serves them on `--metrics-port` (127.0.0.1) in Prometheus' text format (`/metrics`), with
  `/ready` (200 once the read has started, else 503);
- says once when the Kafka brokers stop answering, and once when they answer again.

Records read, positions, watermark and calls held are what the workers note in the launcher's
process (`transforms.stream.status`: with `--environment_type=LOOPBACK` they are its threads);
with workers elsewhere they are "unknown" and the lag is counted from the consumer group's
committed offsets. The lag's end offsets come from the brokers, through a consumer of the
launcher's own.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from footprint_audit.pipelines.flink import latest_checkpoint
from footprint_audit.pipelines.launch import UsageError
from footprint_audit.transforms.stream import consumer_config, reset_status, status_snapshot

__all__ = ["Figures", "progress_line", "prometheus_text", "Outage", "KafkaCheck", "Watch"]

#: How often the figures are gathered and the brokers asked (also when no line is due).
CHECK_SECONDS = 5.0
#: How long the brokers have to answer one check before they count as unreachable.
KAFKA_TIMEOUT = 10.0


@dataclass(frozen=True)
class Figures:
    """What the watch knows of the running stream (None: unknown)."""

    records: int | None = None  # read since the launcher started
    per_minute: float | None = None
    lag: dict[str, int] | None = None  # topic → records not read yet
    watermark_ms: int | None = None
    calls_held: int | None = None
    checkpoint_age: float | None = None  # seconds since the last completed checkpoint
    failed_commits: int | None = None
    kafka: bool = False  # the source is Kafka (lag and failed commits apply)
    checkpoints: bool = False  # the job checkpoints into a state dir (Flink)
    reachable: bool | None = None  # the brokers answered the latest check
    ready: bool = False  # the read has started


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def progress_line(f: Figures) -> str:
    """The progress line (without the command's prefix); an unknown figure says so."""
    unknown = "unknown"
    rate = f" ({f.per_minute:,.0f}/min)" if f.records is not None and f.per_minute is not None else ""
    parts = [f"records read {unknown if f.records is None else f'{f.records:,}'}{rate}"]
    if f.kafka:
        lag = unknown if f.lag is None else ", ".join(f"{n:,} ({topic})" for topic, n in sorted(f.lag.items()))
        parts.append(f"consumer lag {lag}")
    parts.append(f"watermark {unknown if f.watermark_ms is None else _utc(f.watermark_ms)}")
    parts.append(f"calls held {unknown if f.calls_held is None else f'{f.calls_held:,}'}")
    if f.checkpoints:
        parts.append("no checkpoint yet" if f.checkpoint_age is None else f"last checkpoint {f.checkpoint_age:.0f} s ago")
    if f.kafka and f.failed_commits is not None:
        parts.append(f"failed offset commits {f.failed_commits:,}")
    return "; ".join(parts)


#: Each metric: name, type, help, and the figure (None: not served).
_METRICS: list[tuple[str, str, str, Callable[[Figures], Any]]] = [
    ("footprint_audit_records_read_total", "counter", "Kafka records read since the launcher started.",
     lambda f: f.records),
    ("footprint_audit_consumer_lag", "gauge", "Records in the topic not read yet (end offset less the read's "
     "position, summed over partitions).", lambda f: f.lag),
    ("footprint_audit_watermark_seconds", "gauge", "The read's event-time watermark, in seconds since the epoch.",
     lambda f: None if f.watermark_ms is None else f.watermark_ms / 1000),
    ("footprint_audit_calls_held", "gauge", "Calls held in the join's state (not read and closed yet).",
     lambda f: f.calls_held),
    ("footprint_audit_last_checkpoint_age_seconds", "gauge", "Seconds since the last completed checkpoint.",
     lambda f: f.checkpoint_age),
    ("footprint_audit_offset_commits_failed_total", "counter", "Consumer-group offset commits that failed.",
     lambda f: f.failed_commits if f.kafka else None),
    ("footprint_audit_kafka_reachable", "gauge", "1 when the Kafka brokers answered the latest check.",
     lambda f: None if f.reachable is None else int(f.reachable)),
    ("footprint_audit_ready", "gauge", "1 once the stream's read has started.", lambda f: int(f.ready)),
]


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) or not math.isfinite(value) or value != int(value) else str(int(value))


def prometheus_text(f: Figures) -> str:
    """The figures in Prometheus' text exposition format (0.0.4); an unknown figure is left out."""
    lines = []
    for name, kind, text, value_of in _METRICS:
        value = value_of(f)
        if value is None:
            continue
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        if isinstance(value, dict):
            lines += [f'{name}{{topic="{_label(topic)}"}} {_number(n)}' for topic, n in sorted(value.items())]
        else:
            lines.append(f"{name} {_number(value)}")
    return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Outage:
    """Whether the brokers are unreachable: one line when they stop answering, one when they answer again."""

    def __init__(self, brokers: str) -> None:
        self.brokers = brokers
        self.since: float | None = None  # wall clock of the first check they did not answer

    def update(self, reachable: bool, now: float) -> str | None:
        """The line to print after a check at `now` (seconds since the epoch), if any."""
        if not reachable and self.since is None:
            self.since = now
            return (f"the Kafka brokers {self.brokers} are unreachable since "
                    f"{time.strftime('%H:%M:%S', time.localtime(now))} (the job waits and retries)")
        if reachable and self.since is not None:
            down, self.since = now - self.since, None
            return f"the Kafka brokers {self.brokers} are reachable again after {down:.0f} s"
        return None


class KafkaCheck:
    """The launcher's own consumer (never joining the group): end offsets, and the group's committed ones."""

    def __init__(self, brokers: str, topic: str, group: str, timeout: float = KAFKA_TIMEOUT) -> None:
        from confluent_kafka import Consumer

        self.topic, self.timeout = topic, timeout
        self.consumer = Consumer(consumer_config(brokers, group))

    def lag(self, positions: dict[int, int] | None) -> int | None:
        """Records not read yet, summed over partitions, from the read's `positions` (None: the group's
        committed offsets); None when the topic is not there. Raises `KafkaException` when no broker answers."""
        from confluent_kafka import TopicPartition

        topic = self.consumer.list_topics(self.topic, timeout=self.timeout).topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        parts = [TopicPartition(self.topic, p) for p in sorted(topic.partitions)]
        ends = {tp.partition: self.consumer.get_watermark_offsets(tp, timeout=self.timeout) for tp in parts}
        if positions is None:
            positions = {tp.partition: tp.offset for tp in self.consumer.committed(parts, timeout=self.timeout)}
        # no position (nothing read or committed yet): from the earliest record kept
        return sum(max(high - max(positions.get(p, -1), low), 0) for p, (low, high) in ends.items())

    def close(self) -> None:
        self.consumer.close()


def _say(sentence: str) -> None:
    print(f"footprint-audit stream: {sentence}", file=sys.stderr, flush=True)


class Watch:
    """The watch's thread and endpoint, for as long as the job runs (a context manager).

    `kafka`: `(brokers, topic, group)` of a Kafka source; `state_dir`: Flink's (checkpoints, and the
    read's start marker `started`).
    """

    def __init__(self, progress_seconds: float, metrics_port: int, kafka: tuple[str, str, str] | None,
                 state_dir: Path | None, started: str | None = None, say: Callable[[str], None] = _say) -> None:
        self.every, self.port, self.kafka = progress_seconds, metrics_port, kafka
        self.state_dir, self.started, self.say = state_dir, started, say
        self.outage = Outage(kafka[0]) if kafka else None
        self.lag: dict[str, int] | None = None
        self.reachable: bool | None = None
        self.stop = threading.Event()
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    def figures(self) -> Figures:
        now = status_snapshot()
        age = None
        chk = latest_checkpoint(self.state_dir / "checkpoints") if self.state_dir else None
        if chk is not None:
            try:
                age = max(time.time() - (chk / "_metadata").stat().st_mtime, 0.0)
            except OSError:  # removed by Flink since it was found
                pass
        ready = now.records is not None or bool(self.started and os.path.exists(self.started))
        return Figures(now.records, None, self.lag, now.watermark_ms, now.calls_held, age,
                       now.failed_commits if now.records is not None else None, self.kafka is not None,
                       self.state_dir is not None, self.reachable, ready)

    def __enter__(self) -> "Watch":
        reset_status()  # figures of this job only (the tests run several in one process)
        if self.port:
            try:
                self.server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
            except OSError as exc:
                raise UsageError(f"--metrics-port {self.port}: cannot listen on 127.0.0.1:{self.port} ({exc.strerror})") from None
            self.server.daemon_threads = True
            threading.Thread(target=self.server.serve_forever, name="footprint-audit-metrics", daemon=True).start()
        if self.every or self.port or self.kafka:
            self.thread = threading.Thread(target=self._run, name="footprint-audit-watch", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.thread is not None:
            self.thread.join(timeout=2)  # a daemon: one still waiting on a broker does not hold the exit

    def _run(self) -> None:
        check = KafkaCheck(*self.kafka) if self.kafka else None
        tick = min(self.every or CHECK_SECONDS, CHECK_SECONDS)
        last_t, last_n = time.monotonic(), 0
        try:
            while not self.stop.wait(tick):
                try:
                    if check is not None:
                        self._check_kafka(check)
                    if self.every and time.monotonic() - last_t >= self.every - tick / 10:
                        figures = self.figures()
                        now = time.monotonic()
                        if figures.records is not None:
                            n = figures.records
                            figures, last_n = replace(figures, per_minute=(n - last_n) * 60 / (now - last_t)), n
                        last_t = now
                        self.say(progress_line(figures))
                except Exception:  # noqa: BLE001 - the watch must not end the job, nor print a traceback
                    logging.getLogger(__name__).warning("the stream's watch failed a check", exc_info=True)
        finally:
            if check is not None:
                check.close()

    def _check_kafka(self, check: KafkaCheck) -> None:
        from confluent_kafka import KafkaException

        topic = check.topic
        try:
            lag = check.lag(status_snapshot().positions.get(topic))
            self.lag, self.reachable = (None if lag is None else {topic: lag}), True
        except KafkaException:
            self.lag, self.reachable = None, False
        assert self.outage is not None
        line = self.outage.update(self.reachable, time.time())
        if line:
            self.say(line)


def _handler(watch: Watch) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            figures = watch.figures()
            if self.path.split("?")[0] == "/metrics":
                code, body, kind = 200, prometheus_text(figures), "text/plain; version=0.0.4; charset=utf-8"
            elif self.path.split("?")[0] == "/ready":
                code, body, kind = (200, "ready\n", "text/plain") if figures.ready else (503, "not ready\n", "text/plain")
            else:
                code, body, kind = 404, "/metrics or /ready\n", "text/plain"
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # a scrape is not worth a line
            pass

    return Handler

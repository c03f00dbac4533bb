"""`footprint-audit stream` on a real Kafka broker and an embedded Flink equals `reassess`.

The events of the bundled example recordings are produced to a topic (one
partition, in event-time order, each record's CreateTime its `wallClockMs`,
as a live agent would emit them); the stream job reads them with the
cross-language `ReadFromKafka` on `--runner FlinkRunner --flink_master=[local]`
(Python worker in LOOPBACK), joins each call in state and writes windowed
Parquet. Its readings must equal those of `reassess` on the same recordings
(for the calls read from events; see `assert_stream_matches_batch`).
"""

from __future__ import annotations

import time

import orjson
import pytest

from helpers import ROOT, assert_stream_matches_batch, load_table
from pipelines import reassess, stream
from transforms.sources import read_source

pytestmark = pytest.mark.integration


def example_events() -> list[tuple[int | None, bytes]]:
    """Every (readable) event of the bundled example recordings, sorted by event time."""
    items = []
    files = sorted(p for p in (ROOT / "examples" / "recordings").rglob("*") if p.is_file())
    for order, path in enumerate(files):
        for run in read_source(str(path)).runs:
            for ev in run.events:
                ms = ev.meta.get("wallClockMs")
                ms = int(ms) if type(ms) in (int, float) else None
                body = orjson.dumps({"type": "agentfootprint." + ev.type, "payload": ev.payload, "meta": ev.meta})
                items.append((ms, order, ev.index, body))
    # Events with no event time go last: their record time is the broker's clock.
    items.sort(key=lambda t: (t[0] is None, t[0] or 0, t[1], t[2]))
    return [(ms, body) for ms, _o, _i, body in items]


def test_stream_on_flink_from_kafka_equals_reassess(kafka_broker, flink_args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    events = example_events()
    topic = "agentfootprint-events"
    kafka_broker.create_topic(topic, partitions=1)
    kafka_broker.produce(topic, [b for _ms, b in events], timestamps_ms=[ms for ms, _b in events])

    out = tmp_path / "stream"
    t0 = time.monotonic()
    code = stream.run(
        [
            "--source", f"kafka://{kafka_broker.bootstrap}/{topic}",
            "--output", str(out),
            "--declarations", "examples/declarations.json",
            "--max-records", str(len(events)),
            "--max-read-seconds", "300",
            *flink_args(streaming=True),
        ]
    )
    elapsed = time.monotonic() - t0
    assert code == 0

    batch = tmp_path / "batch"
    assert reassess.run(["--input", "examples/recordings/**", "--output", str(batch),
                         "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]) == 0
    compared = assert_stream_matches_batch(batch, out)
    print(f"\n[timing] {len(events)} events through Kafka + Flink in {elapsed:.1f}s; {compared} readings equal")
    assert compared > 40
    # every produced event is accounted for in the stream's runs and dead letters
    runs = load_table(out, "runs")
    dead = load_table(out, "dead_letters")
    assert sum(r["events"] for r in runs) + sum(1 for d in dead if d["run_id"] is None) >= len(events)
    assert all(d["reason"] in {"bad-field", "redacted-call-id", "missing-call-id"} for d in dead)
    # windowed files with unique pane names
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert files and all("/window=" in f and f.rsplit("/", 1)[-1].startswith("pane-") for f in files)

"""Smoke tests of the streaming infrastructure, on a real embedded Flink.

1. A real Kafka broker (KRaft, 127.0.0.1) holds 20 JSON lines; a Beam pipeline
   on ``--runner=FlinkRunner --flink_master=[local]`` (job server from the
   cached jars, Python worker in LOOPBACK) reads them with the cross-language
   ``ReadFromKafka`` (KafkaIO expanded by the cached expansion service, run
   EMBEDDED in the job server), parses them and writes the values to a file.
2. A stateful DoFn with event-time timers on the same embedded Flink in
   streaming mode, over a bounded source: every timer fires once the
   watermark passes the end of its window.

Each test prints how long it took (``pytest -s`` shows it).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.window import FixedWindows, GlobalWindows, TimestampedValue

from tools.jars import kafka_expansion_service

pytestmark = pytest.mark.integration

N_RECORDS = 20


def _read_lines(prefix: Path) -> list[str]:
    lines = []
    for f in sorted(prefix.parent.glob(prefix.name + "*")):
        lines += [line for line in f.read_text().splitlines() if line]
    return lines


def test_read_from_kafka_on_embedded_flink(kafka_broker, integration_jars,
                                           flink_args, tmp_path):
    t0 = time.monotonic()
    topic = "footprint-runs"
    kafka_broker.create_topic(topic, partitions=2)
    records = [{"run_id": f"run-{i:02d}", "value": i * 7} for i in range(N_RECORDS)]
    kafka_broker.produce(topic, [json.dumps(r) for r in records],
                         keys=[r["run_id"] for r in records])
    t_kafka = time.monotonic() - t0

    out = tmp_path / "values"
    t1 = time.monotonic()
    with beam.Pipeline(options=PipelineOptions(flink_args(streaming=True))) as p:
        _ = (
            p
            | "ReadKafka" >> ReadFromKafka(
                consumer_config={
                    "bootstrap.servers": kafka_broker.bootstrap,
                    "auto.offset.reset": "earliest",
                    "group.id": "footprint-audit-smoke",
                },
                topics=[topic],
                max_num_records=N_RECORDS,  # bounded: the job ends
                max_read_time=240,          # safety net (s): never hang
                expansion_service=kafka_expansion_service(integration_jars))
            | "Parse" >> beam.Map(lambda kv: json.loads(kv[1].decode("utf-8")))
            | "Value" >> beam.Map(lambda r: f"{r['run_id']}\t{r['value']}")
            | "Write" >> beam.io.WriteToText(str(out)))
    t_pipeline = time.monotonic() - t1

    got = sorted(_read_lines(out))
    want = sorted(f"{r['run_id']}\t{r['value']}" for r in records)
    print(f"\n[timing] kafka broker start {kafka_broker.started_in:.1f}s, "
          f"topic+produce {t_kafka:.1f}s, Flink pipeline {t_pipeline:.1f}s")
    assert got == want


class BufferUntilWindowEnd(beam.DoFn):
    """Buffers values per key; an event-time timer at the window's end emits them."""
    BUFFER = userstate.BagStateSpec("buffer", VarIntCoder())
    FLUSH = userstate.TimerSpec("flush", TimeDomain.WATERMARK)

    def process(self, element,
                window=beam.DoFn.WindowParam,
                buffer=beam.DoFn.StateParam(BUFFER),
                flush=beam.DoFn.TimerParam(FLUSH)):
        _, value = element
        buffer.add(value)
        flush.set(window.max_timestamp())

    @userstate.on_timer(FLUSH)
    def on_flush(self,
                 key=beam.DoFn.KeyParam,
                 window=beam.DoFn.WindowParam,
                 fire_ts=beam.DoFn.TimestampParam,
                 buffer=beam.DoFn.StateParam(BUFFER)):
        values = sorted(buffer.read())
        buffer.clear()
        yield json.dumps({"key": key, "window_start": int(window.start),
                          # The Java runner keeps timers in milliseconds: a
                          # timer set at window.max_timestamp() (end - 1 us)
                          # fires at end - 1 ms; compare at ms precision.
                          "fired_at_window_end":
                              fire_ts.micros // 1000 == window.max_timestamp().micros // 1000,
                          "values": values}, sort_keys=True)


def test_event_time_timers_fire_on_embedded_flink(flink_args, tmp_path):
    # keys a/b, timestamps 0..14 s -> fixed 5 s windows [0,5) [5,10) [10,15)
    events = [(k, ts) for ts in range(15) for k in ("a", "b") if (ts + (k == "b")) % 2 == 0]
    out = tmp_path / "fired"
    t0 = time.monotonic()
    with beam.Pipeline(options=PipelineOptions(flink_args(streaming=True))) as p:
        _ = (
            p
            | beam.Create(events)
            | "Stamp" >> beam.Map(lambda kv: TimestampedValue(kv, kv[1]))
            | beam.WindowInto(FixedWindows(5))
            | beam.ParDo(BufferUntilWindowEnd())
            | "Global" >> beam.WindowInto(GlobalWindows())
            | beam.io.WriteToText(str(out)))
    elapsed = time.monotonic() - t0

    got = sorted((json.loads(line) for line in _read_lines(out)),
                 key=lambda d: (d["key"], d["window_start"]))
    want = []
    for k in ("a", "b"):
        for start in (0, 5, 10):
            vals = sorted(ts for kk, ts in events if kk == k and start <= ts < start + 5)
            want.append({"key": k, "window_start": start,
                         "fired_at_window_end": True, "values": vals})
    print(f"\n[timing] Flink stateful/timer pipeline {elapsed:.1f}s")
    assert got == want

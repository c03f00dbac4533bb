"""`stream --source pubsub://…` for real: an in-memory Pub/Sub (`tools/fakes/pubsub`, the pstest package of
Google's Go client) and Beam's own Pub/Sub read on the runner that reads it outside Dataflow (the
direct runner, streaming). The bundled examples' events, re-timed to now as a live agent would send
them (Pub/Sub's watermark is the publish time: docs/streaming.md, "Pub/Sub"), are published twice each
(a redelivery), and the stream's readings must equal `reassess`'s of the same events (a runner that
cannot read Pub/Sub is refused: tests/test_stream.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

import pytest

from google_fakes import running
from helpers import ROOT, assert_stream_matches_batch
from stream_harness import example_events, wait_for

pubsub = pytest.importorskip("google.cloud.pubsub_v1")  # apache-beam[gcp], in the test extra
pytestmark = pytest.mark.integration

PROJECT, NAME = "audit-project", "events"
SOURCE = f"pubsub://projects/{PROJECT}/subscriptions/{NAME}"


def _stream(out: Path, log: Path, env: dict, *runner: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source", SOURCE, "--output", str(out),
           "--declarations", str(ROOT / "examples" / "declarations.json"), "--flush-seconds", "2", *runner]
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)


def live_events(start_ms: int) -> list[bytes]:
    """The examples' events in event-time order, each timed 10 ms after the one before from `start_ms` on
    (an event without a numeric time is left as it is: a dead letter in both jobs)."""
    out = []
    for i, (ms, _run, body) in enumerate(example_events()):
        if ms is not None:
            event = orjson.loads(body)
            event["meta"]["wallClockMs"] = start_ms + 10 * i
            body = orjson.dumps(event)
        out.append(body)
    return out


def test_stream_from_pubsub_with_redeliveries_gives_reassess_readings(tmp_path):
    # timed from now on, as a live agent sends them: a call's events published later than its first
    # reading (the watermark is the publish time) correct it, well within the allowed lateness
    events = live_events(int(time.time() * 1000))
    history = tmp_path / "live.jsonl"
    history.write_bytes(b"\n".join(events) + b"\n")
    batch = tmp_path / "batch"
    res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(history),
                          "--output", str(batch), "--declarations", "examples/declarations.json", "--no-progress"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    with running("pubsub") as address:
        env = {**os.environ, "PUBSUB_EMULATOR_HOST": address, "GOOGLE_CLOUD_PROJECT": PROJECT}
        os.environ["PUBSUB_EMULATOR_HOST"] = address
        try:
            publisher, subscriber = pubsub.PublisherClient(), pubsub.SubscriberClient()
            topic = publisher.topic_path(PROJECT, NAME)
            publisher.create_topic(name=topic)
            subscriber.create_subscription(name=subscriber.subscription_path(PROJECT, NAME), topic=topic)
            for body in events + events:  # every event delivered twice
                publisher.publish(topic, body).result(timeout=60)
        finally:
            del os.environ["PUBSUB_EMULATOR_HOST"]
        out, log = tmp_path / "stream", tmp_path / "stream.log"
        proc = _stream(out, log, env, "--runner", "DirectRunner", "--streaming", "--grace-seconds", "5",
                       "--allowed-lateness-seconds", "60")
        beat, last = [0.0], [""]

        def matches() -> bool:
            # A quiet topic holds the watermark at its last publish time, and a call with no tool_end (a
            # paused one) is read when the watermark passes its last event plus the allowed lateness: a
            # message every 2 s (not an event: a dead letter) moves it on, as a live topic's traffic does.
            if time.monotonic() - beat[0] > 2:
                os.environ["PUBSUB_EMULATOR_HOST"] = address
                try:
                    publisher.publish(topic, b"{}").result(timeout=60)
                finally:
                    del os.environ["PUBSUB_EMULATOR_HOST"]
                beat[0] = time.monotonic()
            try:
                return assert_stream_matches_batch(batch, out) > 40
            except (AssertionError, OSError, ValueError) as exc:
                last[0] = str(exc)[:2000]
                return False

        try:
            wait_for(matches, "the stream's readings to equal reassess's", proc=proc, log=log)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nthe last difference: {last[0]}") from None
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)


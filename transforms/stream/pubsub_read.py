"""Beam (streaming): a Pub/Sub subscription → events at their event times, and dead letters.

Pattern: a composite `PTransform` around Beam's `ReadFromPubSub` and `stream_events.ParseMessageFn`.
Role:    the stream's Pub/Sub source (`footprint-audit stream --source pubsub://…`); one
         event envelope, or one OTLP/JSON `TracesData` / `LogsData`, per message, parsed as a
         Kafka record is. Needs `apache-beam[gcp]`.

    events = p | "ReadPubSubEvents" >> ReadPubSubEvents("projects/P/subscriptions/S", max_event_bytes)
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam

from .events import ParseMessageFn

__all__ = ["ReadPubSubEvents", "publish_ms"]


def publish_ms(when: Any) -> int | None:
    """A message's publish time in ms: a Beam `Timestamp` on Dataflow, a `datetime` on the direct runner."""
    if when is None:
        return None
    return int(when.micros // 1000) if hasattr(when, "micros") else int(when.timestamp() * 1000)


class ReadPubSubEvents(beam.PTransform):
    """`projects/P/subscriptions/S` → timestamped `(source, Event, behind_ms)` and dead-letter rows.

    Args:
        subscription: the Pub/Sub subscription read.
        max_event_bytes: the largest message read; a larger one is a `too-large` dead letter.
    """

    def __init__(self, subscription: str, max_event_bytes: int) -> None:
        super().__init__()
        self.subscription = subscription
        self.max_event_bytes = max_event_bytes

    def display_data(self) -> dict:
        return {"subscription": self.subscription, "max_event_bytes": self.max_event_bytes}

    def expand(self, p: beam.pvalue.PBegin) -> beam.PCollection:
        from apache_beam.io.gcp.pubsub import ReadFromPubSub

        uri = "pubsub://" + self.subscription
        return (
            p.pipeline
            | "ReadPubSub" >> ReadFromPubSub(subscription=self.subscription, with_attributes=True)
            | "PubSubMessages" >> beam.Map(lambda m: (uri, 0, m.data, publish_ms(m.publish_time)))  # (source, index, bytes, ms)
            | "ParseMessages" >> beam.ParDo(ParseMessageFn(self.max_event_bytes))
        )

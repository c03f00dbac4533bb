"""The composites that take options show them as display data (Flink's and Dataflow's job graphs list them)."""

from __future__ import annotations

import pytest
from apache_beam.transforms.display import DisplayData

from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.transforms.decode import ReadInputFiles
from footprint_audit.transforms.join import SpillJoinEventStream
from footprint_audit.transforms.read import ApplyReaders
from footprint_audit.transforms.stream.join import StatefulCallJoin
from footprint_audit.transforms.stream.kafka_read import KafkaSpec, ReadKafkaEvents
from footprint_audit.transforms.stream.pubsub_read import ReadPubSubEvents
from footprint_audit.transforms.stream.write import WriteStreamTable
from helpers import EXAMPLES


def _shown(transform: object) -> dict:
    return {item.key: item.value for item in DisplayData.create_from(transform).items}


@pytest.mark.parametrize("transform, shown", [
    (ReadInputFiles(max_event_bytes=1024, total_files=3), {"max_event_bytes": 1024, "total_files": 3}),
    (SpillJoinEventStream(None, "/spill", 10, 4), {"folder": "/spill", "max_partition_bytes": 10, "partitions": 4}),
    (ReadKafkaEvents(KafkaSpec("127.0.0.1:9092", "events", "g", 2048, max_records=5)),
     {"brokers": "127.0.0.1:9092", "topic": "events", "group": "g", "max_event_bytes": 2048, "out_of_orderness_ms": 5000,
      "max_records": 5}),
    (ReadPubSubEvents("projects/p/subscriptions/s", 2048),
     {"subscription": "projects/p/subscriptions/s", "max_event_bytes": 2048}),
    (WriteStreamTable("readings", "out", 60.0, 2), {"table": "readings", "directory": "out", "window_seconds": 60.0,
                                                     "flush_seconds": 2}),
])
def test_a_composite_shows_its_options(transform, shown):
    assert _shown(transform) == shown


def test_the_readers_and_the_stream_s_join_show_their_rules_and_declarations():
    declarations = load_declarations(str(EXAMPLES / "declarations.json"))
    assert _shown(ApplyReaders(declarations, "7")) == {"reader_version": "7", "declarations_sha256": declarations.sha256}
    assert _shown(StatefulCallJoin(declarations, 30.0, 600.0, "7")) == {
        "grace_ms": 30_000, "allowed_lateness_ms": 600_000, "reader_version": "7"}

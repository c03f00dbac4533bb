"""The streaming job's steps: Kafka and Pub/Sub reads, events by event time, the stateful join, windowed writes."""

from .events import COUNTS, KEYED, ClassifyAndKeyFn, ReadFilesAsStreamFn
from .join import COUNT_FIXES, READINGS, STATE_LAYOUT, StatefulCallJoin
from .kafka_read import (
    KAFKA_EVENTS, KAFKA_TOPIC, KafkaSpec, ReadKafkaEvents, check_topic, commit_positions, consumer_config, records_read,
)
from .pubsub_read import ReadPubSubEvents
from .status import reset_status, status_snapshot
from .write import MarkEndOfInput, WriteStreamTable, every_few_seconds

__all__ = [
    "COUNTS", "COUNT_FIXES", "ClassifyAndKeyFn", "KAFKA_EVENTS", "KAFKA_TOPIC", "KEYED", "KafkaSpec", "READINGS",
    "MarkEndOfInput", "ReadFilesAsStreamFn", "ReadKafkaEvents", "ReadPubSubEvents", "STATE_LAYOUT", "StatefulCallJoin",
    "WriteStreamTable", "check_topic", "commit_positions", "consumer_config", "every_few_seconds", "records_read", "reset_status",
    "status_snapshot",
]

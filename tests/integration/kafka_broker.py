"""The integration tests' Kafka broker: `KafkaBroker` now lives in tools/kafka_local.py."""
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "tools"))
from kafka_local import BrokerError, KafkaBroker, free_port  # noqa: E402,F401

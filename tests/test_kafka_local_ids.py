"""tools/kafka_local.py: the KRaft cluster id handed to kafka-storage never reads as an option."""
from __future__ import annotations

import base64
import uuid

from tools import kafka_local


def _uuid_encoding_to(prefix: bytes) -> uuid.UUID:
    """A UUID whose base64url text starts with the characters `prefix` encodes to."""
    return uuid.UUID(bytes=prefix + bytes(16 - len(prefix)))


def test_an_id_starting_with_a_dash_is_drawn_again(monkeypatch) -> None:
    # 0xfb 0xef... encodes to "-+..." in base64url ("-" is 62): the id CI once drew.
    dashed = _uuid_encoding_to(b"\xfb\xef\xbe")
    plain = _uuid_encoding_to(b"\x01\x02\x03")
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    drawn = iter([dashed, dashed, plain])
    monkeypatch.setattr(kafka_local.uuid, "uuid4", lambda: next(drawn))
    cid = kafka_local.new_cluster_id()
    assert cid == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")
    assert len(cid) == 22 and not cid.startswith("-")


def test_ids_are_random_and_never_start_with_a_dash() -> None:
    ids = {kafka_local.new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert not any(i.startswith("-") for i in ids)

"""Events as compact bytes, for the shuffles and the state that carry them.

Role: the batch join of event streams (`transforms.join.keyed`: the `GroupByKey` of call
events and of run facts) and the streaming join (`transforms.stream.join`: its
shuffle and its per-key bag) carry `(source_file, Event)` pairs. Beam's default
coder pickles each one; these helpers write it as one orjson array instead, and
fall back to pickle for what JSON cannot hold exactly.

`pack_held` puts several held events (a call's, gathered within a bundle) in one
lz4-compressed byte string, so the batch join's shuffle moves fewer elements and bytes.

An event read alone from its own bytes (a JSON Lines line, an SSE block's data, a
stream message: `Event.raw`) is held as those bytes, `l` + the length of an orjson
`[source_file, index]` + that array + the bytes, and read again from them after the
join (`transforms.decode.envelopes.event_read_again`, the same parse): nothing is written
again, and nothing can change, and no event is written out again to be held.

Any other event (`j`, `p`), exactness: orjson writes a non-finite float (an `Infinity`
JavaScript's parser made of `1e400`) as `null`, and refuses integers beyond 64 bits and
lone surrogates. A refusal falls back to pickle; so does any event whose JSON holds a
`null` that does not read back as the same event (the only way a value could
change). Every way decodes to an equal `(source_file, Event)`.
"""

from __future__ import annotations

import pickle
import struct

import orjson
import pyarrow as pa

from footprint_audit.schemas.events import Event

from footprint_audit.transforms.decode import event_read_again

__all__ = ["encode_held", "decode_held", "pack_held", "unpack_held"]

_LENGTH = struct.Struct("<I")


def encode_held(source: str, ev: Event) -> bytes:
    """`(source, Event)` as bytes: `l` + the bytes it was read from (`Event.raw`), else `j` + an orjson
    array, or `p` + a pickle when JSON cannot hold it exactly."""
    if ev.raw is not None:
        try:
            head = orjson.dumps([source, ev.index])
        except (TypeError, orjson.JSONEncodeError):  # a file name with a lone surrogate
            pass
        else:
            return b"".join((b"l", _LENGTH.pack(len(head)), head, ev.raw))
    item = [source, ev.index, ev.type, ev.payload, ev.meta]
    try:
        raw = orjson.dumps(item)
    except (TypeError, orjson.JSONEncodeError):  # a big integer, a lone surrogate, too deep
        raw = None
    if raw is not None and (b"null" not in raw or orjson.loads(raw) == item):
        return b"j" + raw
    return b"p" + pickle.dumps((source, ev), protocol=pickle.HIGHEST_PROTOCOL)


def decode_held(encoded: bytes) -> tuple[str, Event]:
    """The inverse of `encode_held`."""
    kind = encoded[:1]
    if kind == b"l":
        (n,) = _LENGTH.unpack_from(encoded, 1)
        view = memoryview(encoded)  # views: no copies
        source, index = orjson.loads(view[5 : 5 + n])
        return source, event_read_again(view[5 + n :], index)
    if kind == b"j":
        source, index, kind, payload, meta = orjson.loads(memoryview(encoded)[1:])
        return source, Event(index, kind, payload, meta)
    return pickle.loads(encoded[1:])


def pack_held(held: list[bytes]) -> bytes:
    """Held events as one byte string: their total length (8 bytes), then lz4 of each one's length (4 bytes) and bytes."""
    parts: list[bytes] = []
    for b in held:  # the lengths and the events side by side: each event copied once, into the whole
        parts += (_LENGTH.pack(len(b)), b)
    raw = b"".join(parts)
    return len(raw).to_bytes(8, "little") + pa.compress(raw, codec="lz4", asbytes=True)


def unpack_held(packed: bytes) -> list[bytes]:
    """The inverse of `pack_held`: the held events, in order."""
    size = int.from_bytes(packed[:8], "little")
    raw = pa.decompress(packed[8:], decompressed_size=size, codec="lz4", asbytes=True)
    out, at, length = [], 0, _LENGTH.unpack_from
    while at < size:
        (n,) = length(raw, at)
        at += 4
        out.append(raw[at : at + n])
        at += n
    return out

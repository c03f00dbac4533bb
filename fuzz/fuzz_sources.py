"""Fuzz target: the byte readers on arbitrary bytes never raise, and account for every line.

Run (atheris, libFuzzer options pass through):

    python -m fuzz.fuzz_sources -max_total_time=300 -artifact_prefix=/tmp/fuzz-sources/ [CORPUS_DIR]

Without atheris, `python -m fuzz.fuzz_sources --hypothesis SECONDS`. `check(data)` is
replayed by `tests/test_reliability.py` for every `tests/data/regressions/sources-*` file.

Checked on every input:
- `read_document` (plain and `utf8_safe`, as the pipeline reads) and `iter_lines`
  (JSON Lines with a small event cap, so `too-large` is reached, and with the default
  one; SSE) never raise;
- JSON Lines: one item (event or dead letter) per non-blank line, at that line's index;
- a document's events and dead letters sit at distinct positions;
- what the pipeline would carry (`utf8_safe` documents, lines) fits UTF-8 and the
  nesting limit: every event re-serializes with orjson, and every dead-letter row
  builds an Arrow table with the `dead_letters` schema.
"""

from __future__ import annotations

import io
import os
import sys

from fuzz._common import fuzz_main, load_targets

def _imports():
    import orjson
    import pyarrow as pa

    from footprint_audit.schemas.events import FORMAT_EVENT_STREAM, FORMAT_SSE, DeadLetter, Event
    from footprint_audit.schemas.tables import TABLES
    from footprint_audit.transforms.decode import documents
    from footprint_audit.transforms.decode import lines
    from footprint_audit.transforms.decode import registry

    return locals()


R = load_targets(_imports, __name__ == "__main__")

CAP = 256  # max event bytes: small, so the too-large paths are reached
REASONS = {"not-json", "not-an-event", "unknown-format", "missing-run-id", "too-large", "unreadable"}


def _carried(item) -> None:
    """An item the pipeline would carry: UTF-8 clean, not too deep, and its dead-letter row writable."""
    if isinstance(item, R["Event"]):
        R["orjson"].dumps([item.type, item.payload, item.meta])
        return
    assert item.reason in REASONS, item.reason
    R["pa"].Table.from_pylist([item.row()], schema=R["TABLES"]["dead_letters"])


def _expected_lines(data: bytes) -> list[int]:
    """Indices of the non-blank lines of `data`, as the JSON Lines reader numbers them."""
    pieces = data.split(b"\n")
    if data.endswith(b"\n"):
        pieces.pop()
    out = []
    for n, piece in enumerate(pieces):
        if n == 0 and piece.startswith(b"\xef\xbb\xbf"):
            piece = piece[3:]
        if piece.strip() or len(piece[:-1] if piece.endswith(b"\r") else piece) > CAP:
            out.append(n)
    return out


def check(data: bytes) -> None:
    """Read `data` every way the pipeline can; raises only on a finding."""
    R["registry"].sniff(data[: R["registry"].HEAD_BYTES], "x")
    for safe in (False, True):
        f = R["documents"].read_document("f.json", data, CAP, utf8_safe=safe)
        positions = [e.index for r in f.runs for e in r.events]
        positions += [d.event_index for r in f.runs for d in r.dead_letters]
        positions += [d.event_index for d in f.dead_letters if d.event_index is not None]
        assert len(positions) == len(set(positions)), positions
        if safe:
            for item in f.dead_letters:
                _carried(item)
            for run in f.runs:
                for item in [*run.events, *run.dead_letters]:
                    _carried(item)
    items = list(R["lines"].iter_lines("f.jsonl", io.BytesIO(data), R["FORMAT_EVENT_STREAM"], CAP))
    assert [i.index if isinstance(i, R["Event"]) else i.event_index for i in items] == _expected_lines(data)
    for item in items:
        _carried(item)
    for item in R["lines"].iter_lines("f.jsonl", io.BytesIO(data), R["FORMAT_EVENT_STREAM"]):  # the default cap: lines parse
        _carried(item)
    for item in R["lines"].iter_lines("f.sse", io.BytesIO(data), R["FORMAT_SSE"], CAP):
        _carried(item)


def main(argv: list[str]) -> None:
    fuzz_main(argv, check, _hypothesis)


def _hypothesis(seconds: float) -> None:
    import time

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    deadline = time.monotonic() + seconds
    pieces = st.sampled_from([b"\n", b"\r\n", b" ", b"{", b"}", b"[", b"]", b'"', b"\\ud800", b":", b",", b"data: ",
                              b"event: x\n", b'{"type":"a.b","payload":{},"meta":{"runId":"r"}}', b"\xff", b"\xef\xbb\xbf"])

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.binary() | st.lists(pieces | st.binary(max_size=8), max_size=40).map(b"".join))
    def run(data: bytes) -> None:
        check(data)

    while time.monotonic() < deadline:  # batches of 200 fresh examples until the budget is spent
        run()


if __name__ == "__main__":
    main(sys.argv)

"""Every OTLP encoding of the same spans gives the same readings (docs/traces.md, "What is read").

The spans are made once by the OpenTelemetry SDK (`otlp_messages.traced_spans`) and written as
OTLP/JSON lines (the SDK's file exporter), one pretty-printed document, pretty documents one after
another (`jq .` of the lines), protobuf's own JSON mapping (`MessageToJson` of the SDK's
`ExportTraceServiceRequest`: base64 ids, enum names), and the Collector's length-prefixed file:
framed here exactly as its `file` exporter frames (a 4-byte big-endian length, then the message,
zstd-compressed per message with `compression: zstd`), and written by the real Collector
(`tests/otel_collector.py`) with `format: proto`, with `compression: zstd`, and both. `reassess`
reads each into the lines' readings, column for column (but the file's name).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
import zstandard

from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.events import REASON_NOT_AN_EVENT, REASON_NOT_JSON, REASON_TOO_LARGE, REASON_UNREADABLE, DeadLetter
from footprint_audit.transforms.decode import items_from_message, registry
from footprint_audit.transforms.decode.otlp_json import hex_id
from footprint_audit.transforms.decode.otlp_proto import OTLP_FRAMED
from helpers import EXAMPLES, load_table

pytest.importorskip("opentelemetry.sdk.trace")
from google.protobuf.json_format import MessageToJson  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from otel_collector import running_collector  # noqa: E402
from otlp_messages import json_lines, traced_spans  # noqa: E402

DECLARATIONS = str(EXAMPLES / "declarations.json")
RUNS = 3


@pytest.fixture(scope="module")
def traced() -> list:
    return traced_spans(RUNS)


@pytest.fixture(scope="module")
def from_lines(traced, tmp_path_factory) -> tuple[list[dict], list[dict]]:
    """`reassess`'s readings and runs of the spans written as OTLP/JSON lines."""
    folder = tmp_path_factory.mktemp("lines")
    path = folder / "traces.otlp"
    path.write_bytes(b"".join(line + b"\n" for line in json_lines(traced)))
    return _read(folder, path)


def _read(folder: Path, path: Path) -> tuple[list[dict], list[dict]]:
    """The readings and runs (without the file's name) and no dead letter."""
    out = folder / "out"
    assert reassess.run(["--input", str(path), "--output", str(out), "--declarations", DECLARATIONS, "--no-progress",
                         "--quiet"]) == 0
    assert load_table(out, "dead_letters") == []
    strip = lambda rows: sorted(({k: v for k, v in r.items() if k != "source_file"} for r in rows), key=orjson.dumps)  # noqa: E731
    return (strip(load_table(out, "readings")),
            [{k: v for k, v in r.items() if k != "format"} for r in strip(load_table(out, "runs"))])


def _pretty(document: bytes) -> bytes:
    """`jq .` of one JSON document (Python's two-space indent where jq is not installed)."""
    if shutil.which("jq"):
        return subprocess.run(["jq", "."], input=document, capture_output=True, check=True).stdout
    return json.dumps(json.loads(document), indent=2).encode() + b"\n"


def _framed(messages: list[bytes], compress: bool = False) -> bytes:
    """As the Collector's file exporter writes: each message (zstd-compressed with `compression: zstd`)
    after its 4-byte big-endian length."""
    packed = [zstandard.compress(m) if compress else m for m in messages]
    return b"".join(len(m).to_bytes(4, "big") + m for m in packed)


def _one_document(lines: list[bytes]) -> bytes:
    whole = {"resourceSpans": [rs for line in lines for rs in orjson.loads(line)["resourceSpans"]]}
    return json.dumps(whole, indent=2).encode()


ENCODINGS = {
    "one pretty document": lambda traced: _one_document(json_lines(traced)),
    "jq . of the lines": lambda traced: b"".join(_pretty(line) for line in json_lines(traced)),
    "protobuf JSON": lambda traced: "\n".join(MessageToJson(encode_spans(spans)) for spans in traced).encode(),
    "format: proto": lambda traced: _framed([encode_spans(spans).SerializeToString() for spans in traced]),
    "format: proto, compression: zstd": lambda traced: _framed(
        [encode_spans(spans).SerializeToString() for spans in traced], True),
    "format: json, compression: zstd": lambda traced: _framed(json_lines(traced), True),
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_each_encoding_reads_as_the_lines(traced, from_lines, tmp_path, encoding):
    path = tmp_path / "traces.otlp"
    path.write_bytes(ENCODINGS[encoding](traced))
    readings, runs = _read(tmp_path, path)
    assert len(readings) == RUNS * 5 and readings == from_lines[0]
    assert runs == from_lines[1]
    if encoding == "protobuf JSON":
        assert b'"traceId": "' in path.read_bytes() and all(len(r["run_id"]) == 32 for r in readings)  # base64 in, hex out


@pytest.mark.parametrize("settings", [{"format": "proto"}, {"format": "proto", "compression": "zstd"},
                                      {"format": "json", "compression": "zstd"}], ids=lambda s: ",".join(s.values()))
def test_the_collectors_framed_file_reads_as_the_lines(traced, from_lines, tmp_path, settings):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with running_collector(tmp_path / "otelcol", **settings) as collector:
        exporter = OTLPSpanExporter(endpoint=f"{collector.http_endpoint}/v1/traces", timeout=60)
        assert [exporter.export(spans).name for spans in traced] == ["SUCCESS"] * RUNS
        exporter.shutdown()
    head = collector.path.read_bytes()[:8]
    assert head[0] == 0 and (head[4:8] == zstandard.FRAME_HEADER) == ("compression" in settings)
    assert registry.sniff(head + b"\0" * 8, collector.path.name) is OTLP_FRAMED
    assert _read(tmp_path, collector.path) == from_lines


# ---------------------------------------------------------------- what is broken stays a dead letter


def _letters(tmp_path: Path, data: bytes, *args: str) -> tuple[list, list]:
    path = tmp_path / "traces.otlp"
    path.write_bytes(data)
    out = tmp_path / "out"
    assert reassess.run(["--input", str(path), "--output", str(out), "--no-progress", "--quiet", *args]) == 0
    letters = sorted((r["event_index"], r["reason"], r["detail"]) for r in load_table(out, "dead_letters"))
    return letters, sorted(r["tool_call_id"] for r in load_table(out, "readings"))


def test_a_pretty_document_cut_short_spoils_itself_only(traced, tmp_path):
    first, second, third = (_pretty(line) for line in json_lines(traced))
    cut = b"".join(second.splitlines(keepends=True)[:10])  # a write cut short, then the next document
    letters, calls = _letters(tmp_path, first + cut + third + b"{oops\n")
    assert calls == sorted(f"r{run}-{kind}" for run in (0, 2) for kind in ("empty", "rows", "boom", "none", "oi"))
    at, oops = first.count(b"\n") + 1, (first + cut + third).count(b"\n") + 1  # lines numbered from 1
    assert [(reason, detail.split(" is not JSON")[0]) for _i, reason, detail in letters] == [
        (REASON_NOT_JSON, f"Lines {at} to {at + 9}"),  # ended by the next document's `{` at column 0
        (REASON_NOT_JSON, f"Line {oops}"),
    ]


def test_a_framed_file_with_a_bad_message_a_large_one_and_a_cut_end(traced, tmp_path):
    good = encode_spans(traced[0]).SerializeToString()
    data = _framed([good, b"\x08\x96\x01", b"{not json", good]) + (10_000_000).to_bytes(4, "big") + b"\x0a" * 100
    letters, calls = _letters(tmp_path, data)
    assert calls == sorted(f"r0-{kind}" for kind in ("empty", "rows", "boom", "none", "oi"))
    reasons = [(reason, detail.split(" ")[:2]) for _i, reason, detail in letters]
    assert reasons == [(REASON_NOT_AN_EVENT, ["Message", "1"]), (REASON_NOT_JSON, ["Message", "2"]),
                       (REASON_UNREADABLE, ["The", "file"])]  # message 4 says 10 MB; 100 bytes follow


def test_a_framed_message_over_the_cap_is_too_large_and_the_next_is_read(traced, tmp_path):
    small, large = (encode_spans(traced[n]).SerializeToString() for n in range(2))
    large += b"\x2a\x00" * 2000  # unknown empty fields (resource's schema_url): 4000 bytes more
    letters, calls = _letters(tmp_path, _framed([large, small]), "--max-event-bytes", str(len(large) - 1))
    assert [(i, reason) for i, reason, _d in letters] == [(0, REASON_TOO_LARGE)]
    assert calls == sorted(f"r0-{kind}" for kind in ("empty", "rows", "boom", "none", "oi"))


def test_ids_are_made_hex_in_one_place():
    assert hex_id("tqdrIZFCSoBee+D7rzDFfg==", 16) == "b6a76b2191424a805e7be0fbaf30c57e"
    assert hex_id("aKaJpPTuKQc=", 8) == "68a689a4f4ee2907"
    assert hex_id("b6a76b2191424a805e7be0fbaf30c57e", 16) == "b6a76b2191424a805e7be0fbaf30c57e"  # hex stays
    assert hex_id("a1", 8) == "a1" and hex_id("not base64!!", 8) == "not base64!!" and hex_id(7, 8) == 7


# ---------------------------------------------------------------- a stream record in otlp_proto


def test_an_otlp_proto_record_gives_the_json_records_items_and_an_envelope_stays_one(traced):
    spans = traced[0]
    (line,) = json_lines([spans])
    from_json = items_from_message("kafka://t/0", 7, line)
    from_proto = items_from_message("kafka://t/0", 7, encode_spans(spans).SerializeToString())
    shown = lambda items: [(type(i).__name__, getattr(i, "type", None), getattr(i, "payload", None), getattr(i, "meta", None),  # noqa: E731
                            getattr(i, "index", None)) for i in items]
    assert len(from_json) == 11 and shown(from_proto) == shown(from_json)
    envelope = b'{"type":"stream.tool_start","payload":{"toolCallId":"c1"},"meta":{"runId":"r1"}}'
    (event,) = items_from_message("kafka://t/0", 8, envelope)
    assert (event.type, event.index, event.meta["runId"]) == ("stream.tool_start", 8, "r1")
    (letter,) = items_from_message("kafka://t/0", 9, b"\x08\x96\x01 not a request")
    assert isinstance(letter, DeadLetter) and (letter.reason, letter.event_index) == (REASON_NOT_JSON, 9)

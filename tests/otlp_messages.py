"""OTLP/JSON messages as the OpenTelemetry Python SDK writes them, for the stream's tests.

Each run is one trace whose spans are exported together by the SDK's OTLP/JSON file exporter:
one `TracesData` object, one line (`traced_spans` gives the spans themselves, for other
encodings), which is also what the Collector's `kafka` exporter writes to one record with
`encoding: otlp_json` (an `ExportTraceServiceRequest`, the same JSON). Times are fixed, so a
test can replay them through event time.
"""

from __future__ import annotations

import io

from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

#: The first run's start, in Unix nanoseconds; each run starts a minute after the one before.
T0_NS = 1_790_401_500_000_000_000
MS = 1_000_000


def _execute_tool(call_id: str, result: str | None = None) -> dict:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "list_hosts", "gen_ai.tool.call.id": call_id}
    return attrs if result is None else {**attrs, "gen_ai.tool.call.result": result}


def traced_spans(runs: int = 4) -> list[tuple[ReadableSpan, ...]]:
    """`runs` agent runs, each its trace's finished spans: an agent span, a chat span (not a tool call), and
    tool calls with an empty result, rows (its start and end in the same millisecond), an error, no result
    (never ends as a call), and an OpenInference `TOOL` span with a text result."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("footprint-audit-tests")
    traced = []
    for run in range(runs):
        memory.clear()
        t = T0_NS + run * 60_000 * MS
        root = tracer.start_span("invoke_agent", start_time=t, attributes={"gen_ai.operation.name": "invoke_agent"})
        inside = trace.set_span_in_context(root)

        def span(name: str, begin: int, end: int, attributes: dict, failed: bool = False) -> None:
            s = tracer.start_span(name, context=inside, start_time=t + begin, attributes=attributes)
            if failed:
                s.set_status(Status(StatusCode.ERROR, "the tool threw"))
            s.end(end_time=t + end)

        span("chat", 0, 900 * MS // 1000, {"gen_ai.operation.name": "chat"})
        span("execute_tool list_hosts", 1 * MS, 7 * MS + MS // 2, _execute_tool(f"r{run}-empty", '{"hosts": []}'))
        span("execute_tool list_hosts", 10 * MS + 100, 10 * MS + 600,  # one millisecond: ordered by kind
             _execute_tool(f"r{run}-rows", '{"hosts": [{"name": "h1"}, {"name": "h2"}]}'))
        span("execute_tool list_hosts", 20 * MS, 21 * MS, _execute_tool(f"r{run}-boom"), failed=True)
        span("execute_tool list_hosts", 30 * MS, 31 * MS, _execute_tool(f"r{run}-none"))
        span("lookup", 40 * MS, 45 * MS, {"openinference.span.kind": "TOOL", "tool.name": "lookup", "tool.id": f"r{run}-oi",
                                          "output.value": "no rows matched"})
        root.end(end_time=t + 50 * MS)
        traced.append(memory.get_finished_spans())
    provider.shutdown()
    return traced


def json_lines(traced: list[tuple[ReadableSpan, ...]]) -> list[bytes]:
    """Each run's spans as the SDK's OTLP/JSON file exporter writes them: one `TracesData` line (without its newline)."""
    written = io.StringIO()
    exporter = FileSpanExporter(stream=written)
    for spans in traced:
        assert exporter.export(spans).name == "SUCCESS"
    return [line.encode() for line in written.getvalue().splitlines()]


def traced_runs(runs: int = 4) -> list[bytes]:
    """`runs` agent runs (`traced_spans`), each one OTLP/JSON `TracesData` line (`json_lines`)."""
    return json_lines(traced_spans(runs))


def latest_end_ms(line: bytes) -> int:
    """The latest span end time of a `TracesData` line, in ms (a producer's record time)."""
    import orjson

    data = orjson.loads(line)
    ends = [int(s["endTimeUnixNano"]) for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    return max(ends) // MS

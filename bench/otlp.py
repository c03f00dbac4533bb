"""OTLP/JSON lines against JSON Lines on the same tool calls: what reading traces costs (docs/traces.md).

Writes the same calls (values from `bench/corpus.py`, runs of 3 to 40 calls) twice:

* `calls.jsonl`: agentfootprint JSON Lines, a `stream.tool_start` and a `stream.tool_end` per call;
* `calls.otlp.jsonl`: OTLP/JSON lines as an SDK's batch processor exports them, one line per run
  holding its `execute_tool` spans (one per call) and one `invoke_agent` span.

Then, alternated in one invocation (`--rounds` times each), it measures the decode (`open_source`
and every item drained: CPU seconds of this process) and the whole `reassess` job on one worker
(wall seconds), and prints tool calls per second for each and the ratio OTLP / JSON Lines.

    python -m bench.otlp --calls 100000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

from bench.corpus import make_corpus
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.transforms.decode.sources import open_source


def _attr(key: str, value: object) -> dict:
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    return {"key": key, "value": _any(value)}


def _any(value: object) -> dict:
    """A JSON value as the OTLP/JSON `AnyValue` the SDK writes for it."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _any(v)} for k, v in value.items()]}}  # type: ignore[attr-defined]


def write_inputs(folder: Path, calls: int, seed: int = 7) -> None:
    """The same `calls` tool calls as JSON Lines and as OTLP/JSON lines under `folder`."""
    r = random.Random(seed)
    corpus = make_corpus(min(calls, 50_000), seed)
    t0 = 1_790_000_000_000
    with open(folder / "calls.jsonl", "wb") as lines, open(folder / "calls.otlp.jsonl", "wb") as otlp:
        n = run = 0
        while n < calls:
            run += 1
            trace = f"{run:032x}"
            spans = []
            for i in range(min(r.randint(3, 40), calls - n)):
                value = corpus[n % len(corpus)].value
                call, ms = f"call_{n}", t0 + n * 10
                meta = {"runId": trace, "wallClockMs": ms}
                lines.write(orjson.dumps({"type": "agentfootprint.stream.tool_start",
                                          "payload": {"toolCallId": call, "toolName": "lookup"}, "meta": meta}) + b"\n")
                end = {"toolCallId": call, "result": value, "durationMs": 6}
                lines.write(orjson.dumps({"type": "agentfootprint.stream.tool_end", "payload": end,
                                          "meta": {**meta, "wallClockMs": ms + 6}}) + b"\n")
                spans.append({"traceId": trace, "spanId": f"{n + 1:016x}", "parentSpanId": f"{run:016x}",
                              "name": "execute_tool lookup",
                              "kind": 1, "startTimeUnixNano": str(ms * 1_000_000), "endTimeUnixNano": str((ms + 6) * 1_000_000),
                              "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "lookup"),
                                             _attr("gen_ai.tool.call.id", call), _attr("gen_ai.tool.call.result", value)],
                              "status": {}})
                n += 1
            spans.append({"traceId": trace, "spanId": f"{run:016x}", "name": "invoke_agent", "kind": 1,
                          "startTimeUnixNano": str(t0 * 1_000_000), "endTimeUnixNano": str((t0 + n * 10) * 1_000_000),
                          "attributes": [_attr("gen_ai.operation.name", "invoke_agent")], "status": {}})
            resource = {"attributes": [_attr("service.name", "bench")]}
            otlp.write(orjson.dumps({"resourceSpans": [{"resource": resource,
                                                        "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}) + b"\n")


def decode_cpu(path: Path) -> float:
    """CPU seconds to open the file and drain every item it gives."""
    t = time.process_time()
    opened = open_source(str(path))
    for _ in opened.streamed:
        pass
    return time.process_time() - t


def job_wall(path: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    code = reassess.run(["--input", str(path), "--output", str(out), "--workers", "1", "--no-progress", "--quiet"])
    if code != 0:
        raise SystemExit(f"reassess exited {code} on {path}")
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-job", action="store_true", help="measure the decode only")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-otlp-"))
    try:
        write_inputs(work, args.calls)
        files = {"jsonl": work / "calls.jsonl", "otlp": work / "calls.otlp.jsonl"}
        sizes = {k: p.stat().st_size for k, p in files.items()}
        load_before = os.getloadavg()[0]
        decode: dict[str, list[float]] = {k: [] for k in files}
        job: dict[str, list[float]] = {k: [] for k in files}
        for _ in range(args.rounds):
            for kind, path in files.items():
                decode[kind].append(decode_cpu(path))
                if not args.no_job:
                    job[kind].append(job_wall(path, work / f"out-{kind}"))
        result: dict = {"calls": args.calls, "bytes": sizes, "load_before": round(load_before, 2)}
        for name, figures in (("decode_cpu_s", decode), ("job_wall_s", job)):
            if not figures["jsonl"]:
                continue
            best = {k: min(v) for k, v in figures.items()}
            result[name] = {k: round(v, 2) for k, v in best.items()}
            result[name.replace("_s", "_calls_per_s")] = {k: round(args.calls / v) for k, v in best.items()}
            result[name.replace("_s", "_ratio_otlp_over_jsonl")] = round(best["jsonl"] / best["otlp"], 2)
        result["load_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

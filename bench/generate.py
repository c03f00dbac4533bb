"""A seeded generator of realistic recordings and event streams, at any size.

Role: the input of `bench/run.py` (the baseline, the Beam job, the memory
runs) and of `bench/test_smoke.py`. It writes agentfootprint runs as
the readers' upstream records them:

* many runs of 3 to 40 tool calls each, with the run's own events around them
  (`agent.run_configured`, `agent.turn_start/turn_end`, `stream.llm_start/llm_end`,
  `context.injected`, `stream.token`, sometimes `pause.resume`);
* per call: `stream.tool_start`, the declarations the tool made
  (`tools.absent`, `tools.coverage_declared`, `tools.semantics_declared`),
  `middleware.decision` / `permission.check` / `checkin.decision` (allow, and
  now and then deny, halt or decline), `stream.tool_progress`, and
  `stream.tool_end` with the result (text or structured, `modelResult` on some);
  outcomes ran, failed, refused, declined, not-dispatched and unknown all occur;
* result values drawn from `bench/corpus.py` (every route of the readers:
  bare arrays, row objects, absence / coverage / described envelopes, tickets,
  JSON with notes, MCP blocks, capped heads, plain text, structured values),
  from a few bytes to a few KB, plus rare large row sets up to 1 MB;
* committed-state calls (tool messages in a recording's snapshot history);
* about 5% bad events: elements that are not envelopes, events without
  `meta.runId`, `tools.*` events without a call id, redacted call ids and, in
  line files, lines that are not JSON; plus a few bad files.

Two layouts: `recordings` (one run per file mostly: envelope v1, recording with
snapshot, events array; some gzip / zstd, some pretty-printed) and `stream`
(JSON Lines files of many interleaved runs, some SSE captures). Same seed, size
and start, same bytes; the bad files differ from one seed or start to another
(two days' folders hold no byte-identical files). `--start` sets when the first
run starts (a UTC date or time; each file's runs start a second to a minute after
the last file's: 100 MB of recordings spans about 8 hours, of streams about 20
minutes), for another day's data:

    python -m bench.generate --layout recordings --size 100MB --out bench/data/rec-100mb
    python -m bench.generate --layout stream --size 50MB --out bench/data/stream-50mb
    python -m bench.generate --size 20MB --seed 8 --start 2026-12-02 --out bench/data/day-2
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import zstandard

from bench.corpus import _Gen, KINDS, Record

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["generate", "parse_size", "DECLARATIONS", "big_value", "GenStats"]

#: The declarations the generated runs are read with (tool → rowsAt).
DECLARATIONS = {
    "id": "bench",
    "version": "1",
    "tools": {
        "list_hosts": {"rowsAt": "hosts"},
        "find_volumes": {"rowsAt": "rows"},
        "search_tickets": {"rowsAt": "items"},
        "get_array_inventory": {"rowsAt": "rows"},
        "query_metrics": {"rowsAt": "results"},
    },
}
_TOOLS = ["list_hosts", "find_volumes", "search_tickets", "get_array_inventory", "query_metrics", "read_file", "run_sql"]
_PREFIX = "agentfootprint."
#: Share of bad events (of all event positions).
BAD_SHARE = 0.05
#: Share of calls with a large result (10 KB .. 1 MB).
BIG_SHARE = 0.002
#: When the first run starts by default (ms since the epoch: 2026-09-21 14:13:20 UTC).
START_MS = 1_790_000_000_000


def parse_size(text: str) -> int:
    """`100MB`, `2GB`, `512k`, `1000000` → bytes (decimal units)."""
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def parse_start(text: str) -> int:
    """`2026-12-01`, `2026-12-01T08:30`, `2026-12-01T08:30:00+01:00` → ms since the epoch (UTC unless said)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date or time (2026-12-01, 2026-12-01T08:30)") from None
    return int((when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp() * 1000)


def big_value(size: int, seed: int = 1) -> dict:
    """A `{rows: [...]}` result of about `size` bytes of JSON."""
    r = random.Random(seed)
    rows = []
    n = 0
    while n < size:
        row = {"id": len(rows), "host": f"host-{r.randint(1, 9999)}", "region": r.choice(["eu-west-1", "us-east-2"]),
               "cpu": round(r.uniform(0, 100), 2), "note": "x" * r.randint(10, 80)}
        rows.append(row)
        n += len(orjson.dumps(row)) + 1
    return {"rows": rows, "total": len(rows)}


@dataclass
class GenStats:
    files: int = 0
    runs: int = 0
    calls: int = 0
    events: int = 0  # event positions written (good and bad)
    bad: int = 0
    bytes: int = 0
    formats: dict = field(default_factory=dict)

    def line(self) -> str:
        fm = ", ".join(f"{k} {v}" for k, v in sorted(self.formats.items()))
        return (f"{self.files} files, {self.runs} runs, {self.calls} calls, {self.events} events "
                f"({self.bad} bad, {100 * self.bad / max(1, self.events):.1f}%), {self.bytes / 1e6:.1f} MB; {fm}")


class _RunMaker:
    """Builds one run's events (dicts), all draws from one seeded `random.Random`."""

    def __init__(self, seed: int, big: bool = True) -> None:
        self.g = _Gen(seed)
        self.r = self.g.r
        # A pool of corpus records, drawn per call (generation speed at 2 GB).
        names = list(KINDS)
        weights = [KINDS[k][0] for k in names]
        picks = self.r.choices(names, weights=weights, k=4000)
        self.pool: list[Record] = [KINDS[k][1](self.g) for k in picks]
        sizes = [10_000, 30_000, 100_000, 300_000, 1_000_000] if big else []
        self.big = [big_value(s, seed + i) for i, s in enumerate(sizes)]
        self.n_run = 0

    def meta(self, run_id: str, session: str, t: int, off: int) -> dict:
        return {"wallClockMs": t + off, "runOffsetMs": off, "runtimeStageId": f"tool-calls#{off % 997}",
                "subflowPath": [], "compositionPath": ["Agent:agent"], "runId": run_id, "sessionId": session}

    def call_id(self) -> str:
        return "toolu_" + "".join(self.r.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789") for _ in range(24))

    def make_run(self, t0: int, n_calls: int | None = None,
                 snapshot: bool = False) -> tuple[str, str, list[Any], dict | None, int, int]:
        """(run_id, session_id, event elements, snapshot, calls, bad) — elements are dicts (or bad values)."""
        r = self.r
        self.n_run += 1
        run_id = f"run-{t0}-{self.n_run}"
        session = f"{r.getrandbits(64):016x}-{r.getrandbits(32):08x}"
        n_calls = n_calls if n_calls is not None else r.randint(3, 40)
        evs: list[Any] = []
        off = 0

        def add(kind: str, payload: dict) -> None:
            nonlocal off
            off += r.randint(1, 40)
            evs.append({"type": _PREFIX + kind, "payload": payload, "meta": self.meta(run_id, session, t0, off)})

        add("agent.run_configured", {"agentId": "agent", "llm": {"provider": "anthropic", "model": "claude-haiku-4-5"},
                                      "reactMode": "dynamic", "memories": [], "artifacts": {"placement": True}})
        resumed = r.random() < 0.03
        if resumed:
            add("pause.resume", {"kind": "checkin", "pausedForMs": r.randint(100, 9000), "toolName": "find_volumes"})
        else:
            add("agent.turn_start", {"turnIndex": 0, "userPrompt": self.g.words(5, 15) + "?"})
        history: list[dict] = [{"role": "user", "content": self.g.words(5, 15)}]
        calls = 0
        iteration = 0
        while calls < n_calls:
            iteration += 1
            add("stream.llm_start", {"iteration": iteration, "provider": "anthropic", "model": "claude-haiku-4-5",
                                     "messagesCount": 2 * iteration, "toolsCount": 5, "systemPromptChars": 1800})
            if r.random() < 0.3:
                add("context.injected", {"slot": "system", "source": "skill", "sourceId": self.g.words(1, 1),
                                         "contentSummary": self.g.words(4, 12), "reason": "trigger"})
            for k in range(r.randint(0, 3)):
                add("stream.token", {"iteration": iteration, "tokenIndex": k, "content": self.g.words(1, 3)})
            add("stream.llm_end", {"iteration": iteration, "stopReason": "tool_use", "durationMs": r.randint(200, 3000),
                                   "content": "", "toolCallCount": 1,
                                   "usage": {"input": r.randint(100, 9000), "output": r.randint(5, 400)}})
            for _ in range(min(n_calls - calls, r.randint(1, 3))):
                calls += 1
                self._call(add, iteration, history)
        add("agent.turn_end", {"turnIndex": 0, "durationMs": off, "iterationCount": iteration,
                               "finalContent": self.g.words(5, 30), "totalInputTokens": 9000, "totalOutputTokens": 400})
        # Committed-state-only calls (tool messages with no events) on some snapshots.
        if snapshot and r.random() < 0.5:
            for _ in range(r.randint(1, 3)):
                rec = r.choice(self.pool)
                history.append({"role": "tool", "toolCallId": self.call_id(), "toolName": r.choice(_TOOLS),
                                "content": rec.text, "toolChars": len(rec.text) if r.random() < 0.5 else None})
        snap = None
        if snapshot:
            coverage = []
            for msg in history:
                if msg.get("role") == "tool" and r.random() < 0.3:
                    coverage.append({"toolCallId": msg["toolCallId"], "kind": r.choice(["absence", "ledger"]), "iteration": 1})
            snap = {"runId": f"{t0}-0001", "sharedState": {"history": history, "coverageDeclared": coverage},
                    "recorders": [{"id": "agentfootprint.redaction"}] if r.random() < 0.05 else []}
        bad = self._spoil(evs, run_id)
        return run_id, session, evs, snap, calls, bad

    def _call(self, add: Any, iteration: int, history: list) -> None:
        r = self.r
        cid = self.call_id()
        tool = r.choice(_TOOLS)
        rec = r.choice(self.pool)
        value: Any = rec.value
        if r.random() < BIG_SHARE and self.big:
            value = r.choice(self.big)
            if r.random() < 0.5:
                value = orjson.dumps(value).decode()
        base = {"toolName": tool, "toolCallId": cid, "iteration": iteration}
        if r.random() < 0.95:
            add("stream.tool_start", {"toolName": tool, "toolCallId": cid, "args": {"q": self.g.words(1, 3)},
                                      **({"notDispatched": True} if r.random() < 0.01 else {})})
        if r.random() < 0.3:
            deny = r.random() < 0.05
            add("middleware.decision", {**base, "middleware": "guard", "moment": "before-tool", "at": "tool",
                                        "outcome": "deny" if deny else "allow", "changed": False})
        if r.random() < 0.2:
            res = "deny" if r.random() < 0.05 else ("halt" if r.random() < 0.02 else "allow")
            add("permission.check", {**base, "capability": "tool_call", "actor": "agent", "target": tool,
                                     "result": res, "policyRuleId": "readonly"})
        if r.random() < 0.02:
            add("checkin.decision", {**base, "approved": False, "by": "operator"})
        if r.random() < 0.1:
            add("stream.tool_progress", {**base, "payload": {"pct": r.randint(1, 99)}})
        door = rec.door
        if door is not None and door.get("described") is not None:
            add("tools.semantics_declared", {**base, "semantics": door["described"]})
        elif door is not None:
            if door.get("absent"):
                add("tools.absent", {**base, "lookedFor": self.g.words(1, 4), "checked": [{"what": self.g.words(2, 5)}]})
            if door.get("bounded"):
                add("tools.coverage_declared", {**base, "checked": [{"what": self.g.words(2, 5)}], "notChecked": []})
        end: dict = {"toolCallId": cid, "result": value, "durationMs": r.randint(1, 5000)}
        pick = r.random()
        if pick < 0.04:
            end["error"] = True
        elif pick < 0.06:
            end["notExecuted"] = True
        elif pick < 0.3:
            end["status"] = "ok"
        elif pick < 0.35:
            end["status"] = "absent"
        if type(value) is not str and r.random() < 0.3:
            end["modelResult"] = orjson.dumps(value).decode()
        if r.random() < 0.03:
            add("middleware.decision", {**base, "middleware": "redact", "moment": "after-tool", "at": "tool",
                                        "outcome": "deny", "changed": True})
        if r.random() < 0.97:  # a few calls never end (outcome unknown)
            add("stream.tool_end", end)
        history.append({"role": "tool", "toolCallId": cid, "toolName": tool,
                        "content": value if type(value) is str else orjson.dumps(value).decode()[:2000]})

    def _spoil(self, evs: list, run_id: str) -> int:
        """Make about `BAD_SHARE` of a run's event positions bad (in place); returns how many."""
        r = self.r
        n_bad = 0
        for i in range(len(evs)):
            if r.random() >= BAD_SHARE:
                continue
            n_bad += 1
            ev = evs[i]
            pick = r.random()
            if pick < 0.25:
                evs[i] = r.choice([{"note": self.g.words(1, 4)}, "a string", 42, [1, 2], {"type": 7, "payload": {}, "meta": {}}])
            elif pick < 0.45:
                meta = dict(ev["meta"])
                del meta["runId"]
                evs[i] = {**ev, "meta": meta}
            elif pick < 0.65:
                evs[i] = {"type": _PREFIX + "tools.absent", "payload": {"toolName": "list_hosts", "iteration": 1},
                          "meta": ev["meta"]}
            elif pick < 0.85:
                evs[i] = {"type": _PREFIX + "tools.coverage_declared",
                          "payload": {"toolName": "list_hosts", "toolCallId": "[REDACTED]"}, "meta": ev["meta"]}
            else:
                evs[i] = _NOT_JSON  # marker: written as a broken line in line files, a bad element in documents
        return n_bad


_NOT_JSON = object()


def _dump_element(e: Any) -> Any:
    return {"broken": "element"} if e is _NOT_JSON else e


def _line(e: Any, r: random.Random) -> bytes:
    if e is _NOT_JSON:
        return r.choice([b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":', b"not json at all",
                         b"{'single': 'quotes'}"])
    return orjson.dumps(e)


def _document_bytes(kind: str, run_id: str, session: str, evs: list, snap: dict | None, t0: int, pretty: bool) -> bytes:
    elements = [_dump_element(e) for e in evs]
    if kind == "envelope":
        doc: Any = {"format": "agentfootprint.recording.v1",
                    "producer": {"agentfootprintVersion": "9.134.5", "footprintjsVersion": "4.31.2"},
                    "run": {"runId": run_id, "sessionId": session, "startedAt": t0, "endedAt": t0 + 5000,
                            "complete": True, "droppedEvents": 0},
                    "recording": {"snapshot": snap or {"sharedState": {}}, "events": elements}}
    elif kind == "recording":
        doc = {"meta": {"origin": {"runId": run_id}}, "snapshot": snap or {}, "events": elements}
    elif kind == "events-object":
        doc = {"runId": run_id, "events": elements}
    else:  # events-array
        doc = elements
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if pretty else 0)


def generate(out: str | os.PathLike, size: int, seed: int = 7, layout: str = "recordings",
             big: bool = True, bad_files: bool = True, start_ms: int = START_MS) -> GenStats:
    """Write files under `out` until about `size` bytes are written, the first run `start_ms` (ms
    since the epoch) or a little later; returns what was written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    maker = _RunMaker(seed, big=big)
    r = maker.r
    st = GenStats()
    t0 = start_ms
    zstd = zstandard.ZstdCompressor(level=3)

    def write(name: str, data: bytes, fmt: str) -> None:
        sub = out / f"d{st.files // 1000:03d}"
        sub.mkdir(exist_ok=True)
        (sub / name).write_bytes(data)
        st.files += 1
        st.bytes += len(data)
        st.formats[fmt] = st.formats.get(fmt, 0) + 1

    if bad_files:
        # Of this seed and start: two folders generated for two days hold no files of the same bytes.
        write("bad-not-json.json", b'{"format": "agentfootprint.recording.v1", "run": {"runId": "run-%d-s%d", ' % (t0, seed),
              "bad")
        write("bad-unknown.json", b'{"hello": "world", "seed": %d, "start": %d}' % (seed, t0), "bad")

    while st.bytes < size:
        t0 += r.randint(1000, 60_000)
        if layout == "recordings":
            pick = r.random()
            kind = "envelope" if pick < 0.6 else "recording" if pick < 0.8 else "events-array" if pick < 0.9 else "events-object"
            runs = [maker.make_run(t0, snapshot=kind in ("envelope", "recording"))]
            if kind == "events-array" and r.random() < 0.3:
                runs.append(maker.make_run(t0 + 7))
            evs = [e for run in runs for e in run[2]]
            data = _document_bytes(kind, runs[0][0], runs[0][1], evs, runs[0][3], t0, pretty=r.random() < 0.3)
            comp = r.random()
            name = f"{runs[0][0]}.json"
            if comp < 0.05:
                data, name, kind = gzip.compress(data, compresslevel=5), name + ".gz", kind + "+gz"
            elif comp < 0.1:
                data, name, kind = zstd.compress(data), name + ".zst", kind + "+zst"
            write(name, data, kind)
        else:
            n_runs = r.randint(10, 60)
            runs = [maker.make_run(t0 + 3 * i) for i in range(n_runs)]
            evs = _interleave([run[2] for run in runs], r)
            if r.random() < 0.15:
                blocks = []
                for e in evs:
                    line = _line(e, r)
                    etype = e.get("type") if type(e) is dict and type(e.get("type")) is str else "message"
                    blocks.append(b"event: " + etype.encode() + b"\ndata: " + line + b"\n\n")
                    if r.random() < 0.01:
                        blocks.append(b": ping\n\n")
                write(f"capture-{t0}.sse", b"".join(blocks), "sse")
            else:
                write(f"events-{t0}.jsonl", b"\n".join(_line(e, r) for e in evs) + b"\n", "event-stream")
        for run in runs:
            st.runs += 1
            st.calls += run[4]
            st.events += len(run[2])
            st.bad += run[5]
    return st


def _interleave(lists: list[list], r: random.Random) -> list:
    """Merge runs' events, each run's order kept (as a live stream interleaves them)."""
    pos = [0] * len(lists)
    live = [i for i, lst in enumerate(lists) if lst]
    out = []
    while live:
        k = r.randrange(len(live))
        i = live[k]
        out.append(lists[i][pos[i]])
        pos[i] += 1
        if pos[i] == len(lists[i]):
            live[k] = live[-1]
            live.pop()
    return out


def write_declarations(path: str | os.PathLike) -> str:
    Path(path).write_bytes(orjson.dumps(DECLARATIONS))
    return str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", default="10MB", help="total bytes to write, e.g. 1MB, 100MB, 2GB")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layout", choices=["recordings", "stream"], default="recordings")
    ap.add_argument("--no-big", action="store_true", help="no large (10 KB .. 1 MB) result values")
    ap.add_argument("--start", type=parse_start, default=START_MS, metavar="DATE_OR_TIME",
                    help="when the first run starts, UTC unless said: 2026-12-01 or 2026-12-01T08:30 "
                         "(default 2026-09-21T14:13:20); each file's runs start 1-60 s after the last file's")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    st = generate(args.out, parse_size(args.size), args.seed, args.layout, big=not args.no_big, start_ms=args.start)
    write_declarations(Path(str(args.out).rstrip("/") + ".declarations.json"))
    print(f"{args.out}: {st.line()} in {time.perf_counter() - t:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

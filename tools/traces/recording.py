"""What the trace recorders in this folder share: the scenario, the file export, calls.json, --check, the command line.

Standard library only at import time, so ``--check`` runs under any ``python3``. The few helpers that
set up the OpenTelemetry SDK (``file_span_processor``, ``file_tracer_provider``) import it when called,
from the recorder's own venv. The recorders import this module as a plain sibling
(``python tools/traces/record_x.py`` puts ``tools/traces`` first on ``sys.path``).

* The scenario: ``CALLS`` (nine tool calls and what each returns or raises), ``turns()`` (how they are
  grouped into model turns: calls 8 and 9 in one), ``perform()``, ``tool_functions()`` (the six tool
  functions, for the frameworks' own tool decorators), ``fake_script()`` (the turns for ``FakeOpenAI``)
  and ``LOCAL_IDS`` (the call ids the scripts with an in-process fake model give the calls).
* ``Ledger``: what the tool functions actually did, checked against what the model asked for.
* ``call_entry()``, ``versions()``, ``write_calls()``: ``calls.json``, the ground truth of a setup.
* ``scrub()``: the local absolute paths in what was written (exception stack traces) made relative.
* ``check()``: re-read a setup folder, verify it and print where each call's id and result sit.
* ``main()``: the command line (``--out``, ``--setup``, ``--check``, child processes per setup).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the repository root

# ---- the scenario ------------------------------------------------------------------------------
# (tool, arguments, the value it returns, or the exception it raises), in the order the model asks.
CALLS: list[tuple[str, dict[str, Any], Any]] = [
    ("search_docs", {"query": "zebra"}, ""),
    ("list_hosts", {"zone": "ap"}, []),
    ("query_db", {"sql": "select 1"}, {"rows": []}),
    ("query_db", {"sql": "select 2"}, {"rows": [{"id": 1}, {"id": 2}]}),
    ("lookup_user", {"id": 7}, "Ada Lovelace, admin"),
    ("get_weather", {"city": "Paris"}, "sunny, 21C"),
    ("broken_tool", {}, RuntimeError("backend down")),
    ("list_hosts", {"zone": "eu"}, ["web-1"]),
    ("list_hosts", {"zone": "us"}, []),
]
PARALLEL = (8, 9)  # 1-based numbers of the calls asked for in one model turn
#: The user's prompt and the model's last text where the model is `fake_openai` (a recorder's own where not).
FAKE_PROMPT = "Check the docs, hosts, database, user 7, the weather in Paris and the backend."
FAKE_FINAL_TEXT = "Done: one user, sunny in Paris, web-1 in eu; docs, ap, us and the first query were empty."
#: What an OpenInference recorder pins beside its framework and its instrumentor (`versions`).
OPENINFERENCE_PACKAGES = [
    "openinference-instrumentation", "openinference-semantic-conventions", "openai",
    "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-exporter-otlp-json-file",
]
# The call ids of the scripts whose fake model runs in-process (fake_openai.py makes its own).
LOCAL_IDS = (
    "call_sd01zebra", "call_lh02ap", "call_qd03sel1", "call_qd04sel2", "call_lu05id7",
    "call_gw06paris", "call_bt07", "call_lh08eu", "call_lh09us",
)


def turns() -> list[list[tuple[int, str, dict[str, Any]]]]:
    """The model turns: a list of ``(n, tool, args)`` per turn (eight turns; calls 8 and 9 share one)."""
    out: list[list[tuple[int, str, dict[str, Any]]]] = []
    for n, (tool, args, _) in enumerate(CALLS, start=1):
        if n in PARALLEL[1:]:
            out[-1].append((n, tool, args))
        else:
            out.append([(n, tool, args)])
    return out


def fake_script(final_text: str) -> list:
    """The script of ``fake_openai.FakeOpenAI``: the tool-call turns, then ``final_text``."""
    return [[(tool, args) for _, tool, args in turn] for turn in turns()] + [final_text]


def perform(name: str, args: dict[str, Any]) -> Any:
    """What tool ``name`` does when called with ``args``: return its value or raise its exception."""
    for tool, a, outcome in CALLS:
        if tool == name and a == args:
            if isinstance(outcome, BaseException):
                raise type(outcome)(*outcome.args)
            return outcome
    raise KeyError((name, args))


_TOOL_DOCS = {
    "search_docs": ("Search the documentation.", "query: words to look for"),
    "list_hosts": ("List the hosts of a zone.", "zone: zone name"),
    "query_db": ("Run a SQL query.", "sql: the query"),
    "lookup_user": ("Look a user up by id.", "id: user id"),
    "get_weather": ("Current weather of a city.", "city: city name"),
    "broken_tool": ("A tool whose backend is down.", None),
}


def tool_functions(run: Callable[[str, dict[str, Any]], Any] = perform, *, arg_docs: bool = False) -> list:
    """The six tool functions, each calling ``run(name, args)``, ready for a framework's tool decorator.

    Their docstrings are the one-line descriptions, or with ``arg_docs`` a Google-style ``Args:`` section
    too (laid out as in a function nested in another, as the frameworks that parse it were given it).
    """

    def search_docs(query: str) -> str:
        return run("search_docs", {"query": query})

    def list_hosts(zone: str) -> list[str]:
        return run("list_hosts", {"zone": zone})

    def query_db(sql: str) -> dict:
        return run("query_db", {"sql": sql})

    def lookup_user(id: int) -> str:  # noqa: A002 - the scenario's argument name
        return run("lookup_user", {"id": id})

    def get_weather(city: str) -> str:
        return run("get_weather", {"city": city})

    def broken_tool() -> str:
        return run("broken_tool", {})

    functions = [search_docs, list_hosts, query_db, lookup_user, get_weather, broken_tool]
    for fn in functions:
        summary, arg = _TOOL_DOCS[fn.__name__]
        fn.__doc__ = f"{summary}\n\n        Args:\n            {arg}\n        " if arg_docs and arg else summary
    return functions


def _key(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True)


class Ledger:
    """What the tool functions did, by (tool, args). ``error`` formats a raised exception for calls.json."""

    def __init__(self, error: Callable[[BaseException], str] = repr):
        self.error = error
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        self.times: dict[tuple[str, str], int] = {}

    def run(self, name: str, args: dict[str, Any]) -> Any:
        """Perform the tool and note what it did (pass this as ``tool_functions``'s ``run``)."""
        entry = {"tool": name, "args": args, "returned": None, "raised": False}
        self.done[_key(name, args)] = entry
        self.times[_key(name, args)] = self.times.get(_key(name, args), 0) + 1
        try:
            entry["returned"] = perform(name, args)
        except Exception as e:
            entry.update(raised=True, error=self.error(e))
            raise
        return entry["returned"]

    def get(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """What the call asked for did; exits unless it ran exactly once."""
        times = self.times.get(_key(name, args), 0)
        if times != 1:
            raise SystemExit(f"call {name}({args}) executed {times} times")
        return self.done[_key(name, args)]


def call_entry(
    n: int, call_id: str, ran: dict[str, Any], model_read: Any, *, error: bool = True, error_last: bool = False, **extra
) -> dict:
    """One item of ``calls.json``'s ``calls``. ``ran``: a ``Ledger`` entry; ``extra`` goes in after
    ``call_id`` when it is ``turn``, else at the end. The error text of a raised call goes before
    ``model_read`` (``error_last``: at the very end); ``error=False`` leaves it out."""
    entry: dict[str, Any] = {"n": n, "tool": ran["tool"], "call_id": call_id}
    if "turn" in extra:
        entry["turn"] = extra.pop("turn")
    entry.update(args=ran["args"], returned=ran["returned"], raised=ran["raised"])
    if error and not error_last and ran["raised"]:
        entry["error"] = ran["error"]
    entry["model_read"] = model_read
    entry.update(extra)
    if error and error_last and ran["raised"]:
        entry["error"] = ran["error"]
    return entry


def versions(packages: list[str]) -> dict[str, str]:
    """``{package: installed version}`` of those installed."""
    out = {}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def fake_server_calls(fake, ledger: Ledger) -> list[dict]:
    """``calls.json``'s calls of a run against ``fake_openai.FakeOpenAI``: the calls it issued, in order,
    each with its turn, what the tool did and the ``role: tool`` content the server then received."""
    read = fake.tool_messages()
    return [
        call_entry(n, c["id"], ledger.get(c["name"], c["arguments"]), read.get(c["id"]), turn=c["turn"])
        for n, c in enumerate(list(fake.issued), start=1)
    ]


def fake_server_settings(fake, final: str, *, paths: bool = False) -> dict[str, Any]:
    """The ``calls.json`` settings of a run against ``fake_openai.FakeOpenAI`` with a ``SimpleSpanProcessor``
    (``paths``: also the request paths the server saw)."""
    requests = list(fake.requests)
    return {
        "request_stream": requests[0].get("stream", False) if requests else None,
        **({"request_paths": sorted(set(fake.paths))} if paths else {}),
        "model_requests": len(requests),
        "span_processor": "SimpleSpanProcessor(FileSpanExporter)",
        "parallel_calls": list(PARALLEL),
        "final_text": final,
    }


# ---- writing a setup folder --------------------------------------------------------------------
def fresh_folder(out: Path, setup: str) -> Path:
    """``<out>/<setup>``, created, without the traces/logs of an earlier run (the exporters append)."""
    folder = Path(out) / setup
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("traces.jsonl", "logs.jsonl"):
        (folder / name).unlink(missing_ok=True)
    return folder


def file_span_processor(path: Path, *, batch: bool = False):
    """A span processor over ``opentelemetry-exporter-otlp-json-file``'s ``FileSpanExporter`` (every
    export one ``TracesData`` JSON line, hex ids): ``SimpleSpanProcessor`` (a line per span) or, with
    ``batch``, one ``BatchSpanProcessor`` batch for the whole run (written by ``force_flush``)."""
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if batch:
        return BatchSpanProcessor(FileSpanExporter(path), schedule_delay_millis=60_000, max_export_batch_size=512)
    return SimpleSpanProcessor(FileSpanExporter(str(path)))


def file_tracer_provider(path: Path, *, setup: str | None = None, batch: bool = False):
    """An SDK ``TracerProvider`` exporting to ``path`` (see ``file_span_processor``); with ``setup`` its
    resource is ``service.name=fixture-<setup>``, ``service.version=0``, else the SDK default."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    if setup is None:
        provider = TracerProvider()
    else:
        provider = TracerProvider(resource=Resource.create({"service.name": f"fixture-{setup}", "service.version": "0"}))
    provider.add_span_processor(file_span_processor(path, batch=batch))
    return provider


def local_paths() -> list[tuple[str, str]]:
    """(local prefix, what replaces it), most specific first: the venv (``venvs/<name>/``), the base
    Python (``python3.11/``), the repository root (nothing, so paths start at ``tools/traces/``)."""
    py = f"python{sys.version_info.major}.{sys.version_info.minor}/"
    pairs = [(sys.prefix, f"venvs/{Path(sys.prefix).name}/"), (sys.base_prefix, py), (str(ROOT), "")]
    out = []
    for prefix, new in pairs:
        for variant in dict.fromkeys([prefix, os.path.realpath(prefix)]):
            if variant not in ("", "/") and (variant.rstrip("/") + "/", new) not in out:
                out.append((variant.rstrip("/") + "/", new))
    return sorted(out, key=lambda pair: -len(pair[0]))


def scrub(folder: Path) -> None:
    """Replace the local absolute paths (see ``local_paths``) in every file of ``folder``."""
    pairs = local_paths()
    for path in sorted(Path(folder).iterdir()):
        if path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text(encoding="utf-8")
        new = text
        for old, replacement in pairs:
            new = new.replace(old, replacement)
        if new != text:
            path.write_text(new, encoding="utf-8")


def write_calls(folder: Path, truth: dict[str, Any]) -> None:
    """Write ``calls.json``; then scrub the local paths from everything in ``folder``."""
    (folder / "calls.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    scrub(folder)


# ---- verification ------------------------------------------------------------------------------
def value(v: dict) -> Any:
    """An OTLP/JSON AnyValue as Python."""
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: value(kv["value"]) for kv in v["kvlistValue"].get("values", [])}
    for key in ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    return None


def attrs(obj: dict) -> dict[str, Any]:
    """The attributes of a span, event or log record, as Python."""
    return {a["key"]: value(a.get("value", {})) for a in obj.get("attributes") or []}


def short(x: Any, n: int = 110) -> str:
    s = x if isinstance(x, str) else json.dumps(x)
    return s if len(s) <= n else s[: n - 3] + "..."


def _read(path: Path, kind: str, scopes: str, items: str) -> list[tuple[str | None, dict]]:
    """``(scope name, item)`` of every item in an OTLP/JSON lines file; each line must have ``kind``."""
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        doc = json.loads(line)
        if kind not in doc:
            raise SystemExit(f"{path} line {i}: no {kind}")
        for resource in doc[kind]:
            for scope in resource.get(scopes, []):
                out.extend((scope.get("scope", {}).get("name"), item) for item in scope.get(items, []))
    return out


def read_spans(folder: Path) -> list[tuple[str | None, dict]]:
    """``(scope name, span)`` of every span in ``traces.jsonl``; each line must be a ``TracesData``."""
    return _read(folder / "traces.jsonl", "resourceSpans", "scopeSpans", "spans")


def read_logs(folder: Path) -> list[tuple[str | None, dict]]:
    """``(scope name, log record)`` of ``logs.jsonl`` if there is one; each line must be a ``LogsData``."""
    if not (folder / "logs.jsonl").exists():
        return []
    return _read(folder / "logs.jsonl", "resourceLogs", "scopeLogs", "logRecords")


def _blocks(text: str) -> str | None:
    """The joined texts of a JSON list of ``{"text": ...}`` content blocks, else None."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if isinstance(doc, list) and doc and all(isinstance(b, dict) and set(b) == {"text"} for b in doc):
        return "".join(b["text"] for b in doc)
    return None


def _answers(text: str, cid: str) -> list[tuple[str, Any]]:
    """(shape, text) of every entry answering tool call ``cid`` in a JSON-serialized message list."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    found = []

    def blocks_text(blocks):
        if isinstance(blocks, list):
            return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        return blocks

    def walk(x):
        if isinstance(x, dict):
            if x.get("tool_call_id") == cid and "content" in x:
                found.append(("tool_call_id+content", x["content"]))
            elif x.get("toolUseId") == cid and "content" in x:
                found.append(("toolResult.content blocks", blocks_text(x["content"])))
            elif x.get("type") == "tool_call_response" and x.get("id") == cid:
                k = "response" if "response" in x else "result"
                found.append((f"tool_call_response.{k} blocks", blocks_text(x.get(k))))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return found


def _where(call: dict, spans: list[dict], tool_spans: list[dict]) -> tuple[list[str], list[str]]:
    """Where in ``spans`` the call's id is, and where the exact text the model read is."""
    cid, read = call["call_id"], call["model_read"]
    id_at, read_at = [], []
    for s in spans:
        a = attrs(s)
        places = list(a.items()) + [(f"{e['name']}.{k}", v) for e in s.get("events", []) for k, v in attrs(e).items()]
        is_tool = s in tool_spans
        for key, v in places:
            text = v if isinstance(v, str) else json.dumps(v)
            if cid in text:
                id_at.append(f"{s['name']}: {key}")
                # a serialized message list: the entry answering this id, and what it holds
                for shape, got in _answers(text, cid):
                    read_at.append(f"{s['name']}: {key} [{shape}]" + ("" if got == read else f" = {short(got, 40)!r}"))
                # flattened messages: <prefix>.tool_call_id == id, text in <prefix>.content
                if key.endswith(".tool_call_id") and text == cid:
                    ckey = key[: -len("tool_call_id")] + "content"
                    got = a.get(ckey, "<absent>")
                    read_at.append(f"{s['name']}: {ckey}" + ("" if got == read else f" = {short(got, 40)!r}"))
            if is_tool and a.get("gen_ai.tool.call.id", cid) == cid and s["name"].endswith(call["tool"]):
                where = "tool span" + ("" if "gen_ai.tool.call.id" in a else ", no id on it")
                if text == read:
                    read_at.append(f"{s['name']} ({where}): {key} [plain]")
                elif _blocks(text) == read:
                    read_at.append(f"{s['name']} ({where}): {key} [content blocks]")
    return sorted(dict.fromkeys(id_at)), sorted(dict.fromkeys(read_at))


def check(folder: Path, more: Callable[[list, list, dict], None] | None = None) -> None:
    """Verify a setup folder and print what it holds.

    Every ``traces.jsonl`` line is an OTLP/JSON ``TracesData`` (``logs.jsonl``: ``LogsData``), and
    ``calls.json`` holds the scenario's nine calls with what they returned or raised. Prints the tool
    spans, then per call where its id is and where the exact text the model read is (span: attribute or
    event.attribute). Log records count as spans named after their event. ``more(spans, records, truth)``
    prints what a script adds (spans and records are ``(scope, item)`` pairs).
    """
    folder = Path(folder)
    spans, records = read_spans(folder), read_logs(folder)
    truth = json.loads((folder / "calls.json").read_text(encoding="utf-8"))
    got = [(c["tool"], c["args"], c["returned"], c["raised"]) for c in truth["calls"]]
    want = [(t, a, None if isinstance(o, BaseException) else o, isinstance(o, BaseException)) for t, a, o in CALLS]
    if got != want:
        raise SystemExit(f"{folder}/calls.json: the calls are not the scenario's: {got}")
    sizes = ", ".join(
        f"{p.name} {p.stat().st_size} bytes" for p in sorted(folder.iterdir()) if p.suffix in (".json", ".jsonl")
    )
    traces = len({s["traceId"] for _, s in spans})
    print(f"== {folder.name}: {len(spans)} spans in {traces} trace(s), {len(records)} log records; {sizes}")

    items = [s for _, s in spans] + [
        {"name": r.get("eventName") or attrs(r).get("event.name") or "log", "attributes": r.get("attributes", []),
         "body": r.get("body")}
        for _, r in records
    ]
    for r in items[len(spans):]:  # a log record's body as one more attribute
        if r["body"] is not None:
            r["attributes"] = [*r["attributes"], {"key": "body", "value": r["body"]}]
    tool_spans = [
        s for s in items[: len(spans)]
        if attrs(s).get("gen_ai.operation.name") == "execute_tool" or attrs(s).get("openinference.span.kind") == "TOOL"
    ]
    print(f"-- {len(tool_spans)} tool spans")
    for s in tool_spans:
        a = attrs(s)
        status = s.get("status", {})
        print(f"  {s['name']!r} status={status.get('code', 0)} {short(status.get('message', ''), 60)!r}")
        for key in ("gen_ai.tool.call.id", "tool.id", "tool_call.id", "gen_ai.tool.call.arguments", "input.value",
                    "gen_ai.tool.status", "gen_ai.tool.call.result", "tool_response", "output.value",
                    "output.mime_type", "error.type"):
            if key in a:
                print(f"      attr {key} = {short(a[key])!r}")
        for e in s.get("events", []):
            shown = {k: short(v, 90) for k, v in attrs(e).items() if k != "exception.stacktrace"}
            print(f"      event {e['name']} {shown}")
    print("-- per call: where its id is, and where the exact text the model read is (span: attribute or event.attribute)")
    for call in truth["calls"]:
        id_at, read_at = _where(call, items, tool_spans)
        print(f"  #{call['n']} {call['tool']} {call['call_id']} model_read={short(call['model_read'], 60)!r}")
        print(f"      id in   {id_at}")
        print(f"      read in {read_at}")
    if more is not None:
        more(spans, records, truth)


# ---- the command line --------------------------------------------------------------------------
def child_env(changes: dict[str, str | None], clear: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment without ``clear`` and ``OTEL_EXPORTER_OTLP_ENDPOINT``, with ``changes``
    (a None value removes the variable)."""
    env = {k: v for k, v in os.environ.items() if k not in clear and k != "OTEL_EXPORTER_OTLP_ENDPOINT"}
    for key, val in changes.items():
        if val is None:
            env.pop(key, None)
        else:
            env[key] = val
    return env


def main(
    script: str,
    setups: dict[str, Any],
    record: Callable[..., None],
    *,
    argv: list[str] | None = None,
    child_env_of: Callable[[str], dict[str, str]] | None = None,
    one_setup: bool = False,
    more: Callable[[list, list, dict], None] | None = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """The recorders' command line: ``[--out DIR] [--setup NAME]... [--check | --no-check]``.

    Records each setup (all by default) with ``record(setup, out, args)``, then checks it; ``--check``
    only checks. With ``child_env_of``, each setup is recorded in a child process of ``script`` with
    the environment ``child_env_of(setup)``. With ``one_setup``, recording needs one ``--setup`` (the
    setups need different venvs). ``options`` adds a script's own arguments; ``more`` see ``check``.
    """
    doc = sys.modules["__main__"].__doc__ or ""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0] if doc.strip() else None)
    parser.add_argument("--out", default="tests/data/traces", type=Path, help="parent folder of the setup folders")
    parser.add_argument("--setup", action="append", choices=sorted(setups), help="default: every setup")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="only verify and describe what is already recorded")
    group.add_argument("--no-check", action="store_true", help="record without re-reading and describing it")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    chosen = args.setup or list(setups)
    if args.child:
        record(chosen[0], args.out, args)
        return 0
    if not args.check and one_setup and len(chosen) != 1:
        parser.error("recording needs one --setup (each setup has its own venv)")
    for setup in chosen:
        if args.check:
            pass
        elif child_env_of is None:
            record(setup, args.out, args)
        else:
            cmd = [sys.executable, str(Path(script).resolve()), "--child", "--setup", setup, "--out", str(args.out)]
            subprocess.run(cmd, env=child_env_of(setup), check=True)
        if not args.check:
            print(f"wrote {args.out / setup}")
    if not args.no_check:
        for setup in chosen:
            check(args.out / setup, more)
    return 0

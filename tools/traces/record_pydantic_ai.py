"""Record OTLP/JSON trace fixtures from pydantic-ai, run offline with a fake model.

One agent run per setup, instrumented with
`Agent(..., capabilities=[Instrumentation(settings=InstrumentationSettings(version=N, ...))])`
(pydantic-ai 2.78 has no `instrument=` argument on `Agent`; the capability replaces it).
A `FunctionModel` (no network) asks for the scenario's calls of README.md, with the call ids
`recording.LOCAL_IDS`, then answers with text.

pydantic-ai does not send an arbitrary exception from a tool back to the model: a `RuntimeError`
ends the run. Its users turn the exception into a failed tool result that the model reads, here
with the documented `Hooks(tool_execute_error=...)` capability raising `ToolFailed(str(error))`.

Setups (one folder each under --out):
    pydantic-ai-v5             InstrumentationSettings(version=5)  (the default version, content captured)
    pydantic-ai-v5-no-content  InstrumentationSettings(version=5, include_content=False)
    pydantic-ai-v6             InstrumentationSettings(version=6)  (tool results in role 'tool' messages)
    pydantic-ai-v2             InstrumentationSettings(version=2)  (deprecated: `tool_arguments` / `tool_response`)

Each folder gets `traces.jsonl` (one line per export batch: one batch, flushed at the end) and
`calls.json`, whose `model_read` is the text a provider model is sent for that result
(`ToolReturnPart.model_response_str()`: the text pydantic-ai's OpenAI chat, Bedrock and Cohere
models send as the tool message content) taken from the messages the fake model received in the
next request. pydantic-ai emits no log records.

Pinned versions (Python 3.11):
    pydantic-ai-slim==2.78.0  opentelemetry-sdk==1.45.2  opentelemetry-exporter-otlp-json-file==0.66b1
    (pip resolved: opentelemetry-api 1.45.2, opentelemetry-semantic-conventions 0.66b2,
     pydantic 2.14.4, pydantic-graph 2.78.0, logfire-api 6.1.0, genai-prices 0.2.5)

Recreate and rerun (from the repository root):
    python3 -m venv /tmp/trace-venvs/pydantic-ai
    /tmp/trace-venvs/pydantic-ai/bin/pip install 'pydantic-ai-slim==2.78.0' \\
        'opentelemetry-sdk==1.45.2' 'opentelemetry-exporter-otlp-json-file==0.66b1'
    /tmp/trace-venvs/pydantic-ai/bin/python tools/traces/record_pydantic_ai.py --out tests/data/traces

Command line (`--setup`, `--check`, ...): README.md.
"""

import asyncio
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import recording

PACKAGES = ["pydantic-ai-slim", "pydantic-graph", "pydantic", "opentelemetry-api", "opentelemetry-sdk",
            "opentelemetry-exporter-otlp-json-file"]

SETUPS: dict[str, dict[str, Any]] = {
    "pydantic-ai-v5": {"version": 5, "include_content": True},
    "pydantic-ai-v5-no-content": {"version": 5, "include_content": False},
    "pydantic-ai-v6": {"version": 6, "include_content": True},
    "pydantic-ai-v2": {"version": 2, "include_content": True},
}
FINAL_TEXT = "Done: web-1 is the only host found (eu); the backend tool was down."
PROMPT = "Audit the fleet: look things up with your tools."


def record(setup: str, out_dir: Path, _args=None) -> None:
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.capabilities import Hooks, Instrumentation
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    opts = SETUPS[setup]
    folder = recording.fresh_folder(out_dir, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl", setup=setup, batch=True)
    settings = InstrumentationSettings(tracer_provider=provider, **opts)

    ledger = recording.Ledger(error=lambda e: f"{type(e).__name__}: {e}")
    model_read: dict[str, dict[str, Any]] = {}  # by call id
    plan = recording.turns()

    def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                model_read[part.tool_call_id] = {
                    "text": part.model_response_str(),
                    "part_kind": part.part_kind,
                    "outcome": getattr(part, "outcome", None),
                }
            elif isinstance(part, RetryPromptPart):
                model_read[part.tool_call_id] = {
                    "text": part.model_response(),
                    "part_kind": part.part_kind,
                    "outcome": "retried",
                }
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(plan):
            return ModelResponse(
                parts=[ToolCallPart(tool_name=t, args=a, tool_call_id=recording.LOCAL_IDS[n - 1]) for n, t, a in plan[turn]]
            )
        return ModelResponse(parts=[TextPart(FINAL_TEXT)])

    async def to_tool_failed(ctx: RunContext, *, call, tool_def, args, error: Exception) -> Any:
        raise ToolFailed(str(error))

    agent = Agent(
        FunctionModel(model_fn, model_name="fake-function-model"),
        name="audit_agent",
        instructions="You audit infrastructure with the tools given.",
        capabilities=[Instrumentation(settings=settings), Hooks(tool_execute_error=to_tool_failed)],
    )
    for fn in recording.tool_functions(ledger.run):
        agent.tool_plain(fn)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # version 2 is deprecated and says so
        result = asyncio.run(agent.run(PROMPT))
    provider.force_flush()
    provider.shutdown()

    calls = []
    for n, (tool, args, _) in enumerate(recording.CALLS, start=1):
        cid = recording.LOCAL_IDS[n - 1]
        read = model_read.get(cid, {})
        part = {"part_kind": read.get("part_kind"), "outcome": read.get("outcome")}
        calls.append(recording.call_entry(n, cid, ledger.get(tool, args), read.get("text"), model_read_part=part,
                                          error_last=True))
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "env": {},
            "instrumentation": {"InstrumentationSettings": opts},
            "tool_error_handling": "Hooks(tool_execute_error=...) raises ToolFailed(str(error))",
            "model": "FunctionModel (offline)",
            "span_processor": "BatchSpanProcessor + force_flush (one TracesData line per batch)",
        },
        "final_output": result.output,
        "calls": calls,
    }
    recording.write_calls(folder, truth)


def more(spans, records, truth) -> None:
    """Which spans carry the message history."""
    for _, s in spans:
        a = recording.attrs(s)
        where = [k for k in ("gen_ai.input.messages", "gen_ai.output.messages", "pydantic_ai.all_messages",
                             "all_messages_events", "events") if k in a]
        if where:
            print(f"  messages on {s['name']!r}: {where}")
    print(f"  final output: {json.dumps(truth['final_output'])}")


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record, more=more))

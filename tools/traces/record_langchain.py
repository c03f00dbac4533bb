"""Record OTLP/JSON trace fixtures from LangChain / LangGraph with OpenInference, offline.

One run per setup of LangGraph's prebuilt ReAct agent (`create_react_agent`) instrumented by
`openinference-instrumentation-langchain`. The model is langchain-core's `GenericFakeChatModel` (no
network) over `AIMessage`s that carry `tool_calls`: the scenario's calls of README.md (calls 8 and 9 in
ONE `AIMessage`), with the call ids `recording.LOCAL_IDS`, then a text answer.

`ToolNode`'s default error handler re-raises anything but argument errors, which ends the run; its
users pass `ToolNode(tools, handle_tool_errors=True)` so the model is told of the error and goes
on, and so does this script. `GenericFakeChatModel` has no `bind_tools`; a subclass returns itself
there and keeps the messages each model call receives.

Setups (one folder each under --out), each run in a child process so the environment is its own:
    langchain               OpenInference defaults
    langchain-hide-outputs  OPENINFERENCE_HIDE_OUTPUTS=true

Each folder gets `traces.jsonl` (one line per export batch: one batch, flushed at the end) and
`calls.json`, whose `model_read` is the `content` of the `ToolMessage` for that call id in the
messages the fake model received in its next call (a str, or a list where langchain-core keeps a list
as content blocks). OpenInference emits no log records.

Size: about 390 KB (langchain) and 310 KB (langchain-hide-outputs). Every LangGraph CHAIN span
(agent, call_model, RunnableSequence, Prompt, should_continue, tools) carries the whole message state
in `input.value`/`output.value`, so the traces grow with the square of the nine turns; nothing is cut.

Pinned versions (Python 3.11):
    langchain-core==1.8.3  langgraph==1.2.24  langgraph-prebuilt==1.1.3
    openinference-instrumentation-langchain==0.1.80
    opentelemetry-sdk==1.45.2  opentelemetry-exporter-otlp-json-file==0.66b1
    (pip resolved: langgraph-checkpoint 4.3.2, openinference-instrumentation 0.1.72,
     openinference-semantic-conventions 0.1.42, opentelemetry-api 1.45.2,
     opentelemetry-instrumentation 0.66b2, langsmith 0.15.1)

Recreate and rerun (from the repository root):
    python3 -m venv /tmp/trace-venvs/langchain
    /tmp/trace-venvs/langchain/bin/pip install 'langchain-core==1.8.3' 'langgraph==1.2.24' \\
        'langgraph-prebuilt==1.1.3' 'openinference-instrumentation-langchain==0.1.80' \\
        'opentelemetry-sdk==1.45.2' 'opentelemetry-exporter-otlp-json-file==0.66b1'
    /tmp/trace-venvs/langchain/bin/python tools/traces/record_langchain.py --out tests/data/traces

Command line (`--setup`, `--check`, ...): README.md.
"""

import os
import sys
from pathlib import Path
from typing import Any

import recording

PACKAGES = [
    "langchain-core",
    "langgraph",
    "langgraph-prebuilt",
    "openinference-instrumentation-langchain",
    "openinference-instrumentation",
    "openinference-semantic-conventions",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-json-file",
]

SETUPS: dict[str, dict[str, str]] = {
    "langchain": {},
    "langchain-hide-outputs": {"OPENINFERENCE_HIDE_OUTPUTS": "true"},
}
OI_ENV = (
    "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_OUTPUTS",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
    "OPENINFERENCE_HIDE_INPUT_TEXT",
    "OPENINFERENCE_HIDE_OUTPUT_TEXT",
)
FINAL_TEXT = "Done: web-1 is the only host found (eu); the backend tool was down."
PROMPT = "Audit the fleet: look things up with your tools."


def record(setup: str, out_dir: Path, _args=None) -> None:
    """Run one setup in this process (the caller has set its environment)."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode, create_react_agent

    folder = recording.fresh_folder(out_dir, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl", setup=setup, batch=True)
    LangChainInstrumentor().instrument(tracer_provider=provider)

    ledger = recording.Ledger(error=lambda e: f"{type(e).__name__}: {e}")
    tools = [tool(fn) for fn in recording.tool_functions(ledger.run)]
    seen: list[list[Any]] = []  # the messages each model call received

    class FakeToolChatModel(GenericFakeChatModel):
        """GenericFakeChatModel that accepts bind_tools and keeps what it was sent."""

        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    replies = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": t, "args": a, "id": recording.LOCAL_IDS[n - 1], "type": "tool_call"} for n, t, a in turn
            ],
        )
        for turn in recording.turns()
    ] + [AIMessage(content=FINAL_TEXT)]
    model = FakeToolChatModel(messages=iter(replies))
    agent = create_react_agent(
        model, tools=ToolNode(tools, handle_tool_errors=True), prompt="You audit infrastructure with the tools given."
    )
    state = agent.invoke({"messages": [("user", PROMPT)]})
    provider.force_flush()
    provider.shutdown()
    LangChainInstrumentor().uninstrument()

    # The ToolMessage content the model read, by call id, from the model call after it.
    read: dict[str, Any] = {}
    for msgs in seen:
        for m in msgs:
            if isinstance(m, ToolMessage) and m.tool_call_id not in read:
                read[m.tool_call_id] = {"content": m.content, "status": m.status, "name": m.name}
    in_state = {m.tool_call_id: m.content for m in state["messages"] if isinstance(m, ToolMessage)}

    calls = []
    for n, (tname, args, _) in enumerate(recording.CALLS, start=1):
        cid = recording.LOCAL_IDS[n - 1]
        r = read.get(cid, {})
        assert in_state.get(cid) == r.get("content"), (cid, in_state.get(cid), r)
        message = {
            "type": "ToolMessage",
            "content_type": type(r.get("content")).__name__,
            "status": r.get("status"),
            "name": r.get("name"),
        }
        ran = ledger.get(tname, args)
        calls.append(recording.call_entry(n, cid, ran, r.get("content"), model_read_message=message, error_last=True))
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "env": {k: os.environ[k] for k in OI_ENV if k in os.environ},
            "instrumentation": "LangChainInstrumentor().instrument(tracer_provider=...)",
            "agent": "langgraph.prebuilt.create_react_agent(model, tools=ToolNode(tools, handle_tool_errors=True))",
            "model": "GenericFakeChatModel subclass (bind_tools returns self; offline)",
            "span_processor": "BatchSpanProcessor + force_flush (one TracesData line per batch)",
        },
        "final_output": state["messages"][-1].content,
        "calls": calls,
    }
    recording.write_calls(folder, truth)


def more(spans, records, truth) -> None:
    """The OpenInference span kinds, and the flattened input messages of the LLM spans."""
    kinds: dict[str, int] = {}
    for _, s in spans:
        k = recording.attrs(s).get("openinference.span.kind")
        kinds[k] = kinds.get(k, 0) + 1
    print(f"  span kinds: {kinds}")
    for _, s in spans:
        a = recording.attrs(s)
        if a.get("openinference.span.kind") == "LLM":
            tm = sorted({k.split(".", 3)[3] for k in a if k.startswith("llm.input_messages.")})
            n = len({k.split(".")[2] for k in a if k.startswith("llm.input_messages.")})
            print(f"  LLM span {s['name']!r}: {n} input messages, keys {tm}")


if __name__ == "__main__":
    sys.exit(
        recording.main(
            __file__, SETUPS, record, more=more, child_env_of=lambda setup: recording.child_env(SETUPS[setup], OI_ENV)
        )
    )

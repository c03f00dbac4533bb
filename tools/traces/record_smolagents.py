"""Record OTLP/JSON traces of smolagents tool calls (OpenInference), offline, against fake_openai.py.

A smolagents ``ToolCallingAgent`` whose model is ``OpenAIModel(api_base=fake.base_url, api_key="x")``
(``fake_openai.FakeOpenAI``) runs the scenario of README.md. The tools are the scenario's functions
under smolagents' ``@tool``. A ``ToolCallingAgent`` ends by calling its ``final_answer`` tool, so the
fake model's last turn is a ``final_answer(answer=...)`` tool call (turn 9, id ``call_9a``), not text:
the trace holds a tenth tool span, ``final_answer``'s, that is not one of the scenario's calls.

What the model reads is not a ``role: tool`` message. smolagents writes each step's results as one
``role: user`` message (its ``tool-response`` role, converted), whose text is ``"Observation:\\n"``
followed by each result as ``str(value).strip()`` (a dict or list in Python's ``repr``, not JSON),
one per line in call-id order, so calls 8 and 9 share one message. The tool calls asked for are sent
back as an ``assistant`` message ``"Calling tools:\\n[{...}]"`` (a Python list of dicts). A tool that
raises ends the step with an ``AgentToolExecutionError``: the step keeps neither its tool calls nor an
assistant message, and the model is sent a ``user`` message ``"Error:\\nError executing tool
'broken_tool' ... RuntimeError: backend down ..."`` without the call id. Because that step leaves no
assistant message in the history, the fake server counts turns by request (``turn_by="request"``),
and smolagents merges that error message into the ``user`` message before it (step 6's observation).
``calls.json``'s ``model_read`` is the exact text the model was sent for the call's turn: the last
message of the next request (the same text for calls 8 and 9), for call 7 only the part its step
added, the whole merged message then in ``model_read_in``; ``model_read_role`` is its role.

Spans come from ``openinference-instrumentation-smolagents`` (``SmolagentsInstrumentor``): an AGENT
span per run, a CHAIN span per step, an LLM span per model call (``llm.input_messages.N.message.contents.M
.message_content.text``, ``llm.output_messages.0.message.tool_calls.K.tool_call.id``), and a TOOL span
per tool call, named after the tool's class (``SimpleTool``; ``FinalAnswerTool``), with ``tool.name``,
``input.value`` (smolagents' own call: ``{"args", "sanitize_inputs_outputs", "kwargs"}``) and
``output.value`` (text as it is, other values as JSON); no call id. The LLM span holds
smolagents' messages before their conversion for the wire: roles ``tool-call`` and ``tool-response``,
not merged (call 7's error is a ``tool-response`` of its own). A ``SimpleSpanProcessor``
writes every ended span as one line of ``traces.jsonl``. No log records.

Setup ``smolagents``: ``<out>/smolagents/traces.jsonl`` and ``calls.json``.

Versions (exact; this is what ran): smolagents 1.26.0 (extra ``openai``), openinference-instrumentation-
smolagents 0.1.43 (openinference-instrumentation 0.1.72, openinference-semantic-conventions 0.1.42),
openai 3.63.0, opentelemetry-api/-sdk 1.45.2, opentelemetry-exporter-otlp-json-file 0.66b1, Python 3.11.

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/smolagents && \\
    /tmp/trace-venvs/smolagents/bin/pip install "smolagents[openai]==1.26.0" \\
        "openinference-instrumentation-smolagents==0.1.43" "openinference-instrumentation==0.1.72" \\
        "openinference-semantic-conventions==0.1.42" "openai==3.63.0" \\
        "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-json-file==0.66b1" && \\
    /tmp/trace-venvs/smolagents/bin/python tools/traces/record_smolagents.py --out tests/data/traces

Command line (``--check``, ...): README.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import recording

SETUPS = {"smolagents": {}}
FINAL_TEXT, PROMPT = recording.FAKE_FINAL_TEXT, recording.FAKE_PROMPT
MODEL_ID = "gpt-4o-mini"
PACKAGES = ["smolagents", "openinference-instrumentation-smolagents", *recording.OPENINFERENCE_PACKAGES]


def _text(message: dict) -> Any:
    """A chat message's content as text: a string as it is, a list of text parts joined."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def model_reads(fake) -> dict[int, tuple[str, Any, Any]]:
    """``{turn: (role, text, whole)}``: what answers each turn, the last message of the next request.
    smolagents merges a message into the one before it when their roles are the same (after step 6,
    step 7's error message joins step 6's observation): then ``text`` is what this turn added (after
    the earlier text and a newline) and ``whole`` the merged message, else ``whole`` is None."""
    out = {}
    for k in range(1, len(fake.requests)):
        before, now = fake.requests[k - 1].get("messages") or [], fake.requests[k].get("messages") or []
        last, text = now[-1], _text(now[-1])
        merged = len(now) == len(before) and before[-1].get("role") == last.get("role")
        head = _text(before[-1]) + "\n" if merged else None
        if merged and isinstance(text, str) and text.startswith(head):
            out[k] = (last.get("role"), text[len(head):], text)
        else:
            out[k] = (last.get("role"), text, None)
    return out


def record(setup: str, out: Path, _args=None) -> None:
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import LogLevel, OpenAIModel, ToolCallingAgent, tool

    from fake_openai import FakeOpenAI

    folder = recording.fresh_folder(out, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl")
    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    ledger = recording.Ledger()
    tools = [tool(fn) for fn in recording.tool_functions(ledger.run, arg_docs=True)]
    script = recording.fake_script(FINAL_TEXT)[:-1] + [[("final_answer", {"answer": FINAL_TEXT})]]
    with FakeOpenAI(script, turn_by="request") as fake:
        model = OpenAIModel(model_id=MODEL_ID, api_base=fake.base_url, api_key="x")
        agent = ToolCallingAgent(tools=tools, model=model, max_steps=12, verbosity_level=LogLevel.OFF,
                                 name="footprint_agent")
        result = agent.run(PROMPT)
        reads = model_reads(fake)
        issued = [c for c in fake.issued if c["name"] != "final_answer"]
        calls = [
            recording.call_entry(n, c["id"], ledger.get(c["name"], c["arguments"]), reads[c["turn"]][1],
                                 turn=c["turn"], model_read_role=reads[c["turn"]][0],
                                 **({"model_read_in": reads[c["turn"]][2]} if reads[c["turn"]][2] else {}))
            for n, c in enumerate(issued, start=1)
        ]
        settings = recording.fake_server_settings(fake, str(result).strip(), paths=True)
    provider.force_flush()
    SmolagentsInstrumentor().uninstrument()
    provider.shutdown()
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "agent": "smolagents.ToolCallingAgent(max_steps=12)",
            "model": f"smolagents.OpenAIModel(model_id={MODEL_ID!r}, api_base=<fake>)",
            "instrumentor": "SmolagentsInstrumentor().instrument(tracer_provider=...)",
            "openinference_env": {
                k: os.environ.get(k)
                for k in ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS", "OPENINFERENCE_HIDE_INPUT_MESSAGES")
            },
            "fake_turn_by": "request",
            "final_turn": "final_answer tool call (call_9a), not a scenario call",
            "model_read": "the text of the user message that answers the turn (Observation:/Error:), shared by calls 8 and 9",
            **settings,
        },
        "calls": calls,
    }
    recording.write_calls(folder, truth)


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record))

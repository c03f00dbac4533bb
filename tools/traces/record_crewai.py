"""Record OTLP/JSON traces of CrewAI tool calls (OpenInference), offline, against fake_openai.py.

A CrewAI ``Crew`` of one ``Agent`` and one ``Task``, whose ``LLM(model="gpt-4o-mini",
base_url=fake.base_url, api_key="x")`` is CrewAI's native OpenAI provider (``OpenAICompletion``, over
the ``openai`` client and ``fake_openai.FakeOpenAI``), runs the scenario of README.md with CrewAI's
native tool calling. The tools are the scenario's functions under ``crewai.tools.tool``. CrewAI sends
each result to the model as a ``role: tool`` message whose content is ``str(result)`` (a list or dict
in Python's ``repr``, not JSON); the failing tool's exception becomes the content ``"Error executing
tool: backend down"``. The two calls of turn 8 run in CrewAI's thread pool.

CrewAI's own telemetry and tracing service are off (``CREWAI_DISABLE_TELEMETRY``,
``CREWAI_DISABLE_TRACKING``, ``CREWAI_TRACING_ENABLED=false``), so nothing leaves the machine.

Spans come from ``openinference-instrumentation-crewai`` (``CrewAIInstrumentor``), in its two modes,
each setup in a child process:

* ``crewai``: the default (method wrappers): a CHAIN span for ``Crew.kickoff``, an AGENT span for the
  task's ``_execute_core``, and a TOOL span per ``Tool.run`` (``<tool>.run``: ``tool.name``,
  ``input.value``, ``output.value``, the value returned, JSON-encoded where it is not text; no call
  id). No LLM span: the call ids are only inside the AGENT and CHAIN spans' ``output.value``, which
  hold the whole message list as JSON.
* ``crewai-events``: ``use_event_listener=True`` (CrewAI's event bus): CHAIN, AGENT, an LLM span per
  model call (``llm.input_messages.N.message.*``: ``tool`` messages with ``tool_call_id`` and
  ``content`` but no ``name``; the assistant messages' ``tool_calls.M.tool_call.function.name`` quoted
  as a Python ``repr``, ``"'search_docs'"``; a tool-calling answer only as ``output.value``, a JSON list
  of tool calls, with no ``llm.output_messages``), and a TOOL span per call (``output.value`` the
  result as text, ``str(result)``; no call id).

A ``SimpleSpanProcessor`` writes every ended span as one line of ``traces.jsonl``. No log records.
Each setup writes ``<out>/<setup>/traces.jsonl`` and ``calls.json`` (each call's id and
``model_read``, the exact ``role: tool`` content the fake server received).

Versions (exact; this is what ran): crewai 1.15.30 (crewai-core, crewai-cli 1.15.30),
openinference-instrumentation-crewai 1.1.21 (openinference-instrumentation 0.1.72,
openinference-semantic-conventions 0.1.42), openai 2.54.0, opentelemetry-api/-sdk 1.45.2,
opentelemetry-exporter-otlp-json-file 0.66b1, Python 3.11. crewai pulls in
opentelemetry-exporter-otlp-proto-http/-grpc, whose 1.45.2 wants opentelemetry-exporter-otlp-common
0.66b2 while the JSON file exporter wants 0.66b1: the proto exporters are pinned to 1.45.1.

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/crewai && \\
    /tmp/trace-venvs/crewai/bin/pip install "crewai==1.15.30" "openinference-instrumentation-crewai==1.1.21" \\
        "openinference-instrumentation==0.1.72" "openinference-semantic-conventions==0.1.42" "openai==2.54.0" \\
        "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-json-file==0.66b1" \\
        "opentelemetry-exporter-otlp-proto-http==1.45.1" "opentelemetry-exporter-otlp-proto-grpc==1.45.1" && \\
    /tmp/trace-venvs/crewai/bin/python tools/traces/record_crewai.py --out tests/data/traces

Command line (``--setup``, ``--check``, ...): README.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import recording

# CrewAI's own telemetry and its tracing service: off, so nothing leaves the machine.
QUIET = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true", "CREWAI_TRACING_ENABLED": "false"}
SETUPS = {
    "crewai": {"use_event_listener": False},
    "crewai-events": {"use_event_listener": True},
}
FINAL_TEXT, PROMPT = recording.FAKE_FINAL_TEXT, recording.FAKE_PROMPT
MODEL_ID = "gpt-4o-mini"
PACKAGES = ["crewai", "openinference-instrumentation-crewai", *recording.OPENINFERENCE_PACKAGES]


def record(setup: str, out: Path, _args=None) -> None:
    """Runs in a child process whose environment already holds ``QUIET``."""
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    folder = recording.fresh_folder(out, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl")
    CrewAIInstrumentor().instrument(tracer_provider=provider, **SETUPS[setup])

    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    from fake_openai import FakeOpenAI

    ledger = recording.Ledger(error=lambda e: f"{type(e).__name__}: {e}")
    tools = [tool(fn) for fn in recording.tool_functions(ledger.run, arg_docs=True)]
    with FakeOpenAI(recording.fake_script(FINAL_TEXT)) as fake:
        llm = LLM(model=MODEL_ID, base_url=fake.base_url, api_key="x")
        agent = Agent(role="auditor", goal="Use the tools.", backstory="You check systems.", tools=tools, llm=llm,
                      verbose=False, max_iter=20)
        task = Task(description=PROMPT, expected_output="A short summary.", agent=agent)
        crew = Crew(agents=[agent], tasks=[task], verbose=False)
        result = crew.kickoff()
        settings = recording.fake_server_settings(fake, str(result).strip(), paths=True)
        calls = recording.fake_server_calls(fake, ledger)
    provider.force_flush()
    CrewAIInstrumentor().uninstrument()
    provider.shutdown()
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "model": f"crewai.LLM(model={MODEL_ID!r}, base_url=<fake>)",
            "llm_class": type(llm).__name__,
            "instrumentor": "CrewAIInstrumentor().instrument(tracer_provider=..., "
                            f"use_event_listener={SETUPS[setup]['use_event_listener']})",
            "env": {k: os.environ.get(k) for k in QUIET},
            **settings,
        },
        "calls": calls,
    }
    recording.write_calls(folder, truth)


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record, child_env_of=lambda setup: recording.child_env(QUIET)))

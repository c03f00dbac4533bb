"""Record OTLP/JSON traces of openai-agents tool calls (OpenInference), offline, against fake_openai.py.

An openai-agents ``Agent`` whose model is ``OpenAIChatCompletionsModel`` over
``AsyncOpenAI(base_url=fake.base_url, api_key="x")`` (``fake_openai.FakeOpenAI``) runs the scenario
of README.md. The failing tool's exception is turned into a message to the model by the SDK's default
``failure_error_function``.

Spans come from ``openinference-instrumentation-openai-agents`` (``OpenAIAgentsInstrumentor``), whose
tracing processor turns the Agents SDK's own trace events into OpenTelemetry spans on the SDK's
``TracerProvider``. It is instrumented with its default ``exclusive_processor=True``, which takes the
Agents SDK's default processor (the one exporting to OpenAI's trace backend) out of the list, so nothing
leaves the machine while OpenInference still records (``set_tracing_disabled(True)`` would stop it too).
A ``SimpleSpanProcessor`` writes every ended span as one line of ``traces.jsonl``. No log records.

Setup ``openai-agents``: ``<out>/openai-agents/traces.jsonl`` and ``calls.json`` (each call's id and
``model_read``, the exact ``role: tool`` content the fake server received).

Versions (exact; this is what ran): openai-agents 0.24.0, openinference-instrumentation-openai-agents
2.6.0 (openinference-instrumentation 0.1.72, openinference-semantic-conventions 0.1.42), openai 3.63.0,
opentelemetry-api/-sdk 1.45.2, opentelemetry-exporter-otlp-json-file 0.66b1, Python 3.11.
(openai-agents needs openai >= 3: keep it apart from the strands venv.)

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/openai-agents && \\
    /tmp/trace-venvs/openai-agents/bin/pip install "openai-agents==0.24.0" \\
        "openinference-instrumentation-openai-agents==2.6.0" "openinference-instrumentation==0.1.72" \\
        "openinference-semantic-conventions==0.1.42" "openai==3.63.0" \\
        "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-json-file==0.66b1" && \\
    /tmp/trace-venvs/openai-agents/bin/python tools/traces/record_openai_agents.py --out tests/data/traces

Command line (``--check``, ...): README.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import recording

SETUPS = {"openai-agents": {}}
FINAL_TEXT, PROMPT = recording.FAKE_FINAL_TEXT, recording.FAKE_PROMPT
MODEL_ID = "gpt-4o-mini"
PACKAGES = ["openai-agents", "openinference-instrumentation-openai-agents", *recording.OPENINFERENCE_PACKAGES]


def record(setup: str, out: Path, _args=None) -> None:
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    from agents import Agent, Runner, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.tracing import get_trace_provider
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from fake_openai import FakeOpenAI

    folder = recording.fresh_folder(out, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl")
    # exclusive_processor=True (the default) replaces the SDK's OpenAI-backend exporter.
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)
    processors = [type(p).__name__ for p in get_trace_provider()._multi_processor._processors]
    if processors != ["OpenInferenceTracingProcessor"]:
        raise SystemExit(f"unexpected Agents SDK trace processors: {processors}")

    ledger = recording.Ledger()
    tools = [function_tool(fn) for fn in recording.tool_functions(ledger.run, arg_docs=True)]
    with FakeOpenAI(recording.fake_script(FINAL_TEXT)) as fake:
        client = AsyncOpenAI(base_url=fake.base_url, api_key="x")
        model = OpenAIChatCompletionsModel(model=MODEL_ID, openai_client=client)
        agent = Agent(name="footprint-agent", instructions="Use the tools.", model=model, tools=tools)

        async def go():
            result = await Runner.run(agent, PROMPT, max_turns=20)
            await client.close()
            return result

        result = asyncio.run(go())
        settings = recording.fake_server_settings(fake, str(result.final_output).strip(), paths=True)
        calls = recording.fake_server_calls(fake, ledger)
    provider.force_flush()
    OpenAIAgentsInstrumentor().uninstrument()
    provider.shutdown()
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "model": f"agents.models.openai_chatcompletions.OpenAIChatCompletionsModel(model={MODEL_ID!r})",
            "instrumentor": "OpenAIAgentsInstrumentor().instrument(tracer_provider=..., exclusive_processor=True)",
            "agents_trace_processors": processors,
            "openinference_env": {
                k: os.environ.get(k)
                for k in ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS", "OPENINFERENCE_HIDE_INPUT_MESSAGES")
            },
            "failure_error_function": "default (agents.tool.default_tool_error_function)",
            **settings,
        },
        "calls": calls,
    }
    recording.write_calls(folder, truth)


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record))

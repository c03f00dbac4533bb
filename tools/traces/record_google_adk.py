"""Record OTLP/JSON traces of Google ADK tool calls (OpenInference), offline, against fake_openai.py.

A google-adk ``LlmAgent`` whose model is ADK's ``LiteLlm(model="openai/gpt-4o-mini",
api_base=fake.base_url, api_key="x")`` (LiteLLM's OpenAI provider over ``fake_openai.FakeOpenAI``) runs
the scenario of README.md under an ``InMemoryRunner``. The tools are the scenario's plain functions,
which ADK wraps as ``FunctionTool``s; a function that returns something other than a dict is answered
to the model as ``{"result": value}``, so the ``role: tool`` content the model reads is
``json.dumps({"result": ...})`` for every call but the dict ones (``query_db``). A tool that raises
would end the run: ADK's users pass ``on_tool_error_callback``, and so does this script, returning
``{"error": "RuntimeError: backend down"}`` as the function response.

LiteLLM reads its bundled model price list (``LITELLM_LOCAL_MODEL_COST_MAP=True``) instead of fetching
it; the fake server receives only chat-completions requests (``request_paths`` in ``calls.json``).

Spans come from ``openinference-instrumentation-google-adk`` (``GoogleADKInstrumentor``), which turns
ADK's own tracing (``google.adk.telemetry``) into OpenInference spans. Per tool call a TOOL span that
is ADK's ``execute_tool <name>`` span too: ``gen_ai.operation.name=execute_tool``,
``gen_ai.tool.call.id`` and ``tool.id`` (the call id), ``input.value`` (the arguments) and
``output.value``, ADK's whole ``FunctionResponse`` as JSON (``{"id", "name", "response": {"result":
...}}``); no ``gen_ai.tool.call.result``. The failing call's span has status ERROR ``TOOL_ERROR`` and
``error.type``. The parallel turn adds an ``execute_tool (merged)`` span (``gen_ai.tool.name
"(merged tools)"``, its ``gen_ai.tool.call.id`` ADK's event id, a UUID). ADK 2.13 writes no
``call_llm`` span under its default telemetry schema (2): the model call's attributes go onto the
caller's span, which is ADK's own ``invoke_agent`` span (tracer ``gcp.vertex.agent``), and the
instrumentor (1.0.5) leaves that tracer to the global ``TracerProvider``. Hence two setups, each in a
child process:

* ``google-adk``: the provider is also set global (as ``phoenix.otel.register()`` does by default).
  ADK's ``invoke_agent footprint_agent`` span is recorded, with the instrumentor's LLM attributes
  (``openinference.span.kind=LLM``): one span for the whole run whose ``llm.input_messages.N.message.*``
  are rewritten at every model call, so the last call's history is what stays (every ``tool`` message:
  ``tool_call_id``, ``name``, ``content``); keys the last call does not write stay from earlier calls
  (its ``llm.output_messages.0.message.tool_calls`` are turn 8's).
* ``google-adk-local``: the provider is given to the instrumentor only. No span holds a model call's
  messages; the TOOL spans are all there is.

A ``SimpleSpanProcessor`` writes every ended span as one line of ``traces.jsonl``. No log records.
Each setup writes ``<out>/<setup>/traces.jsonl`` and ``calls.json`` (each call's id and
``model_read``, the exact ``role: tool`` content the fake server received).

Versions (exact; this is what ran): google-adk 2.13.0 (extra ``extensions``, for LiteLLM),
litellm 1.106.2, openinference-instrumentation-google-adk 1.0.5 (openinference-instrumentation 0.1.72,
openinference-semantic-conventions 0.1.42), openai 2.54.0, google-genai 2.34.0,
opentelemetry-api/-sdk 1.44.0, opentelemetry-exporter-otlp-json-file 0.66b1, Python 3.11.
google-adk 2.13.0 needs opentelemetry-sdk <= 1.44 and the JSON file exporter (0.66b1, its only
release) asks for ~= 1.45.1: the exporter and its three siblings are installed with ``--no-deps`` over
1.44.0, where they run (``pip check`` reports the unmet ~= 1.45.1).

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/google-adk && \\
    /tmp/trace-venvs/google-adk/bin/pip install "google-adk[extensions]==2.13.0" "litellm==1.106.2" \\
        "openinference-instrumentation-google-adk==1.0.5" "openinference-instrumentation==0.1.72" \\
        "openinference-semantic-conventions==0.1.42" "openai==2.54.0" \\
        "opentelemetry-api==1.44.0" "opentelemetry-sdk==1.44.0" && \\
    /tmp/trace-venvs/google-adk/bin/pip install --no-deps "opentelemetry-exporter-otlp-json-file==0.66b1" \\
        "opentelemetry-exporter-otlp-json-common==0.66b1" "opentelemetry-exporter-otlp-common==0.66b1" \\
        "opentelemetry-proto-json==0.66b1" && \\
    /tmp/trace-venvs/google-adk/bin/python tools/traces/record_google_adk.py --out tests/data/traces

Command line (``--check``, ...): README.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import recording

SETUPS = {"google-adk": {"global_provider": True}, "google-adk-local": {"global_provider": False}}
FINAL_TEXT, PROMPT = recording.FAKE_FINAL_TEXT, recording.FAKE_PROMPT
MODEL_ID = "openai/gpt-4o-mini"
PACKAGES = ["google-adk", "litellm", "openinference-instrumentation-google-adk", "google-genai",
            *recording.OPENINFERENCE_PACKAGES]


def tool_error(tool, args, tool_context, error):
    """ADK's ``on_tool_error_callback``: the error as the function response, so the run goes on."""
    if isinstance(error, asyncio.CancelledError):
        return None
    return {"error": f"{type(error).__name__}: {error}"}


def record(setup: str, out: Path, _args=None) -> None:
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    folder = recording.fresh_folder(out, setup)
    provider = recording.file_tracer_provider(folder / "traces.jsonl")
    if SETUPS[setup]["global_provider"]:  # as phoenix.otel.register() does by default
        from opentelemetry import trace

        trace.set_tracer_provider(provider)
    GoogleADKInstrumentor().instrument(tracer_provider=provider)

    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from fake_openai import FakeOpenAI

    ledger = recording.Ledger(error=lambda e: f"{type(e).__name__}: {e}")
    tools = recording.tool_functions(ledger.run, arg_docs=True)
    with FakeOpenAI(recording.fake_script(FINAL_TEXT)) as fake:
        model = LiteLlm(model=MODEL_ID, api_base=fake.base_url, api_key="x")
        agent = LlmAgent(name="footprint_agent", model=model, instruction="Use the tools.", tools=tools,
                         on_tool_error_callback=tool_error)
        runner = InMemoryRunner(agent=agent, app_name="footprint")

        async def go() -> str:
            session = await runner.session_service.create_session(app_name="footprint", user_id="u1")
            message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
            final = ""
            async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
                if event.is_final_response() and event.content and event.content.parts:
                    final = "".join(p.text or "" for p in event.content.parts)
            await runner.close()
            return final

        final = asyncio.run(go())
        settings = recording.fake_server_settings(fake, final.strip(), paths=True)
        calls = recording.fake_server_calls(fake, ledger)
    provider.force_flush()
    GoogleADKInstrumentor().uninstrument()
    provider.shutdown()
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "model": f"google.adk.models.lite_llm.LiteLlm(model={MODEL_ID!r}, api_base=<fake>)",
            "runner": "google.adk.runners.InMemoryRunner",
            "instrumentor": "GoogleADKInstrumentor().instrument(tracer_provider=...)",
            "global_tracer_provider": SETUPS[setup]["global_provider"],
            "adk_telemetry_schema": os.environ.get("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN") or "default (2)",
            "on_tool_error_callback": '{"error": "<type>: <message>"}',
            "openinference_env": {
                k: os.environ.get(k)
                for k in ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS", "OPENINFERENCE_HIDE_INPUT_MESSAGES")
            },
            **settings,
        },
        "calls": calls,
    }
    recording.write_calls(folder, truth)


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record, child_env_of=lambda setup: recording.child_env({})))

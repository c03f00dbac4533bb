"""Record OTLP/JSON traces of strands-agents tool calls, offline, against fake_openai.py.

A strands ``Agent`` with its ``OpenAIModel`` (``client_args={"base_url": fake.base_url, "api_key": "x"}``,
``fake_openai.FakeOpenAI``) runs the scenario of README.md; strands turns the failing tool's exception
into an error result.

Tracing goes through strands' own set-up (``strands.telemetry.StrandsTelemetry``, which creates and
installs the OpenTelemetry SDK's ``TracerProvider``), with a ``SimpleSpanProcessor`` writing every ended
span as one line of ``traces.jsonl``. strands writes no log records.

Two setups, each in a fresh child process (strands reads the conventions once per process):

* ``strands-latest``:  ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
* ``strands-default``: the variable unset (1.36-style span events)

Each writes ``<out>/<setup>/traces.jsonl`` and ``calls.json`` (each call's id and ``model_read``, the
exact ``role: tool`` content the fake server received).

Versions (exact; this is what ran): strands-agents 1.62.0 (extras ``openai,otel``), openai 2.54.0,
opentelemetry-api/-sdk 1.45.1, opentelemetry-exporter-otlp-json-file 0.66b1, Python 3.11.
(strands needs openai < 3: keep it apart from the openai-agents venv.)

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/strands && \\
    /tmp/trace-venvs/strands/bin/pip install "strands-agents[openai,otel]==1.62.0" "openai==2.54.0" \\
        "opentelemetry-api==1.45.1" "opentelemetry-sdk==1.45.1" "opentelemetry-exporter-otlp-json-file==0.66b1" && \\
    /tmp/trace-venvs/strands/bin/python tools/traces/record_strands.py --out tests/data/traces

Command line (``--setup``, ``--check``, ...): README.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import recording

SETUPS = {
    "strands-latest": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    "strands-default": {"OTEL_SEMCONV_STABILITY_OPT_IN": None},
}
FINAL_TEXT = "Done: one user, sunny in Paris, web-1 in eu; docs, ap, us and the first query were empty."
PROMPT = "Check the docs, hosts, database, user 7, the weather in Paris and the backend."
MODEL_ID = "gpt-4o-mini"
PACKAGES = ["strands-agents", "openai", "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-exporter-otlp-json-file"]


def record(setup: str, out: Path, _args=None) -> None:
    """Runs in a child process whose environment already holds the setup's variables."""
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.telemetry import StrandsTelemetry

    from fake_openai import FakeOpenAI

    folder = recording.fresh_folder(out, setup)
    telemetry = StrandsTelemetry()  # creates the SDK TracerProvider and sets it global
    telemetry.tracer_provider.add_span_processor(recording.file_span_processor(folder / "traces.jsonl"))

    ledger = recording.Ledger()
    tools = [tool(fn) for fn in recording.tool_functions(ledger.run, arg_docs=True)]
    with FakeOpenAI(recording.fake_script(FINAL_TEXT)) as fake:
        model = OpenAIModel(client_args={"base_url": fake.base_url, "api_key": "x"}, model_id=MODEL_ID)
        agent = Agent(model=model, tools=tools, callback_handler=None, name="footprint-agent")
        result = agent(PROMPT)
        settings = recording.fake_server_settings(fake, str(result).strip())
        calls = recording.fake_server_calls(fake, ledger)
    telemetry.tracer_provider.force_flush()
    telemetry.tracer_provider.shutdown()
    truth = {
        "setup": setup,
        "framework": recording.versions(PACKAGES),
        "settings": {
            "env": {k: os.environ.get(k) for k in SETUPS[setup]},
            "model": f"strands.models.openai.OpenAIModel(model_id={MODEL_ID!r})",
            "tool_executor": type(agent.tool_executor).__name__ if hasattr(agent, "tool_executor") else None,
            **settings,
        },
        "calls": calls,
    }
    recording.write_calls(folder, truth)


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record, child_env_of=lambda setup: recording.child_env(SETUPS[setup])))

"""The graph Dataflow would run: every shuffle of a `--dry_run` job and what crosses it.

Role: issue 62's "what the levers change for Dataflow", read from the pipeline Beam translates
for Dataflow (its pre-optimisation applied: combiners packed, stages sorted), since no Dataflow
job runs here. It runs the CLI in this process with `--runner DataflowRunner --dry_run=True`,
keeps the pipeline the dry run's result holds (`result.job.proto_pipeline`), and prints one row
per shuffle: each `GroupByKey` and each stateful step (Dataflow shuffles a stateful step's input
by key), with the coders of what crosses it.

    python -m bench.dataflow_graph reassess   # the batch job on the bundled examples
    python -m bench.dataflow_graph stream     # the stream from a Pub/Sub subscription
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from collections import Counter

from apache_beam.portability.api import beam_runner_api_pb2 as pb
from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner

DATAFLOW = [
    "--runner",
    "DataflowRunner",
    "--dry_run=True",
    "--project",
    "audit-project",
    "--region",
    "us-central1",
    "--temp_location=gs://audit/tmp",
    "--no_auth",
]
JOBS = {
    "reassess": [
        "reassess",
        "--input",
        "examples/recordings/**",
        "--declarations",
        "examples/declarations.json",
        "--no-progress",
    ],
    "stream": [
        "stream",
        "--source",
        "pubsub://projects/audit-project/subscriptions/events",
        "--output",
        "gs://audit/stream",
        "--declarations",
        "examples/declarations.json",
    ],
}


def translated(argv: list[str]) -> list[pb.Pipeline]:
    """The pipelines a dry run of `footprint-audit ARGV` translates for Dataflow, in order."""
    from footprint_audit.pipelines.cli import main

    seen: list[pb.Pipeline] = []
    run = DataflowRunner.run_pipeline

    def keep(self, pipeline, options):  # the public entry point, wrapped: nothing else of the runner changes
        result = run(self, pipeline, options)
        seen.append(result.job.proto_pipeline)
        return result

    DataflowRunner.run_pipeline = keep
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
    finally:
        DataflowRunner.run_pipeline = run
    if code != 0 or not seen:
        raise SystemExit(f"the dry run did not translate a job (exit {code})")
    return seen


def coder(c: pb.Components, cid: str) -> str:
    """A coder as a short expression: Beam's standard ones by name, a Python coder by its class."""
    spec = c.coders[cid].spec
    if "pickled_python" in spec.urn:  # field 1 of the payload: "ClassName$" and the pickled coder
        body, n = spec.payload, 1
        while body[n] & 0x80:  # the field's length, a varint
            n += 1
        return body[n + 1 :].split(b"$")[0].decode()
    name = spec.urn.split(":")[2] if spec.urn.count(":") > 2 else spec.urn
    parts = c.coders[cid].component_coder_ids
    return f"{name}({', '.join(coder(c, p) for p in parts)})" if parts else name


def shuffles(p: pb.Pipeline) -> list[tuple[str, str, str]]:
    """(kind, step, what crosses) for every shuffle of a pipeline, in step-name order."""
    c = p.components
    rows = []
    for t in c.transforms.values():
        if t.subtransforms:
            continue
        kind = ""
        if t.spec.urn == "beam:transform:group_by_key:v1":
            kind = "GroupByKey"
        elif t.spec.urn == "beam:transform:pardo:v1":
            payload = pb.ParDoPayload.FromString(t.spec.payload)
            kind = "stateful step" if payload.state_specs or payload.timer_family_specs else ""
        if kind:
            crosses = ", ".join(coder(c, c.pcollections[i].coder_id) for i in t.inputs.values())
            rows.append((kind, t.unique_name, crosses))
    return sorted(rows, key=lambda r: r[1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job", choices=sorted(JOBS))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as out:
        extra = ["--output", out] if args.job == "reassess" else []
        for n, p in enumerate(translated([*JOBS[args.job], *extra, *DATAFLOW]), 1):
            leaves = Counter(t.spec.urn.split(":")[2] for t in p.components.transforms.values() if not t.subtransforms)
            kinds = ", ".join(f"{k} {v}" for k, v in leaves.most_common())
            print(f"pipeline {n}: {sum(leaves.values())} primitive steps ({kinds})")
            print("| shuffle | step | what crosses it (coders) |\n|---|---|---|")
            for kind, step, crosses in shuffles(p):
                print(f"| {kind} | `{step}` | {crosses} |")


if __name__ == "__main__":
    main()

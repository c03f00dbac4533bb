"""The Google path for real: gs:// through Beam's own file system, and jobs translated for Dataflow.

A fake Cloud Storage (`tools/fakes/gcs`, fake-gcs-server's library; `tests/google_fakes.py`) runs
on 127.0.0.1, and the real CLI runs in a subprocess with `STORAGE_EMULATOR_HOST` pointing at it
(`--no_auth`: no credentials). Checked:

- `reassess` reads its input from and writes its tables to gs:// (one worker and two), with the
  same tables as a local run, published whole (the marker, no staging left), nothing on stderr;
- `--incremental` on a gs:// output is refused in one sentence (an object store has no rename of a
  folder to swap tables with; docs/distributed.md);
- `reassess` and `stream --source pubsub://…` with `--runner DataflowRunner --dry_run=True` build
  the job Dataflow would run (Beam translates the pipeline, then returns without submitting it)
  and say so, publishing nothing;
- `--setup_file ./setup.py` stages what it should: the sdist Dataflow builds from the shim makes a
  wheel holding every product file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from google_fakes import running
from helpers import EXAMPLES, ROOT, load_table, one_sentence
from test_remote_storage import rows  # a table's rows, `source_file` with a prefix taken off

storage = pytest.importorskip("google.cloud.storage")  # apache-beam[gcp], in the test extra

BUCKET = "audit"
DECL = str(EXAMPLES / "declarations.json")
TABLES = ("readings", "dead_letters", "runs")
DATAFLOW = ["--runner", "DataflowRunner", "--dry_run=True", "--project", "audit-project", "--region", "us-central1",
            f"--temp_location=gs://{BUCKET}/tmp"]


@pytest.fixture(scope="module")
def gcs():
    """The fake with a bucket holding the bundled recordings under `in/`; yields (client, environment)."""
    from google.auth.credentials import AnonymousCredentials

    with running("gcs") as address:
        env = {**os.environ, "STORAGE_EMULATOR_HOST": address, "NO_GCE_CHECK": "True",
               "GOOGLE_CLOUD_PROJECT": "audit-project"}
        os.environ["STORAGE_EMULATOR_HOST"] = address
        try:
            client = storage.Client(credentials=AnonymousCredentials(), project="audit-project")
        finally:
            del os.environ["STORAGE_EMULATOR_HOST"]
        bucket = client.create_bucket(BUCKET)
        recordings = EXAMPLES / "recordings"
        for path in sorted(recordings.rglob("*")):
            if path.is_file():
                bucket.blob(f"in/{path.relative_to(recordings).as_posix()}").upload_from_filename(str(path))
        yield client, env


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    """`footprint-audit ARGS` as a user runs it, against the fake."""
    return subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def objects(client, prefix: str) -> dict[str, bytes]:
    return {b.name: b.download_as_bytes() for b in client.list_blobs(BUCKET, prefix=prefix)}


@pytest.mark.parametrize("workers", ["1", "2"])
def test_reassess_on_gs_writes_the_same_tables_as_a_local_run(gcs, tmp_path, workers):
    client, env = gcs
    local = tmp_path / "local"
    res = cli(env, "reassess", "--input", "examples/recordings/**", "--output", str(local), "--declarations", DECL,
              "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    out = f"out-w{workers}"
    res = cli(env, "reassess", "--input", f"gs://{BUCKET}/in/**", "--output", f"gs://{BUCKET}/{out}",
              "--declarations", DECL, "--no-progress", "--workers", workers, "--no_auth")
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stderr == ""  # no log line, no warning, from the launcher or its workers
    assert f"output: gs://{BUCKET}/{out}/readings/" in res.stdout  # the summary read the tables back from gs://
    found = objects(client, f"{out}/")
    assert not [k for k in found if "/_staging/" in k], sorted(found)
    assert f"{out}/_FOOTPRINT_AUDIT" in found
    for key, data in found.items():
        (tmp_path / "got" / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "got" / key).write_bytes(data)
    for table in TABLES:
        assert rows(tmp_path / "got" / out, table, f"gs://{BUCKET}/in/") == rows(local, table, "examples/recordings/"), table
    assert len(load_table(tmp_path / "got" / out, "readings")) == 63


def test_incremental_on_gs_is_refused_in_one_sentence(gcs):
    _client, env = gcs
    res = cli(env, "reassess", "--input", f"gs://{BUCKET}/in/**", "--output", f"gs://{BUCKET}/inc",
              "--declarations", DECL, "--incremental", "--no_auth")
    assert "--incremental needs a local --output" in one_sentence(res, 2)


def test_reassess_is_translated_for_dataflow_in_a_dry_run_and_publishes_nothing(gcs):
    client, env = gcs
    res = cli(env, "reassess", "--input", f"gs://{BUCKET}/in/**", "--output", f"gs://{BUCKET}/dry",
              "--declarations", DECL, "--no-progress", "--no_auth", "--setup_file", str(ROOT / "setup.py"), *DATAFLOW)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    # before it, the lines of the sdist's build that Beam's stager runs for --setup_file (python -m build)
    assert res.stderr.splitlines()[-1] == ("footprint-audit reassess: --dry_run: the job was translated for DataflowRunner "
                                           "and not run; nothing was published"), res.stderr[-3000:]
    assert "* Building sdist..." in res.stderr  # the sdist of the shim that Dataflow would stage
    assert not objects(client, "dry/")


def test_stream_from_pubsub_is_translated_for_dataflow_in_a_dry_run(gcs):
    client, env = gcs
    res = cli(env, "stream", "--source", "pubsub://projects/audit-project/subscriptions/events",
              "--output", f"gs://{BUCKET}/stream", "--declarations", DECL, "--no_auth", *DATAFLOW)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stderr.splitlines() == ["footprint-audit stream: --dry_run: the job was translated for DataflowRunner "
                                       "and not run"], res.stderr[-3000:]
    assert not objects(client, "stream/")


def test_the_setup_file_makes_the_sdist_dataflow_stages_and_it_installs_every_module(tmp_path):
    """What `--setup_file ./setup.py` does on Dataflow: an sdist built from the shim, installed on the workers."""
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    (sdist,) = tmp_path.glob("footprint_audit-*.tar.gz")
    with tarfile.open(sdist) as tar:
        assert any(n.endswith("/pyproject.toml") for n in tar.getnames())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(sdist)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("footprint_audit-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("footprint_audit/")}
    product = {f"footprint_audit/{p.relative_to(ROOT).as_posix()}" for top in ("readers", "schemas", "transforms", "pipelines")
               for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".sql", ".css", ".js") and "__pycache__" not in p.parts}
    assert product - shipped == set()

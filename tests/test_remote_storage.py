"""Remote storage for real: `reassess` reads its input from and writes its tables to s3://.

An S3-compatible server (moto's, from PyPI) runs in this test process on 127.0.0.1; the
job is the real CLI in a subprocess, with Beam's own s3:// file system (boto3) pointed at
it by Beam's `--s3_endpoint_url`. Checked: the tables equal a local run's (file names
aside), they are published whole (nothing under `OUT/<table>/` until the job has
succeeded; a job whose writes fail leaves the previous tables byte for byte and its
staging removed), and `--workers 2` reads remote inputs too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import EXAMPLES, ROOT, load_table, one_sentence, reassess_cli

boto3 = pytest.importorskip("boto3")  # the test extra pins it (with moto); Beam's s3:// needs it
moto_server = pytest.importorskip("moto.moto_server.threaded_moto_server")

BUCKET = "audit-bucket"
DECL = str(EXAMPLES / "declarations.json")
TABLES = ("readings", "dead_letters", "runs")


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on a free port of 127.0.0.1, a bucket holding the bundled recordings under `in/`."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    recordings = EXAMPLES / "recordings"
    for path in sorted(recordings.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"in/{path.relative_to(recordings).as_posix()}")
    flags = [f"--s3_endpoint_url={endpoint}", "--s3_access_key_id=test", "--s3_secret_access_key=test",
             "--s3_region_name=us-east-1"]
    try:
        yield client, flags
    finally:
        server.stop()


def objects(client, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix`: key → bytes."""
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            found[obj["Key"]] = client.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
    return found


def download(client, prefix: str, into: Path) -> Path:
    for key, data in objects(client, prefix).items():
        path = into / key[len(prefix):]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return into


def rows(out: Path, table: str, prefix: str) -> list[str]:
    """A table's rows, `source_file` with `prefix` taken off, as sorted JSON (order-free comparison)."""
    found = []
    for r in load_table(out, table):
        if r.get("source_file"):
            assert r["source_file"].startswith(prefix), r["source_file"]
            r["source_file"] = r["source_file"][len(prefix):]
        found.append(json.dumps(r, sort_keys=True, default=repr))
    return sorted(found)


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    res = reassess_cli("--input", "examples/recordings/**", "--output", str(out), "--declarations", DECL,
                       "--no-progress", "--quiet", cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_reassess_on_s3_writes_the_same_tables_as_a_local_run(s3, local_tables, tmp_path, workers):
    client, flags = s3
    out = f"out-w{workers}"
    res = reassess_cli("--input", f"s3://{BUCKET}/in/**", "--output", f"s3://{BUCKET}/{out}",
                       "--declarations", DECL, "--no-progress", "--workers", workers, *flags)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    assert f"output: s3://{BUCKET}/{out}/readings/" in res.stdout  # the summary read the tables back from S3
    keys = set(objects(client, f"{out}/"))
    assert not [k for k in keys if "/_staging/" in k], keys  # the staging is gone once published
    assert f"{out}/_FOOTPRINT_AUDIT" in keys
    got = download(client, f"{out}/", tmp_path / "got")
    for table in TABLES:
        assert rows(got, table, f"s3://{BUCKET}/in/") == rows(local_tables, table, "examples/recordings/"), table
    assert len(load_table(got, "readings")) == 63


def test_spawned_workers_take_the_jobs_s3_options(s3, local_tables, tmp_path):
    """Run in this process, which holds threads (the S3 server's), the job cannot fork its workers and
    spawns them: they write to S3 with the endpoint and keys the command was given."""
    from footprint_audit.pipelines.local_runner import workers
    from footprint_audit.pipelines.reassess import command as reassess

    client, flags = s3
    assert not workers.can_fork()
    code = reassess.run(["--input", f"s3://{BUCKET}/in/**", "--output", f"s3://{BUCKET}/out-spawned", "--declarations", DECL,
                         "--no-progress", "--quiet", "--workers", "2", *flags])
    assert code == 0
    got = download(client, "out-spawned/", tmp_path / "got")
    assert rows(got, "readings", f"s3://{BUCKET}/in/") == rows(local_tables, "readings", "examples/recordings/")


def test_a_remote_job_whose_writes_fail_publishes_nothing_and_leaves_the_previous_tables(s3, tmp_path, monkeypatch):
    client, flags = s3
    out = "out-fail"
    first = reassess_cli("--input", f"s3://{BUCKET}/in/**", "--output", f"s3://{BUCKET}/{out}",
                         "--declarations", DECL, "--no-progress", "--quiet", *flags)
    assert first.returncode == 0, first.stderr[-3000:]
    before = objects(client, f"{out}/")
    assert {k.split("/")[1] for k in before} == {*TABLES, "_FOOTPRINT_AUDIT"}

    # The store takes the second job's first table file and refuses every later one (the server runs in
    # this process): whatever table is written first, the job fails part-way through its tables.
    from moto.s3.models import S3Backend

    taken: list[str] = []

    def refusing(original):
        def refuse(self, bucket_name, key_name, *args, **kwargs):
            if key_name.endswith(".parquet"):
                if taken and taken[0] != key_name:
                    raise OSError("injected: the store refuses this write")
                taken.append(key_name)
            return original(self, bucket_name, key_name, *args, **kwargs)
        return refuse

    monkeypatch.setattr(S3Backend, "put_object", refusing(S3Backend.put_object))
    monkeypatch.setattr(S3Backend, "create_multipart_upload", refusing(S3Backend.create_multipart_upload))
    # Another input than the first job's: its tables would differ from the ones published.
    res = reassess_cli("--input", f"s3://{BUCKET}/in/synthetic/**", "--output", f"s3://{BUCKET}/{out}",
                       "--declarations", DECL, "--no-progress", "--quiet", *flags)
    line = one_sentence(res, 1)
    assert "the job failed and nothing was published" in line, line
    monkeypatch.undo()
    assert taken  # one table file was written, then the store failed
    assert objects(client, f"{out}/") == before  # every published table byte for byte; no staging left

"""`footprint-audit stream` on a real Kafka broker and the embedded Flink, as a user runs it.

Each test produces records to a real KRaft broker, runs the real CLI in its
own process (`--runner FlinkRunner --flink_master=[local]`), and waits on
what it writes, with generous timeouts:

- a delivery that is out of order across and within partitions, with 10%
  of the records sent twice, a 5 MB event, and a declaration that comes
  past the allowed lateness: the current readings equal `reassess`'s, the
  large event is read and reading goes on, the late declaration is a `late`
  dead letter counted in `runs`, and every record is accounted for;
- 100,000 events of generated history replayed: every call read, nothing
  `late`, `runs` accounts for every event;
- the launcher killed with SIGKILL mid-stream: no process of it is left (the
  job server and its embedded Flink die with it) and every file it wrote stays;
  started again, the current readings equal `reassess`'s and every record is
  counted once (docs/streaming.md, "What a restart guarantees"); the same after a
  kill during a backlog, and for a bounded read run twice.
"""

from __future__ import annotations

import hashlib
import random
import signal
from pathlib import Path

import orjson
import psutil
import pytest

from helpers import ROOT, assert_stream_matches_batch, generated_history, load_table
from footprint_audit.pipelines.reassess import command as reassess
from stream_harness import (
    WAIT_SECONDS,
    accounted,
    counted_raw,
    example_events,
    finish,
    partition_of,
    produce,
    stream_cli,
    tables,
    wait_for,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3


def reassess_examples(out: Path) -> Path:
    assert reassess.run(["--input", str(ROOT / "examples/recordings/**"), "--output", str(out),
                         "--declarations", str(ROOT / "examples/declarations.json"), "--no-progress", "--quiet"]) == 0
    return out


def example_records() -> list[tuple[int, int | None, bytes]]:
    """The examples' events as records, each run in its own partition, in event-time order."""
    return [(partition_of(run, PARTITIONS), ms, body) for ms, run, body in example_events()]


def shuffled_with_copies(events: list, seed: int = 11) -> list[tuple[int, int | None, bytes]]:
    """The examples as a keyed producer with retries would deliver them: each run in its own
    partition, every record displaced by up to 4 s of event time (inside the default 5 s of
    out-of-orderness), some declarations 20 s late (inside the 30 s grace), and 10% sent twice."""
    rnd = random.Random(seed)
    keyed = []
    for n, (ms, run, body) in enumerate(events):
        if ms is None:
            key = float("inf")
        elif b'agentfootprint.tools.' in body and rnd.random() < 0.3:
            key = ms + 20_000 + rnd.random() * 4_000  # a declaration delivered after its tool_end
        else:
            key = ms + rnd.random() * 4_000
        keyed.append((key, n, (partition_of(run, PARTITIONS), ms, body)))
    for n in rnd.sample(range(len(events)), len(events) // 10):
        ms, run, body = events[n]
        later = (ms or 0) + rnd.random() * 4_000 if ms is not None else float("inf")
        keyed.append((later, len(keyed), (partition_of(run, PARTITIONS), ms, body)))  # a redelivery
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [rec for _k, _n, rec in keyed]


def big_call(ms: int) -> list[tuple[int, int, bytes]]:
    """A call whose tool_end carries 5 MB of rows, in a run of its own."""
    run = "run-big-5mb"
    meta = {"runId": run, "wallClockMs": ms}
    rows = [{"id": i, "name": "x" * 40} for i in range(80_000)]
    start = {"type": "agentfootprint.stream.tool_start", "payload": {"toolCallId": "big-1", "toolName": "find_rows"},
             "meta": meta}
    end = {"type": "agentfootprint.stream.tool_end", "payload": {"toolCallId": "big-1", "result": rows},
           "meta": {**meta, "wallClockMs": ms + 5}}
    p = partition_of(run, PARTITIONS)
    return [(p, ms, orjson.dumps(start)), (p, ms + 5, orjson.dumps(end))]


@pytest.fixture(scope="module")
def delivered(integration_jars, tmp_path_factory):
    """One job over the shuffled, duplicated delivery (+ a 5 MB event, + a declaration past the lateness)."""
    from tools.kafka_local import KafkaBroker

    work = tmp_path_factory.mktemp("delivered")
    events = example_events()
    timed = [ms for ms, _r, _b in events if ms is not None]
    records = shuffled_with_copies(events)
    middle = len(records) // 2
    records[middle:middle] = big_call(timed[len(timed) // 2])
    # A declaration for the first example call, sent once everything else has been read: by then
    # event time is months past its call's end, grace and allowed lateness.
    first = next(orjson.loads(b) for _ms, _r, b in events if b'stream.tool_end"' in b)
    late = {"type": "agentfootprint.tools.absent",
            "payload": {"toolCallId": first["payload"]["toolCallId"], "toolName": "late_tool", "checked": ["x"]},
            "meta": first["meta"]}  # fmt: skip
    late_record = (partition_of(first["meta"]["runId"], PARTITIONS), first["meta"]["wallClockMs"], orjson.dumps(late))
    out, log = work / "stream", work / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=work / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produced = produce(broker.bootstrap, "events", records)
        proc = stream_cli(f"kafka://{broker.bootstrap}/events", out, "--max-records", str(produced + 1),
                          "--allowed-lateness-seconds", "120", log=log)
        try:
            last_end = max(ms for ms, _r, b in events if ms is not None and b'stream.tool_end"' in b)
            wait_for(lambda: any(_ms(r["ended_at"]) >= last_end for r in _readings(out)),
                     "the latest call's reading", proc=proc, log=log)
            produce(broker.bootstrap, "events", [late_record])
            finish(proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
    return {"out": out, "produced": produced + 1, "batch": reassess_examples(work / "batch"), "late": late}


def _ms(value) -> float:
    """A timestamp column's value in ms (None: -1)."""
    if value is None:
        return -1
    return value.timestamp() * 1000 if hasattr(value, "timestamp") else float(value)


def _readings(out: Path) -> list[dict]:
    try:
        return load_table(out, "readings")
    except Exception:  # nothing written yet, or a file being renamed into place
        return []


def _counted_so_far(out: Path) -> int:
    try:
        return counted_raw(out)
    except Exception:  # nothing written yet, or a file being renamed into place
        return 0


def test_shuffled_duplicated_delivery_gives_reassess_readings(delivered):
    compared = assert_stream_matches_batch(delivered["batch"], delivered["out"], extra_ok={("run-big-5mb", "big-1", 1)})
    assert compared > 40


def test_every_record_is_accounted_for_and_copies_count_as_not_needed(delivered):
    assert accounted(delivered["out"]) == delivered["produced"]
    _readings_, _dead, runs = tables(delivered["out"])
    assert sum(r["events_not_needed"] for r in runs) >= (delivered["produced"] - 2) // 11  # the copies at least


def test_a_5mb_event_is_read_and_reading_goes_on(delivered):
    readings, _dead, _runs = tables(delivered["out"])
    big = [r for r in readings if r["run_id"] == "run-big-5mb"]
    assert big and big[-1]["outcome"] == "ran" and big[-1]["rows"] == 80_000
    assert len({r["run_id"] for r in readings}) > 10


def test_a_declaration_past_the_allowed_lateness_is_a_late_dead_letter_counted_in_runs(delivered):
    _readings_, dead, runs = tables(delivered["out"])
    late = [d for d in dead if d["reason"] == "late"]
    assert len(late) == 1 and orjson.loads(late[0]["raw"])["payload"]["toolName"] == "late_tool"
    run_id, source = late[0]["run_id"], late[0]["source_file"]
    assert sum(r["dead_letters"] for r in runs if (r["run_id"], r["source_file"]) == (run_id, source)) >= 1


def test_a_record_without_an_event_time_is_a_bad_field_dead_letter_with_its_bytes(delivered):
    sent = {body.decode() for _ms, _run, body in example_events()}
    bad = [d for d in tables(delivered["out"])[1] if d["reason"] == "bad-field"]
    assert bad and all(d["raw"] in sent for d in bad)


def test_no_file_is_written_twice_and_names_are_unique(delivered):
    files = [p for p in delivered["out"].rglob("*.parquet") if "_state" not in p.parts]
    # a pane's file, or a folder rolled up (idle long enough, or at a bounded run's end: how many depends on the pace)
    assert files and all(p.name.startswith(("pane-", "rollup-")) and p.parent.name.startswith("window=") for p in files)
    assert not [p for p in delivered["out"].rglob(".tmp-*")]


def history_records(tmp: Path, partitions: int = PARTITIONS, target: int = 100_000, size: int = 72 << 20) -> tuple[list, Path]:
    """About `target` events of generated history (seeded; `size` bytes generated to draw them from),
    each run in its own partition, in order; also written as one JSON Lines file for `reassess`."""
    src = tmp / "generated"
    generated_history(src, size, seed=5, layout="stream")
    records, lines = [], []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        for run in read_runs(path):
            for ev in run.events:
                ms = ev.meta.get("wallClockMs")
                if type(ms) not in (int, float):
                    continue
                body = orjson.dumps({"type": "agentfootprint." + ev.type, "payload": ev.payload, "meta": ev.meta})
                records.append((partition_of(ev.run_id, partitions), int(ms), body))
                lines.append(body)
                if len(records) == target:
                    break
            if len(records) == target:
                break
        if len(records) == target:
            break
    history = tmp / "history.jsonl"
    history.write_bytes(b"\n".join(lines) + b"\n")
    return records, history


def resumed_legs(history: Path) -> set[str]:
    """The runs of a JSON Lines file that are a resumed leg (a `pause.resume`, or a turn's end without its start)."""
    kinds: dict[str, set[str]] = {}
    for line in history.read_bytes().splitlines():
        ev = orjson.loads(line)
        kinds.setdefault(ev["meta"].get("runId"), set()).add(ev["type"].rsplit("agentfootprint.", 1)[-1])
    return {run for run, k in kinds.items() if "pause.resume" in k or ("agent.turn_end" in k and "agent.turn_start" not in k)}


def read_runs(path: Path):
    from footprint_audit.transforms.decode.sources import read_source

    return read_source(str(path)).runs


def history_and_batch(tmp: Path, **kw) -> tuple[list, Path, Path, Path]:
    """`history_records(tmp, **kw)`, their declarations, and `reassess`'s output of them."""
    records, history = history_records(tmp, **kw)
    declarations = tmp / "generated.declarations.json"  # written beside the history's source by the generator
    batch = tmp / "batch"
    assert reassess.run(["--input", str(history), "--output", str(batch), "--declarations", str(declarations),
                         "--no-progress", "--quiet"]) == 0
    return records, history, declarations, batch


def test_replaying_100k_events_of_history_reads_every_call_on_time(integration_jars, tmp_path):
    from tools.kafka_local import KafkaBroker

    records, history, declarations, batch = history_and_batch(tmp_path)
    assert len(records) == 100_000
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("history", partitions=PARTITIONS)
        produce(broker.bootstrap, "history", records)
        proc = stream_cli(f"kafka://{broker.bootstrap}/history", out, "--max-records", str(len(records)), log=log,
                          declarations=declarations)
        finish(proc, log, timeout=1200)
    readings, dead, _runs = tables(out)
    assert not [d for d in dead if d["reason"] == "late"]
    assert accounted(out) == len(records)
    assert resumed_legs(history)  # resumed legs are compared too: the join reads the run's facts
    assert assert_stream_matches_batch(batch, out, examples=False) > 1000
    assert {r["revision"] for r in readings} == {0}


def _files(out: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p.relative_to(out)): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in out.rglob("*.parquet")
        if "_state" not in p.parts
    }


def _kill_once_reading(launcher, out: Path, log: Path, also=None, what: str = "", first=None) -> dict:
    """SIGKILL the launcher once it has written readings (`first()`: once that holds instead; and
    `also()` holds): its job server and embedded Flink must die with it. Returns the output's files
    as they were at the kill."""
    children: list[psutil.Process] = []
    try:
        wait_for(first or (lambda: bool(_readings(out))), "the first readings", proc=launcher, log=log)
        if also is not None:
            wait_for(also, what, proc=launcher, log=log)
        children = psutil.Process(launcher.pid).children(recursive=True)
        assert any("java" in c.name() for c in children)
        before = _files(out)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    _gone, alive = psutil.wait_procs(children, timeout=120)
    assert not alive, f"left running after the launcher was killed: {[p.pid for p in alive]}"
    return before


def test_sigkill_of_the_launcher_leaves_no_process_and_keeps_every_file(integration_jars, tmp_path):
    """The job server (and the embedded Flink in it) dies with a killed launcher; what was written stays."""
    from tools.kafka_local import KafkaBroker

    records = example_records()
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produce(broker.bootstrap, "events", records)
        launcher = stream_cli(f"kafka://{broker.bootstrap}/events", out, "--max-records", str(len(records)) + "0",
                              log=log)
        before = _kill_once_reading(launcher, out, log)
    after = _files(out)
    assert before and all(after.get(name) == seen for name, seen in before.items()), "a file written before the kill changed"


def test_sigkill_mid_stream_then_restart_loses_nothing_and_overwrites_nothing(integration_jars, tmp_path):
    """The launcher is killed with SIGKILL while calls are in flight; the job server (and the
    embedded Flink in it) dies with it, and what was written stays. The rest of the events arrive
    while nothing runs; started again with the same command, the job resumes from the latest
    retained checkpoint (the calls in flight, the read's offsets): the current readings equal
    `reassess`'s and every record is counted once."""
    from tools.kafka_local import KafkaBroker

    records = example_records()
    first, rest = records[: len(records) // 2], records[len(records) // 2 :]
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produce(broker.bootstrap, "events", first)
        source = f"kafka://{broker.bootstrap}/events"
        # the default checkpoint interval, as a user runs it; no roll-up: the files themselves are compared
        bound = ("--max-records", str(len(records)), "--compact-seconds", "0")
        launcher = stream_cli(source, out, *bound, log=log)
        before = _kill_once_reading(launcher, out, log,
                                    lambda: _committed(broker.bootstrap, "events") > 0, "offsets committed by a finished bundle")
        assert _committed(broker.bootstrap, "events") < len(records)
        produce(broker.bootstrap, "events", rest)
        # other declarations or another event cap would mix two sets of readings into the tables: refused
        other = tmp_path / "other-declarations.json"
        other.write_text('{"tools": {"list_hosts": {"rowsAt": "items"}}}')
        refused = stream_cli(source, out, *bound, "--max-event-bytes", "1048576", log=tmp_path / "refused.log",
                             declarations=other)
        assert refused.wait(WAIT_SECONDS) == 2
        said = (tmp_path / "refused.log").read_text()
        assert "--max-event-bytes 67108864, other --declarations" in said and "--no-resume" in said, said
        with open(log, "a") as f:
            f.write("\n[test] launcher killed; the rest produced; starting again\n")
        again = stream_cli(source, out, *bound, log=log)
        finish(again, log, timeout=300)
    assert "from savepoint" in (out / "_state" / "job-server.log").read_text()  # it resumed
    after = _files(out)
    assert before and all(after.get(name) == seen for name, seen in before.items()), "a file written before the kill changed"
    assert accounted(out) == len(records)  # records read again after the restart are counted once
    assert assert_stream_matches_batch(reassess_examples(tmp_path / "batch"), out) > 40


def test_sigkill_during_a_backlog_then_restart_counts_every_record_once(integration_jars, tmp_path):
    """A backlog of generated history (resumed legs among it) is killed with SIGKILL once readings
    are written, before it is read whole, and started again with the same command: the records the
    second job reads again are written again, and the views count each of them once."""
    from tools.kafka_local import KafkaBroker

    records, _history, declarations, batch = history_and_batch(tmp_path, target=20_000, size=16 << 20)
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("history", partitions=PARTITIONS)
        produce(broker.bootstrap, "history", records)
        source, bound = f"kafka://{broker.bootstrap}/history", ("--max-records", str(len(records)))
        launcher = stream_cli(source, out, *bound, log=log, declarations=declarations)
        # killed as soon as the first counts are written, well before the backlog is read whole
        _kill_once_reading(launcher, out, log, first=lambda: 0 < _counted_so_far(out))
        killed_at = counted_raw(out)
        with open(log, "a") as f:
            f.write("\n[test] launcher killed during the backlog; starting again\n")
        finish(stream_cli(source, out, *bound, log=log, declarations=declarations), log, timeout=900)
    copies = counted_raw(out) - len(records)
    with open(log, "a") as f:
        f.write(f"\n[test] counted {killed_at} before the kill; {copies} records counted again after the restart\n")
    assert accounted(out) == len(records)
    assert assert_stream_matches_batch(batch, out, examples=False) > 1000


def test_a_bounded_read_run_twice_counts_once(integration_jars, tmp_path):
    """A bounded read that ends before its first checkpoint (as short reads did) commits what it
    wrote when it ends: the same command again reads nothing new, and the views count each record
    once."""
    from tools.kafka_local import KafkaBroker

    records = example_records()
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produce(broker.bootstrap, "events", records)
        source = f"kafka://{broker.bootstrap}/events"
        command = ("--max-records", str(len(records)), "--checkpoint-seconds", "3600")  # no checkpoint before the end
        finish(stream_cli(source, out, *command, log=log), log)
        assert _committed(broker.bootstrap, "events") == len(records)
        # the run ended, so every window folder is rolled up into one file
        folders = [d for table in ("readings", "runs") for d in (out / table).iterdir() if d.is_dir()]
        assert folders and all(len(list(d.glob("*.parquet"))) == 1 for d in folders)
        first = accounted(out)
        finish(stream_cli(source, out, *command, log=log), log)
    assert first == accounted(out) == len(records)
    assert assert_stream_matches_batch(reassess_examples(tmp_path / "batch"), out) > 40


def test_a_finished_bounded_read_run_again_has_nothing_to_do_and_a_larger_one_reads_the_rest(integration_jars, tmp_path):
    """A bounded read that ended (checkpointing as it read) forgets its checkpoints once its offsets
    are committed; the same command again says in one line that the group has read what it asks for
    and exits 0 before any job server starts, the tables as they were; a larger --max-records then
    reads on from the committed offsets (not from a checkpoint: nothing it read is read again from one),
    and every record is counted once."""
    from tools.kafka_local import KafkaBroker

    from footprint_audit.pipelines.flink.state import latest_checkpoint
    from footprint_audit.pipelines.report.command import check_output_dir, connect, fetch

    def runs_view() -> list[dict]:
        con = connect(out, check_output_dir(out))
        return fetch(con, "SELECT run_id, source_file, events, dead_letters, tool_calls FROM runs ORDER BY ALL")

    records = example_records()
    out, log, again_log = tmp_path / "stream", tmp_path / "stream.log", tmp_path / "again.log"
    state = out / "_state"
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produce(broker.bootstrap, "events", records)
        source = f"kafka://{broker.bootstrap}/events"
        command = ("--max-records", str(len(records)), "--checkpoint-seconds", "1", "--compact-seconds", "0")  # files compared
        first = stream_cli(source, out, *command, log=log)
        wait_for(lambda: latest_checkpoint(state / "checkpoints") is not None, "a checkpoint", proc=first, log=log)
        finish(first, log)
        assert _committed(broker.bootstrap, "events") == len(records)
        assert latest_checkpoint(state / "checkpoints") is None  # forgotten: a rerun never resumes (and reads again) from it
        files, runs, server_log = _files(out), runs_view(), (state / "job-server.log").stat().st_mtime_ns
        finish(stream_cli(source, out, *command, log=again_log), again_log)
        said = again_log.read_text()
        assert (f"footprint-audit stream: group footprint-audit has already read the {len(records)} records "
                "--max-records asks for on events; nothing to do") in said, said
        assert (state / "job-server.log").stat().st_mtime_ns == server_log  # no job server was started
        assert _files(out) == files and runs_view() == runs and accounted(out) == len(records)
        # two more records (a call of a run of its own, after the examples): a larger bound reads just them
        ms = max(m for m, _r, _b in example_events() if m is not None) + 1_000
        meta = {"runId": "run-after-the-bound", "wallClockMs": ms}
        more = [{"type": "agentfootprint.stream.tool_start", "payload": {"toolCallId": "a-1", "toolName": "list_hosts"},
                 "meta": meta},
                {"type": "agentfootprint.stream.tool_end", "payload": {"toolCallId": "a-1", "result": {"hosts": [1]}},
                 "meta": meta}]
        produce(broker.bootstrap, "events", [(partition_of(meta["runId"], PARTITIONS), ms, orjson.dumps(r)) for r in more])
        finish(stream_cli(source, out, "--max-records", str(len(records) + 2), *command[2:], log=log), log)
        assert _committed(broker.bootstrap, "events") == len(records) + 2
    assert accounted(out) == len(records) + 2
    assert [r["rows"] for r in load_table(out, "readings") if r["run_id"] == "run-after-the-bound"] == [1]
    assert all(_files(out).get(name) == seen for name, seen in files.items())


def _committed(bootstrap: str, topic: str, group: str = "footprint-audit") -> int:
    """How many records the consumer group has committed, over the topic's partitions."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return sum(max(tp.offset, 0) for tp in consumer.committed(parts, timeout=30))
    finally:
        consumer.close()

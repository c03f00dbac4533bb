"""The roll-up of a stream output (`pipelines.compact.rollup`): the views read the same rows before, during
(a kill -9 at many moments, a pane landing mid-way) and after it; idle folders only; retention."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT
from footprint_audit.pipelines import cli
from footprint_audit.pipelines.compact import rollup as compact
from footprint_audit.pipelines.stream import command as stream_mod
from footprint_audit.pipelines.report.command import SOURCE_VIEWS, check_output_dir, collect, connect, render_text
from footprint_audit.transforms.stream.write import pane_file, window_folder
from footprint_audit.transforms.write.parquet import write_arrow_file

STREAM = ["--source", f"file://{ROOT}/examples/recordings/**", "--declarations", str(ROOT / "examples/declarations.json")]


@pytest.fixture(scope="module")
def streamed(tmp_path_factory) -> Path:
    """The examples replayed through `stream` (one pane per window folder), not rolled up."""
    out = tmp_path_factory.mktemp("stream") / "out"
    assert stream_mod.run([*STREAM, "--output", str(out), "--compact-seconds", "0"]) == 0
    return out


def splinter(src: Path, dst: Path, pieces: int = 4) -> Path:
    """A copy of a stream output whose panes are cut into up to `pieces` panes each, all an hour old."""
    shutil.copytree(src, dst)
    for f in sorted(dst.glob("*/window=*/pane-*.parquet")):
        t = pq.read_table(f)
        if t.num_rows < 2:
            continue
        f.unlink()
        step = -(-t.num_rows // min(pieces, t.num_rows))
        for i, start in enumerate(range(0, t.num_rows, step)):
            write_arrow_file(str(f.parent / pane_file(i + 1, f"cut{i}")), t.slice(start, step))
    age(dst, 3600)
    return dst


def age(out: Path, seconds: float) -> None:
    then = time.time() - seconds
    for f in out.rglob("*.parquet"):
        os.utime(f, (then, then))


def views(out: Path, text: bool = True) -> dict:
    """Every row of the three source views, sorted, the report's figures and (`text`) the report."""
    con = connect(out, check_output_dir(out))
    seen = {v: con.execute(f"SELECT * FROM {v} ORDER BY ALL").fetchall() for v in SOURCE_VIEWS}
    seen["figures"] = con.execute("SELECT * FROM report_figures").fetchall()
    return seen | ({"text": render_text(collect(con, out)).replace(str(out), "OUT")} if text else {})


def files_per_folder(out: Path) -> dict[Path, list[str]]:
    return {d: sorted(p.name for p in d.iterdir()) for d in out.glob("*/window=*")}


def test_a_roll_up_keeps_every_row_once_in_the_writers_order_and_schema(streamed, tmp_path):
    out = splinter(streamed, tmp_path / "out")
    before, panes = views(out), files_per_folder(out)
    assert sum(len(names) > 1 for names in panes.values()) > 10
    done = compact.compact_output(out)
    assert done is not None and done.folders == sum(len(names) > 1 for names in panes.values())
    assert views(out) == before
    for folder, names in files_per_folder(out).items():
        assert len(names) == 1 and names[0].startswith("rollup-" if len(panes[folder]) > 1 else "pane-")
        original = pq.read_table(streamed / folder.relative_to(out) / os.listdir(streamed / folder.relative_to(out))[0])
        assert pq.read_table(folder / names[0]).replace_schema_metadata(None).equals(original.replace_schema_metadata(None))
    # a second pass has nothing to do; a pane that comes later is rolled together with the roll-up
    assert compact.compact_output(out).folders == 0  # type: ignore[union-attr]
    folder = next(d for d, names in files_per_folder(out).items() if names[0].startswith("rollup-"))
    write_arrow_file(str(folder / pane_file(9, "late")),
                     pq.read_table(folder / os.listdir(folder)[0]).slice(0, 1).replace_schema_metadata(None))
    age(out, 3600)
    assert compact.compact_output(out).folders == 1  # type: ignore[union-attr]
    assert (len(os.listdir(folder)) == 1
            and len(views(out)[f"{folder.parent.name}_all"]) == len(before[f"{folder.parent.name}_all"]) + 1)


def test_a_folder_with_a_fresh_file_is_left_for_later(streamed, tmp_path):
    out = splinter(streamed, tmp_path / "out")
    busy = next(d for d, names in files_per_folder(out).items() if len(names) > 1)
    os.utime(next(busy.iterdir()))  # just written
    before = sorted(os.listdir(busy))
    compact.compact_output(out, idle_seconds=60)
    assert sorted(os.listdir(busy)) == before
    assert all(len(names) == 1 for d, names in files_per_folder(out).items() if d != busy)


def test_a_pane_landing_between_the_listing_and_the_rename_is_kept_once(streamed, tmp_path, monkeypatch):
    out = splinter(streamed, tmp_path / "out")
    before = views(out)
    landed: list[Path] = []
    real_write = compact.write_arrow_file

    def write_while_a_pane_lands(path: str, arrow):
        if not landed:  # the stream's writer renames a new pane into the folder being rolled up
            folder = Path(path).parent
            landed.append(folder / pane_file(7, "landed"))
            write_arrow_file(str(folder / ".tmp-landed.parquet"), arrow.slice(0, 1).replace_schema_metadata(None))
            os.rename(folder / ".tmp-landed.parquet", landed[0])
        return real_write(path, arrow)

    monkeypatch.setattr(compact, "write_arrow_file", write_while_a_pane_lands)
    compact.compact_output(out)
    table = f"{landed[0].parent.parent.name}_all"
    names = sorted(os.listdir(landed[0].parent))
    assert len(names) == 2 and landed[0].name in names and any(n.startswith("rollup-") for n in names)
    after = views(out)
    extra = list(after[table])
    for row in before[table]:
        extra.remove(row)  # every row that was there is there
    assert len(extra) == 1 and extra[0] in before[table]  # and the landed one once
    monkeypatch.undo()
    compact.compact_output(out, idle_seconds=0)  # next time the two are one
    assert len(os.listdir(landed[0].parent)) == 1 and views(out)[table] == after[table]


def rollups(out: Path) -> int:
    return sum(1 for d in out.glob("*/window=*") for n in os.listdir(d) if "rollup-" in n)


def progress(out: Path, panes: int) -> dict[str, int]:
    """How far a roll-up went: roll-up files begun (temporaries too), renamed, panes deleted."""
    names = [n for d in out.glob("*/window=*") for n in os.listdir(d)]
    return {"begun": sum("rollup-" in n for n in names), "renamed": sum(n.startswith("rollup-") for n in names),
            "deleted": panes - sum(n.startswith("pane-") for n in names)}


def test_a_kill_9_at_any_moment_of_a_roll_up_leaves_the_rows_once_and_the_next_run_finishes(streamed, tmp_path):
    """`compact` in a subprocess, killed once it has begun, renamed or deleted 1, 3, 5, ... files:
    the kill lands during a write, after a rename or among the deletes, at a growing depth."""
    pristine = splinter(streamed, tmp_path / "pristine", pieces=6)
    before = views(pristine, text=False)
    multi = sum(len(names) > 1 for names in files_per_folder(pristine).values())
    panes = len(list(pristine.glob("*/window=*/pane-*")))
    command = [sys.executable, "-m", "footprint_audit.pipelines.cli", "compact"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    killed = 0
    for n, at in enumerate(range(1, multi + 1, max(1, multi // 8))):
        out = tmp_path / f"run{n}"
        shutil.copytree(pristine, out)
        proc = subprocess.Popen([*command, str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None and progress(out, panes)[("begun", "renamed", "deleted")[n % 3]] < at:
            pass
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        assert views(out, text=False) == before, f"killed at {at} roll-up files"
        # a second run (idle 0: the kill's temporary is fresh) finishes the job
        assert compact.compact_output(out, idle_seconds=0) is not None
        assert views(out, text=False) == before
        assert all(len(names) == 1 for names in files_per_folder(out).values()), files_per_folder(out)
        assert not list(out.rglob(".tmp-*"))
        shutil.rmtree(out)
    assert killed >= 5


def test_a_roll_up_renamed_but_not_yet_deleted_and_a_half_written_one_read_right_and_are_finished(streamed, tmp_path):
    """The states a kill leaves that the loop above seldom hits: the replaced files still there
    after the rename, and a roll-up's temporary cut short."""
    out = splinter(streamed, tmp_path / "out")
    before = views(out, text=False)
    kept = tmp_path / "kept"
    shutil.copytree(out, kept)
    compact.compact_output(out)
    for f in kept.glob("*/window=*/pane-*.parquet"):  # as if killed before the deletes
        shutil.copy(f, out / f.relative_to(kept))
    folder = next(d for d, names in files_per_folder(out).items() if len(names) > 1)
    rollup = next(folder.glob("rollup-*"))
    (folder / ".tmp-rollup-cut.parquet").write_bytes(rollup.read_bytes()[:100])  # killed while writing
    assert views(out, text=False) == before
    compact.compact_output(out, idle_seconds=0)
    assert views(out, text=False) == before
    assert all(len(names) == 1 for names in files_per_folder(out).values()) and not list(out.rglob(".tmp-*"))


def test_retention_deletes_only_the_folders_whose_window_ended_long_enough_ago(streamed, tmp_path):
    out = tmp_path / "out"
    pane = next(streamed.glob("readings/window=*/pane-*.parquet"))
    now = time.time()
    for start in (now - 3 * 3600, now - 7200 - 61, now - 7200 + 60, now - 600):
        folder = out / "readings" / window_folder(start - start % 60, 60)
        folder.mkdir(parents=True)
        shutil.copy(pane, folder / pane.name)
    kept = sorted(os.listdir(out / "readings"))[2:]
    assert compact.compact_output(out, retain_hours=2).expired == 2  # type: ignore[union-attr]
    assert sorted(os.listdir(out / "readings")) == kept and not (out / ".expired").exists()
    assert compact.compact_output(out, retain_hours=0).expired == 0  # type: ignore[union-attr]


def test_the_stream_rolls_its_output_up_when_a_bounded_run_ends(tmp_path):
    out = tmp_path / "out"
    for _ in range(2):  # the second run adds a pane to every folder
        assert stream_mod.run([*STREAM, "--output", str(out)]) == 0
    assert all(len(names) == 1 and names[0].startswith("rollup-") for names in files_per_folder(out).values())
    assert len(views(out)["readings_all"]) == 2 * 57


def test_the_compactor_thread_rolls_up_and_is_gone_when_the_block_ends(streamed, tmp_path):
    out = splinter(streamed, tmp_path / "out")
    with compact.Compactor(str(out), 0.01) as c:
        while rollups(out) == 0:
            assert c.thread.is_alive()
    assert not c.thread.is_alive()
    with compact.Compactor(str(out), 3600) as c:
        assert c.thread.is_alive()
    assert not c.thread.is_alive()


def test_bad_input_is_one_sentence_and_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for argv in ([str(tmp_path / "missing")], [str(tmp_path / "file")], [str(tmp_path), "--retain-hours", "-1"],
                 [str(tmp_path), "--idle-seconds", "-5"], [], ["s3://bucket/out"]):
        assert cli.main(["compact", *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("footprint-audit compact: ") and "\n" not in err, err
    assert stream_mod.run([*STREAM, "--output", str(tmp_path / "o"), "--retain-hours", "-1"]) == 2
    assert "--retain-hours must be 0 or more" in capsys.readouterr().err
    assert cli.main(["compact", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("footprint-audit compact: rolled 0 files")

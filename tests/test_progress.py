"""Progress lines: a local worker's name its own counts, which only go up; the launcher's say the job's."""

from __future__ import annotations

import pytest

from footprint_audit.transforms.process import WORKER_ENV, Progress, Ticker


def test_a_workers_lines_name_it_and_count_its_share_of_the_files(monkeypatch, capsys):
    monkeypatch.setenv(WORKER_ENV, "worker 3")
    progress = Progress(24, every=0.0)
    progress.add(files=2, events=1_500, nbytes=2_000_000)
    progress.add(files=1, events=10)
    assert capsys.readouterr().err.splitlines() == [
        "footprint-audit: worker 3: read 2 of the job's 24 files, 1,500 events, 2.0 MB",
        "footprint-audit: worker 3: read 3 of the job's 24 files, 1,510 events, 2.0 MB",
    ]


@pytest.mark.parametrize("total, shown", [(24, "read 2/24 files"), (0, "read 2 files")])
def test_the_launchers_lines_count_the_job(monkeypatch, capsys, total, shown):
    monkeypatch.delenv(WORKER_ENV, raising=False)
    Progress(total, every=0.0).add(files=2, events=7, nbytes=100)
    assert capsys.readouterr().err == f"footprint-audit: {shown}, 7 events, 0.0 MB\n"
    Ticker.say("12 readings so far")
    assert capsys.readouterr().err == "footprint-audit: 12 readings so far\n"

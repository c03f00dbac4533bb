"""`pipelines.background.Background`: a side task in a forked child gives the answer the launcher would."""

from __future__ import annotations

import os
import time

import pytest

from footprint_audit.pipelines.background import Background


def _pid_and_value() -> tuple[int, list[int]]:
    return os.getpid(), [n * n for n in range(1000)]


def test_a_forked_child_computes_the_result_the_launcher_would() -> None:
    task = Background(_pid_and_value, fork=True)
    assert task.forked
    pid, value = task.result()
    assert pid != os.getpid()  # computed elsewhere
    assert value == _pid_and_value()[1]
    assert not task.forked


def test_without_a_fork_the_result_is_computed_here() -> None:
    task = Background(_pid_and_value, fork=False)
    assert not task.forked
    pid, value = task.result()
    assert pid == os.getpid()
    assert value == _pid_and_value()[1]


def test_a_child_that_fails_leaves_the_launcher_to_compute_it() -> None:
    calls = {"here": 0}
    parent = os.getpid()

    def fails_in_the_child() -> str:
        if os.getpid() != parent:
            raise RuntimeError("the child's error")
        calls["here"] += 1
        return "computed here"

    task = Background(fails_in_the_child, fork=True)
    assert task.result() == "computed here"
    assert calls["here"] == 1


def test_a_result_larger_than_a_pipe_buffer_arrives_whole() -> None:
    task = Background(lambda: b"x" * (4 << 20), fork=True)
    assert task.result() == b"x" * (4 << 20)


def test_close_kills_a_child_whose_result_is_not_asked_for() -> None:
    task = Background(lambda: time.sleep(600), fork=True)
    pid = task.pid
    assert pid is not None
    task.close()
    assert not task.forked
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process left
        os.kill(pid, 0)

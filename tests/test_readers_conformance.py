"""Conformance of `readers/` with the upstream agentfootprint TypeScript readers.

Role: runs EVERY case of the three conformance files in
`tests/data/conformance/` (132 upstream unit cases, 195 edge cases, 15,666
upstream property cases; no skip list) through the harness function
`readers.cases.answer_line` and compares the answer, as canonical JSON text,
with the reference answer the file holds:

    to_js_json(expect minus "id")  ==  answer_line(line)

Both sides are written the way `JSON.stringify` writes them (JS numbers, key
order, escapes), and the case lines are read with `readers.parse_json`, i.e.
with JavaScript number semantics (docs/readers.md T19). The two small files are
parametrized per case (the test id is the case id); the property file is
parametrized in chunks, each chunk collecting every mismatch and naming the
failing case ids. A last test runs the real CLI (`python -m footprint_audit.readers.cases`) on
`edge.jsonl` as a subprocess and checks its answers line by line.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from footprint_audit.readers import parse_json, to_js_json
from footprint_audit.readers.cases import answer_line

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "conformance"

EDGE = "edge.jsonl"
UNIT = "upstream_unit.jsonl"
PROPERTY = "upstream_property.jsonl.gz"

EXPECTED_COUNTS = {UNIT: 132, EDGE: 195, PROPERTY: 15_666}
CHUNK = 500


@lru_cache(maxsize=None)
def case_lines(name: str) -> tuple[str, ...]:
    """The non-blank lines of one conformance file (gzip read transparently)."""
    path = DATA / name
    opener: Any = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="surrogatepass", newline="\n") as f:
        return tuple(line for line in f if line.strip())


def expected_answer(line: str) -> tuple[Any, str]:
    """(case id, the reference answer as canonical JSON text) of one case line."""
    doc = parse_json(line)
    expect = {k: v for k, v in doc["expect"].items() if k != "id"}
    return doc["case"].get("id"), to_js_json(expect)


def mismatches(lines: tuple[str, ...] | list[str]) -> list[str]:
    """One message per case whose answer differs from the reference."""
    bad: list[str] = []
    for line in lines:
        case_id, want = expected_answer(line)
        try:
            got = answer_line(line)
        except Exception as exc:  # a reader that raises is a mismatch too
            got = f"<raised {type(exc).__name__}: {exc}>"
        if got != want:
            bad.append(f"case {case_id!r}: expected {want[:300]} got {str(got)[:300]}")
    return bad


def _per_case(name: str) -> list:
    params = []
    for line in case_lines(name):
        case_id = parse_json(line)["case"].get("id")
        params.append(pytest.param(line, id=str(case_id)))
    return params


def _chunks(name: str) -> list:
    lines = case_lines(name)
    return [
        pytest.param(start, id=f"{start + 1}-{min(start + CHUNK, len(lines))}")
        for start in range(0, len(lines), CHUNK)
    ]


# ---------------------------------------------------------------------------
# counts and the file shapes


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_case_counts(name: str) -> None:
    lines = case_lines(name)
    assert len(lines) == EXPECTED_COUNTS[name]
    ids = [parse_json(line)["case"].get("id") for line in lines]
    assert len(set(map(repr, ids))) == len(ids), f"{name}: duplicate case ids"


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_every_expect_is_one_answer_kind(name: str) -> None:
    for line in case_lines(name):
        doc = parse_json(line)
        expect = doc["expect"]
        assert expect.get("id") == doc["case"].get("id")
        kinds = [k for k in expect if k != "id"]
        assert kinds in (["result"], ["undefined"], ["throws"]), (doc["case"].get("id"), kinds)


# ---------------------------------------------------------------------------
# the cases themselves


@pytest.mark.parametrize("line", _per_case(EDGE))
def test_edge_case(line: str) -> None:
    case_id, want = expected_answer(line)
    assert answer_line(line) == want, case_id


@pytest.mark.parametrize("line", _per_case(UNIT))
def test_upstream_unit_case(line: str) -> None:
    case_id, want = expected_answer(line)
    assert answer_line(line) == want, case_id


@pytest.mark.parametrize("start", _chunks(PROPERTY))
def test_upstream_property_chunk(start: int) -> None:
    bad = mismatches(case_lines(PROPERTY)[start : start + CHUNK])
    assert bad == [], f"{len(bad)} mismatching cases:\n" + "\n".join(bad)


def test_chunks_cover_every_property_case() -> None:
    starts = [p.values[0] for p in _chunks(PROPERTY)]
    covered = sum(len(case_lines(PROPERTY)[s : s + CHUNK]) for s in starts)
    assert covered == EXPECTED_COUNTS[PROPERTY]


# ---------------------------------------------------------------------------
# the CLI


def _run_cases_cli(stdin: bytes, timeout: int) -> subprocess.CompletedProcess:
    """`python -m footprint_audit.readers.cases` on `stdin`, from the project root."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "footprint_audit.readers.cases"],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_cli_answers_edge_cases_line_by_line() -> None:
    proc = _run_cases_cli((DATA / EDGE).read_bytes(), timeout=120)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert proc.stderr == b""
    answers = proc.stdout.decode("utf-8", "surrogatepass").split("\n")
    assert answers[-1] == ""  # every answer line ends with a newline
    answers = answers[:-1]
    lines = case_lines(EDGE)
    assert len(answers) == len(lines) == EXPECTED_COUNTS[EDGE]
    bad = []
    for line, got in zip(lines, answers):
        case_id, want = expected_answer(line)
        if got != want:
            bad.append(f"case {case_id!r}: expected {want[:300]} got {got[:300]}")
    assert bad == [], "\n".join(bad)


def test_cli_skips_blank_lines_and_reads_bare_cases() -> None:
    cases = b'\n{"fn":"isArtifactRef","value":"art_AbCdEfGhIjKlMnOpQrStUv"}\n  \n{"case":{"fn":"rowsAtProblem","rowsAt":"a.b"}}\n'
    proc = _run_cases_cli(cases, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert proc.stdout.decode("utf-8").splitlines() == ['{"result":true}', '{"result":"nested"}']

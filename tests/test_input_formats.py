"""The input-format registry (docs/input-formats.md): a new format is one module and one line.

The page's example module is taken from the page itself, added to `registry.FORMATS`, and a file
in its format is read by `open_source` and by the batch job's read step; without the line, the
same file is a whole document that is not JSON.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import apache_beam as beam
import orjson
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from footprint_audit.schemas.events import FORMAT_EVENT_STREAM, REASON_NOT_JSON, REASON_TOO_LARGE, Event
from footprint_audit.transforms.decode import registry
from footprint_audit.transforms.decode.input_files import EVENTS, ReadInputFiles
from footprint_audit.transforms.decode.sources import open_source, read_source
from helpers import EXAMPLES, ROOT, fn_api_runner

LINES = EXAMPLES / "recordings" / "stream" / "part-1.jsonl"


def _page_module() -> types.ModuleType:
    (body,) = re.findall(r"^```python\n(.*?)^```", (ROOT / "docs" / "input-formats.md").read_text("utf-8"), re.S | re.M)
    module = types.ModuleType("json_seq")
    exec(compile(body, "docs/input-formats.md", "exec"), module.__dict__)
    return module


@pytest.fixture
def json_seq(monkeypatch: pytest.MonkeyPatch):
    """The page's format, added as its one line in `FORMATS`."""
    fmt = _page_module().JSON_SEQ
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, fmt))
    return fmt


def _as_json_seq(tmp_path: Path, name: str = "run.txt") -> Path:
    lines = [line for line in LINES.read_bytes().splitlines() if line.strip()]
    path = tmp_path / name
    path.write_bytes(b"".join(b"\x1e" + line + b"\n" for line in lines))
    return path


def _events(source) -> list[tuple[str, int, str]]:
    return [(run.run_id, e.index, e.type) for run in source.runs for e in run.events]


def test_the_pages_format_is_told_by_its_first_line_and_gives_the_same_events(tmp_path, json_seq):
    path = _as_json_seq(tmp_path)
    assert registry.sniff(path.read_bytes()[: registry.HEAD_BYTES], str(path)) is json_seq
    got, want = read_source(str(path)), read_source(str(LINES))
    assert (got.format, want.format) == ("json-seq", FORMAT_EVENT_STREAM)
    assert _events(got) == _events(want) and len(_events(got)) >= 10
    assert [run.run_id for run in got.runs] == [run.run_id for run in want.runs]


def test_the_pages_format_gives_dead_letters_with_their_reasons(tmp_path, json_seq):
    path = tmp_path / "bad.json-seq"  # told by its suffix: its first record is not JSON
    path.write_bytes(b"\x1e{oops\n\x1e" + orjson.dumps({"x": "y" * 200}) + b"\n")
    opened = open_source(str(path), max_event_bytes=100)
    items = list(opened.streamed)
    assert (opened.whole.format, opened.whole.runs, opened.whole.dead_letters) == ("json-seq", [], [])
    assert [(i.event_index, i.reason) for i in items] == [(0, REASON_NOT_JSON), (1, REASON_TOO_LARGE)]


def test_without_its_line_the_file_is_a_document_that_is_not_json(tmp_path):
    source = read_source(str(_as_json_seq(tmp_path)))
    assert source.runs == [] and [d.reason for d in source.dead_letters] == [REASON_NOT_JSON]


def test_the_batch_read_step_reads_the_pages_format(tmp_path, json_seq):
    path = str(_as_json_seq(tmp_path))
    want = [(path, "json-seq", e.index, e.type) for e in read_source(str(LINES)).runs[0].events]
    want += [(path, "json-seq", e.index, e.type) for run in read_source(str(LINES)).runs[1:] for e in run.events]
    with TestPipeline(runner=fn_api_runner()) as p:
        out = p | beam.Create([path]) | ReadInputFiles(progress=False)
        events = out[EVENTS] | beam.Map(lambda t: (t[0], t[1], t[2].index, t[2].type) if isinstance(t[2], Event) else None)
        assert_that(events, equal_to(want))
        assert_that(out.documents, equal_to([]), label="NoDocuments")

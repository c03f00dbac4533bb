"""The job's element types and their coders: the same bytes as pickle, sizes without encoding."""

from __future__ import annotations

import pickle

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from helpers import fn_api_runner
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.local_runner.plans import runner_options
from footprint_audit.schemas.declarations import Declarations
from footprint_audit.schemas.events import DeadLetter, Event, RunInput, SourceFile
from footprint_audit.transforms.calls.call_types import Call
from footprint_audit.transforms.decode.elements import (
    EVENT_BYTES,
    ROW_BYTES,
    CallGroup,
    CallGroupCoder,
    ReadingRows,
    ReadingRowsCoder,
    SourceFileCoder,
)
from footprint_audit.transforms.join.keyed import JoinRecordingRuns
from footprint_audit.transforms.read.apply_readers import ApplyReaders
from footprint_audit.transforms.read.reading_rows import READING_COLUMNS


class _Unpicklable:
    """A value pickle refuses: an element holding one can be sized, not encoded."""

    def __reduce__(self):
        raise pickle.PicklingError("not picklable")


def _source(n_events: int, extra=None) -> SourceFile:
    events = [Event(i, "stream.tool_start", {"toolCallId": f"c{i}", "x": extra}, {"runId": "r"}) for i in range(n_events)]
    dead = [DeadLetter("f.json", None, None, "not-json", "bad", b"x" * 7)]
    return SourceFile("f.json", "events-array", [RunInput("r", "f.json", "events-array", events)], dead)


def test_coders_encode_as_pickle_and_read_back():
    source = _source(3)
    group = CallGroup([Call("r", "c1", 0, "f.json"), Call("r", "c2", 0, "f.json")])
    rows = ReadingRows([{"run_id": "r", "rows": 1}, {"run_id": "r", "rows": None}])
    for coder, value in ((SourceFileCoder(), source), (CallGroupCoder(), group), (ReadingRowsCoder(), rows)):
        back = coder.decode(coder.encode(value))
        assert back == value and type(back) is type(value)
        assert not coder.is_deterministic()
        assert coder == type(coder)() and hash(coder) == hash(type(coder)())


def test_sizes_are_estimated_from_what_the_element_holds_without_encoding_it():
    unpicklable = _Unpicklable()
    source = _source(4, unpicklable)
    with pytest.raises(pickle.PicklingError):
        SourceFileCoder().encode(source)
    assert SourceFileCoder().estimate_size(source) == 4 * EVENT_BYTES + 7
    calls = [Call("r", "c1", 0, "f.json", events=[("f.json", e) for e in source.runs[0].events[:3]]),
             Call("r", "c2", 0, "f.json")]
    calls[1].described = unpicklable
    assert CallGroupCoder().estimate_size(CallGroup(calls)) == (3 + 1) * EVENT_BYTES
    assert ReadingRowsCoder().estimate_size(ReadingRows([{"x": unpicklable}] * 5)) == 5 * ROW_BYTES
    # Through Beam's own coder impl, as its size sampling calls it.
    assert SourceFileCoder().get_impl().get_estimated_size_and_observables(source) == (4 * EVENT_BYTES + 7, [])


def test_the_job_gives_its_main_outputs_these_coders():
    beam_args = ["--direct_num_workers=1"]
    options, runner = runner_options(beam_args)
    p = beam.Pipeline(runner=runner, options=options)
    reassess.build_pipeline(p, ["a.json"], "/nonexistent", Declarations({}), 1, progress=False)
    proto = p.to_runner_api()
    coders = {}
    for pc in proto.components.pcollections.values():
        spec = proto.components.coders[pc.coder_id].spec
        coders[pc.unique_name] = spec.payload.split(b"$")[0] if spec.urn.endswith("pickled_python:v1") else b""
    def coder_of(suffix: str) -> bytes:
        (name,) = [n for n in coders if n.endswith(suffix)]
        return coders[name]
    assert coder_of("ReadEachFile/ParDo(_ReadFileFn).None").endswith(b"SourceFileCoder")
    assert coder_of("JoinEachRun/ParDo(_JoinDocumentFn).None").endswith(b"CallGroupCoder")
    assert coder_of("JoinCall/ParDo(JoinCallFn).None").endswith(b"CallGroupCoder")
    assert coder_of("ApplyReaders/ReadEachCall.None").endswith(b"ReadingRowsCoder")
    assert coder_of("ApplyReadersToLineCalls/ReadEachCall.None").endswith(b"ReadingRowsCoder")


def _unpicklable_source(_: object) -> SourceFile:
    """A recording file whose first call's start holds a value pickle refuses (made on the worker)."""
    source = _source(2)
    source.runs[0].events[0].payload["args"] = _Unpicklable()
    source.runs[0].events.append(Event(2, "stream.tool_end", {"toolCallId": "c0", "result": "[]"}, {"runId": "r"}))
    return source


_CALL_ID_AT, _OUTCOME_AT = READING_COLUMNS.index("tool_call_id"), READING_COLUMNS.index("outcome")


def test_beam_samples_the_sizes_of_elements_it_could_not_pickle():
    # On the local runner the steps are fused and Beam only measures these elements;
    # its fallback coder would pickle them to do so (and fail on this one).
    with TestPipeline(runner=fn_api_runner()) as p:
        files = p | beam.Create([None]) | beam.Map(_unpicklable_source).with_output_types(SourceFile)
        joined = files | JoinRecordingRuns()
        rows = joined["calls"] | ApplyReaders(Declarations({}))
        assert_that(
            rows | beam.Map(lambda rs: (type(rs).__name__, [(r[_CALL_ID_AT], r[_OUTCOME_AT]) for r in rs])),
            equal_to([("ReadingRows", [("c1", "unknown"), ("c0", "ran")])]),
        )

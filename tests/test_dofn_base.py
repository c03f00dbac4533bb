"""`ArgsOnceDoFn`: Beam reads the same parameters as without it, once per class and method."""

from __future__ import annotations

import pickle

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import core, userstate

from helpers import fn_api_runner
from schemas.declarations import Declarations
from transforms import dofn_base
from transforms.dofn_base import ArgsOnceDoFn
from transforms.join import _JoinCallFn, _JoinDocumentFn, _KeyEventFn
from transforms.input_files import _ReadFileFn
from transforms.apply_readers import _ApplyReadersFn
from transforms.stream_join import _StatefulJoinFn
from transforms.write import _BatchRowsFn, _WriteShardFn


def _instances() -> list[ArgsOnceDoFn]:
    return [
        _ReadFileFn(1 << 20, 1, False),
        _JoinDocumentFn(),
        _KeyEventFn(),
        _JoinCallFn(),
        _ApplyReadersFn(Declarations({}), "v"),
        _BatchRowsFn("readings", 2),
        _WriteShardFn("/tmp/x", {"readings": 1}),
        _StatefulJoinFn(Declarations({}), 1000, 1000, "v"),
    ]


def _methods(dofn: beam.DoFn) -> list[str]:
    return [m for m in dir(dofn) if callable(getattr(dofn, m, None)) and hasattr(getattr(dofn, m), "__func__")]


@pytest.mark.parametrize("dofn", _instances(), ids=lambda d: type(d).__name__)
def test_beam_reads_the_same_parameters_as_without_the_hook(dofn):
    for method in _methods(dofn):
        assert core.get_function_arguments(dofn, method) == core.get_function_args_defaults(getattr(dofn, method))


def test_the_stateful_join_keeps_its_state_and_timers():
    fn = _StatefulJoinFn(Declarations({}), 1000, 1000, "v")
    states, timers = userstate.get_dofn_specs(fn)
    assert states == {_StatefulJoinFn.EVENTS, _StatefulJoinFn.STATE}
    assert timers == {_StatefulJoinFn.READ, _StatefulJoinFn.CLEANUP}
    assert userstate.is_stateful_dofn(fn) and not userstate.is_stateful_dofn(_JoinCallFn())


class _Counted(ArgsOnceDoFn):
    def process(self, element, timestamp=beam.DoFn.TimestampParam):
        yield element, int(timestamp)


def test_each_method_is_read_once_per_class(monkeypatch):
    calls = []
    real = dofn_base.get_function_args_defaults
    monkeypatch.setattr(dofn_base, "get_function_args_defaults", lambda f: calls.append(f.__name__) or real(f))
    monkeypatch.setattr(dofn_base, "_ARGS", {})
    for _ in range(3):
        userstate.get_dofn_specs(_Counted())
    assert calls.count("process") == 1 and calls.count("setup") == 1
    args, defaults = core.get_function_arguments(_Counted(), "process")
    args.append("changed")  # each caller gets lists of its own
    assert core.get_function_arguments(_Counted(), "process") == (["element", "timestamp"], [beam.DoFn.TimestampParam])


def test_a_callable_set_on_an_instance_is_read_each_time():
    fn = _Counted()
    fn.clock = lambda a, b=1: a
    assert core.get_function_arguments(fn, "clock") == (["a", "b"], [1])
    fn.clock = (lambda c: c).__get__(object())  # a bound method: Beam inspects it too
    assert core.get_function_arguments(fn, "clock") == ([], [])
    with pytest.raises(AttributeError):
        fn.no_such_attribute


def test_a_dofn_pickles_and_runs_with_its_parameters():
    fn = pickle.loads(pickle.dumps(_Counted()))
    assert core.get_function_arguments(fn, "process")[0] == ["element", "timestamp"]
    with TestPipeline(runner=fn_api_runner()) as p:
        out = p | beam.Create(["a"]) | beam.ParDo(fn)
        assert_that(out, equal_to([("a", int(beam.window.MIN_TIMESTAMP))]))

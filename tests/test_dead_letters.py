"""The one dead-letter collector (transforms/dead_letters): every step's dead letters reach it, or the graph fails.

A step that gives dead letters notes its outputs as it is applied (`gives_dead_letters`); the
pipeline hands them to one `DeadLetterCollector` and closes it before writing. A step whose
dead letters were not handed over fails `close` while the graph is built, naming the step:
left alone, a tagged output nothing reads is dropped by the runner without a word.
"""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam import pvalue
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from footprint_audit.transforms.dead_letters import (
    DEAD_LETTERS, DeadLetterCollector, UnwiredDeadLetters, gives_dead_letters,
)


class _Split(beam.DoFn):
    def process(self, n: int):
        if n % 2:
            yield pvalue.TaggedOutput(DEAD_LETTERS, {"reason": "odd", "n": n})
        else:
            yield n


class Step(beam.PTransform):
    def expand(self, numbers):
        return gives_dead_letters(numbers | "Split" >> beam.ParDo(_Split()).with_outputs(DEAD_LETTERS, main="kept"))


def test_every_steps_dead_letters_reach_the_collector():
    with beam.Pipeline(runner=FnApiRunner()) as p:
        dead = DeadLetterCollector()
        first = p | "A" >> beam.Create([1, 2, 3]) | "First" >> Step()
        second = first["kept"] | "Plus" >> beam.Map(lambda n: n + 1) | "Second" >> Step()
        dead.take(first, second, p | "Made" >> beam.Create([{"reason": "made", "n": 0}]))
        letters = dead.close(p) | beam.Flatten() | beam.Map(lambda r: (r["reason"], r["n"]))
        assert_that(letters, equal_to([("odd", 1), ("odd", 3), ("odd", 3), ("made", 0)]))


def test_a_step_whose_dead_letters_are_not_handed_over_fails_the_graph():
    p = beam.Pipeline(runner=FnApiRunner())
    dead = DeadLetterCollector()
    first = p | "A" >> beam.Create([1, 2, 3]) | "First" >> Step()
    second = first["kept"] | "Second" >> Step()  # its dead letters forgotten
    dead.take(first)
    with pytest.raises(UnwiredDeadLetters,
                       match=r"^the dead letters of Second/Split/ParDo\(_Split\) are not handed to the collector$"):
        dead.close(p)
    dead.take(second)
    assert len(dead.close(p)) == 2

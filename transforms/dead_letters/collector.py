"""One collector of the dead letters, in the spirit of Beam's error handlers.

Pattern: a tag every step gives its dead-letter rows on (`DEAD_LETTERS`); each step that
         gives some says so as it is applied (`gives_dead_letters`); a pipeline hands each such
         step's outputs to one `DeadLetterCollector` and closes it before writing.
Role:    the one owner of "no dead letter is dropped": `close` fails the graph's construction,
         before anything runs, when a step's dead letters were not handed to the collector (a
         tagged output nothing reads is dropped by the runner without a word).
Emits:   the steps' dead-letter PCollections, once closed.
"""

from __future__ import annotations

import weakref
from typing import Any, TypeVar

import apache_beam as beam
from apache_beam import pvalue

__all__ = ["DEAD_LETTERS", "DeadLetterCollector", "UnwiredDeadLetters", "gives_dead_letters"]

#: The tagged output every step gives its dead-letter rows (`schemas.tables.DEAD_LETTERS`) on.
DEAD_LETTERS = "dead_letters"

#: Pipeline → the dead-letter outputs of the steps applied to it.
_GIVEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class UnwiredDeadLetters(ValueError):
    """A step's dead letters were not handed to the pipeline's collector."""


Outputs = TypeVar("Outputs", pvalue.DoOutputsTuple, dict)


def gives_dead_letters(outputs: Outputs) -> Outputs:
    """Note that a step's outputs (a `with_outputs` result, or a composite's outputs by tag, with the
    `DEAD_LETTERS` tag) hold dead letters."""
    letters = outputs[DEAD_LETTERS]
    _GIVEN.setdefault(letters.pipeline, []).append(letters)
    return outputs


class DeadLetterCollector:
    """Every step's dead letters, taken one by one (`take`), then closed (`close`) as the one set written."""

    def __init__(self) -> None:
        self._taken: list[beam.PCollection] = []

    def take(self, *outputs: Any) -> None:
        """A step's outputs (their `DEAD_LETTERS`), or a PCollection of dead-letter rows."""
        for out in outputs:
            self._taken.append(out if isinstance(out, beam.PCollection) else out[DEAD_LETTERS])

    def close(self, pipeline: beam.Pipeline) -> tuple[beam.PCollection, ...]:
        """The dead letters taken; `UnwiredDeadLetters` names each step applied to `pipeline` whose were not."""
        taken = {id(pc) for pc in self._taken}
        left = [pc.producer.full_label for pc in _GIVEN.get(pipeline, ()) if id(pc) not in taken]
        if left:
            raise UnwiredDeadLetters(f"the dead letters of {', '.join(left)} are not handed to the collector")
        return tuple(self._taken)

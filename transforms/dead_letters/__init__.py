"""Dead letters: the tag every step gives them on, and the one collector the pipelines write them from."""

from .collector import DEAD_LETTERS, DeadLetterCollector, UnwiredDeadLetters, gives_dead_letters

__all__ = ["DEAD_LETTERS", "DeadLetterCollector", "UnwiredDeadLetters", "gives_dead_letters"]

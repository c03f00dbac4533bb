"""The base of this project's DoFns: Beam reads each method's parameters once per class.

Pattern: a `beam.DoFn` subclass answering Beam's `_inspect_<method>` hook.
Role:    while it builds, translates and runs a pipeline, Beam looks for state
         and timer parameters in every method of every DoFn (about 30 of them,
         `DoFn`'s own included), through `inspect.signature`, about 140 times
         per job. A method's parameters and their defaults belong to the
         class, so they are read once per class and method and handed back
         from then on (0.03 s of a local job's fixed cost). Beam asks
         `_inspect_<method>` first when a DoFn has it (`get_function_arguments`).
Emits:   nothing.
"""

from __future__ import annotations

from typing import Any, Callable

import apache_beam as beam
from apache_beam.transforms.core import get_function_args_defaults

__all__ = ["ArgsOnceDoFn"]

_INSPECT = "_inspect_"

#: (DoFn class, method name) → (parameter names, default values), as Beam reads them.
_ARGS: dict[tuple[type, str], tuple[list[str], list[Any]]] = {}


class ArgsOnceDoFn(beam.DoFn):
    """A `beam.DoFn` whose methods' parameters Beam reads once per class (see the module's docstring).

    A callable set on an instance (a clock, say) is read each time, as Beam would.
    """

    def __getattr__(self, name: str) -> Callable[[], tuple[list[str], list[Any]]]:
        # Called only for attributes not found otherwise: Beam's `_inspect_<method>` probe.
        if not name.startswith(_INSPECT):
            raise AttributeError(name)
        method = name[len(_INSPECT) :]
        if method in vars(self):  # a callable set on the instance: read each time, never cached
            return lambda: get_function_args_defaults(getattr(self, method))
        key = (type(self), method)
        found = _ARGS.get(key)
        if found is None:
            found = _ARGS[key] = get_function_args_defaults(getattr(self, method))
        args, defaults = found
        return lambda: (list(args), list(defaults))

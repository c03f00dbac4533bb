"""Result facts a search tool states out loud: `resolved` and `paging` (docs/output.md §5).

Pattern: two doors, one rule set — the mint raises, the reader returns None.
Role:    the pipeline reads these off the described envelope (the door) and
         off an absence or coverage envelope in the value (`resolved`,
         `paging_next`, `paging_complete` columns). A tool author's code can
         mint them with the same rules, so the two cannot disagree.
Emits:   nothing; no I/O, no clock, no Beam.

| fact       | shape                                                        |
|------------|--------------------------------------------------------------|
| `resolved` | list of `{argument, id, name?, aliases?}`: `argument` and `id` non-empty strings, `name` a string, `aliases` a list of strings |
| `paging`   | `{next}`: `null` (no next page), a non-empty string cursor, or a whole page number ≥ 0 |

A first page is complete only with `next: null`; a `next` that is not null
is a gap. Read, never repaired: anything else is malformed.
"""

from __future__ import annotations

import copy
from typing import Any

from .jsvalues import UNDEFINED, is_js_number, is_safe_integer, js_number_to_string

__all__ = [
    "resolved_problem",
    "paging_problem",
    "mint_resolved",
    "mint_paging",
    "read_resolved",
    "read_paging",
    "paging_next_text",
    "ResultFactError",
]

_ENTRY_KEYS = ("argument", "id", "name", "aliases")


class ResultFactError(ValueError):
    """A result fact that breaks its rules (raised by the mints)."""


def resolved_problem(resolved: Any) -> str | None:
    """What is wrong with a `resolved` list, or None when it is well formed."""
    if type(resolved) is not list:
        return "`resolved` must be a list of {argument, id, name?, aliases?} entries"
    for i, entry in enumerate(resolved):
        at = f"resolved[{i}]"
        if type(entry) is not dict:
            return f"{at} must be an object {{argument, id, name?, aliases?}}"
        for key in entry:
            if key not in _ENTRY_KEYS:
                return f"{at} has an unknown key '{key}' (allowed: argument, id, name, aliases)"
        for key in ("argument", "id"):
            v = entry.get(key, UNDEFINED)
            if type(v) is not str or v == "":
                return f"{at}.{key} must be a non-empty string"
        if "name" in entry and type(entry["name"]) is not str:
            return f"{at}.name must be a string when given"
        if "aliases" in entry:
            aliases = entry["aliases"]
            if type(aliases) is not list or any(type(a) is not str for a in aliases):
                return f"{at}.aliases must be a list of strings when given"
    return None


def paging_problem(paging: Any) -> str | None:
    """What is wrong with a `paging` object, or None when it is well formed."""
    if type(paging) is not dict:
        return "`paging` must be an object {next}"
    for key in paging:
        if key != "next":
            return f"`paging` has an unknown key '{key}' (allowed: next)"
    if "next" not in paging:
        return "`paging.next` is required: null for no next page, else a cursor or a page number"
    nxt = paging["next"]
    if nxt is None:
        return None
    if type(nxt) is str:
        return None if nxt != "" else "`paging.next` must be a non-empty cursor string, a page number or null"
    if is_js_number(nxt):
        return None if is_safe_integer(nxt) and nxt >= 0 else "`paging.next` as a number must be a whole page number ≥ 0"
    return "`paging.next` must be null, a cursor string or a whole page number"


def mint_resolved(resolved: Any) -> list[Any]:
    """A validated copy of a `resolved` list; raises `ResultFactError` naming the fault."""
    problem = resolved_problem(resolved)
    if problem is not None:
        raise ResultFactError(problem)
    return copy.deepcopy(resolved)


def mint_paging(paging: Any) -> dict[str, Any]:
    """A validated copy of a `paging` object; raises `ResultFactError` naming the fault."""
    problem = paging_problem(paging)
    if problem is not None:
        raise ResultFactError(problem)
    return dict(paging)


def _fact(value: Any, key: str, own_shape: type[Any]) -> Any:
    """The fact itself: `value[key]` of an envelope, or `value` when it is the fact."""
    if type(value) is dict and key in value:
        return value[key]
    if type(value) is own_shape and not (own_shape is dict and "next" not in value):
        return value
    return UNDEFINED


def read_resolved(value: Any) -> list[Any] | None:
    """The `resolved` fact of an envelope (or the list itself), copied; None when absent or malformed."""
    fact = _fact(value, "resolved", list)
    if fact is UNDEFINED or resolved_problem(fact) is not None:
        return None
    return copy.deepcopy(fact)


def read_paging(value: Any) -> dict[str, Any] | None:
    """The `paging` fact of an envelope (or the object itself), copied; None when absent or malformed."""
    fact = _fact(value, "paging", dict)
    if fact is UNDEFINED or paging_problem(fact) is not None:
        return None
    return dict(fact)


def paging_next_text(paging: dict[str, Any]) -> str | None:
    """`paging.next` as text (the `paging_next` column): the cursor, or the page number."""
    nxt = paging.get("next")
    if nxt is None:
        return None
    return nxt if type(nxt) is str else js_number_to_string(nxt)

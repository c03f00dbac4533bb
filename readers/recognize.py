"""The strict recognizers: which library envelope (if any) a value is.

Pattern: pure recognizers, typed routes (docs/readers.md §1–§4).
Role:    asked by `readers.emptiness` (the door read off a value, tickets),
         `readers.evidence` (what an absence may ground) and the pipeline
         (`value_declares_*` columns). One rule, one owner: nobody else
         re-derives what an absence, a ledger or a ticket is.
Emits:   nothing; no I/O, no clock, no Beam.

| reader                    | answers                                                   |
|---------------------------|-----------------------------------------------------------|
| `parse_maybe_json`        | top-level JSON text parsed once (JS trim), else the value |
| `rows_at_problem`         | `'empty'` · `'nested'` · None for a declared rows key     |
| `read_absence`            | the `absent()` envelope itself, or UNDEFINED               |
| `read_coverage_ledger`    | the `coverage()` envelope itself, or UNDEFINED             |
| `is_artifact_ref`         | `art_` + exactly 22 ASCII letters/digits                   |
| `is_placed_tool_result`   | a placement ticket (`placed: true`, string ref and reason) |
| `is_truncated_tool_result`| a capped result (`truncated: true`, string reason)         |
| `declared_by_value`       | what the value's own envelope declares, or None            |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .jsonparse import JSONError, known_bad, parse_json, parse_json_kept
from .jsvalues import UNDEFINED, js_trim

__all__ = [
    "parse_maybe_json",
    "rows_at_problem",
    "read_absence",
    "read_coverage_ledger",
    "is_artifact_ref",
    "is_placed_tool_result",
    "is_truncated_tool_result",
    "declared_by_value",
    "ValueDeclaration",
]


def parse_maybe_json(value: Any) -> Any:
    """§1: a string whose JS-trimmed text opens with `{`/`[` and parses → the value.

    Anything else — a non-string, plain text, JSON text followed by a note —
    comes back unchanged (the ORIGINAL, untrimmed string).
    """
    return _maybe_json(value, parse_json)


def parse_maybe_json_for_reading(value: Any) -> Any:
    """`parse_maybe_json` for a reader that never hands the parsed value out.

    The value is kept for one later `leading_json_values` on the same text,
    which then need not parse it again (see `readers.jsonparse.take_parsed`).
    """
    return _maybe_json(value, parse_json_kept)


def _maybe_json(value: Any, parse: Callable[[str], Any]) -> Any:
    if type(value) is not str:
        return value
    trimmed = js_trim(value)
    if not trimmed or trimmed[0] not in "{[" or known_bad(trimmed):
        return value
    try:
        return parse(trimmed)
    except JSONError:
        return value


def rows_at_problem(rows_at: Any = UNDEFINED) -> str | None:
    """§2: `'empty'` for a non-string or empty key, `'nested'` for `/` or `.`."""
    if type(rows_at) is not str or rows_at == "":
        return "empty"
    if "/" in rows_at or "." in rows_at:
        return "nested"
    return None


def read_absence(value: Any) -> Any:
    """§3: the value itself when it is an `absent()` envelope, else UNDEFINED."""
    if type(value) is dict and value.get("af_absent", UNDEFINED) is True:
        checked = value.get("checked", UNDEFINED)
        if type(checked) is list and checked:
            return value
    return UNDEFINED


def read_coverage_ledger(value: Any) -> Any:
    """§3: the value itself when it is a `coverage()` envelope, else UNDEFINED."""
    if type(value) is dict and type(value.get("af_coverage", UNDEFINED)) is dict and "result" in value:
        return value
    return UNDEFINED


_ARTIFACT_REF = re.compile(r"art_[A-Za-z0-9]{22}", re.ASCII)


def is_artifact_ref(value: Any = UNDEFINED) -> bool:
    """§3: exactly `art_` + 22 ASCII letters or digits, the whole string."""
    return type(value) is str and _ARTIFACT_REF.fullmatch(value) is not None


def is_placed_tool_result(value: Any = UNDEFINED) -> bool:
    """§3: `placed` exactly true, `ref` and `reason` strings (any strings)."""
    return (
        type(value) is dict
        and value.get("placed", UNDEFINED) is True
        and type(value.get("ref", UNDEFINED)) is str
        and type(value.get("reason", UNDEFINED)) is str
    )


def is_truncated_tool_result(value: Any = UNDEFINED) -> bool:
    """§3: `truncated` exactly true and a string `reason`."""
    return (
        type(value) is dict
        and value.get("truncated", UNDEFINED) is True
        and type(value.get("reason", UNDEFINED)) is str
    )


@dataclass(frozen=True, slots=True)
class ValueDeclaration:
    """What a value's own envelope declares (`declaredByValue`)."""

    absent: bool
    bounded: bool
    gap: bool

    def to_upstream(self) -> dict[str, Any]:
        """The upstream JSON shape: `{absent, bounded, gap}`, in that order."""
        return {"absent": self.absent, "bounded": self.bounded, "gap": self.gap}


def _listed(holder: Any, key: str) -> bool:
    if type(holder) is not dict:
        return False
    v = holder.get(key, UNDEFINED)
    return type(v) is list and len(v) > 0


def declared_by_value(value: Any) -> ValueDeclaration | None:
    """§4: an absence (bare, or one level inside a ledger) and/or a ledger, with gaps."""
    data = parse_maybe_json_for_reading(value)
    ledger = read_coverage_ledger(data)
    absence = read_absence(data)
    if absence is UNDEFINED and ledger is not UNDEFINED:
        absence = read_absence(ledger["result"])
    if absence is UNDEFINED and ledger is UNDEFINED:
        return None
    marker = ledger["af_coverage"] if ledger is not UNDEFINED else None
    return ValueDeclaration(
        absent=absence is not UNDEFINED,
        bounded=ledger is not UNDEFINED,
        gap=(
            _listed(absence, "not_checked")
            or _listed(absence, "cannot_cover")
            or _listed(marker, "not_checked")
            or _listed(marker, "cannot_cover")
        ),
    )


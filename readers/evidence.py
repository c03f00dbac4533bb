"""How a served result reads as evidence: `read_result` and the absence projection.

Pattern: pure reader combining the served-JSON readers (docs/readers.md §8).
Role:    the one reading of a result's text that the evidence index and the
         declared-sources check share upstream (`evidenceIndex.ts ·
         readResult`); here it backs the conformance harness and the
         pipeline's served-text columns.
Emits:   nothing; no I/O, no clock, no Beam.

| step | text                                   | reading                              |
|------|----------------------------------------|--------------------------------------|
| 1    | JS-trimmed, not opening `{`/`[`        | `{text}` (the original content)      |
| 2    | one JSON value                         | `{parsed}` (through `as_evidence`)   |
| 3    | no leading value, JSON cut short       | `{parsed: leaves, tail?: words}`     |
| 3'   | no leading value, not JSON cut short   | `{text}`                             |
| 4    | leading values (+ a cut block)         | `{parsed, tail?}`, one element unwrapped |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .jsonparse import JSONError, parse_json
from .jsvalues import UNDEFINED, JSTypeError, js_trim
from .recognize import is_truncated_tool_result, read_absence, read_coverage_ledger
from .served_json import json_prefix_of, leading_json_values

__all__ = ["ResultReading", "read_result", "absence_evidence_projection", "as_evidence"]

_CALLER_ECHO = "looked_for"
_RECORD_ONLY = ("short", "kind")
_WIRE_LISTS = ("checked", "not_checked", "cannot_cover", "in_progress")


@dataclass(frozen=True, slots=True)
class ResultReading:
    """`readResult`: either `parsed` (+ `tail`) or `text`.

    `parsed` is UNDEFINED when the result reads as text.
    """

    parsed: Any = UNDEFINED
    text: str | None = None
    tail: str | None = None

    def to_upstream(self) -> dict[str, Any]:
        """The upstream JSON shape: `{parsed, tail?}` or `{text}`."""
        if self.parsed is UNDEFINED:
            return {"text": self.text}
        out: dict[str, Any] = {"parsed": self.parsed}
        if self.tail is not None:
            out["tail"] = self.tail
        return out


def _carries_record_only(item: Any) -> bool:
    return type(item) is dict and any(item.get(k) is not None for k in _RECORD_ONLY)


def _list_without_record_only(lst: Any) -> Any:
    if type(lst) is not list or not any(_carries_record_only(i) for i in lst):
        return lst
    return [
        {k: v for k, v in i.items() if not (k in _RECORD_ONLY and v is not None)}
        if _carries_record_only(i)
        else i
        for i in lst
    ]


def _lists_without_record_only(holder: dict[str, Any]) -> dict[str, Any]:
    """`holder` with record-only item keys stripped; the SAME object when none had one."""
    out: dict[str, Any] | None = None
    for key in _WIRE_LISTS:
        if key not in holder:
            continue
        lst = holder[key]
        kept = _list_without_record_only(lst)
        if kept is lst:
            continue
        if out is None:
            out = dict(holder)
        out[key] = kept
    return holder if out is None else out


def _tool_authored_only(absence: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _lists_without_record_only(absence).items() if k != _CALLER_ECHO}


def absence_evidence_projection(parsed: Any) -> Any:
    """What a parsed result may ground, or UNDEFINED when it carries no absence frame.

    A bare absence loses `looked_for` and its record-only item keys; a ledger
    around an absence becomes `[marker, absence]`; a bare ledger is returned
    (with its marker stripped) only when one of its items carried such a key.
    """
    absence = read_absence(parsed)
    if absence is not UNDEFINED:
        return _tool_authored_only(absence)
    covered = read_coverage_ledger(parsed)
    if covered is UNDEFINED:
        return UNDEFINED
    marker = _lists_without_record_only(covered["af_coverage"])
    inner = read_absence(covered["result"])
    if inner is UNDEFINED:
        if marker is covered["af_coverage"]:
            return UNDEFINED
        out = dict(covered)
        out["af_coverage"] = marker
        return out
    return [marker, _tool_authored_only(inner)]


def as_evidence(value: Any) -> Any:
    """One parsed value as evidence: absences projected, capped results opened."""
    projection = absence_evidence_projection(value)
    if projection is not UNDEFINED:
        return projection
    if is_truncated_tool_result(value) and type(value.get("head")) is str:
        head = read_result(value["head"])
        if head.parsed is UNDEFINED:
            return value
        out = [value, head.parsed]
        if head.tail is not None:
            out.append(head.tail)
        return out
    return value


def read_result(content: str) -> ResultReading:
    """Read a served result's text (upstream `evidenceIndex.ts · readResult`)."""
    if type(content) is not str:
        if content is None or content is UNDEFINED:
            what = "null" if content is None else "undefined"
            raise JSTypeError(f"Cannot read properties of {what} (reading 'trim')")
        raise JSTypeError("content.trim is not a function")
    trimmed = js_trim(content)
    if not trimmed or trimmed[0] not in "{[":
        return ResultReading(text=content)
    try:
        return ResultReading(parsed=as_evidence(parse_json(trimmed)))
    except JSONError:
        pass
    lead = leading_json_values(trimmed)
    if not lead.values:
        cut = json_prefix_of(trimmed)
        if cut is None:
            return ResultReading(text=content)
        return ResultReading(parsed=list(cut.leaves), tail=cut.words)
    cut = json_prefix_of(lead.rest) if lead.rest else None
    parsed = [as_evidence(v) for v in lead.values]
    if cut is not None:
        parsed.append(list(cut.leaves))
        tail = cut.words
    else:
        tail = lead.rest or None
    return ResultReading(parsed=parsed[0] if len(parsed) == 1 else parsed, tail=tail)

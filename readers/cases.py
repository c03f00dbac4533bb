"""Conformance harness: run reader cases, write the answers the reference would.

Pattern: a thin dispatcher from upstream reader names to ours.
Role:    `python -m footprint_audit.readers.cases < cases.jsonl > answers.jsonl`, and the
         conformance test (which runs the same `answer_line`).
Emits:   answer lines on stdout; nothing else.

Each input line is `{"case": {...}, ...}` (or the bare case object); blank
lines are skipped. Each output line is `{"result": X}`, `{"undefined": true}`
or `{"throws": {"name", "message"}}`, X in the upstream camelCase JSON shape
written the way `JSON.stringify` writes it. Case files are read with
JavaScript number semantics (every number a double).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, TextIO

from . import result_facts
from .emptiness import read_emptiness_js
from .evidence import absence_evidence_projection, read_result
from .jsonparse import parse_json
from .jsvalues import UNDEFINED, JSTypeError, js_deep_equal, to_js_json
from .recognize import (
    declared_by_value,
    is_artifact_ref,
    is_placed_tool_result,
    is_truncated_tool_result,
    parse_maybe_json,
    read_absence,
    read_coverage_ledger,
    rows_at_problem,
)
from .served_json import json_prefix_of, leading_json_values

__all__ = ["run_case", "answer_line", "main"]


def _value(case: dict[str, Any]) -> Any:
    return case.get("value", UNDEFINED)


def _text(case: dict[str, Any]) -> Any:
    if "text" in case:
        return case["text"]
    return case.get("value", UNDEFINED)


def _read_emptiness(case: dict[str, Any]) -> Any:
    context = case.get("context", UNDEFINED)
    kept_out: Callable[[Any], bool] | None = None
    if type(context) is dict and "keptOut" in context:
        placeholder = context["keptOut"]

        def kept_out(v: Any, _p: Any = placeholder) -> bool:
            return js_deep_equal(v, _p)

    return read_emptiness_js(_value(case), context, kept_out)


def _rows_at_problem(case: dict[str, Any]) -> Any:
    if "rowsAt" in case:
        return rows_at_problem(case["rowsAt"])
    return rows_at_problem(case.get("value", UNDEFINED))


def _or_undefined(v: Any) -> Any:
    return UNDEFINED if v is None else v


def _mint(fn: Callable[[Any], Any]) -> Callable[[dict[str, Any]], Any]:
    def run(case: dict[str, Any]) -> Any:
        try:
            return fn(_value(case))
        except result_facts.ResultFactError as exc:
            raise _Thrown("Error", str(exc)) from None

    return run


_READERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "readEmptiness": _read_emptiness,
    "declaredByValue": lambda c: _or_undefined(declared_by_value(_value(c))),
    "parseMaybeJson": lambda c: parse_maybe_json(_value(c)),
    "rowsAtProblem": lambda c: _or_undefined(_rows_at_problem(c)),
    "leadingJsonValues": lambda c: leading_json_values(_text(c)),
    "jsonPrefixOf": lambda c: _or_undefined(json_prefix_of(_text(c))),
    "readResult": lambda c: read_result(_text(c)),
    "readAbsence": lambda c: read_absence(_value(c)),
    "readCoverageLedger": lambda c: read_coverage_ledger(_value(c)),
    "isArtifactRef": lambda c: is_artifact_ref(_value(c)),
    "isPlacedToolResult": lambda c: is_placed_tool_result(_value(c)),
    "isTruncatedToolResult": lambda c: is_truncated_tool_result(_value(c)),
    "absenceEvidenceProjection": lambda c: absence_evidence_projection(_value(c)),
    "resolvedProblem": lambda c: _or_undefined(result_facts.resolved_problem(_value(c))),
    "pagingProblem": lambda c: _or_undefined(result_facts.paging_problem(_value(c))),
    "mintResolved": _mint(result_facts.mint_resolved),
    "mintPaging": _mint(result_facts.mint_paging),
    "readResolved": lambda c: _or_undefined(result_facts.read_resolved(_value(c))),
    "readPaging": lambda c: _or_undefined(result_facts.read_paging(_value(c))),
}


class _Thrown(Exception):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """One case → its answer object (`result` / `undefined` / `throws`)."""
    fn = case.get("fn")
    reader = _READERS.get(fn) if type(fn) is str else None
    try:
        if reader is None:
            raise _Thrown("Error", f"unknown reader: {fn!r}")
        result = reader(case)
    except _Thrown as exc:
        return {"throws": {"name": exc.name, "message": exc.message}}
    except JSTypeError as exc:
        return {"throws": {"name": "TypeError", "message": str(exc)}}
    if result is UNDEFINED:
        return {"undefined": True}
    return {"result": result}


def answer_line(line: str | bytes) -> str | None:
    """One input line → one answer line (None for a blank line)."""
    if not line.strip():
        return None
    doc = parse_json(line)
    case = doc["case"] if type(doc) is dict and type(doc.get("case")) is dict else doc
    return to_js_json(run_case(case))


def run_lines(lines: Iterable[str], out: TextIO) -> int:
    """Answer every case line; returns how many cases were answered."""
    n = 0
    write = out.write
    for line in lines:
        answer = answer_line(line)
        if answer is not None:
            write(answer)
            write("\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    """CLI: cases on stdin, answers on stdout."""
    stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    stdout = sys.stdout
    lines = (raw.decode("utf-8", "surrogatepass") if isinstance(raw, bytes) else raw for raw in stdin)
    try:
        run_lines(lines, stdout)
    except BrokenPipeError:  # pragma: no cover - reader of our output went away
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

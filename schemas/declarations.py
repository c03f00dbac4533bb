"""The app's declarations file (docs/output.md §6): which key of a tool's result holds its rows.

Pattern: a validator that names the key and the rule it breaks.
Role:    read once, before any input, by `pipelines.reassess.command` and
         `pipelines.stream.command`; the readers get each tool's `rowsAt` from here,
         never from events.
Emits:   nothing (reads the file it is handed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from footprint_audit.readers import parse_json, rows_at_problem
from footprint_audit.readers.jsonparse import JSONError

ALLOWED_TOP_KEYS = ("id", "version", "skills", "tools", "routing")
ALLOWED_TOOL_KEYS = ("rowsAt",)


class DeclarationsError(ValueError):
    """A declarations file that breaks a rule; the message names the key and the rule."""


@dataclass(frozen=True)
class Declarations:
    """Validated declarations: `rows_at[toolName]` is the tool's rows key."""

    rows_at: dict[str, str] = field(default_factory=dict)
    source: str | None = None
    #: The attribute value length limit the tracer ran with (`--trace-value-limit`): a trace's text
    #: value this long reads as maybe cut by the recorder (docs/traces.md).
    trace_value_limit: int | None = None

    def rows_at_for(self, tool_name: str | None) -> str | None:
        """The declared rows key of a tool, or None."""
        if tool_name is None:
            return None
        return self.rows_at.get(tool_name)

    def canonical(self) -> str:
        """What decides a reading (`{tool: rowsAt}`, with a trace value limit `{"tools": …, "traceValueLimit": N}`)
        as JSON with sorted keys: the manifest's `declarations`."""
        decides: dict[str, Any] = self.rows_at
        if self.trace_value_limit is not None:
            decides = {"tools": self.rows_at, "traceValueLimit": self.trace_value_limit}
        return json.dumps(decides, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    @cached_property
    def sha256(self) -> str | None:
        """The sha256 of `canonical()` (a file's layout, order and other keys do not change it), as
        `readings.declarations_sha256` and a stream's checkpoint record it; None: nothing declared."""
        if self.source is None and self.trace_value_limit is None:
            return None
        return hashlib.sha256(self.canonical().encode("utf-8", "surrogatepass")).hexdigest()


def validate_declarations(doc: Any, where: str = "declarations") -> Declarations:
    """Check a parsed declarations document; raise `DeclarationsError` naming the fault."""
    if type(doc) is not dict:
        raise DeclarationsError(f"{where}: the file must hold one JSON object, like {{\"tools\": {{...}}}}")
    for key in doc:
        if key not in ALLOWED_TOP_KEYS:
            raise DeclarationsError(
                f"{where}: unknown top-level key '{key}' (allowed: {', '.join(ALLOWED_TOP_KEYS)})"
            )
    tools = doc.get("tools", {})
    if type(tools) is not dict:
        raise DeclarationsError(f"{where}: 'tools' must be an object of tool name → {{\"rowsAt\": key}}")
    rows_at: dict[str, str] = {}
    for name, entry in tools.items():
        at = f"{where}: tools['{name}']"
        if type(entry) is not dict:
            raise DeclarationsError(f"{at} must be an object like {{\"rowsAt\": \"rows\"}}")
        for key in entry:
            if key not in ALLOWED_TOOL_KEYS:
                raise DeclarationsError(f"{at} has an unknown key '{key}' (a tool entry may hold only 'rowsAt')")
        if "rowsAt" not in entry:
            continue
        problem = rows_at_problem(entry["rowsAt"])
        if problem == "empty":
            raise DeclarationsError(f"{at}.rowsAt must be a non-empty string (the top-level key that holds the rows)")
        if problem == "nested":
            raise DeclarationsError(
                f"{at}.rowsAt is {entry['rowsAt']!r}: it must be a top-level key, without '/' or '.'"
            )
        rows_at[name] = entry["rowsAt"]
    return Declarations(rows_at=rows_at, source=where)


def load_declarations(path: str | None, trace_value_limit: int | None = None) -> Declarations:
    """Read and validate a declarations file; no path gives empty declarations. `trace_value_limit`:
    the `--trace-value-limit` named with them."""
    if trace_value_limit is not None:
        return replace(load_declarations(path), trace_value_limit=trace_value_limit)
    if not path:
        return Declarations()
    p = Path(path)
    if not p.exists():
        raise DeclarationsError(f"{path}: no such declarations file")
    if p.is_dir():
        raise DeclarationsError(f"{path}: is a directory, not a declarations file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DeclarationsError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        doc = parse_json(data)
    except JSONError as exc:
        raise DeclarationsError(f"{path}: not valid JSON ({exc})") from None
    return validate_declarations(doc, str(path))

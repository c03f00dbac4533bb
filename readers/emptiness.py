"""The emptiness reader: did a finished tool call come back empty, and who says so.

Pattern: pure reader, typed routes, first match wins (docs/readers.md §5).
Role:    the ONE reader of what came back. The pipeline's `apply_readers` step
         asks it twice per call — with the door the record holds, and without
         one (the standing fold's view) — and nobody re-derives a route.
Emits:   nothing; no I/O, no clock, no Beam.

| # | route                      | reading                                             |
|---|----------------------------|-----------------------------------------------------|
| 1 | door absent (JS-truthy)    | `declared-absent` (+ `bounded` when the door is)    |
| 2 | door described             | `non-empty` per kind (facts, series, edges) · `clarify` |
| 3 | door bounded + a ledger    | read its `result` through (≤ 8 levels); empty → `declared-absent` |
| 4 | a list                     | counted by the library                              |
| 5 | kept out (whole value)     | `unknown`, `rowsUnread: redacted`                   |
| 6 | not a record               | `unknown`                                           |
| 7 | a placement ticket         | `unknown`, `rowsUnread: uncounted-ticket`           |
| 8 | no rowsAt                  | `unknown`, `undeclaredShape`                        |
| 9 | `value[rowsAt]` a list     | counted by the app                                  |
|10 | `value[rowsAt]` kept out   | `unknown`, `rowsUnread: redacted`                   |
|11 | a dataset ticket           | its whole-number `rows` counted, else `uncounted-ticket` |
|12 | nothing to count           | `unknown`, `rowsUnread: no-list`                    |
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .jsvalues import (
    UNDEFINED,
    JSTypeError,
    is_js_number,
    is_safe_integer,
    js_property_key,
    js_strict_equal,
    js_truthy,
)
from .recognize import (
    declared_by_value,
    is_artifact_ref,
    is_placed_tool_result,
    parse_maybe_json_for_reading,
    read_coverage_ledger,
)

__all__ = ["EmptinessReading", "read_emptiness", "read_emptiness_js", "MAX_BOUND_DEPTH"]

#: How many nested boundaries are read through before the reading gives up.
MAX_BOUND_DEPTH = 8

_KINDS = ("facts", "series", "edges")

# Upstream camelCase key → our snake_case field.
_FIELDS = {
    "emptiness": "emptiness",
    "rows": "rows",
    "source": "source",
    "rowsAt": "rows_at",
    "countedAt": "counted_at",
    "described": "described",
    "undeclaredShape": "undeclared_shape",
    "rowsUnread": "rows_unread",
    "bounded": "bounded",
}


class EmptinessReading(NamedTuple):
    """One reading of a tool result (upstream `EmptinessReading`): a frozen, typed value.

    `rows` is the JS count (an int); `counted_at` the path segments where it
    was taken; `described` the per-kind counts of a described result as
    `(kind, count)` pairs in upstream order; `key_order` the upstream key
    order of this route (docs/readers.md §5a), used only by `to_upstream`.
    """

    emptiness: str
    undeclared_shape: bool
    rows: int | None = None
    source: str | None = None
    rows_at: Any = None
    counted_at: tuple[Any, ...] | None = None
    described: tuple[Any, ...] | None = None
    rows_unread: str | None = None
    bounded: bool = False
    key_order: tuple[Any, ...] = ()

    def described_count(self, kind: str) -> int | None:
        """The count of one described kind (`facts`, `series`, `edges`), or None."""
        for k, n in self.described or ():
            if k == kind:
                return n
        return None

    def to_upstream(self) -> dict[str, Any]:
        """The upstream JSON shape, camelCase, in the route's own key order."""
        out: dict[str, Any] = {}
        for key in self.key_order:
            v = getattr(self, _FIELDS[key])
            if key == "countedAt":
                v = list(v)
            elif key == "described":
                v = dict(v)
            out[key] = v
        return out

    @classmethod
    def from_upstream(cls, shape: dict[str, Any]) -> "EmptinessReading":
        """Build a reading from the upstream dict shape (keeps its key order)."""
        get = shape.get
        counted = get("countedAt")
        described = get("described")
        return cls(
            shape["emptiness"],
            shape["undeclaredShape"],
            get("rows"),
            get("source"),
            get("rowsAt"),
            None if counted is None else tuple(counted),
            None if described is None else tuple(described.items()),
            get("rowsUnread"),
            get("bounded", False),
            tuple(shape),
        )


def _counted(n: Any, source: str, at: list[Any], rows_at: Any = UNDEFINED) -> dict[str, Any]:
    if is_js_number(n) and n == 0:
        n = 0  # -0 is written 0
    elif type(n) is float:
        n = int(n)
    out: dict[str, Any] = {"emptiness": "undeclared-empty" if n == 0 else "non-empty", "rows": n, "source": source}
    if rows_at is not UNDEFINED:
        out["rowsAt"] = rows_at
    out["countedAt"] = at
    out["undeclaredShape"] = False
    return out


def _kept_out(kept_out: Callable[[Any], Any] | None, value: Any) -> bool:
    return kept_out is not None and kept_out(value) is True


def _ticket_for(data: dict[str, Any], rows_at: Any, key: str) -> tuple[dict[str, Any], list[Any]] | None:
    every = data.get("datasets", UNDEFINED)
    if type(every) is dict and key in every:
        ticket = every[key]
        if type(ticket) is dict and is_artifact_ref(ticket.get("ref", UNDEFINED)):
            source_field = ticket.get("sourceField", UNDEFINED)
            if source_field is UNDEFINED or js_strict_equal(source_field, rows_at):
                return ticket, ["datasets", rows_at]
    principal = data.get("dataset", UNDEFINED)
    if (
        type(principal) is dict
        and is_artifact_ref(principal.get("ref", UNDEFINED))
        and js_strict_equal(principal.get("sourceField", UNDEFINED), rows_at)
    ):
        return principal, ["dataset"]
    return None


def _rowset(data: Any, rows_at: Any, kept_out: Callable[[Any], Any] | None) -> dict[str, Any]:
    if type(data) is list:
        return _counted(len(data), "library", [])
    if _kept_out(kept_out, data):
        return {"emptiness": "unknown", "undeclaredShape": False, "rowsUnread": "redacted"}
    if type(data) is not dict:
        return {"emptiness": "unknown", "undeclaredShape": False}
    if is_placed_tool_result(data):
        return {"emptiness": "unknown", "undeclaredShape": False, "rowsUnread": "uncounted-ticket"}
    if rows_at is UNDEFINED:
        return {"emptiness": "unknown", "undeclaredShape": True}
    key = rows_at if type(rows_at) is str else js_property_key(rows_at)
    rows = data.get(key, UNDEFINED)  # own keys only: a dict has no prototype
    if type(rows) is list:
        return _counted(len(rows), "app", [rows_at], rows_at)
    if rows is not UNDEFINED and _kept_out(kept_out, rows):
        return {"emptiness": "unknown", "rowsAt": rows_at, "undeclaredShape": False, "rowsUnread": "redacted"}
    found = _ticket_for(data, rows_at, key) if rows is UNDEFINED else None
    if found is None:
        return {"emptiness": "unknown", "rowsAt": rows_at, "undeclaredShape": False, "rowsUnread": "no-list"}
    ticket, at = found
    n = ticket.get("rows", UNDEFINED)
    if is_safe_integer(n) and n >= 0:
        return _counted(n, "app", at + ["rows"], rows_at)
    return {"emptiness": "unknown", "undeclaredShape": False, "rowsUnread": "uncounted-ticket", "rowsAt": rows_at}


def _described(envelope: Any) -> dict[str, Any] | None:
    if type(envelope) is not dict:
        return None
    counts: dict[str, Any] = {}
    for kind in _KINDS:
        lst = envelope.get(kind, UNDEFINED)
        if type(lst) is list and lst:
            counts[kind] = len(lst)
    if counts:
        return {"emptiness": "non-empty", "source": "library", "described": counts, "undeclaredShape": False}
    if type(envelope.get("clarify", UNDEFINED)) is dict:
        return {"emptiness": "clarify", "undeclaredShape": False}
    return None


def _bounded(data: Any, door_bounded: bool, rows_at: Any, kept_out: Callable[[Any], Any] | None) -> dict[str, Any]:
    # Iterative: find how deep the vouched-for ledgers go, read the innermost
    # value, then re-shape outward (docs/readers.md §5 step 5).
    depth = 0
    while True:
        covered = read_coverage_ledger(data) if door_bounded else UNDEFINED
        if covered is UNDEFINED:
            read = _rowset(data, rows_at, kept_out)
            break
        if depth >= MAX_BOUND_DEPTH:
            read = {"emptiness": "unknown", "undeclaredShape": False}
            break
        data = covered["result"]
        depth += 1
    for _ in range(depth):
        if "countedAt" in read:
            read["countedAt"] = ["result", *read["countedAt"]]
        if read["emptiness"] == "undeclared-empty":
            del read["undeclaredShape"]
            read["emptiness"] = "declared-absent"
            read["bounded"] = True
            read["undeclaredShape"] = False
        else:
            read["bounded"] = True
    return read


def _door_field(door: Any, name: str) -> Any:
    if type(door) is dict:
        return door.get(name, UNDEFINED)
    return UNDEFINED


def _read(value: Any, rows_at: Any, door: Any, kept_out: Callable[[Any], Any] | None) -> dict[str, Any]:
    data = parse_maybe_json_for_reading(value)
    if door is None or door is UNDEFINED:
        own = declared_by_value(data)
        door = {"absent": own is not None and own.absent, "bounded": own is not None and own.bounded}
    door_bounded = js_truthy(_door_field(door, "bounded"))
    if js_truthy(_door_field(door, "absent")):
        if door_bounded:
            return {"emptiness": "declared-absent", "undeclaredShape": False, "bounded": True}
        return {"emptiness": "declared-absent", "undeclaredShape": False}
    described = _door_field(door, "described")
    if described is not UNDEFINED:
        read = _described(described)
        if read is not None:
            return read
    return _bounded(data, door_bounded, rows_at, kept_out)


def read_emptiness(
    value: Any,
    rows_at: Any = None,
    door: Any = None,
    kept_out: Callable[[Any], Any] | None = None,
) -> EmptinessReading:
    """Read one finished tool result (upstream `readEmptiness`).

    `value` is what the model read (JSON text is parsed once, at the top);
    `rows_at` the app's declared rows key (None: not declared); `door` the
    `{absent, bounded, described?}` the record holds for the call (None: no
    door, read it off the value); `kept_out` the redaction-placeholder test,
    given only for a record served under a policy.
    """
    shape = _read(value, UNDEFINED if rows_at is None else rows_at, door, kept_out)
    return EmptinessReading.from_upstream(shape)


def read_emptiness_js(value: Any = UNDEFINED, context: Any = UNDEFINED, kept_out: Callable[[Any], Any] | None = None) -> EmptinessReading:
    """`readEmptiness(value, context)` with JS argument semantics (for conformance).

    `context` is the JS context object: UNDEFINED → `{}`, `None` (null) → the
    TypeError JS throws; `rowsAt` and `door` are read as properties, so a
    `rowsAt: null` is a key named "null" and a `door: null` is no door.
    """
    if context is UNDEFINED:
        context = {}
    if context is None:
        raise JSTypeError("Cannot read properties of null (reading 'door')")
    door = _door_field(context, "door")
    rows_at = _door_field(context, "rowsAt")
    shape = _read(value, rows_at, door, kept_out)
    return EmptinessReading.from_upstream(shape)

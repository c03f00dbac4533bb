"""Calls seen only in committed state: the snapshot's history tool messages (docs/events.md §4.2–§4.3).

Pattern: pure functions over a recording's snapshot.
Role:    `transforms.calls.from_events.join_run` adds these calls to a run's calls from events;
         their door comes from `coverageDeclared` rows, or from the value when none exists.
"""

from __future__ import annotations

from typing import Any

from footprint_audit.readers import UNDEFINED
from footprint_audit.readers.jsvalues import is_js_number
from footprint_audit.schemas.events import RunInput

from .call_types import DOOR_COMMITTED, DOOR_VALUE, Call, int_or_none, is_placeholder, str_or_none

__all__ = [
    "committed_state_calls",
    "history_tool_names",
    "tool_bytes_of",
]

def _history_messages(snapshot: dict | None) -> list[dict]:
    """Tool messages of the committed history after the last person message (both states)."""
    if type(snapshot) is not dict:
        return []
    out: list[dict] = []
    for holder_key in ("initialState", "sharedState"):
        state = snapshot.get(holder_key)
        if type(state) is not dict:
            continue
        history = state.get("history")
        if type(history) is not list:
            continue
        last_person = max((i for i, msg in enumerate(history) if type(msg) is dict and msg.get("role") == "user"), default=-1)
        out += [msg for msg in history[last_person + 1 :] if type(msg) is dict and msg.get("role") == "tool"]
    return out


def history_tool_names(snapshot: dict | None) -> dict[str, str]:
    """Tool call id → tool name, from the tool messages of the snapshot's `history` (`sharedState` first; first name wins)."""
    names: dict[str, str] = {}
    if type(snapshot) is not dict:
        return names
    for holder_key in ("sharedState", "initialState"):
        state = snapshot.get(holder_key)
        history = state.get("history") if type(state) is dict else None
        if type(history) is not list:
            continue
        for msg in history:
            if type(msg) is dict and msg.get("role") == "tool":
                cid, name = msg.get("toolCallId"), msg.get("toolName")
                if type(cid) is str and type(name) is str and cid not in names:
                    names[cid] = name
    return names


def _utf16_prefix(text: str, units: int) -> str:
    """`text.slice(0, units)` counted in UTF-16 code units, as JS counts."""
    if units >= len(text) * 2 or text.isascii():
        return text[:units]
    raw = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    return raw.decode("utf-16-le", "surrogatepass")


def tool_bytes_of(message: dict) -> Any:
    """`toolBytesOf`: the served content up to `toolChars` (the tool's own bytes)."""
    content = message.get("content", UNDEFINED)
    chars = message.get("toolChars")
    if type(content) is str and is_js_number(chars) and chars >= 0 and float(chars).is_integer():
        return _utf16_prefix(content, int(chars))
    return content


def committed_state_calls(run: RunInput, event_call_ids: set[str]) -> list[Call]:
    """Calls seen only in committed state (docs/events.md §4.2–§4.3)."""
    snapshot = run.snapshot
    messages = _history_messages(snapshot)
    if not messages:
        return []
    rows_by_id: dict[str, list[dict]] = {}
    state = snapshot.get("sharedState") if type(snapshot) is dict else None
    for holder in (state, snapshot.get("initialState") if type(snapshot) is dict else None):
        rows = holder.get("coverageDeclared") if type(holder) is dict else None
        if type(rows) is list:
            for row in rows:
                if type(row) is dict and type(row.get("toolCallId")) is str:
                    rows_by_id.setdefault(row["toolCallId"], []).append(row)
    calls: list[Call] = []
    seen: set[str] = set()
    run_id = run.run_id or f"file:{run.source_file.rsplit('/', 1)[-1]}"
    for msg in messages:
        cid = msg.get("toolCallId")
        if type(cid) is not str or is_placeholder(cid) or cid in event_call_ids or cid in seen:
            continue
        seen.add(cid)
        rows = rows_by_id.get(cid, [])
        door = None
        if rows:
            door = {
                "absent": any(r.get("kind") == "absence" for r in rows),
                "bounded": any(r.get("kind") == "ledger" for r in rows),
            }
        iteration = next((n for r in rows if (n := int_or_none(r.get("iteration"))) is not None), None)
        calls.append(
            Call(
                run_id=run_id,
                tool_call_id=cid,
                occurrence=1,
                source_file=run.source_file,
                session_id=run.session_id,
                tool_name=str_or_none(msg.get("toolName")),
                iteration=iteration,
                outcome="ran",
                door_from=DOOR_COMMITTED if rows else DOOR_VALUE,
                door_absent=bool(door and door["absent"]),
                door_bounded=bool(door and door["bounded"]),
                history_value=tool_bytes_of(msg),
                committed_door=door,
                served_under_policy=run.served_under_policy,
            )
        )
    return calls

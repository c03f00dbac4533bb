"""A call's outcome, first match wins (docs/output.md §2 step 4, docs/events.md §4.1).

Pattern: pure functions over one occurrence's decision events.
Role:    `transforms.calls.from_events._build_call` collects the decisions (`Decisions.take`) in its
         one pass over an occurrence's events and asks `outcome()` for `(outcome, withheld_by)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from footprint_audit.schemas.events import CHECKIN_DECISION, MIDDLEWARE_DECISION, PERMISSION_CHECK, Event

from .call_types import Call, RunFacts, is_placeholder, str_or_none

__all__ = [
    "Decisions",
    "outcome",
]

def _between(ev_file: str, index: int, call: Call) -> bool:
    start, end = call.start, call.end
    if start is None or end is None:
        return False
    start_file = call.events[0][0] if call.events else ""
    if ev_file != start_file or ev_file != call.end_file:
        return False
    return start.index < index < end.index


def _within_call(ev_file: str, index: int, call: Call) -> bool:
    """Between the call's start and end (docs/output.md §2 step 4); with no order (several files), any."""
    if call.start is None or call.end is None:
        return False
    start_file = call.events[0][0]
    if start_file != call.end_file:
        return True
    return ev_file != start_file or call.start.index < index < call.end.index


@dataclass(slots=True)
class Decisions:
    """The decision events of one occurrence, as the outcome rules read them (one pass, `_build_call`)."""

    #: a `checkin.decision` with `approved: false`
    declined: bool = False
    #: a `middleware.decision` denying `before-tool`
    before_deny: bool = False
    #: the `middleware` of the first `after-tool` deny (a string, else None)
    after_deny: str | None = None
    after_seen: bool = False
    #: `permission.check`s with the call id whose result is `deny` or `halt`: (source_file, Event)
    denials: list = field(default_factory=list)

    def take(self, f: str, ev: Event) -> None:
        """One event of the occurrence: kept where it is a decision the rules read."""
        t, p = ev.type, ev.payload
        if t == CHECKIN_DECISION:
            self.declined |= p.get("approved") is False
        elif t == MIDDLEWARE_DECISION and p.get("outcome") == "deny":
            moment = p.get("moment")
            if moment == "before-tool":
                self.before_deny = True
            elif moment == "after-tool" and not self.after_seen:
                self.after_seen = True
                self.after_deny = str_or_none(p.get("middleware"))
        elif t == PERMISSION_CHECK and p.get("result") in ("deny", "halt"):
            self.denials.append((f, ev))


def _not_known(start_p: dict, end_p: dict) -> str | None:
    """A placeholder where the outcome's fields are (`unknown`), or a call never dispatched."""
    if is_placeholder(start_p.get("notDispatched")) or any(
            is_placeholder(end_p.get(key)) for key in ("notDispatched", "notExecuted", "error")):
        return "unknown"
    if end_p.get("notDispatched") is not None or start_p.get("notDispatched") is not None:
        return "not-dispatched"
    return None


def _denied_by_permission(call: Call, facts: RunFacts, seen: Decisions) -> bool:
    """A `deny` / `halt` permission check of the call's tool, with its id or (loose) between its brackets."""
    name = call.tool_name
    if name is None:
        return False
    return any(ev.payload.get("target") == name and _within_call(f, ev.index, call) for f, ev in seen.denials) or any(
        result in ("deny", "halt") and target == name and _between(f, index, call)
        for f, index, target, result in facts.loose_permission_checks)


def outcome(call: Call, facts: RunFacts, seen: Decisions) -> tuple[str, str | None]:
    """Step 4: the outcome, first match wins; `seen` holds the occurrence's decision events."""
    end = call.end
    end_p = end.payload if end is not None else {}
    start_p = call.start.payload if call.start is not None else {}
    not_known = _not_known(start_p, end_p)
    if not_known is not None:
        return not_known, None
    if seen.declined:
        return "declined", None
    if seen.before_deny:
        paused = call.start is None or (facts.paused_call_id == call.tool_call_id)
        return ("declined" if facts.resumed_leg and paused else "refused"), None
    if _denied_by_permission(call, facts, seen) or end_p.get("notExecuted") is True:
        return "refused", None
    if end_p.get("error") is True:
        return "failed", None
    if end is None:
        return "unknown", None
    return "ran", seen.after_deny

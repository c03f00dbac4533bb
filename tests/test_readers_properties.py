"""Property tests of `readers/` with hypothesis: random values, random cuts, random notes.

Role: the conformance files hold fixed cases; these tests draw new ones. They
check that the readers never raise on any JSON value or any text (with and
without a door, `rows_at` and `kept_out`), and the structural laws of the
served-JSON readers:

* every non-empty proper prefix of a serialized object/array reads as JSON cut
  short (`json_prefix_of` is not None), and its leaves are a prefix of the
  leaves of the whole value;
* `leading_json_values(serialized + ' note')` gives exactly `[value]` (compared
  with JS semantics, i.e. as `to_js_json` text: numbers as doubles, integer-like
  keys first) and `rest == 'note'`; framework notes after one or more values
  are the `rest`;
* a list value is counted with `rows == len(value)`, as a value and as text;
  a container read as JSON text reads as the container itself.

Example counts are kept moderate (`max_examples=200`) and `deadline=None`, so
the suite stays fast and is not flaky on a loaded machine.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from footprint_audit.readers import (
    UNDEFINED,
    EmptinessReading,
    JsonPrefix,
    LeadingJson,
    ResultReading,
    declared_by_value,
    json_prefix_of,
    leading_json_values,
    parse_maybe_json,
    read_emptiness,
    read_result,
    rows_at_problem,
    to_js_json,
)
from footprint_audit.readers.jsvalues import js_number_to_string

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REF = "art_AbCdEfGhIjKlMnOpQrStUv"

# ---------------------------------------------------------------------------
# strategies

# Characters that matter to the readers: quotes, backslashes, brackets, the four
# JSON spaces and the ones that are not (NBSP, BOM, U+2028, \v), NEL, astral.
_TRICKY = '"\\{}[],: \t\n\r\v\f\u00a0\ufeff\u2028\u2029\u0085\u3000\x00\x1f\x7fé😀\uff11'
_chars = st.one_of(
    st.sampled_from(_TRICKY),
    st.characters(blacklist_categories=("Cs",)),  # orjson refuses surrogates
)
texts = st.text(_chars, max_size=24)
keys = st.one_of(
    texts,
    st.sampled_from(["rows", "result", "0", "1", "10", "01", "-1", "__proto__", "af_absent", "checked"]),
)

# Numbers orjson can write: 64-bit integers and finite doubles, with the odd ones.
numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, -0.0, 2**53 - 1, 2**53, 2**53 + 1, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 0.1, 2.0]),
    st.floats(allow_nan=False, allow_infinity=False),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(keys, children, max_size=6),
    ),
    max_leaves=16,
)
containers = st.one_of(
    st.lists(json_values, max_size=6),
    st.dictionaries(keys, json_values, max_size=6),
)


@st.composite
def envelopes(draw: Any) -> Any:
    """Library envelopes around random data: absences, ledgers, tickets, rowsets."""
    inner = draw(json_values)
    kind = draw(st.sampled_from(["absent", "ledger", "ledger-absent", "ticket", "placed", "rows", "nested"]))
    if kind == "absent":
        return {"af_absent": True, "checked": draw(st.lists(json_values, min_size=1, max_size=3)),
                "not_checked": draw(st.one_of(st.just([]), st.lists(texts, max_size=2)))}
    if kind == "ledger":
        return {"af_coverage": {"checked": [{"what": "c"}], "cannot_cover": draw(st.lists(texts, max_size=2))},
                "result": inner}
    if kind == "ledger-absent":
        return {"af_coverage": {}, "result": {"af_absent": True, "checked": ["x"]}}
    if kind == "ticket":
        rows = draw(st.one_of(numbers, st.none(), texts, st.booleans()))
        return {"datasets": {"rows": {"ref": REF, "rows": rows, "sourceField": draw(st.sampled_from(["rows", None, "x"]))}}}
    if kind == "placed":
        return {"placed": True, "ref": REF, "reason": "big", "bytes": 10_000}
    if kind == "rows":
        return {"rows": draw(st.lists(json_values, max_size=5)), "total": inner}
    depth = draw(st.integers(min_value=0, max_value=11))
    value: Any = draw(st.lists(json_values, max_size=3))
    for _ in range(depth):
        value = {"af_coverage": {}, "result": value}
    return value


any_values = st.one_of(json_values, envelopes())
doors = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"absent": st.one_of(st.booleans(), json_values), "bounded": st.one_of(st.booleans(), json_values)},
        optional={"described": json_values},
    ),
    json_values,
)
rows_ats = st.one_of(st.none(), st.sampled_from(["rows", "result", "__proto__", "a.b"]), texts)
notes = st.one_of(
    st.sampled_from(
        [
            "[identical call: search_hosts({\"q\":\"x\"}) returned this already]",
            "[step 2 of 3: lookups]",
            "note: cached",
            "(truncated at 4,000 characters)",
            "[INFO] done",
        ]
    ),
    texts,
)


def serialize(value: Any) -> str:
    """The JSON text the model would read (orjson: compact, raw unicode)."""
    return orjson.dumps(value).decode("utf-8")


def js(value: Any) -> str:
    """A value as JS would write it: the comparison key with JS semantics."""
    return to_js_json(value)


def leaves_of(value: Any) -> list[str]:
    """Every leaf `json_prefix_of` would list for the whole value, in text order."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            items: list = []
            for k, item in v.items():
                items.append(("key", k))
                items.append(item)
            stack.extend(reversed(items))
        elif type(v) is list:
            stack.extend(reversed(v))
        elif type(v) is tuple:
            out.append(v[1])
        elif type(v) is str:
            out.append(v)
        elif v is True or v is False:
            out.append("true" if v else "false")
        elif type(v) in (int, float):
            out.append(js_number_to_string(float(v)))
    return out


# ---------------------------------------------------------------------------
# the readers never raise


@SETTINGS
@given(value=any_values, door=doors, rows_at=rows_ats, as_text=st.booleans(), note=st.one_of(st.none(), notes))
def test_read_emptiness_never_raises(value: Any, door: Any, rows_at: Any, as_text: bool, note: str | None) -> None:
    if as_text:
        value = serialize(value) + ("" if note is None else "\n\n" + note)
    placeholder = "[redacted]"
    for kwargs in ({}, {"door": door}, {"rows_at": rows_at}, {"door": door, "rows_at": rows_at},
                   {"rows_at": rows_at, "kept_out": lambda v: v == placeholder}):
        r = read_emptiness(value, **kwargs)
        assert isinstance(r, EmptinessReading)
        assert r.emptiness in {"declared-absent", "undeclared-empty", "non-empty", "clarify", "unknown"}
        shape = r.to_upstream()
        assert list(shape)[0] == "emptiness" and "undeclaredShape" in shape
        if r.rows is not None:
            assert type(r.rows) is int and r.rows >= 0
            assert (r.rows == 0) == (r.emptiness in {"undeclared-empty", "declared-absent"})
        js(shape)


@SETTINGS
@given(value=any_values, as_text=st.booleans())
def test_declared_by_value_never_raises(value: Any, as_text: bool) -> None:
    d = declared_by_value(serialize(value) if as_text else value)
    if d is not None:
        assert d.absent or d.bounded
        assert js(d.to_upstream())
    parse_maybe_json(value)
    assert rows_at_problem(value) in {None, "empty", "nested"}


@SETTINGS
@given(text=st.one_of(texts, st.text(max_size=200)))
def test_text_readers_never_raise_on_any_text(text: str) -> None:
    lead = leading_json_values(text)
    assert isinstance(lead, LeadingJson) and text.endswith(lead.rest)
    prefix = json_prefix_of(text)
    assert prefix is None or isinstance(prefix, JsonPrefix)
    reading = read_result(text)
    assert isinstance(reading, ResultReading)
    js(reading.to_upstream())


@SETTINGS
@given(value=any_values, data=st.data(), note=st.one_of(st.none(), notes))
def test_text_readers_never_raise_on_cut_json(value: Any, data: st.DataObject, note: str | None) -> None:
    text = serialize(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)), label="cut")
    text = text[:cut] + ("" if note is None else data.draw(st.sampled_from(["", " ", "\n\n"])) + note)
    lead = leading_json_values(text)
    assert text.endswith(lead.rest)
    prefix = json_prefix_of(text)
    if prefix is not None:
        js(prefix.to_upstream())
    js(read_result(text).to_upstream())
    read_emptiness(text)
    read_emptiness(text, rows_at="rows", door={"absent": False, "bounded": True})
    declared_by_value(text)


# ---------------------------------------------------------------------------
# json_prefix_of: JSON cut short reads


@SETTINGS
@given(value=containers, data=st.data())
def test_every_proper_prefix_reads(value: Any, data: st.DataObject) -> None:
    text = serialize(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1), label="cut") if len(text) > 1 else None
    if cut is None:
        return
    prefix = json_prefix_of(text[:cut])
    assert prefix is not None, text[:cut]
    whole = leaves_of(value)
    assert list(prefix.leaves) == whole[: len(prefix.leaves)]


@SETTINGS
@given(value=containers, data=st.data())
def test_prefix_cut_between_tokens_reads_its_complete_leaves(value: Any, data: st.DataObject) -> None:
    text = serialize(value)
    # Cut points between tokens: right after a structural character outside strings.
    points: list[int] = []
    in_string = escaped = False
    for i, ch in enumerate(text[:-1]):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                points.append(i + 1)
        elif ch == '"':
            in_string = True
        elif ch in "{}[],:":
            points.append(i + 1)
    if not points:
        return
    cut = data.draw(st.sampled_from(points), label="cut")
    prefix = json_prefix_of(text[:cut])
    assert prefix is not None, text[:cut]
    assert prefix.words is None
    whole = leaves_of(value)
    assert list(prefix.leaves) == whole[: len(prefix.leaves)]
    # with JSON space after the cut, the same
    assert json_prefix_of(text[:cut] + " \n") == prefix


@SETTINGS
@given(value=containers)
def test_whole_value_is_not_cut_short(value: Any) -> None:
    assert json_prefix_of(serialize(value)) is None
    assert json_prefix_of(serialize(value)[:-1] + " ") is not None


# ---------------------------------------------------------------------------
# leading_json_values: the values a text opens with, and the note after them


@SETTINGS
@given(value=containers)
def test_leading_value_then_note(value: Any) -> None:
    lead = leading_json_values(serialize(value) + " note")
    assert len(lead.values) == 1
    assert js(list(lead.values)) == js([value])
    assert lead.rest == "note"


@SETTINGS
@given(values=st.lists(containers, min_size=1, max_size=4), note=notes, sep=st.sampled_from(["\n", "\n\n", " ", "\t", ""]))
def test_leading_values_then_framework_note(values: list, note: str, sep: str) -> None:
    text = sep.join(serialize(v) for v in values) + sep + note
    lead = leading_json_values(text)
    assert js(list(lead.values[: len(values)])) == js(values)
    if not note.lstrip(" \t\n\r").startswith(("{", "[")):
        assert len(lead.values) == len(values)
        assert lead.rest == note.lstrip(" \t\n\r")
    assert text.endswith(lead.rest)


@SETTINGS
@given(value=containers, note=notes)
def test_read_result_of_value_and_note(value: Any, note: str) -> None:
    text = serialize(value) + "\n\n" + note
    reading = read_result(text)
    assert reading.parsed is not UNDEFINED
    assert reading.text is None


# ---------------------------------------------------------------------------
# read_emptiness: lists are counted, text reads as its value


@SETTINGS
@given(value=st.lists(json_values, max_size=12), door_bounded=st.booleans())
def test_list_is_counted(value: list, door_bounded: bool) -> None:
    for v in (value, serialize(value), " \ufeff" + serialize(value) + "\u00a0\n"):
        r = read_emptiness(v)
        assert r.rows == len(value)
        assert r.source == "library" and r.counted_at == ()
        assert r.emptiness == ("undeclared-empty" if not value else "non-empty")
        r = read_emptiness(v, door={"absent": False, "bounded": door_bounded})
        assert r.rows == len(value)


@SETTINGS
@given(value=st.lists(json_values, max_size=12), rows_at=keys, other=st.dictionaries(keys, json_values, max_size=3))
def test_rows_at_list_is_counted(value: list, rows_at: str, other: dict) -> None:
    record = {**other, rows_at: value}
    for v in (record, serialize(record)):
        r = read_emptiness(v, rows_at=rows_at)
        if record.get("placed") is True and type(record.get("ref")) is str and type(record.get("reason")) is str:
            continue  # a placement ticket is never counted
        assert (r.rows, r.source, r.rows_at, r.counted_at) == (len(value), "app", rows_at, (rows_at,))


@SETTINGS
@given(value=st.one_of(containers, envelopes()), door=doors, rows_at=rows_ats)
def test_text_reads_as_its_value(value: Any, door: Any, rows_at: Any) -> None:
    text = serialize(value)
    assert js(read_emptiness(text, rows_at=rows_at, door=door).to_upstream()) == js(
        read_emptiness(value, rows_at=rows_at, door=door).to_upstream()
    )
    # a note after the JSON makes it text that is not parsed: not a record
    noted = read_emptiness(text + "\n\n[identical call: x]", rows_at=rows_at)
    assert noted.emptiness == "unknown" and noted.rows is None


@SETTINGS
@given(rows=numbers)
def test_ticket_rows_counted_only_when_whole(rows: Any) -> None:
    value = {"datasets": {"r": {"ref": REF, "rows": rows}}}
    r = read_emptiness(value, rows_at="r")
    d = float(rows)
    whole = math.isfinite(d) and d == math.floor(d) and 0 <= d <= 2**53 - 1
    if whole:
        assert r.rows == int(d) and r.counted_at == ("datasets", "r", "rows")
    else:
        assert r.rows_unread == "uncounted-ticket" and r.rows is None

"""Unit tests of the public Python API of `readers/` (docs/readers.md, docs/output.md §5).

Role: where the conformance test checks the upstream camelCase JSON answers
through the harness, these tests pin what a Python caller sees: the
snake_case fields of the frozen readings, their `to_upstream()` shapes and key
orders (docs/readers.md §5a), the `kept_out` predicate, door dicts, `rows_at`, each
JS-vs-Python trap T1–T20 exercised on the Python functions themselves, the
recognizers, the served-JSON readers, `read_result`, and the result facts
(mints raise `ResultFactError` naming the fault; reads return None for a
malformed or absent fact and a copy otherwise).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from footprint_audit.readers import (
    MAX_BOUND_DEPTH,
    UNDEFINED,
    EmptinessReading,
    JSONError,
    JSTypeError,
    JsonPrefix,
    LeadingJson,
    ResultFactError,
    ResultReading,
    ValueDeclaration,
    absence_evidence_projection,
    declared_by_value,
    is_artifact_ref,
    is_placed_tool_result,
    is_truncated_tool_result,
    json_prefix_of,
    leading_json_values,
    mint_paging,
    mint_resolved,
    paging_problem,
    parse_json,
    parse_maybe_json,
    read_absence,
    read_coverage_ledger,
    read_emptiness,
    read_paging,
    read_resolved,
    read_result,
    resolved_problem,
    rows_at_problem,
    to_js_json,
)

REF = "art_AbCdEfGhIjKlMnOpQrStUv"
ABSENT = {"af_absent": True, "checked": ["inventory"]}


def ledger(result: Any, **marker: Any) -> dict:
    """A `coverage()` envelope around `result`."""
    return {"af_coverage": {"checked": [{"what": "c"}], **marker}, "result": result}


def up(reading: Any) -> dict:
    """The upstream shape of a reading."""
    return reading.to_upstream()


def keys(reading: EmptinessReading) -> list[str]:
    return list(reading.to_upstream())


# ---------------------------------------------------------------------------
# EmptinessReading: snake_case fields, frozen, to_upstream shapes


class TestEmptinessReadingFields:
    def test_counted_list_fields(self) -> None:
        r = read_emptiness([1, 2, 3])
        assert isinstance(r, EmptinessReading)
        assert r.emptiness == "non-empty"
        assert r.rows == 3 and type(r.rows) is int
        assert r.source == "library"
        assert r.counted_at == ()
        assert r.rows_at is None
        assert r.undeclared_shape is False
        assert r.rows_unread is None
        assert r.bounded is False
        assert r.described is None

    def test_is_frozen(self) -> None:
        r = read_emptiness([])
        with pytest.raises(AttributeError):  # frozen: a NamedTuple's fields cannot be set
            r.emptiness = "non-empty"  # type: ignore[misc]

    def test_app_count_fields(self) -> None:
        r = read_emptiness({"items": []}, rows_at="items")
        assert (r.emptiness, r.rows, r.source, r.rows_at, r.counted_at) == (
            "undeclared-empty",
            0,
            "app",
            "items",
            ("items",),
        )

    def test_described_fields_and_count(self) -> None:
        door = {"absent": False, "bounded": True, "described": {"edges": [1], "series": [], "facts": [1, 2]}}
        r = read_emptiness({}, door=door)
        assert r.described == (("facts", 2), ("edges", 1))
        assert r.described_count("facts") == 2
        assert r.described_count("edges") == 1
        assert r.described_count("series") is None
        assert r.bounded is False  # the described route adds no bounded flag
        assert up(r) == {
            "emptiness": "non-empty",
            "source": "library",
            "described": {"facts": 2, "edges": 1},
            "undeclaredShape": False,
        }
        assert keys(r) == ["emptiness", "source", "described", "undeclaredShape"]

    def test_from_upstream_round_trip(self) -> None:
        for value, rows_at in [([1], None), ({"r": []}, "r"), (ledger([]), None), ({"x": 1}, "r")]:
            r = read_emptiness(value, rows_at=rows_at)
            again = EmptinessReading.from_upstream(r.to_upstream())
            assert again == r
            assert to_js_json(again.to_upstream()) == to_js_json(r.to_upstream())

    def test_to_upstream_gives_fresh_lists(self) -> None:
        r = read_emptiness({"r": [1]}, rows_at="r")
        shape = r.to_upstream()
        shape["countedAt"].append("x")
        assert r.to_upstream()["countedAt"] == ["r"]

    def test_to_js_json_accepts_readings(self) -> None:
        assert to_js_json(read_emptiness("[1,2]")) == (
            '{"emptiness":"non-empty","rows":2,"source":"library","countedAt":[],"undeclaredShape":false}'
        )


# The §5a table: route → (value, kwargs, exact upstream JSON text, key order included).
ROUTES = {
    "absence door": (
        [1],
        {"door": {"absent": True, "bounded": False}},
        '{"emptiness":"declared-absent","undeclaredShape":false}',
    ),
    "absence bounded door": (
        [1],
        {"door": {"absent": True, "bounded": True}},
        '{"emptiness":"declared-absent","undeclaredShape":false,"bounded":true}',
    ),
    "clarify": (
        {},
        {"door": {"absent": False, "bounded": False, "described": {"clarify": {"q": "which?"}}}},
        '{"emptiness":"clarify","undeclaredShape":false}',
    ),
    "counted list": (
        [],
        {},
        '{"emptiness":"undeclared-empty","rows":0,"source":"library","countedAt":[],"undeclaredShape":false}',
    ),
    "counted app": (
        {"r": [1, 2]},
        {"rows_at": "r"},
        '{"emptiness":"non-empty","rows":2,"source":"app","rowsAt":"r","countedAt":["r"],"undeclaredShape":false}',
    ),
    "whole value kept out": (
        "[redacted]",
        {"kept_out": lambda v: v == "[redacted]"},
        '{"emptiness":"unknown","undeclaredShape":false,"rowsUnread":"redacted"}',
    ),
    "not a record": ("plain text", {}, '{"emptiness":"unknown","undeclaredShape":false}'),
    "placement ticket": (
        {"placed": True, "ref": REF, "reason": "big", "rows": [1]},
        {"rows_at": "rows"},
        '{"emptiness":"unknown","undeclaredShape":false,"rowsUnread":"uncounted-ticket"}',
    ),
    "no rowsAt": ({"r": []}, {}, '{"emptiness":"unknown","undeclaredShape":true}'),
    "rows key kept out": (
        {"r": "[redacted]"},
        {"rows_at": "r", "kept_out": lambda v: v == "[redacted]"},
        '{"emptiness":"unknown","rowsAt":"r","undeclaredShape":false,"rowsUnread":"redacted"}',
    ),
    "no list": (
        {"r": {"a": 1}},
        {"rows_at": "r"},
        '{"emptiness":"unknown","rowsAt":"r","undeclaredShape":false,"rowsUnread":"no-list"}',
    ),
    "uncounted dataset ticket": (
        {"datasets": {"r": {"ref": REF, "kind": "dataset/rows", "sourceField": "r"}}},
        {"rows_at": "r"},
        '{"emptiness":"unknown","undeclaredShape":false,"rowsUnread":"uncounted-ticket","rowsAt":"r"}',
    ),
    "counted dataset ticket": (
        {"datasets": {"r": {"ref": REF, "rows": 2}}},
        {"rows_at": "r"},
        '{"emptiness":"non-empty","rows":2,"source":"app","rowsAt":"r","countedAt":["datasets","r","rows"],"undeclaredShape":false}',
    ),
    "principal dataset ticket": (
        {"dataset": {"ref": REF, "rows": 0, "sourceField": "r"}},
        {"rows_at": "r"},
        '{"emptiness":"undeclared-empty","rows":0,"source":"app","rowsAt":"r","countedAt":["dataset","rows"],"undeclaredShape":false}',
    ),
    "through a boundary, non-empty": (
        ledger([1]),
        {},
        '{"emptiness":"non-empty","rows":1,"source":"library","countedAt":["result"],"undeclaredShape":false,"bounded":true}',
    ),
    "through a boundary, empty": (
        ledger({"r": []}),
        {"rows_at": "r"},
        '{"emptiness":"declared-absent","rows":0,"source":"app","rowsAt":"r","countedAt":["result","r"],"bounded":true,"undeclaredShape":false}',
    ),
    "through a boundary, unknown": (
        ledger("text"),
        {},
        '{"emptiness":"unknown","undeclaredShape":false,"bounded":true}',
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_route_shapes_and_key_order(route: str) -> None:
    value, kwargs, want = ROUTES[route]
    r = read_emptiness(value, **kwargs)
    assert to_js_json(r.to_upstream()) == want


# ---------------------------------------------------------------------------
# read_emptiness: kept_out, doors, rows_at


class TestKeptOut:
    PLACEHOLDER = {"redacted": True}

    def is_placeholder(self, v: Any) -> bool:
        return v == self.PLACEHOLDER

    def test_whole_value(self) -> None:
        r = read_emptiness({"redacted": True}, rows_at="r", kept_out=self.is_placeholder)
        assert (r.emptiness, r.rows_unread, r.rows_at) == ("unknown", "redacted", None)

    def test_rows_key(self) -> None:
        r = read_emptiness({"r": {"redacted": True}}, rows_at="r", kept_out=self.is_placeholder)
        assert (r.emptiness, r.rows_unread, r.rows_at) == ("unknown", "redacted", "r")

    def test_not_consulted_for_a_list(self) -> None:
        asked: list = []

        def kept_out(v: Any) -> bool:
            asked.append(v)
            return True

        assert read_emptiness([1], kept_out=kept_out).rows == 1
        assert asked == []

    def test_asked_about_present_null_never_about_missing(self) -> None:
        asked: list = []

        def kept_out(v: Any) -> bool:
            asked.append(v)
            return False

        assert read_emptiness({"r": None}, rows_at="r", kept_out=kept_out).rows_unread == "no-list"
        assert asked == [{"r": None}, None]
        asked.clear()
        assert read_emptiness({"x": 1}, rows_at="r", kept_out=kept_out).rows_unread == "no-list"
        assert asked == [{"x": 1}]  # the whole value only: a missing key is never asked about

    @pytest.mark.parametrize("answer", [1, "true", [1], 1.0])
    def test_only_exactly_true_counts(self, answer: Any) -> None:
        r = read_emptiness({"r": "x"}, rows_at="r", kept_out=lambda v: answer)
        assert r.rows_unread == "no-list"

    def test_no_policy_reads_the_placeholder_as_data(self) -> None:
        assert read_emptiness({"r": "[redacted]"}, rows_at="r").rows_unread == "no-list"


class TestDoor:
    def test_no_door_reads_the_value(self) -> None:
        assert read_emptiness(ABSENT).emptiness == "declared-absent"
        r = read_emptiness(ledger(ABSENT))
        assert (r.emptiness, r.bounded) == ("declared-absent", True)

    def test_door_decides_over_the_bytes(self) -> None:
        r = read_emptiness(ABSENT, door={"absent": False, "bounded": False})
        assert (r.emptiness, r.undeclared_shape) == ("unknown", True)
        r = read_emptiness([1, 2], door={"absent": True, "bounded": False})
        assert r.emptiness == "declared-absent" and r.rows is None

    def test_unvouched_ledger_is_data(self) -> None:
        value = ledger([1, 2, 3])
        r = read_emptiness(value, rows_at="result", door={"absent": False, "bounded": False})
        assert (r.rows, r.source, r.counted_at, r.bounded) == (3, "app", ("result",), False)

    def test_bounded_door_on_a_non_ledger(self) -> None:
        r = read_emptiness([1, 2], door={"absent": False, "bounded": True})
        assert (r.rows, r.bounded) == (2, False)

    def test_empty_door_dict_is_a_door(self) -> None:
        # {} is a door (not nullish): nothing declared, so the marker is data.
        assert read_emptiness(ABSENT, door={}).emptiness == "unknown"

    def test_described_null_falls_through(self) -> None:
        r = read_emptiness([], door={"absent": False, "bounded": False, "described": None})
        assert r.emptiness == "undeclared-empty"

    def test_described_string_clarify_falls_through(self) -> None:
        r = read_emptiness({}, door={"absent": False, "bounded": False, "described": {"clarify": "which?"}})
        assert (r.emptiness, r.undeclared_shape) == ("unknown", True)

    def test_described_with_empty_kinds_and_clarify(self) -> None:
        door = {"absent": False, "bounded": False, "described": {"facts": [], "clarify": {}}}
        assert read_emptiness([1], door=door).emptiness == "clarify"

    def test_door_absent_beats_described(self) -> None:
        door = {"absent": True, "bounded": False, "described": {"facts": [1]}}
        assert read_emptiness({}, door=door).emptiness == "declared-absent"


class TestRowsAt:
    def test_ticket_only_when_rows_key_missing(self) -> None:
        ds = {"datasets": {"rows": {"ref": REF, "rows": 2, "sourceField": "rows"}}}
        assert read_emptiness(ds, rows_at="rows").rows == 2
        for present in (None, "two", {}, 5):
            r = read_emptiness({**ds, "rows": present}, rows_at="rows")
            assert r.rows_unread == "no-list", present

    def test_source_field_rules(self) -> None:
        good = {"ref": REF, "rows": 1}
        assert read_emptiness({"datasets": {"r": good}}, rows_at="r").rows == 1
        assert read_emptiness({"datasets": {"r": {**good, "sourceField": "other"}}}, rows_at="r").rows_unread == "no-list"
        assert read_emptiness({"datasets": {"r": {**good, "sourceField": None}}}, rows_at="r").rows_unread == "no-list"
        # the principal ticket needs sourceField == rows_at; a missing one does not qualify
        assert read_emptiness({"dataset": good}, rows_at="r").rows_unread == "no-list"
        assert read_emptiness({"dataset": {**good, "sourceField": "r"}}, rows_at="r").counted_at == ("dataset", "rows")

    def test_ticket_needs_an_artifact_ref(self) -> None:
        for ref in (REF + "\n", "art_short", None, 5):
            r = read_emptiness({"datasets": {"r": {"ref": ref, "rows": 1}}}, rows_at="r")
            assert r.rows_unread == "no-list", ref

    @pytest.mark.parametrize("rows", [None, "2", 2.5, -1, True, 2**53, math.inf, math.nan, [1]])
    def test_uncounted_ticket(self, rows: Any) -> None:
        r = read_emptiness({"datasets": {"r": {"ref": REF, "rows": rows}}}, rows_at="r")
        assert (r.emptiness, r.rows_unread, r.rows_at) == ("unknown", "uncounted-ticket", "r")
        assert keys(r)[-1] == "rowsAt"

    def test_rows_at_not_validated_here(self) -> None:
        assert rows_at_problem("a.b") == "nested"
        assert read_emptiness({"a.b": [1]}, rows_at="a.b").rows == 1

    def test_non_string_rows_at_is_echoed(self) -> None:
        r = read_emptiness({"3": [1, 2]}, rows_at=3)
        assert (r.rows, r.rows_at, r.counted_at) == (2, 3, (3,))


# ---------------------------------------------------------------------------
# The JS-vs-Python traps of docs/readers.md §9, on the Python API


class TestTraps:
    # T1 — JS trim
    def test_t1_trim(self) -> None:
        assert parse_maybe_json('\ufeff{"rows":[1]}\ufeff') == {"rows": [1]}
        assert parse_maybe_json('\u00a0[1]\u3000') == [1]
        for junk in ("\x1c", "\x1d", "\x1f", "\x85"):
            text = junk + "[1]" + junk
            assert parse_maybe_json(text) == text
        assert read_emptiness("\ufeff\u00a0[1,2]\u00a0").rows == 2
        assert read_result("\ufeff[1]").to_upstream() == {"parsed": [1]}
        assert declared_by_value('\ufeff{"af_absent":true,"checked":["x"]}') == ValueDeclaration(True, False, False)
        # the emptiness test of words is a JS trim
        assert json_prefix_of('["\u00a0 x') == JsonPrefix(())
        assert json_prefix_of('["\ufeff x') == JsonPrefix(())
        assert json_prefix_of('["\x85 x') == JsonPrefix((), "\x85")

    # T2 — the four JSON spaces
    @pytest.mark.parametrize("lead", ["\v", "\f", "\u00a0", "\ufeff", "\u2028"])
    def test_t2_json_space(self, lead: str) -> None:
        assert leading_json_values(lead + "[1]") == LeadingJson((), lead + "[1]")
        assert json_prefix_of(lead + "[1,") is None

    def test_t2_json_space_is_skipped(self) -> None:
        assert leading_json_values(" \t\r\n[1] \n x ") == LeadingJson(([1],), "x ")
        assert json_prefix_of(' \t\r\n{"k"') == JsonPrefix(("k",))

    # T3 — what parses
    @pytest.mark.parametrize("text", ["[NaN]", '{"x":Infinity}', "[-Infinity]", "[1,]", "[01]", "[.5]", "['a']"])
    def test_t3_not_json(self, text: str) -> None:
        assert parse_maybe_json(text) == text
        with pytest.raises(JSONError):
            parse_json(text)

    def test_t3_numbers_beyond_range(self) -> None:
        assert parse_maybe_json("[1e400, -1e400]") == [math.inf, -math.inf]
        assert to_js_json(parse_maybe_json("[1e400]")) == "[null]"
        big = "[1" + "0" * 5000 + "]"
        assert to_js_json(parse_maybe_json(big)) == "[null]"
        assert read_emptiness(big).rows == 1

    def test_t3_deep_nesting(self) -> None:
        deep = "[" * 20_000 + "]" * 20_000
        assert read_emptiness(deep).rows == 1
        assert len(leading_json_values(deep + " x").values) == 1
        assert json_prefix_of("[" * 20_000) == JsonPrefix(())
        reading = read_result(deep + " tail")
        assert reading.tail == "tail"

    def test_t3_lone_surrogates_and_duplicates(self) -> None:
        assert parse_maybe_json('["\\ud800", "\\ud83d\\ude00"]') == ["\ud800", "\U0001f600"]
        assert list(parse_maybe_json('{"a":1,"b":2,"a":3}').items()) == [("a", 3), ("b", 2)]
        assert parse_maybe_json('{"s":"a\tb"}') == '{"s":"a\tb"}'

    # T4 — numbers are doubles
    def test_t4_doubles(self) -> None:
        def ticket(rows_text: str) -> EmptinessReading:
            text = '{"datasets":{"r":{"ref":"%s","rows":%s}}}' % (REF, rows_text)
            return read_emptiness(text, rows_at="r")

        assert ticket("2.0").rows == 2 and type(ticket("2.0").rows) is int
        assert ticket("1E2").rows == 100
        assert ticket("9007199254740991").rows == 2**53 - 1
        assert ticket("9007199254740992").rows_unread == "uncounted-ticket"
        assert ticket("9007199254740993").rows_unread == "uncounted-ticket"
        r = ticket("-0.0")
        assert (r.rows, r.emptiness) == (0, "undeclared-empty")
        assert to_js_json(r.to_upstream()).count('"rows":0,') == 1

    def test_t4_writing_numbers(self) -> None:
        assert to_js_json([2.0, 1e21, 1e-7, 0.000001, -0.0, math.inf, math.nan]) == (
            "[2,1e+21,1e-7,0.000001,0,null,null]"
        )
        assert to_js_json(parse_json("[12345678901234567890, 9007199254740993, 1E2]")) == (
            "[12345678901234567000,9007199254740992,100]"
        )

    # T5 — String(Number(lit)) for numeric leaves
    def test_t5_numeric_leaves(self) -> None:
        p = json_prefix_of("[1.50, 1e2, 1E2, -0, -0.0e1, 0.1, 2.0, 12345678901234567890, 1e21, 1e-7, 1e-5, 1e16, 5e-324, 1e400, ")
        assert p == JsonPrefix(
            (
                "1.5", "100", "100", "0", "0", "0.1", "2", "12345678901234567000",
                "1e+21", "1e-7", "0.00001", "10000000000000000", "5e-324", "Infinity",
            )
        )

    # T6 — exactly true, booleans are not numbers
    def test_t6_exactly_true(self) -> None:
        assert read_absence({"af_absent": 1, "checked": ["x"]}) is UNDEFINED
        assert read_absence({"af_absent": "true", "checked": ["x"]}) is UNDEFINED
        assert not is_placed_tool_result({"placed": 1, "ref": "r", "reason": "x"})
        assert not is_truncated_tool_result({"truncated": 1, "reason": "x"})
        assert declared_by_value({"af_absent": 1, "checked": ["x"]}) is None
        r = read_emptiness({"datasets": {"r": {"ref": REF, "rows": True}}}, rows_at="r")
        assert r.rows_unread == "uncounted-ticket"
        assert paging_problem({"next": True}) is not None

    # T7 — regular expressions
    def test_t7_regex(self) -> None:
        assert is_artifact_ref(REF)
        assert not is_artifact_ref(REF + "\n")
        assert not is_artifact_ref("art_" + "\u00e4" * 22)
        assert not is_artifact_ref("art_" + "\uff11" * 22)
        assert json_prefix_of("[\uff11\uff12, 3") is None
        assert json_prefix_of("[\u0663, 3") is None
        assert json_prefix_of("[3, \uff11") is None
        for lit in ("1_0", "+1", "inf", "Infinity"):
            assert json_prefix_of(f"[{lit}, 3") is None, lit

    # T8 — missing vs null
    def test_t8_missing_vs_null(self) -> None:
        assert read_coverage_ledger({"af_coverage": {}, "result": None}) is not UNDEFINED
        assert read_coverage_ledger({"af_coverage": {}}) is UNDEFINED
        assert read_emptiness(ABSENT, door=None).emptiness == "declared-absent"
        ds = {"datasets": {"r": {"ref": REF, "rows": 2}}}
        assert read_emptiness({**ds, "r": None}, rows_at="r").rows_unread == "no-list"
        assert read_emptiness(ds, rows_at="r").rows == 2

    # T9 — JS truthiness of the door
    @pytest.mark.parametrize(
        "absent, declared",
        [([], True), ({}, True), ("false", True), (math.nan, False), (0, False), ("", False), (None, False), (-0.0, False)],
    )
    def test_t9_door_truthiness(self, absent: Any, declared: bool) -> None:
        r = read_emptiness([1], door={"absent": absent, "bounded": False})
        assert (r.emptiness == "declared-absent") is declared

    def test_t9_bounded_truthiness(self) -> None:
        assert read_emptiness(ledger([1]), door={"absent": False, "bounded": []}).bounded is True
        assert read_emptiness(ledger([1]), door={"absent": False, "bounded": math.nan}).bounded is False

    # T10 — own keys only
    @pytest.mark.parametrize("key", ["__proto__", "constructor", "toString", "hasOwnProperty", "length"])
    def test_t10_own_keys(self, key: str) -> None:
        assert read_emptiness({"x": 1}, rows_at=key).rows_unread == "no-list"
        assert read_emptiness({key: [1]}, rows_at=key).rows == 1
        assert read_emptiness(parse_json('{"%s":[1,2]}' % key), rows_at=key).rows == 2

    # T11 — key order of parsed objects when written
    def test_t11_integer_like_keys_first(self) -> None:
        value = parse_maybe_json('{"b":1,"2":2,"a":3,"1":4,"-1":5,"01":6,"4294967294":7,"4294967295":8}')
        assert to_js_json(value) == '{"1":4,"2":2,"4294967294":7,"b":1,"a":3,"-1":5,"01":6,"4294967295":8}'
        assert to_js_json(leading_json_values('{"b":1,"1":2}').to_upstream()) == '{"values":[{"1":2,"b":1}],"rest":""}'

    # T12 — key order of readings: see test_route_shapes_and_key_order
    def test_t12_bounded_position(self) -> None:
        assert keys(read_emptiness(ledger([])))[-2:] == ["bounded", "undeclaredShape"]
        assert keys(read_emptiness(ledger([1])))[-2:] == ["undeclaredShape", "bounded"]

    # T13 — UTF-16 strings and JSON.stringify escapes
    def test_t13_strings(self) -> None:
        assert to_js_json("\ud800") == '"\\ud800"'
        assert to_js_json("\u2028\u2029\x7f\U0001f600") == '"\u2028\u2029\x7f\U0001f600"'
        assert to_js_json('"\\\b\f\n\r\t\x01') == '"\\"\\\\\\b\\f\\n\\r\\t\\u0001"'
        assert json_prefix_of('["\\ud800", 1') == JsonPrefix(("\ud800",))
        assert leading_json_values('{"k":"\\ud800"} z') == LeadingJson(({"k": "\ud800"},), "z")

    # T14 — exceptions: no RecursionError or ValueError escapes
    def test_t14_no_exception_escapes(self) -> None:
        for text in ("[" * 5000 + "]" * 5000, "[1" + "0" * 5000 + "]", "[NaN]", '["\\ud800"]', "[" * 3000):
            parse_maybe_json(text)
            declared_by_value(text)
            read_emptiness(text)
            leading_json_values(text)
            json_prefix_of(text)
            read_result(text)

    # T15 — words: untrimmed, split at U+0020 only
    def test_t15_words(self) -> None:
        assert json_prefix_of('["a  b') == JsonPrefix((), "a ")
        assert json_prefix_of('["  a b') == JsonPrefix((), "  a")
        assert json_prefix_of('["a\u3000b c') == JsonPrefix((), "a\u3000b")
        assert json_prefix_of('["a\tb') == JsonPrefix(())
        assert json_prefix_of('["x \\u00e9 and mo') == JsonPrefix((), "x \u00e9 and")
        assert json_prefix_of('["x \\u00') == JsonPrefix((), "x")
        assert json_prefix_of('["a b\tc d') == JsonPrefix(())
        assert json_prefix_of('{"id":4417,"msg":"disk full on host-7 and mo') == JsonPrefix(
            ("id", "4417", "msg"), "disk full on host-7 and"
        )

    # T16 — the number grammars
    def test_t16_number_grammars(self) -> None:
        assert json_prefix_of("[01, 2") is None
        assert json_prefix_of("[2, 01") == JsonPrefix(("2",))
        for cut in ("-", "1.", "1.5e", "1.5e+", "01", "tr", "fals", "nu"):
            assert json_prefix_of("[" + cut) == JsonPrefix(()), cut
        for bad in (".5", "1.5.", "+1", "nulx", "True"):
            assert json_prefix_of("[" + bad) is None, bad
        assert json_prefix_of("[1., 2") is None
        assert json_prefix_of("[1e, 2") is None

    # T17 — typeof checks
    def test_t17_typeof(self) -> None:
        assert read_absence([{"af_absent": True, "checked": ["x"]}]) is UNDEFINED
        assert read_coverage_ledger({"af_coverage": [], "result": 1}) is UNDEFINED
        assert read_coverage_ledger({"af_coverage": None, "result": 1}) is UNDEFINED
        assert not is_placed_tool_result([True])
        assert not is_placed_tool_result(None)
        assert rows_at_problem(3) == "empty"
        assert paging_problem({"next": 2.0}) is None

    # T18 — context edge cases on the Python API
    def test_t18_rows_at_edge_cases(self) -> None:
        assert read_emptiness({"true": [1]}, rows_at=True).rows == 1
        assert read_emptiness([1]).to_upstream() == read_emptiness([1], rows_at=None, door=None).to_upstream()

    # T19 — reading JSON with JS semantics
    def test_t19_parse_json_is_js(self) -> None:
        assert to_js_json(parse_json('{"n":[1.0, 2.50, -0, 1E2]}')) == '{"n":[1,2.5,0,100]}'
        assert parse_json(b'{"a":[1]}') == {"a": [1]}
        with pytest.raises(JSONError):
            parse_json("\ufeff[1]")

    # T20 — depth bound
    def test_t20_depth_bound(self) -> None:
        assert MAX_BOUND_DEPTH == 8
        value: Any = []
        for _ in range(8):
            value = ledger(value)
        bounded = {"absent": False, "bounded": True}
        r = read_emptiness(value, door=bounded)
        assert (r.emptiness, r.counted_at, r.bounded) == ("declared-absent", ("result",) * 8, True)
        r = read_emptiness(ledger(value), door=bounded)
        assert to_js_json(r.to_upstream()) == '{"emptiness":"unknown","undeclaredShape":false,"bounded":true}'

    def test_t20_doorless_one_level_for_absence(self) -> None:
        r = read_emptiness(ledger(ledger(ABSENT)))
        assert (r.emptiness, r.bounded) == ("unknown", True)
        assert declared_by_value(ledger(ledger(ABSENT))) == ValueDeclaration(False, True, False)


# ---------------------------------------------------------------------------
# The recognizers and declared_by_value


class TestRecognizers:
    def test_parse_maybe_json(self) -> None:
        assert parse_maybe_json({"a": 1}) == {"a": 1}
        assert parse_maybe_json(5) == 5
        assert parse_maybe_json(None) is None
        assert parse_maybe_json(' [1,] ') == " [1,] "
        assert parse_maybe_json('"[]"') == '"[]"'
        assert parse_maybe_json("[1,2]\n\n[identical call: x]") == "[1,2]\n\n[identical call: x]"
        assert parse_maybe_json('{"s":"[1]"}') == {"s": "[1]"}  # only the top level is parsed

    def test_rows_at_problem(self) -> None:
        assert rows_at_problem("rows") is None
        assert rows_at_problem(" ") is None
        assert rows_at_problem("\u2024") is None
        assert rows_at_problem("") == "empty"
        assert rows_at_problem(None) == "empty"
        assert rows_at_problem() == "empty"
        assert rows_at_problem("a/b") == "nested"
        assert rows_at_problem(".") == "nested"

    def test_read_absence_returns_the_same_object(self) -> None:
        v = {"af_absent": True, "checked": [None]}
        assert read_absence(v) is v
        assert read_absence({"af_absent": True, "checked": []}) is UNDEFINED
        assert read_absence({"af_absent": True, "checked": "x"}) is UNDEFINED

    def test_read_coverage_ledger_returns_the_same_object(self) -> None:
        v = {"af_coverage": {}, "result": None}
        assert read_coverage_ledger(v) is v

    def test_is_artifact_ref(self) -> None:
        assert is_artifact_ref("art_" + "a" * 22)
        for bad in ("art_" + "a" * 21, "art_" + "a" * 23, "ART_" + "a" * 22, " " + REF, None, 5):
            assert not is_artifact_ref(bad)

    def test_is_placed_tool_result(self) -> None:
        assert is_placed_tool_result({"placed": True, "ref": "", "reason": ""})
        assert not is_placed_tool_result({"placed": True, "ref": 5, "reason": "x"})
        assert not is_placed_tool_result({"placed": True, "ref": "r"})

    def test_declared_by_value(self) -> None:
        assert declared_by_value([1]) is None
        assert declared_by_value("text") is None
        d = declared_by_value(ABSENT)
        assert d == ValueDeclaration(absent=True, bounded=False, gap=False)
        assert d.to_upstream() == {"absent": True, "bounded": False, "gap": False}
        assert declared_by_value({**ABSENT, "not_checked": ["x"]}).gap is True
        assert declared_by_value({**ABSENT, "cannot_cover": []}).gap is False
        assert declared_by_value({**ABSENT, "cannot_cover": "x"}).gap is False
        assert declared_by_value(ledger([], cannot_cover=["y"])) == ValueDeclaration(False, True, True)
        assert declared_by_value(ledger(ABSENT)) == ValueDeclaration(True, True, False)
        both = {**ABSENT, "not_checked": [1], "af_coverage": {}, "result": {"af_absent": True, "checked": ["y"]}}
        assert declared_by_value(both) == ValueDeclaration(True, True, True)
        semantic = {"af_semantics": True, "coverage": {"checked": ["x"]}, "facts": []}
        assert declared_by_value(semantic) is None


# ---------------------------------------------------------------------------
# The served-JSON readers and read_result


class TestServedJson:
    def test_leading_json_values(self) -> None:
        lead = leading_json_values('{"id":4417}\n{"id":2210}\n\n[identical call: x]')
        assert lead == LeadingJson(({"id": 4417}, {"id": 2210}), "[identical call: x]")
        assert lead.to_upstream() == {"values": [{"id": 4417}, {"id": 2210}], "rest": "[identical call: x]"}
        assert leading_json_values("") == LeadingJson((), "")
        assert leading_json_values("[1]\n[2]") == LeadingJson(([1], [2]), "")
        assert leading_json_values("[1,] x") == LeadingJson((), "[1,] x")
        assert leading_json_values("[1] [2,] x") == LeadingJson(([1],), "[2,] x")
        assert leading_json_values('[1, "]"] x ') == LeadingJson(([1, "]"],), "x ")
        assert leading_json_values("[1 }") == LeadingJson((), "[1 }")

    @pytest.mark.parametrize("bad", [5, None, ["[1]"]])
    def test_leading_json_values_needs_text(self, bad: Any) -> None:
        with pytest.raises(JSTypeError):
            leading_json_values(bad)

    def test_json_prefix_of(self) -> None:
        p = json_prefix_of('{"hosts":[{"id":4417,"up":true},{"id":22')
        assert p == JsonPrefix(("hosts", "id", "4417", "up", "true", "id"))
        assert p.to_upstream() == {"leaves": ["hosts", "id", "4417", "up", "true", "id"]}
        assert JsonPrefix(("a",), "b c").to_upstream() == {"leaves": ["a"], "words": "b c"}
        assert json_prefix_of("{") == JsonPrefix(())
        assert json_prefix_of('{"a" "b" 1 2') == JsonPrefix(("a", "b", "1"))
        assert json_prefix_of("[null, true, false, nu") == JsonPrefix(("true", "false"))
        assert json_prefix_of("[[1]") == JsonPrefix(("1",))
        for not_cut in ("", "plain", '{"a":1}', "[1]]", "]", '{"x":1}\n{"y":2', "[1}", '["tab\there", 1', "[INFO] up"):
            assert json_prefix_of(not_cut) is None, not_cut

    def test_read_result(self) -> None:
        assert read_result("  port 8080 open  ") == ResultReading(text="  port 8080 open  ")
        assert read_result("  port 8080 open  ").to_upstream() == {"text": "  port 8080 open  "}
        assert read_result(" [INFO] up ").to_upstream() == {"text": " [INFO] up "}
        assert read_result('{"a":1}').to_upstream() == {"parsed": {"a": 1}}
        assert read_result("[1]\n[2] [x").to_upstream() == {"parsed": [[1], [2]], "tail": "[x"}
        assert read_result('[1] note').to_upstream() == {"parsed": [1], "tail": "note"}
        assert read_result('[1] {"a":"b c d').to_upstream() == {"parsed": [[1], ["a"]], "tail": "b c"}
        assert read_result('{"id":4417,"msg":"disk full on').to_upstream() == {
            "parsed": ["id", "4417", "msg"],
            "tail": "disk full",
        }
        r = read_result("plain")
        assert r.parsed is UNDEFINED and r.tail is None

    def test_read_result_projects_absences(self) -> None:
        text = '{"af_absent":true,"looked_for":"srv-9","checked":[{"what":"inv","short":"i"}]} note'
        assert read_result(text).to_upstream() == {
            "parsed": {"af_absent": True, "checked": [{"what": "inv"}]},
            "tail": "note",
        }
        inner = {"af_absent": True, "looked_for": "x", "checked": [{"what": "a", "kind": "k"}]}
        marker = {"checked": [{"what": "c", "short": "s"}]}
        assert absence_evidence_projection({"af_coverage": marker, "result": inner}) == [
            {"checked": [{"what": "c"}]},
            {"af_absent": True, "checked": [{"what": "a"}]},
        ]
        assert absence_evidence_projection([1]) is UNDEFINED

    def test_read_result_opens_capped_heads(self) -> None:
        capped = '{"truncated":true,"reason":"cap","head":"{\\"rows\\":[1,2"}'
        assert to_js_json(read_result(capped).to_upstream()) == (
            '{"parsed":[{"truncated":true,"reason":"cap","head":"{\\"rows\\":[1,2"},["rows","1"]]}'
        )
        plain = '{"truncated":true,"reason":"cap","head":"plain"}'
        assert read_result(plain).to_upstream() == {"parsed": {"truncated": True, "reason": "cap", "head": "plain"}}

    @pytest.mark.parametrize("bad", [None, 5])
    def test_read_result_needs_text(self, bad: Any) -> None:
        with pytest.raises(JSTypeError):
            read_result(bad)


# ---------------------------------------------------------------------------
# Result facts: resolved and paging


GOOD_RESOLVED = [
    {"argument": "acme", "id": "org_1", "name": "Acme Inc.", "aliases": ["ACME", "acme corp"]},
    {"argument": "bob", "id": "u_2"},
]


class TestResultFacts:
    @pytest.mark.parametrize(
        "resolved, fault",
        [
            ({"argument": "a", "id": "b"}, "`resolved` must be a list"),
            (None, "`resolved` must be a list"),
            (["x"], "resolved[0] must be an object"),
            ([{"argument": "a", "id": "b"}, {"argument": "a", "id": "b", "score": 1}], "resolved[1] has an unknown key 'score'"),
            ([{"id": "b"}], "resolved[0].argument must be a non-empty string"),
            ([{"argument": "", "id": "b"}], "resolved[0].argument must be a non-empty string"),
            ([{"argument": "a", "id": 7}], "resolved[0].id must be a non-empty string"),
            ([{"argument": "a", "id": "b", "name": None}], "resolved[0].name must be a string"),
            ([{"argument": "a", "id": "b", "aliases": "x"}], "resolved[0].aliases must be a list of strings"),
            ([{"argument": "a", "id": "b", "aliases": ["x", 1]}], "resolved[0].aliases must be a list of strings"),
        ],
    )
    def test_mint_resolved_names_the_fault(self, resolved: Any, fault: str) -> None:
        with pytest.raises(ResultFactError) as info:
            mint_resolved(resolved)
        assert fault in str(info.value)
        assert isinstance(info.value, ValueError)
        assert resolved_problem(resolved) == str(info.value)
        assert read_resolved(resolved) is None
        assert read_resolved({"resolved": resolved}) is None

    @pytest.mark.parametrize(
        "paging, fault",
        [
            ([], "`paging` must be an object"),
            (None, "`paging` must be an object"),
            ({}, "`paging.next` is required"),
            ({"next": None, "total": 3}, "unknown key 'total'"),
            ({"next": ""}, "non-empty cursor"),
            ({"next": -1}, "whole page number"),
            ({"next": 1.5}, "whole page number"),
            ({"next": 2**53}, "whole page number"),
            ({"next": math.nan}, "whole page number"),
            ({"next": True}, "`paging.next` must be null, a cursor string or a whole page number"),
            ({"next": ["c"]}, "`paging.next` must be null, a cursor string or a whole page number"),
        ],
    )
    def test_mint_paging_names_the_fault(self, paging: Any, fault: str) -> None:
        with pytest.raises(ResultFactError) as info:
            mint_paging(paging)
        assert fault in str(info.value)
        assert paging_problem(paging) == str(info.value)
        assert read_paging({"paging": paging}) is None

    def test_mint_resolved_gives_a_deep_copy(self) -> None:
        minted = mint_resolved(GOOD_RESOLVED)
        assert minted == GOOD_RESOLVED
        assert minted is not GOOD_RESOLVED
        minted[0]["aliases"].append("changed")
        assert GOOD_RESOLVED[0]["aliases"] == ["ACME", "acme corp"]
        assert mint_resolved([]) == []

    @pytest.mark.parametrize("nxt", [None, "cursor-2", 0, 3, 2.0, 2**53 - 1])
    def test_mint_paging_gives_a_copy(self, nxt: Any) -> None:
        paging = {"next": nxt}
        minted = mint_paging(paging)
        assert minted == paging and minted is not paging
        assert paging_problem(paging) is None

    def test_read_resolved(self) -> None:
        envelope = {"af_absent": True, "checked": ["x"], "resolved": GOOD_RESOLVED}
        got = read_resolved(envelope)
        assert got == GOOD_RESOLVED and got is not GOOD_RESOLVED
        got[1]["id"] = "changed"
        assert GOOD_RESOLVED[1]["id"] == "u_2"
        assert read_resolved(GOOD_RESOLVED) == GOOD_RESOLVED  # the fact itself
        assert read_resolved({"facts": []}) is None  # absent
        assert read_resolved(None) is None
        assert read_resolved("resolved") is None

    def test_read_paging(self) -> None:
        envelope = {"af_coverage": {}, "result": [], "paging": {"next": "c2"}}
        got = read_paging(envelope)
        assert got == {"next": "c2"} and got is not envelope["paging"]
        assert read_paging({"next": None}) == {"next": None}  # the fact itself
        assert read_paging({"paging": {"next": None}}) == {"next": None}
        assert read_paging({"result": []}) is None  # absent
        assert read_paging({"paging": {"next": -1}}) is None  # malformed
        assert read_paging([{"next": None}]) is None
        assert read_paging(None) is None

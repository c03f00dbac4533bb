"""The served-JSON readers: the JSON inside a served result that is not one JSON value.

Pattern: two pure readers over the JSON grammar (docs/readers.md §6, §7).
Role:    asked by `readers.evidence.read_result` and by the pipeline's
         `served_*` columns for a value the model read as text: notes
         appended after the JSON, several blocks, JSON cut short by a cap.
Emits:   nothing; no I/O, no clock, no Beam.

| reader                | answers                                                        |
|-----------------------|----------------------------------------------------------------|
| `leading_json_values` | the complete `{…}`/`[…]` values a text opens with, and the rest |
| `json_prefix_of`      | the complete leaves of JSON cut short (+ the cut string's whole words), or None |

Only the four JSON spaces separate tokens (T2); numbers are written the JS
way (`String(Number(x))`, T5); regexes are ASCII-only and anchored at the
real end (T7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from .jsonparse import (
    NOT_KEPT,
    JSONError,
    last_outcome,
    may_be_js_json,
    orjson_outcome,
    parse_json,
    remember_failure,
    take_parsed,
)
from .jsvalues import UNDEFINED, JSTypeError, js_number_to_string, js_trim

__all__ = ["LeadingJson", "JsonPrefix", "leading_json_values", "json_prefix_of"]


@dataclass(frozen=True, slots=True)
class LeadingJson:
    """`leadingJsonValues`: the values the text opens with, and the text after them."""

    values: tuple[Any, ...]
    rest: str

    def to_upstream(self) -> dict[str, Any]:
        """The upstream JSON shape `{values, rest}`."""
        return {"values": list(self.values), "rest": self.rest}


@dataclass(frozen=True, slots=True)
class JsonPrefix:
    """`jsonPrefixOf`: the complete leaves, and the whole words of a cut string."""

    leaves: tuple[Any, ...]
    words: str | None = None

    def to_upstream(self) -> dict[str, Any]:
        """The upstream JSON shape `{leaves, words?}`."""
        out: dict[str, Any] = {"leaves": list(self.leaves)}
        if self.words is not None:
            out["words"] = self.words
        return out


_SPACE = re.compile(r"[ \t\n\r]*")
# Inside a bracketed span: the next quote or bracket.
_SPAN_TOKEN = re.compile(r'["\[\]{}]')
# The rest of a string body after its opening quote, up to and including the closing quote.
_STRING_TAIL = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _value_end(text: str, start: int) -> int:
    """The end (exclusive) of the bracketed span at `start`; -1 when the text ends first."""
    depth = 0
    pos = start
    search = _SPAN_TOKEN.search
    string_tail = _STRING_TAIL.match
    while True:
        m = search(text, pos)
        if m is None:
            return -1
        ch = m.group(0)
        pos = m.end()
        if ch == '"':
            s = string_tail(text, pos)
            if s is None:
                return -1
            pos = s.end()
        elif ch == "{" or ch == "[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return pos


def _not_a_string(text: Any, reading: str) -> JSTypeError:
    if text is None:
        return JSTypeError(f"Cannot read properties of null (reading '{reading}')")
    if text is UNDEFINED:
        return JSTypeError(f"Cannot read properties of undefined (reading '{reading}')")
    return JSTypeError("text.slice is not a function")


_AFTER_DOCUMENT = "unexpected content after document"
# orjson reached the end of the text inside the value: its brackets never close.
_END_OF_DATA = "unexpected end of data"
# No (further) value here: the scan of leading values stops.
_RUNS_TO_END: Any = object()


def _first_value_fast(text: str, at: int) -> tuple[Any, int] | None:
    """orjson's reading of the value at `at`: (value, where the text after it starts), or None.

    orjson stops at the first fault; "unexpected content after document"
    means one whole value came first, ending where the bracket scan would
    end it (a valid value's brackets balance, strings skipped alike), and
    its `pos` is the first non-space character after it. Any other fault is
    left to the exact scan below.
    """
    piece = text[at:] if at else text
    kept = take_parsed(piece)
    if kept is not NOT_KEPT:
        return kept, len(text)
    outcome = last_outcome(piece)
    if outcome is None or outcome.ok:
        try:
            return orjson.loads(piece), len(text)
        except orjson.JSONDecodeError as exc:
            outcome = remember_failure(piece, exc)
    if outcome.msg.startswith(_END_OF_DATA):
        return _RUNS_TO_END
    if not outcome.msg.startswith(_AFTER_DOCUMENT):
        # A fault JS refuses too lies inside the bracketed span (before it, the text is a
        # valid value that has not closed yet), so JSON.parse of the span fails: no value.
        return None if may_be_js_json(outcome.msg) else _RUNS_TO_END
    end = at + outcome.pos
    try:
        return orjson.loads(text[at:end]), end
    except orjson.JSONDecodeError:  # pragma: no cover - the prefix parsed a moment ago
        return None


def leading_json_values(text: str) -> LeadingJson:
    """§6: the complete JSON values `text` opens with, and `rest` after them.

    Raises `JSTypeError` for a non-string, as the reference does.
    """
    if type(text) is not str:
        raise _not_a_string(text, "length")
    values: list[Any] = []
    n = len(text)
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    while at < n and (text[at] == "{" or text[at] == "["):
        fast = _first_value_fast(text, at)
        if fast is _RUNS_TO_END:
            break
        if fast is not None:
            values.append(fast[0])
            at = _SPACE.match(text, fast[1]).end() if fast[1] < n else n  # type: ignore[union-attr]  # the pattern matches the empty string
            continue
        end = _value_end(text, at)
        if end < 0:
            break
        try:
            values.append(parse_json(text[at:end]))
        except JSONError:
            break
        at = _SPACE.match(text, end).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    return LeadingJson(tuple(values), text[at:])


# The tokens of JSON text, contiguous: separators (JSON space, `,`, `:`; not checked, every
# group empty), then exactly one non-empty group: a complete string without escapes or
# control characters, a literal, a bracket, a complete string with escapes (its value
# is what JSON.parse makes of it), or a string the text ends inside.
_TOKENS = re.compile(
    r'[ \t\n\r,:]+|("[^"\\\x00-\x1f]*")|([^{}\[\],:" \t\n\r]+)|([{\[])|([}\]])'
    r'|("[^"\\]*(?:\\.[^"\\]*)*")|(".*)',
    re.DOTALL,
)
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_NUMBER_START = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?", re.ASCII)


# The leaves of text orjson read to its end without a fault (a grammatical JSON prefix):
# a complete string without escapes (its body; the only group that can be empty), one with
# escapes, the string the text ends in (from its quote), a literal.
_PREFIX_LEAVES = re.compile(r'"([^"\\]*)"|("[^"\\]*(?:\\.[^"\\]*)*")|(".*)|([^{}\[\],:" \t\n\r]+)', re.DOTALL)


def _leaves_of_valid_prefix(text: str, at: int) -> JsonPrefix:
    """`json_prefix_of` for text orjson read to its end with no fault.

    orjson's "unexpected end of data" means every token before the cut is
    valid JSON in a valid place (strings, escapes, numbers, matching
    closers) and the outermost value never closes, so the token scan can
    only collect leaves: the strings, numbers and booleans, with the last
    token (the one the text ends inside) left out or read for its words.
    """
    leaves: list[Any] = []
    tokens = _PREFIX_LEAVES.findall(text, at)
    last = len(tokens) - 1
    for i, (plain, escaped, cut, literal) in enumerate(tokens):
        if literal:
            if i == last and text.endswith(literal):
                break  # cut inside a literal (a valid start, or orjson would have said so)
            if literal == "true" or literal == "false":
                leaves.append(literal)
            elif literal != "null":
                if len(literal) <= 15 and literal.isdigit():
                    leaves.append(literal)
                else:
                    leaves.append(_number_leaf(literal))
        elif escaped:
            leaves.append(parse_json(escaped))
        elif cut:
            return JsonPrefix(tuple(leaves), _whole_words(cut[1:]))
        else:
            leaves.append(plain)
    return JsonPrefix(tuple(leaves))


def _is_literal_start(literal: str) -> bool:
    return (
        "true".startswith(literal)
        or "false".startswith(literal)
        or "null".startswith(literal)
        or _NUMBER_START.fullmatch(literal) is not None
    )


@lru_cache(maxsize=4096)
def _number_leaf(literal: str) -> str | None:
    """A complete JSON number literal as `String(Number(literal))`; None for anything else."""
    if _JSON_NUMBER.fullmatch(literal) is None:
        return None
    return js_number_to_string(float(literal))


def _whole_words(body: str) -> str | None:
    last_space = body.rfind(" ")
    if last_space < 0:
        return None
    try:
        words = parse_json('"' + body[:last_space] + '"')
    except JSONError:
        return None
    if type(words) is not str or js_trim(words) == "":
        return None
    return words


def json_prefix_of(text: str) -> JsonPrefix | None:
    """§7: JSON text cut short, read token by token; None when it is not that."""
    if type(text) is not str:
        if text is None or text is UNDEFINED:
            raise _not_a_string(text, "length")
        return None
    n = len(text)
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    if at >= n or text[at] not in "{[":
        return None
    outcome = orjson_outcome(text[at:] if at else text)
    if outcome.ok or outcome.msg.startswith(_AFTER_DOCUMENT):
        return None  # the value closes: no JSON cut short
    if outcome.msg.startswith(_END_OF_DATA):
        return _leaves_of_valid_prefix(text, at)
    leaves: list[Any] = []
    open_: list[Any] = []
    tokens = _TOKENS.findall(text, at)
    last = len(tokens) - 1
    for i, (plain, literal, opener, closer, escaped, cut) in enumerate(tokens):
        if plain:
            leaves.append(plain[1:-1])
        elif literal:
            if i == last:  # the text ends inside this literal: it may be cut
                return JsonPrefix(tuple(leaves)) if _is_literal_start(literal) else None
            if literal == "true" or literal == "false":
                leaves.append(literal)
            elif literal != "null":
                leaf = _number_leaf(literal)
                if leaf is None:
                    return None
                leaves.append(leaf)
        elif opener:
            open_.append("}" if opener == "{" else "]")
        elif closer:
            if not open_ or open_.pop() != closer or not open_:
                return None
        elif escaped:
            try:
                leaves.append(parse_json(escaped))
            except JSONError:
                return None
        elif cut:  # the text ends inside this string: its whole words are text
            return JsonPrefix(tuple(leaves), _whole_words(cut[1:]))
    return JsonPrefix(tuple(leaves))

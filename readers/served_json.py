"""The served-JSON readers: the JSON inside a served result that is not one JSON value.

Pattern: two pure readers over the JSON grammar (READERS.md §6, §7).
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
from typing import Any

from .jsonparse import JSONError, parse_json
from .jsvalues import UNDEFINED, JSTypeError, js_number_to_string, js_trim

__all__ = ["LeadingJson", "JsonPrefix", "leading_json_values", "json_prefix_of"]


@dataclass(frozen=True, slots=True)
class LeadingJson:
    """`leadingJsonValues`: the values the text opens with, and the text after them."""

    values: tuple
    rest: str

    def to_upstream(self) -> dict:
        """The upstream JSON shape `{values, rest}`."""
        return {"values": list(self.values), "rest": self.rest}


@dataclass(frozen=True, slots=True)
class JsonPrefix:
    """`jsonPrefixOf`: the complete leaves, and the whole words of a cut string."""

    leaves: tuple
    words: str | None = None

    def to_upstream(self) -> dict:
        """The upstream JSON shape `{leaves, words?}`."""
        out: dict = {"leaves": list(self.leaves)}
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


def leading_json_values(text: str) -> LeadingJson:
    """§6: the complete JSON values `text` opens with, and `rest` after them.

    Raises `JSTypeError` for a non-string, as the reference does.
    """
    if type(text) is not str:
        raise _not_a_string(text, "length")
    values: list = []
    n = len(text)
    at = _SPACE.match(text, 0).end()
    while at < n and (text[at] == "{" or text[at] == "["):
        end = _value_end(text, at)
        if end < 0:
            break
        try:
            values.append(parse_json(text[at:end]))
        except JSONError:
            break
        at = _SPACE.match(text, end).end()
    return LeadingJson(tuple(values), text[at:])


_LITERAL = re.compile(r'[^{}\[\],:" \t\n\r]+')
_SKIP = re.compile(r"[ \t\n\r,:]+")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_NUMBER_START = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?", re.ASCII)
_CLOSER = {"{": "}", "[": "]"}
# A complete string literal without escapes or control characters: its value is its body.
_PLAIN_LITERAL = re.compile(r'"([^"\\\x00-\x1f]*)"')


def _is_literal_start(literal: str) -> bool:
    return (
        "true".startswith(literal)
        or "false".startswith(literal)
        or "null".startswith(literal)
        or _NUMBER_START.fullmatch(literal) is not None
    )


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
    at = _SPACE.match(text, 0).end()
    if at >= n or text[at] not in "{[":
        return None
    leaves: list = []
    open_: list = []
    while at < n:
        ch = text[at]
        if ch in " \t\n\r,:":
            at = _SKIP.match(text, at).end()
        elif ch == "{" or ch == "[":
            open_.append(_CLOSER[ch])
            at += 1
        elif ch == "}" or ch == "]":
            if not open_ or open_.pop() != ch or not open_:
                return None
            at += 1
        elif ch == '"':
            plain = _PLAIN_LITERAL.match(text, at)
            if plain is not None:
                leaves.append(plain.group(1))
                at = plain.end()
                continue
            s = _STRING_TAIL.match(text, at + 1)
            if s is None:
                words = _whole_words(text[at + 1 :])
                return JsonPrefix(tuple(leaves), words)
            try:
                leaves.append(parse_json(text[at : s.end()]))
            except JSONError:
                return None
            at = s.end()
        else:
            m = _LITERAL.match(text, at)
            end = m.end()
            literal = m.group(0)
            if end == n:
                return JsonPrefix(tuple(leaves)) if _is_literal_start(literal) else None
            if literal == "true" or literal == "false":
                leaves.append(literal)
            elif _JSON_NUMBER.fullmatch(literal) is not None:
                leaves.append(js_number_to_string(float(literal)))
            elif literal != "null":
                return None
            at = end
    return JsonPrefix(tuple(leaves))

"""`JSON.parse`, exactly, in Python: orjson first, an exact fallback second.

Pattern: one parser with a fast path and an exact path (docs/readers.md T3, T14).
Role:    every JSON text the readers parse goes through `parse_json`; the
         pipeline parses event files with it too, so a result value reads the
         same whether it came from a file or from a string inside one.
Emits:   nothing; no I/O.

orjson is strict JSON and agrees with `JSON.parse` on everything it accepts.
It refuses some text that JavaScript accepts — nesting deeper than 1,024,
numbers beyond the double range (`1e400` is `Infinity` in JS), lone surrogate
escapes (`"\\ud800"`), raw lone surrogates in a Python string — and for those
the fallback below decides: an iterative (non-recursive) parser of the JSON
grammar with JavaScript's results. Integers come back as `int` when orjson
reads them and as `int`/`float` from the fallback; both stand for one JS
double (see `readers.jsvalues`).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import orjson

__all__ = ["JSONError", "parse_json", "parse_json_kept", "take_parsed", "NOT_KEPT", "known_bad", "may_be_js_json", "orjson_outcome", "last_outcome", "remember_failure", "Outcome"]


class JSONError(ValueError):
    """The text is not one JSON value (JavaScript's `SyntaxError`)."""


class Outcome(NamedTuple):
    """How orjson fared on a text: ok, or the first fault's message and position."""

    text: Any
    ok: bool
    msg: str
    pos: int


_NO_OUTCOME = Outcome(None, False, "", 0)
# The last outcome, by identity of the text object: the readers ask about the
# same served text several times per call (parse, leading values, prefix).
# One slot, replaced whole (a tuple), so concurrent threads only ever see a
# complete outcome; values are never kept, only whether and where it failed.
_last: Outcome = _NO_OUTCOME


def orjson_outcome(text: str) -> Outcome:
    """orjson's verdict on `text` (memoized for the last text object asked about)."""
    last = _last
    if last.text is text:
        return last
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return remember_failure(text, exc)
    return _remember(text, True)


def known_bad(text: Any) -> bool:
    """True when orjson already refused this very text object for a fault JavaScript refuses too."""
    last = _last
    return last.text is text and not last.ok and not may_be_js_json(last.msg)


def last_outcome(text: Any) -> Outcome | None:
    """The remembered verdict on this very text object, or None."""
    last = _last
    return last if last.text is text else None


def remember_failure(text: Any, exc: orjson.JSONDecodeError) -> Outcome:
    """Remember (and return) orjson's refusal of `text`."""
    return _remember(text, False, exc.msg, exc.pos)


def _remember(text: Any, ok: bool, msg: str = "", pos: int = 0) -> Outcome:
    """Record orjson's verdict on `text` (strings only: bytes are never asked about twice)."""
    global _last
    out = Outcome(text, ok, msg, pos)
    if type(text) is str:
        _last = out
    return out


# A value parsed for a reader that never hands it out (`read_emptiness`,
# `declared_by_value`), kept for ONE later taker of the same text object
# (`leading_json_values`, which returns it): taking removes it (an atomic
# `dict.pop`), so a value is never shared by two callers.
_kept: dict[int, tuple[str, Any]] = {}


def parse_json_kept(text: str) -> Any:
    """`parse_json`, keeping the value for one later `take_parsed(text)`."""
    value = parse_json(text)
    if type(text) is str and len(text) >= 64:
        _kept.clear()
        _kept[id(text)] = (text, value)
    return value


def take_parsed(text: str) -> Any:
    """The value `parse_json_kept` made of this very text object (once), or `_NOT_KEPT`."""
    item = _kept.pop(id(text), None)
    if item is None or item[0] is not text:
        return NOT_KEPT
    return item[1]


NOT_KEPT: Any = object()


def parse_json(text: str | bytes) -> Any:
    """Parse one JSON value the way `JSON.parse` does, or raise `JSONError`."""
    if known_bad(text):
        raise JSONError(_last.msg)
    try:
        value = orjson.loads(text)
        _remember(text, True)
        return value
    except orjson.JSONDecodeError as exc:
        remember_failure(text, exc)
        # orjson reports the FIRST fault left to right. Only these faults are
        # text JavaScript accepts; any other one JS refuses too, at the same place.
        if not may_be_js_json(str(exc)):
            raise JSONError(str(exc)) from None
    except RecursionError:  # pragma: no cover - orjson caps depth itself
        pass
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONError(f"invalid UTF-8: {exc}") from None
        if text.startswith("\ufeff"):
            raise JSONError("a byte order mark is not JSON")
    return _ExactParser(text).parse()


def may_be_js_json(msg: str) -> bool:
    """An orjson fault that JavaScript's JSON.parse may accept (T3): the exact parser decides."""
    return "surrogate" in msg or "infinity" in msg or "depth limit" in msg or "UTF-8" in msg or "ecursion" in msg


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f]*')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}

_ARRAY = 0
_OBJECT = 1


class _ExactParser:
    """The JSON grammar, iteratively, with `JSON.parse`'s values."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> JSONError:
        return JSONError(f"{what} at position {self.pos}")

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string

    def parse(self) -> Any:
        self.skip_ws()
        value = self.parse_value()
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the value")
        return value

    def parse_string(self) -> str:
        # self.text[self.pos] == '"'
        text = self.text
        pos = self.pos + 1
        parts: list[str] = []
        while True:
            m = _PLAIN_STRING.match(text, pos)
            parts.append(m.group(0))  # type: ignore[union-attr]  # the pattern matches the empty string
            pos = m.end()  # type: ignore[union-attr]  # the pattern matches the empty string
            if pos >= len(text):
                self.pos = pos
                raise self.fail("unterminated string")
            ch = text[pos]
            if ch == '"':
                self.pos = pos + 1
                break
            if ch != "\\":
                self.pos = pos
                raise self.fail("control character in string")
            esc = text[pos + 1 : pos + 2]
            if esc == "u":
                hx = _HEX4.match(text, pos + 2)
                if hx is None:
                    self.pos = pos
                    raise self.fail("bad unicode escape")
                parts.append(chr(int(hx.group(0), 16)))
                pos += 6
            elif esc in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[esc])
                pos += 2
            else:
                self.pos = pos
                raise self.fail("bad escape")
        s = "".join(parts)
        if any("\ud800" <= c <= "\udfff" for c in s):
            s = _join_surrogate_pairs(s)
        return s

    def parse_scalar(self) -> Any:
        text = self.text
        pos = self.pos
        ch = text[pos] if pos < len(text) else ""
        if ch == '"':
            return self.parse_string()
        if text.startswith("true", pos):
            self.pos = pos + 4
            return True
        if text.startswith("false", pos):
            self.pos = pos + 5
            return False
        if text.startswith("null", pos):
            self.pos = pos + 4
            return None
        m = _NUMBER.match(text, pos)
        if m is None or m.end() == pos:
            raise self.fail("unexpected character")
        self.pos = m.end()
        lit = m.group(0)
        if m.group(1) is None and m.group(2) is None and len(lit) <= 16:
            return int(lit)
        return float(lit)  # correctly rounded; overflow gives ±inf, like JS

    def parse_value(self) -> Any:
        text = self.text
        n = len(text)
        # Each frame: [kind, container, pending_key]
        stack: list[list[Any]] = []
        value: Any = None
        while True:
            self.skip_ws()
            if self.pos >= n:
                raise self.fail("unexpected end")
            ch = text[self.pos]
            if ch == "[":
                self.pos += 1
                self.skip_ws()
                if self.pos < n and text[self.pos] == "]":
                    self.pos += 1
                    value = []
                else:
                    stack.append([_ARRAY, [], None])
                    continue
            elif ch == "{":
                self.pos += 1
                self.skip_ws()
                if self.pos < n and text[self.pos] == "}":
                    self.pos += 1
                    value = {}
                else:
                    if self.pos >= n or text[self.pos] != '"':
                        raise self.fail("expected a key")
                    key = self.parse_string()
                    self.skip_ws()
                    if self.pos >= n or text[self.pos] != ":":
                        raise self.fail("expected ':'")
                    self.pos += 1
                    stack.append([_OBJECT, {}, key])
                    continue
            else:
                value = self.parse_scalar()
            # A complete value: hand it to the enclosing containers.
            while True:
                if not stack:
                    return value
                frame = stack[-1]
                if frame[0] == _ARRAY:
                    frame[1].append(value)
                else:
                    frame[1][frame[2]] = value
                self.skip_ws()
                if self.pos >= n:
                    raise self.fail("unexpected end")
                ch = text[self.pos]
                close = "]" if frame[0] == _ARRAY else "}"
                if ch == ",":
                    self.pos += 1
                    if frame[0] == _OBJECT:
                        self.skip_ws()
                        if self.pos >= n or text[self.pos] != '"':
                            raise self.fail("expected a key")
                        frame[2] = self.parse_string()
                        self.skip_ws()
                        if self.pos >= n or text[self.pos] != ":":
                            raise self.fail("expected ':'")
                        self.pos += 1
                    break
                if ch == close:
                    self.pos += 1
                    value = stack.pop()[1]
                    continue
                raise self.fail("expected ',' or a closing bracket")


def _join_surrogate_pairs(s: str) -> str:
    """Combine escaped surrogate pairs into one code point, as `json.loads` does.

    JS keeps them as two UTF-16 code units; both spell the same character.
    Lone surrogates stay as they are (JS strings hold them, T13).
    """
    out: list[str] = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if "\ud800" <= c <= "\udbff" and i + 1 < n and "\udc00" <= s[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(s[i + 1]) - 0xDC00)))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)

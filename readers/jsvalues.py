"""JavaScript value semantics for the readers, in Python.

Pattern: small pure helpers, no state.
Role:    the one place where docs/readers.md §9's JS-vs-Python traps are settled:
         JS trim (T1), doubles (T4, T5), booleans
         that are not numbers (T6), JS truthiness (T9), own keys (T10),
         integer-like key order (T11) and `JSON.stringify` output (T13).
         Every reader module asks here instead of re-deriving a rule.
Emits:   nothing; no I/O, no clock.

Values are the ones our JSON parser (`readers.jsonparse`) makes: `dict`,
`list`, `str`, `int`/`float` (both stand for one JS double), `bool`, `None`
(JSON null) and `UNDEFINED` (a missing argument or key).
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeGuard

__all__ = [
    "UNDEFINED",
    "JSTypeError",
    "js_trim",
    "is_js_number",
    "is_safe_integer",
    "js_truthy",
    "js_strict_equal",
    "js_deep_equal",
    "js_number_to_string",
    "js_property_key",
    "to_js_json",
    "js_ordered_keys",
]


class _Undefined:
    """JavaScript's `undefined`: a missing argument, key or answer."""

    _instance: "_Undefined | None" = None

    def __new__(cls) -> "_Undefined":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Any = _Undefined()


class JSTypeError(TypeError):
    """A TypeError the reference itself throws (name and message as JS has them)."""

    js_name = "TypeError"


# T1: what `String.prototype.trim` removes (WhiteSpace + LineTerminator).
_JS_TRIM_CHARS = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """`String.prototype.trim`: strips U+FEFF, keeps U+001C–U+001F and U+0085."""
    return text.strip(_JS_TRIM_CHARS)


def is_js_number(value: Any) -> TypeGuard[int | float]:
    """`typeof value === 'number'`: ints and floats, never booleans (T6)."""
    t = type(value)
    return t is int or t is float


_MAX_SAFE = 2**53 - 1


def _as_double(value: int | float) -> float:
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def is_safe_integer(value: Any) -> bool:
    """`Number.isSafeInteger`, on the double the value stands for (T4)."""
    if not is_js_number(value):
        return False
    d = _as_double(value)
    if math.isinf(d) or math.isnan(d):
        return False
    return d == math.floor(d) and abs(d) <= _MAX_SAFE


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness (T9): `[]` and `{}` are truthy, `NaN` is not."""
    if value is None or value is UNDEFINED or value is False:
        return False
    if value is True:
        return True
    t = type(value)
    if t is int:
        return value != 0
    if t is float:
        return not (value == 0 or math.isnan(value))
    if t is str:
        return value != ""
    return True


def js_strict_equal(a: Any, b: Any) -> bool:
    """`a === b` for JSON values (objects compare by identity)."""
    if a is b:
        return True
    if is_js_number(a) and is_js_number(b):
        return _as_double(a) == _as_double(b)
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return a == b
    return False


def js_deep_equal(a: Any, b: Any) -> bool:
    """Structural equality of two JSON values with JS numbers (iterative)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if is_js_number(x) and is_js_number(y):
            if _as_double(x) != _as_double(y):
                return False
            continue
        tx, ty = type(x), type(y)
        if tx is not ty:
            return False
        if tx is dict:
            if len(x) != len(y) or x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif tx is list:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif x != y:
            return False
    return True


def js_number_to_string(value: int | float) -> str:
    """`String(n)` for a JS double (ECMAScript Number::toString, T4/T5)."""
    if type(value) is int and -_MAX_SAFE <= value <= _MAX_SAFE:
        return str(value)
    d = _as_double(value)
    if d.is_integer() and abs(d) <= _MAX_SAFE:
        return str(int(d))  # also -0 → "0"
    return _double_to_string(d)


def _double_to_string(d: float) -> str:
    if d != d:
        return "NaN"
    if d == 0:
        return "0"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    sign = "-" if d < 0 else ""
    r = repr(abs(d))
    # repr gives the shortest round-trip digits; split them into digits and exponent.
    mantissa, _, exp = r.partition("e")
    exp_n = int(exp) if exp else 0
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = (int_part + frac_part).lstrip("0")
    # value = 0.digits × 10^n
    lead_zeros = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    n = len(int_part) + exp_n - lead_zeros
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e >= 0 else "-") + str(abs(e))
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + es
    return sign + out


def js_property_key(value: Any) -> str:
    """`ToPropertyKey` for the values a JSON context can hold (T18)."""
    if type(value) is str:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if is_js_number(value):
        return js_number_to_string(value)
    if type(value) is list:
        return ",".join(
            "" if v is None or v is UNDEFINED else js_property_key(v) for v in value
        )
    return "[object Object]"


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_MAX_INDEX = 4294967294


def _is_array_index(key: str) -> bool:
    return (
        len(key) <= 10
        and _ARRAY_INDEX.fullmatch(key) is not None
        and int(key) <= _MAX_INDEX
    )


def js_ordered_keys(obj: dict[str, Any]) -> list[Any]:
    """Own keys in JS enumeration order (T11): array indices first, ascending."""
    keys = list(obj)
    idx = [k for k in keys if k[:1].isdigit() and _is_array_index(k)]
    if not idx:
        return keys
    rest = [k for k in keys if not (k[:1].isdigit() and _is_array_index(k))]
    idx.sort(key=int)
    return idx + rest


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    esc = _ESCAPES.get(ch)
    if esc is not None:
        return esc
    return "\\u%04x" % ord(ch)


def _quote(s: str) -> str:
    if _NEEDS_ESCAPE.search(s) is None:
        return '"' + s + '"'
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def _number_json(value: int | float) -> str:
    d = _as_double(value)
    if math.isinf(d) or d != d:
        return "null"
    if type(value) is int and -_MAX_SAFE <= value <= _MAX_SAFE:
        return str(value)
    return js_number_to_string(d)


_END = object()


def to_js_json(value: Any) -> str:
    """`JSON.stringify(value)` with JS numbers, key order and escapes (iterative).

    A top-level `UNDEFINED` gives the string ``"undefined"`` (JSON.stringify
    itself would return undefined); inside objects `UNDEFINED` members are
    left out and inside lists written as ``null``, as JS does.
    """
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if v is _END:
            out.append(stack.pop())
            continue
        if type(v) is tuple and len(v) == 2 and v[0] is _END:
            out.append(v[1])
            continue
        t = type(v)
        if t is str:
            out.append(_quote(v))
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif v is None or v is UNDEFINED:
            out.append("null" if v is None or out else "undefined")
        elif t is int or t is float:
            out.append(_number_json(v))
        elif t is list or t is tuple:
            out.append("[")
            items: list[Any] = [(_END, "]")]
            for i in range(len(v) - 1, -1, -1):
                item = v[i]
                items.append(None if item is UNDEFINED else item)
                if i:
                    items.append((_END, ","))
            stack.extend(items)
        elif t is dict:
            out.append("{")
            parts: list[Any] = []
            first = True
            for k in js_ordered_keys(v):
                item = v[k]
                if item is UNDEFINED:
                    continue
                if not first:
                    parts.append((_END, ","))
                parts.append((_END, _quote(k) + ":"))
                parts.append(item)
                first = False
            parts.append((_END, "}"))
            stack.extend(reversed(parts))
        elif hasattr(v, "to_upstream"):
            stack.append(v.to_upstream())
        else:
            raise TypeError(f"not a JSON value: {type(v).__name__}")
    return "".join(out)

"""Fuzz target: the pure readers on arbitrary text and JSON never raise.

Run (atheris, libFuzzer options pass through):

    python -m fuzz.fuzz_readers -max_total_time=300 -artifact_prefix=/tmp/fuzz-readers/ [CORPUS_DIR]

Without atheris, `python -m fuzz.fuzz_readers --hypothesis SECONDS` runs the same
check under hypothesis for that long. `check(data)` is what both call and what
`tests/test_reliability.py` replays for every file in `tests/data/regressions/readers-*`.

The input's first byte picks how the rest becomes text (UTF-8 with replacement, or
UTF-16 code units, lone surrogates included) and which `rowsAt` and door to use.
Every string reader is called on the text; when the text parses as JSON the value
readers are called on the value. Any exception is a finding: upstream throws only
for a non-string text or a null context, and neither is produced here.
"""

from __future__ import annotations

import os
import sys

from fuzz._common import fuzz_main, load_targets

def _imports():
    from footprint_audit.readers import (
        JSONError,
        declared_by_value,
        json_prefix_of,
        leading_json_values,
        parse_json,
        parse_maybe_json,
        read_absence,
        read_coverage_ledger,
        read_emptiness,
        read_paging,
        read_resolved,
        read_result,
    )
    from footprint_audit.transforms.read.reading_rows import served_columns

    return locals()


R = load_targets(_imports, __name__ == "__main__")

ROWS_AT = (None, "hosts", "rows", "items", "a")
DOORS = (
    None,
    {"absent": False, "bounded": False},
    {"absent": True, "bounded": False},
    {"absent": False, "bounded": True},
    {"absent": True, "bounded": True, "described": {"kind": "table", "rows": []}},
    {"absent": False, "bounded": False, "described": {"facts": [], "series": [], "edges": []}},
)


def _text(selector: int, payload: bytes) -> str:
    if selector & 1 and len(payload) % 2 == 0:
        return payload.decode("utf-16-le", "surrogatepass")
    return payload.decode("utf-8", "replace")


def _kept_out(value):
    return value in ("[REDACTED]", "REDACTED")


def check(data: bytes) -> None:
    """Call every reader on the text `data` stands for; raises only on a finding."""
    if not data:
        return
    selector, payload = data[0], data[1:]
    text = _text(selector, payload)
    rows_at = ROWS_AT[(selector >> 1) % len(ROWS_AT)]
    door = DOORS[(selector >> 4) % len(DOORS)]
    kept_out = _kept_out if selector & 0x80 else None

    R["leading_json_values"](text)
    R["json_prefix_of"](text)
    R["read_result"](text)
    R["served_columns"](text)
    R["read_emptiness"](text, rows_at=rows_at, door=door, kept_out=kept_out)
    value = R["parse_maybe_json"](text)
    try:
        value = R["parse_json"](text)
    except R["JSONError"]:
        return
    R["read_emptiness"](value, rows_at=rows_at, door=door, kept_out=kept_out)
    R["declared_by_value"](value)
    R["read_absence"](value)
    R["read_coverage_ledger"](value)
    if type(value) is dict:
        R["read_paging"](value)
        R["read_resolved"](value)


def main(argv: list[str]) -> None:
    fuzz_main(argv, check, _hypothesis)


def _hypothesis(seconds: float) -> None:
    import time

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    deadline = time.monotonic() + seconds
    json_text = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
            st.sampled_from(["hosts", "rows", "kind", "absent", "paging", "resolved", "a"]), inner, max_size=4),
    ).map(lambda v: __import__("json").dumps(v).encode())

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.integers(0, 255), st.binary() | json_text)
    def run(selector: int, payload: bytes) -> None:
        check(bytes([selector]) + payload)

    while time.monotonic() < deadline:  # batches of 200 fresh examples until the budget is spent
        run()


if __name__ == "__main__":
    main(sys.argv)

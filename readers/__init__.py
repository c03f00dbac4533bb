"""footprint-audit's pure readers: the upstream agentfootprint readers, ported exactly.

Pattern: pure readers (no Beam, no I/O, no clock; standard library + orjson).
Role:    the bottom layer. `transforms/apply_readers` asks them per call; the
         conformance harness (`python -m footprint_audit.readers.cases`) asks them per case.
Emits:   nothing.

Every reader gives the upstream TypeScript answer, JavaScript semantics
included (docs/readers.md §9); readings are frozen dataclasses whose
`to_upstream()` gives the upstream camelCase JSON shape.
"""

from .emptiness import MAX_BOUND_DEPTH, EmptinessReading, read_emptiness
from .evidence import ResultReading, absence_evidence_projection, read_result
from .jsonparse import JSONError, parse_json
from .jsvalues import UNDEFINED, JSTypeError, to_js_json
from .recognize import (
    ValueDeclaration,
    declared_by_value,
    is_artifact_ref,
    is_placed_tool_result,
    is_truncated_tool_result,
    parse_maybe_json,
    read_absence,
    read_coverage_ledger,
    rows_at_problem,
)
from .result_facts import (
    ResultFactError,
    mint_paging,
    mint_resolved,
    paging_problem,
    read_paging,
    read_resolved,
    resolved_problem,
)
from .served_json import JsonPrefix, LeadingJson, json_prefix_of, leading_json_values

__all__ = [
    "MAX_BOUND_DEPTH",
    "EmptinessReading",
    "JSONError",
    "JSTypeError",
    "JsonPrefix",
    "LeadingJson",
    "ResultFactError",
    "ResultReading",
    "UNDEFINED",
    "ValueDeclaration",
    "absence_evidence_projection",
    "declared_by_value",
    "is_artifact_ref",
    "is_placed_tool_result",
    "is_truncated_tool_result",
    "json_prefix_of",
    "leading_json_values",
    "mint_paging",
    "mint_resolved",
    "paging_problem",
    "parse_json",
    "parse_maybe_json",
    "read_absence",
    "read_coverage_ledger",
    "read_emptiness",
    "read_paging",
    "read_resolved",
    "read_result",
    "resolved_problem",
    "rows_at_problem",
    "to_js_json",
]

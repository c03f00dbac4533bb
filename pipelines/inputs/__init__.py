"""The job's input files: what `--input` names, and their listing on the workers.

The listing's Beam steps are imported when first used, so that the launcher's light path
(`pipelines.reassess.args`, the output's lock) names paths without importing Beam.
"""

from typing import TYPE_CHECKING, Any

from .patterns import check_inputs, expand_inputs, file_key, is_local

if TYPE_CHECKING:
    from .listing import ListInputs, SpreadFiles, TOTAL_BYTES


def __getattr__(name: str) -> Any:
    if name in ("ListInputs", "SpreadFiles", "TOTAL_BYTES"):
        from . import listing

        return getattr(listing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["ListInputs", "SpreadFiles", "TOTAL_BYTES", "check_inputs", "expand_inputs", "file_key", "is_local"]

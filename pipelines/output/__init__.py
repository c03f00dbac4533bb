"""The output folder: ownership, checks, staging and publishing and the manifest of the files read.

Each name is imported from its module when first used: the launcher's light path takes the
output's lock (`target`, `ownership`, `preflight`) before Beam is imported.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .manifest import MANIFEST_TABLE, build_note, duplicate_letters, duplicates_of, file_sha256, read_manifest, stage_manifest
    from .ownership import MARKER
    from .preflight import check_outside_tables
    from .publish import summarize, summary_figures
    from .target import OutputTarget, spill_folder

_HOMES = {
    **dict.fromkeys(["MANIFEST_TABLE", "build_note", "duplicate_letters", "duplicates_of", "file_sha256", "read_manifest",
                     "stage_manifest"], "manifest"),
    "MARKER": "ownership", "check_outside_tables": "preflight", "summarize": "publish", "summary_figures": "publish",
    "OutputTarget": "target", "spill_folder": "target",
}
__all__ = [
    "MANIFEST_TABLE", "MARKER", "OutputTarget", "build_note", "check_outside_tables", "duplicate_letters", "duplicates_of",
    "file_sha256", "read_manifest", "spill_folder", "stage_manifest", "summarize", "summary_figures",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

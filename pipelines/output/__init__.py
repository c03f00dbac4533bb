"""The output folder: ownership, checks, staging and publishing and the manifest of the files read."""

from .manifest import MANIFEST_TABLE, build_note, duplicate_letters, duplicates_of, file_sha256, read_manifest, stage_manifest
from .ownership import MARKER
from .publish import summarize, summary_figures
from .preflight import check_outside_tables
from .target import OutputTarget, spill_folder

__all__ = [
    "MANIFEST_TABLE", "MARKER", "OutputTarget", "build_note", "check_outside_tables", "duplicate_letters", "duplicates_of", "file_sha256",
    "read_manifest", "spill_folder", "stage_manifest", "summarize", "summary_figures",
]

"""The job's input files: what `--input` names, and their listing on the workers."""

from .listing import ListInputs, SpreadFiles, TOTAL_BYTES
from .patterns import check_inputs, expand_inputs, file_key, is_local

__all__ = ["ListInputs", "SpreadFiles", "TOTAL_BYTES", "check_inputs", "expand_inputs", "file_key", "is_local"]

"""How many files a table is written as: one per `BYTES_PER_SHARD` of input, deterministically.

Pattern: one constant and one pure function.
Role:    the writer owns its shards: the local runner's plans (`pipelines.local_runner.plans`) and the
         benchmarks ask here how many readings files a job reading so many bytes writes.
"""

from __future__ import annotations

import math

__all__ = ["BYTES_PER_SHARD", "shards_for"]

#: Input bytes per readings shard (more input → more output files, deterministically).
BYTES_PER_SHARD = 256 << 20


def shards_for(total_bytes: int) -> int:
    """The readings files of a job reading `total_bytes`: one per `BYTES_PER_SHARD`, 1 to 64."""
    return max(1, min(64, math.ceil(total_bytes / BYTES_PER_SHARD)))

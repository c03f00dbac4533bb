"""Arrow schema of the `manifest` table: which input files an output has read, and with what.

Pattern: declarations only.
Role:    `reassess` writes one row per input file it read into `OUT/manifest/`,
         published with the tables; `reassess --incremental` compares the files
         it is given with it (path, size, content hash) and reads only the new
         or changed ones (refusing settings that change verdicts when they
         differ from those recorded: declarations, reader version, max event
         bytes); `diff` and `report` show the reader version and the
         declarations it records.
Emits:   nothing.
"""

from __future__ import annotations

import pyarrow as pa

from .tables import SCHEMA_VERSION

#: The table's folder under the output directory.
MANIFEST_TABLE = "manifest"

MANIFEST = pa.schema(
    [
        # The input file as the other tables name it (`source_file`).
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        # sha256 of the file's bytes as stored (compressed files hashed compressed); null when it could not be read.
        pa.field("sha256", pa.string()),
        # The job that last read the file: 1 for a full run, then 2, 3, … for each incremental job that read files.
        pa.field("increment", pa.int32(), nullable=False),
        pa.field("reader_version", pa.string(), nullable=False),
        # The declarations the readings were made with: `{tool: rowsAt}` as JSON with sorted keys.
        pa.field("declarations", pa.string(), nullable=False),
        # The declarations file as it was named on the command line (null: none given).
        pa.field("declarations_file", pa.string()),
        # The `--max-event-bytes` the file was read with (null: an output written before it was recorded).
        pa.field("max_event_bytes", pa.int64()),
        # Not read: the same bytes as this source file, which is (a `duplicate-file` dead letter). Null: read.
        pa.field("duplicate_of", pa.string()),
        # The file's path in one form from any working folder (local: absolute and normalised), by which
        # `--incremental` knows it; null in outputs written before schema version 3.
        pa.field("path", pa.string()),
    ],
    metadata={b"footprint_audit.schema_version": SCHEMA_VERSION.encode()},
)

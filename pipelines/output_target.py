"""One job's output folder, from the checks before the pipeline runs to the publish or the clean-up.

Pattern: a small object the launcher drives: `open` → (pipeline writes into
         `staging`) → `publish` or `discard` → `close`.
Role:    a local output is checked (`preflight`), locked (`ownership.OutputLock`),
         cleared of what dead jobs left, given a staging folder with this job's
         owner note, and probed (create, write, rename) before anything is read;
         the tables are swapped in by `output.publish`, with the marker. A remote
         output (gs://, s3://, …) is probed and checked for foreign tables
         through Beam's `FileSystems`; its tables are written in place (no swap,
         no lock) and the marker is written after them.
"""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from . import output, preflight
from .errors import OutputError
from .inputs import is_local
from .ownership import MARKER, OutputLock, check_owned, marker_text

__all__ = ["OutputTarget"]


class OutputTarget:
    """The output folder of one job: `staging` is where its pipeline writes the tables."""

    def __init__(self, out: str, partition_by: str | None = None) -> None:
        self.out = out
        self.partition_by = partition_by
        self.local = is_local(out)
        self.staging = out
        self._lock: OutputLock | None = None
        self._staged = False

    def open(self) -> None:
        """Check, lock and prepare the output; raise `OutputError` (or `UsageError`) with one sentence."""
        preflight.check_output_name(self.out)
        if not self.local:
            preflight.check_remote_owned(self.out)
            preflight.probe_remote(self.out)
            return
        preflight.prepare_local(self.out, output.STAGING)
        lock = OutputLock(self.out)
        lock.acquire()
        self._lock = lock
        try:
            check_owned(self.out)
            output.clean_stale_staging(self.out)
            try:
                self.staging = output.new_staging(self.out)
            except OSError as exc:
                raise OutputError(f"--output {self.out} cannot be written ({exc.strerror})") from None
            self._staged = True
            preflight.probe_local(self.staging, self.out)
        except BaseException:
            self.discard()
            self.close()
            raise

    def publish(self) -> None:
        """Put the finished tables in place (local: the journalled swap; remote: the marker after them)."""
        if self.local:
            output.publish(self.staging, self.out, self.partition_by)
            self._staged = False
        else:
            with FileSystems.create(FileSystems.join(self.out, MARKER)) as f:
                f.write(marker_text().encode("utf-8"))

    def discard(self) -> None:
        """Remove this job's staging folder (nothing of it is published)."""
        if self._staged:
            output.discard(self.staging)
            self._staged = False

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

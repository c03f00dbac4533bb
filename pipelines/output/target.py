"""One job's output folder, from the checks before the pipeline runs to the publish or the clean-up.

Pattern: a small object the launcher drives: `lock` → `open` → (pipeline writes
         into `staging`) → `publish` or `discard` → `close`.
Role:    a local output is checked (`preflight`), locked (`ownership.OutputLock`),
         cleared of what dead jobs left, given a staging folder with this job's
         owner note, and probed (create, write, rename) before anything is read;
         the tables are swapped in by `output.publish`, with the marker. A remote
         output (gs://, s3://, …) is probed and checked for foreign tables
         through Beam's `FileSystems`, and staged under it too
         (`remote_output`): published after success, marker last (no lock).
         `lock` needs no Beam (the publish's modules are imported by the steps that
         use them): the launcher takes a local output's lock before Beam's import,
         so a second job on it is refused at once.
"""

from __future__ import annotations

import os
import tempfile

from footprint_audit.pipelines.inputs import is_local
from footprint_audit.pipelines.launch import OutputError, deferred_interrupts

from . import preflight
from .ownership import STAGING, OutputLock, check_owned

__all__ = ["OutputTarget", "spill_folder"]


class OutputTarget:
    """The output folder of one job: `staging` is where its pipeline writes the tables."""

    def __init__(self, out: str, partition_by: str | None = None) -> None:
        self.out = out
        self.partition_by = partition_by
        self.local = is_local(out)
        self.staging = out
        self._lock: OutputLock | None = None
        self._staged = False
        self._created: str | None = None  # the topmost folder of `out` this job made, removed if nothing is published

    def lock(self) -> None:
        """Check the output's name and take a local output's lock (creating the folder if needed; idempotent);
        raise `OutputError` (or `UsageError`) with one sentence."""
        preflight.check_output_name(self.out)
        if not self.local or self._lock is not None:
            return
        self._created = preflight.first_missing(self.out)
        preflight.prepare_local(self.out, STAGING)
        with deferred_interrupts():  # a lock taken is a lock recorded, for `close` to release
            lock = OutputLock(self.out)
            lock.acquire()
            self._lock = lock

    def open(self) -> None:
        """Lock, check and prepare the output; raise `OutputError` (or `UsageError`) with one sentence."""
        from . import publish as output
        from . import remote as remote_output

        self.lock()
        if not self.local:
            preflight.check_remote(self.out)
            self.staging = remote_output.new_staging(self.out)
            self._staged = True
            return
        try:
            check_owned(self.out)
            output.clean_stale_staging(self.out)
            try:
                with deferred_interrupts():  # a staging folder made is one recorded, for `discard` to remove
                    self.staging = output.new_staging(self.out)
                    self._staged = True
            except OSError as exc:
                raise OutputError(f"--output {self.out} cannot be written ({exc.strerror})") from None
            preflight.probe_local(self.staging, self.out)
        except BaseException:
            self.discard()
            self.close()
            raise

    def publish(self) -> None:
        """Put the finished tables in place (local: the journalled swap; remote: renames, the marker after them)."""
        from . import publish as output
        from . import remote as remote_output

        if self.local:
            output.publish(self.staging, self.out, self.partition_by)
            self._created = None
        else:
            remote_output.publish(self.staging, self.out)
        self._staged = False

    def discard(self) -> None:
        """Remove this job's staging folder (nothing of it is published)."""
        if self._staged:
            from . import publish as output
            from . import remote as remote_output

            (output.discard if self.local else remote_output.discard)(self.staging)
            self._staged = False

    def close(self) -> None:
        """Release the lock, and remove the folders this job made for an output it did not publish
        (each only when empty: never a file it did not write); idempotent."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        created, self._created, folder = self._created, None, os.path.abspath(self.out)
        while created is not None and os.path.commonpath([folder, created]) == created:
            try:
                os.rmdir(folder)
            except OSError:
                break
            folder = os.path.dirname(folder)


def spill_folder(target: OutputTarget) -> str:
    """A local folder for the job's spill files (`transforms.join.spilled`): in a local output's staging
    folder (removed with it, and by the next job when this one was killed), else a new temporary folder.
    The caller removes it when the job ends."""
    if target.local:
        return os.path.join(target.staging, "_spill")
    return tempfile.mkdtemp(prefix="footprint-audit-spill-")

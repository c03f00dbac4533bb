"""Before the pipeline runs: can this job use its output folder, and write in it?

Pattern: checks that raise one-sentence errors (`OutputError`, `UsageError`).
Role:    a problem with `--output` is found before anything is read: an empty
         name, a file where the folder should be, a file named `_staging`, tables
         this tool did not write, a folder that cannot be created, written or
         renamed in (a read-only mount, a full disk, a remote store that cannot be
         reached). The check creates, writes, renames and removes one small probe
         file, locally or through Beam's `FileSystems` for a remote output.
"""

from __future__ import annotations

import os
import threading
import uuid

from footprint_audit.pipelines.inputs import is_local
from footprint_audit.pipelines.launch import OutputError, UsageError
from footprint_audit.schemas.tables import TABLES

from footprint_audit.schemas.manifest import MANIFEST_TABLE

from .ownership import MARKER, STAGING, check_owned

__all__ = ["check_outside_tables", "check_output_name", "first_missing", "prepare_local", "probe_local", "check_remote"]

_PROBE = b"footprint-audit write probe\n"
REMOTE_ANSWER_SECONDS = 30  # a store that has not answered by then is refused (its client would retry for minutes)


def check_output_name(out: str) -> None:
    """Raise `UsageError` for an output that names no folder."""
    if not out.strip():
        raise UsageError("--output is empty: name the folder the tables go to")


def check_outside_tables(path: str, out: str, flag: str) -> None:
    """Raise `UsageError` when the file `path` would be in a folder of a local `out` that a publish replaces."""
    if not is_local(out):
        return
    inside = os.path.realpath(path)
    for folder in (*TABLES, MANIFEST_TABLE, STAGING):
        replaced = os.path.realpath(os.path.join(out, folder))
        if os.path.commonpath([inside, replaced]) == replaced:
            raise UsageError(f"{flag} {path} is in --output's {folder}/, which the job replaces: give a path outside it")


def first_missing(out: str) -> str | None:
    """The topmost folder of the path `out` that is not there yet (absolute), or None when `out` is there."""
    path, top = os.path.abspath(out), None
    while not os.path.lexists(path):
        path, top = os.path.dirname(path), path
    return top


def prepare_local(out: str, staging_name: str) -> None:
    """Create a local output folder if needed; raise `OutputError` when it cannot be used."""
    try:
        os.makedirs(out, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # `afile`, `afile/`, `afile/sub`: one sentence, however written
        raise UsageError(f"--output {out} is a file, not a folder: give a folder's path (it is created if needed)") from None
    except OSError as exc:
        raise OutputError(f"--output {out} cannot be created ({exc.strerror})") from None
    staging = os.path.join(out, staging_name)
    if os.path.lexists(staging) and not os.path.isdir(staging):
        raise OutputError(
            f"--output {out} holds a file named {staging_name}, where this tool keeps its staging folder: "
            "move it away, or choose another --output",
            exit_code=2,
        )


def probe_local(folder: str, out: str) -> None:
    """Create, write, rename and remove a probe file in `folder` (inside the output `out`)."""
    first = os.path.join(folder, f".probe-{uuid.uuid4().hex}")
    second = first + ".renamed"
    try:
        with open(first, "wb") as f:
            f.write(_PROBE)
            f.flush()
            os.fsync(f.fileno())
        os.replace(first, second)
        os.unlink(second)
    except OSError as exc:
        for path in (first, second):
            try:
                os.unlink(path)
            except OSError:
                pass
        raise OutputError(f"--output {out} cannot be written ({exc.strerror or exc})") from None


def check_remote(out: str, seconds: float = REMOTE_ANSWER_SECONDS) -> None:
    """`check_remote_owned`, then `probe_remote`, refused with one sentence when the store has not
    answered within `seconds` (a store's client retries an unreachable host for minutes)."""
    failed: list[BaseException] = []

    def check() -> None:
        try:
            check_remote_owned(out)
            probe_remote(out)
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=check, name="output-check", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise OutputError(f"--output {out} cannot be reached (no answer in {seconds:g} s: check the address, the network "
                          "and the credentials)")
    if failed:
        raise failed[0]


def probe_remote(out: str) -> None:
    """The same probe through Beam's `FileSystems` (gs://, s3://, …): any failure is one sentence."""
    from apache_beam.io.filesystems import FileSystems  # remote outputs only: a local one is locked before Beam's import

    first = FileSystems.join(out, f"_probe-{uuid.uuid4().hex}")
    second = first + ".renamed"
    try:
        with FileSystems.create(first) as f:
            f.write(_PROBE)
        FileSystems.rename([first], [second])
        FileSystems.delete([second])
    except Exception as exc:  # the remote file system's own errors, whatever their class
        try:
            FileSystems.delete([p for p in (first, second) if FileSystems.exists(p)])
        except Exception:
            pass
        raise OutputError(f"--output {out} cannot be written ({_one_line(exc)})") from None


def check_remote_owned(out: str) -> None:
    """Raise `OutputError` (2) when a remote output holds tables but not this tool's marker."""
    from apache_beam.io.filesystems import FileSystems

    try:
        found = [t for t in TABLES if FileSystems.match([FileSystems.join(out, t, "*")])[0].metadata_list]
        owned = FileSystems.exists(FileSystems.join(out, MARKER))
    except Exception as exc:
        raise OutputError(f"--output {out} cannot be listed ({_one_line(exc)})") from None
    check_owned(out, found, owned)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

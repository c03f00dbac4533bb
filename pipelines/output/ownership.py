"""Who owns an output folder: the marker, the lock, and the owner notes of staging folders.

Pattern: small file-system helpers used by the launcher (not Beam transforms).
Role:    - the marker `OUT/_FOOTPRINT_AUDIT` says this tool wrote the folder's
           tables; tables (`readings/`, `dead_letters/`, `runs/`) found without it
           are someone else's and are never replaced nor deleted;
         - the lock `OUT/_LOCK` (an exclusive `flock`, holding the owner's process
           id and host) makes a second job on the same output refuse at once; the
           kernel lets go of it when its owner dies, so a stale lock is taken over;
         - an owner note (process id, host) in each staging folder says whether
           the job that made it is still alive.
"""

from __future__ import annotations

import errno
import glob
import fcntl
import json
import os
import socket
from pathlib import Path

from footprint_audit.pipelines.inputs import is_local
from footprint_audit.pipelines.launch import OutputError
from footprint_audit.schemas.manifest import MANIFEST_TABLE
from footprint_audit.schemas.tables import TABLES

__all__ = ["MARKER", "LOCK", "OWNER", "STAGING", "OutputLock", "owner_note", "owner_alive", "check_owned", "write_marker"]

MARKER = "_FOOTPRINT_AUDIT"
LOCK = "_LOCK"
#: The owner note inside a staging folder.
OWNER = "_OWNER"
#: The folder under the output that holds each job's staging folder.
STAGING = "_staging"


def owner_note() -> dict:
    """This process as an owner: its process id and host."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def _read_note(path: Path) -> dict | None:
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def owner_alive(note: dict | None) -> bool:
    """False only when the note names a process of this host that is gone (another host's is taken as alive)."""
    if not note or not isinstance(note.get("pid"), int):
        return False
    if note.get("host") != socket.gethostname():
        return True
    try:
        os.kill(note["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _describe(note: dict | None) -> str:
    if not note:
        return "another job"
    return f"process {note.get('pid')} on {note.get('host')}"


class OutputLock:
    """The output folder's lock: `acquire` or refuse with one sentence; `release` when the job ends."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.path = Path(out) / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock (a stale one, whose owner is gone, is taken over); raise `OutputError` (2) when a
        live job holds it, (1) when it cannot be written."""
        for _attempt in range(5):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise OutputError(f"--output {self.out} cannot be written ({exc.strerror})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return self._acquire_by_note(exc)
                raise OutputError(
                    f"--output {self.out} is in use by {_describe(_read_note(self.path))}: "
                    "wait for that job to end, or choose another --output",
                    exit_code=2,
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the lock file was removed by its owner as we opened it: take the new one
                os.close(fd)
                continue
            self._fd = fd
            self._write_note(fd)
            return
        raise OutputError(f"--output {self.out}: its lock keeps changing hands; try again", exit_code=2)

    def _acquire_by_note(self, why: OSError) -> None:
        """Where `flock` is not supported: the note alone decides (a dead owner's lock is taken over)."""
        note = _read_note(self.path)
        if note and note != owner_note() and owner_alive(note):
            raise OutputError(
                f"--output {self.out} is in use by {_describe(note)}: wait for that job to end, or choose another --output",
                exit_code=2,
            ) from None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._write_note(fd)
        except OSError as exc:
            raise OutputError(f"--output {self.out} cannot be written ({exc.strerror})") from None
        self._fd = fd

    @staticmethod
    def _write_note(fd: int) -> None:
        data = json.dumps(owner_note()).encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    def release(self) -> None:
        """Remove the lock file and let go of the lock (idempotent)."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only or gone folder: the kernel lets go of the lock anyway
        os.close(self._fd)
        self._fd = None


def check_owned(out: str, found: list[str] | None = None, owned: bool | None = None) -> None:
    """Raise `OutputError` (2) when `out` holds tables this tool did not write (no marker).

    `found` (the tables present) and `owned` (the marker is there) are looked up on a
    local `out` when not given (a remote output's are listed by the caller).
    """
    if found is None:
        found = [table for table in (*TABLES, MANIFEST_TABLE) if os.path.lexists(os.path.join(out, table))]
    if owned is None:
        owned = os.path.isfile(os.path.join(out, MARKER))
    if found and not owned and is_local(out) and glob.glob(os.path.join(glob.escape(out), "readings", "window=*")):
        raise OutputError(f"--output {out} holds a stream's tables (readings/window=…/): `stream` and `compact` write "
                          "them; give `reassess` another --output", exit_code=2)
    if found and not owned:
        names = ", ".join(f"{t}/" for t in found)
        raise OutputError(
            f"--output {out} already holds {names} that footprint-audit did not write (no {MARKER} file): "
            "choose another --output, or move them away",
            exit_code=2,
        )


def marker_text() -> str:
    """What the marker file holds."""
    return json.dumps({"written_by": "footprint-audit", "tables": list(TABLES)}, indent=2) + "\n"


def write_marker(out: str) -> None:
    """Write the marker when it is not there yet (atomically: a finished file or none)."""
    path = Path(out) / MARKER
    if path.is_file():
        return
    tmp = path.with_name(f"{MARKER}.{os.getpid()}.tmp")
    tmp.write_text(marker_text(), encoding="utf-8")
    os.replace(tmp, path)

"""The job's input files: what `--input` names, listed by one set of rules.

Pattern: pure file-system listing: the launcher checks each pattern's first match
         (`check_inputs`); the job lists them on its workers (`iter_inputs`).
Role:    a file, a folder (read recursively) or a glob (`**` for any depth)
         becomes a sorted list of `(path, size)` pairs. A folder and a glob
         follow the same rules:
         - every entry that is not a real folder is an input: regular files and
           links to them are read; a FIFO, a device, a socket, a dangling link,
           a link to a folder or a link loop is handed on too, and the reader
           makes it an `unreadable` dead letter (it never opens it for reading);
         - a walk never goes through a link to a folder, so it cannot leave the
           tree or loop; a path the user wrote out (no wildcard) is taken as given;
         - the output folder and everything under it are never inputs;
         - glob wildcards skip hidden names (`.x`), as `glob.glob` does; a folder
           input lists them.
         File names are kept as the OS gives them; `display_name` is the name a
         table shows (a name that is not UTF-8 with its bytes escaped, `\\xff`).
         One file named several ways (`a.jsonl`, `./a.jsonl`, `/abs/a.jsonl`,
         overlapping globs) is one input, under the first name listed: a file is
         known by `file_key`, its absolute normalised path.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from pathlib import Path
from typing import Iterator

from footprint_audit.pipelines.launch import UsageError, display_name

__all__ = ["expand_inputs", "iter_inputs", "check_inputs", "display_name", "file_key", "is_local"]


def is_local(path: str) -> bool:
    """True for a path on this machine (no `scheme://`)."""
    return "://" not in path


def file_key(path: str) -> str:
    """The name a file is known by whatever way it was spelled: a local path absolute and normalised
    (`./a.jsonl`, `a.jsonl` and `/abs/a.jsonl` alike; links are not resolved, so a link and its
    target stay two names, of the same bytes); a remote one as it is."""
    return os.path.normpath(os.path.abspath(path)) if is_local(path) else path


class _Outside:
    """Tells whether a local path is the output folder or under it (by device and inode, and by real path)."""

    def __init__(self, output: str | None) -> None:
        self.id: tuple[int, int] | None = None
        self.real: str | None = None
        if output and is_local(output):
            try:
                info = os.stat(output)
            except OSError:
                return
            self.id = (info.st_dev, info.st_ino)
            self.real = os.path.realpath(output)

    def is_output_dir(self, entry: os.DirEntry) -> bool:
        """True when a folder entry met in a walk is the output folder itself (one stat, only on an inode match)."""
        if self.id is None or entry.inode() != self.id[1]:
            return False
        return entry.stat(follow_symlinks=False).st_dev == self.id[0]

    def holds(self, path: str) -> bool:
        """True when `path`, links resolved, is the output folder or lies under it."""
        if self.real is None:
            return False
        real = os.path.realpath(path)
        return real == self.real or real.startswith(self.real.rstrip(os.sep) + os.sep)


def _entries_under(folder: str, outside: _Outside, hidden: bool = True) -> Iterator[tuple[str, bool]]:
    """`(path, is_real_folder)` of everything under `folder`, at any depth; never through a folder link.

    One scan per folder; the output folder is left out with all it holds.
    `hidden` False leaves out names starting with `.` (and what hidden folders hold).
    """
    folders = [folder]
    while folders:
        try:
            scan = os.scandir(folders.pop())
        except OSError:
            continue  # a folder that went away or cannot be listed: nothing under it is named
        with scan as entries:
            for entry in entries:
                if not hidden and entry.name.startswith("."):
                    continue
                real_dir = entry.is_dir(follow_symlinks=False)
                if real_dir:
                    if outside.is_output_dir(entry):
                        continue
                    folders.append(entry.path)
                yield entry.path, real_dir


def _names_in(folder: str, pattern: str, outside: _Outside) -> Iterator[tuple[str, bool]]:
    """`(name, is_real_folder)` of the entries of `folder` that match one glob component."""
    try:
        scan = os.scandir(folder or os.curdir)
    except OSError:
        return
    with scan as entries:
        for entry in entries:
            if entry.name.startswith(".") and not pattern.startswith("."):
                continue
            if fnmatch.fnmatchcase(entry.name, pattern):
                real_dir = entry.is_dir(follow_symlinks=False)
                if real_dir and outside.is_output_dir(entry):
                    continue
                yield entry.name, real_dir


def _glob(pattern: str, outside: _Outside) -> Iterator[tuple[str, bool]]:
    """`glob.glob(pattern, recursive=True)`'s matches as `(path, is_real_folder)`, except that wildcards
    never lead through a link to a folder (nor into the output folder)."""
    dirname, basename = os.path.split(pattern)
    if not glob.has_magic(pattern):
        if os.path.lexists(pattern):
            yield pattern, os.path.isdir(pattern) and not os.path.islink(pattern)
        return
    if dirname and dirname != pattern and glob.has_magic(dirname):
        dirs = [d for d, real_dir in _glob(dirname, outside) if real_dir]
    else:
        dirs = [dirname]
    for folder in dirs:
        if basename == "**":
            yield os.path.join(folder, ""), True
            for path, real_dir in _entries_under(folder or os.curdir, outside, hidden=False):
                yield (path if folder else path[len(os.curdir + os.sep) :]), real_dir
        elif glob.has_magic(basename):
            for name, real_dir in _names_in(folder, basename, outside):
                yield os.path.join(folder, name), real_dir
        else:
            path = os.path.join(folder, basename)
            if os.path.lexists(path):
                yield path, os.path.isdir(path) and not os.path.islink(path)


def _size(path: str) -> int:
    """The size of a regular file (a link followed); 0 for anything else, which is not read."""
    try:
        info = os.stat(path)
    except OSError:
        return 0
    return info.st_size if (info.st_mode & 0o170000) == 0o100000 else 0


def _local(pattern: str, outside: _Outside) -> Iterator[tuple[str, int]]:
    """`(path, size)` of each input a local pattern names, as the walk finds them (lazily); raises
    `UsageError` (at the first step) for a path written out that is missing or inside the output."""
    if not glob.has_magic(pattern):
        if not os.path.lexists(pattern):
            raise UsageError(f"--input {pattern}: no such file or folder")
        if outside.holds(pattern):
            raise UsageError(f"--input {pattern}: this is the output folder or inside it, which is never read")
        if os.path.isdir(pattern):
            yield from ((p, _size(p)) for p, real_dir in _entries_under(str(Path(pattern)), outside) if not real_dir)
        else:
            yield pattern, _size(pattern)
        return
    keep_dirs = not pattern.endswith("**")
    for path, real_dir in _glob(pattern, outside):
        if real_dir and not keep_dirs:
            continue
        if os.path.islink(path) and outside.holds(path):
            continue
        yield path, _size(path)


def _remote(pattern: str, output: str | None, limit: int | None = None) -> Iterator[tuple[str, int]]:
    """`(path, size)` of each remote input (Beam's `FileSystems.match`), at most `limit` looked at."""
    from apache_beam.io.filesystems import FileSystems  # remote paths only: a local job's launcher starts without Beam

    try:
        result = FileSystems.match([pattern], limits=[limit] if limit else None)[0]
    except Exception as exc:  # the remote file system's own error
        raise UsageError(f"--input {pattern}: cannot be listed ({exc})") from None
    under = output.rstrip("/") + "/" if output and not is_local(output) else None
    for meta in result.metadata_list:
        if under is None or not (meta.path + "/").startswith(under):
            yield meta.path, meta.size_in_bytes


def iter_inputs(pattern: str, output: str | None = None) -> Iterator[tuple[str, int]]:
    """Every input `(path, size)` one pattern names, lazily and unsorted, by the rules above (the listing
    the pipeline runs on its workers)."""
    return _local(pattern, _Outside(output)) if is_local(pattern) else _remote(pattern, output)


def check_inputs(patterns: list[str], output: str | None = None) -> None:
    """Raise `UsageError` for a pattern that names no input; looks only as far as each one's first match."""
    outside = _Outside(output)
    for pattern in patterns:
        if is_local(pattern):
            first = next(_local(pattern, outside), None)
        else:
            first = next(_remote(pattern, output, limit=1), None) or next(_remote(pattern, output), None)
        if first is None:
            raise UsageError(f"--input {pattern}: the pattern matches no file")


def expand_inputs(patterns: list[str], output: str | None = None) -> list[tuple[str, int]]:
    """Every input (path, size) the patterns name, sorted, each file once (under the first name listed);
    raises `UsageError` for a pattern that names none.

    `output`: the job's output folder, whose files are never inputs. The size of
    anything but a regular file is 0 (it is not read: the reader makes it a dead letter).
    The job itself lists its inputs on its workers (`pipelines.inputs.listing`); this whole list is for tools.
    """
    outside = _Outside(output)
    found: dict[str, tuple[str, int]] = {}  # file_key -> the first (path, size) listed
    for pattern in patterns:
        matched = list(_local(pattern, outside) if is_local(pattern) else _remote(pattern, output))
        if not matched:
            raise UsageError(f"--input {pattern}: the pattern matches no file")
        for path, size in matched:
            found.setdefault(file_key(path), (path, size))
    return sorted(found.values())

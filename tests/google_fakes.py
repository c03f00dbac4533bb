"""The tests' Google fakes: small Go programs of the repository (`tools/fakes/`), built once.

`gcs`: an in-memory Cloud Storage (the library of fake-gcs-server), reached through
`STORAGE_EMULATOR_HOST` by Beam's own gs:// file system; `pubsub`: an in-memory Pub/Sub (the `pstest`
package of Google's Go client), reached through `PUBSUB_EMULATOR_HOST`. Each is built
with the Go toolchain into `~/.cache/footprint-audit/go/bin` (or `$FOOTPRINT_AUDIT_GO_BIN`) when it
is missing or older than its source; without Go the tests that need them are skipped, saying so
(`.ci/run` builds them, so CI runs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from helpers import ROOT

SOURCE = ROOT / "tools" / "fakes"
BIN = Path(os.environ.get("FOOTPRINT_AUDIT_GO_BIN", Path.home() / ".cache" / "footprint-audit" / "go" / "bin"))


def fake_binary(name: str) -> Path:
    """`tools/fakes/NAME` built, or the test skipped where Go is missing."""
    path = BIN / name
    sources = [SOURCE / "go.mod", SOURCE / "go.sum", *(SOURCE / name).glob("*.go")]
    if path.exists() and path.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return path
    go = shutil.which("go")
    if go is None:
        pytest.skip(f"Go is missing: the fake {name} is a Go program (tools/fakes/{name})")
    BIN.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "build", "-o", str(path), f"./{name}"], cwd=SOURCE, check=True, capture_output=True, timeout=1800)
    return path


@contextmanager
def running(name: str) -> Iterator[str]:
    """The fake started on a free port of 127.0.0.1; yields the address it prints."""
    proc = subprocess.Popen([str(fake_binary(name))], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().strip() if proc.stdout else ""
        assert address, f"the fake {name} did not start"
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=30)

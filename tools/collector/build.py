"""Builds the tests' OpenTelemetry Collector once, from the Go module proxy, and caches it.

The Collector is the one `builder-config.yaml` (beside this file) describes: the core `otlp` receiver
and the contrib `file` exporter, every collector module at one release. The OpenTelemetry Collector
Builder (`go.opentelemetry.io/collector/cmd/builder`, at that same release) is installed with
`go install`, then generates and compiles the distribution. Both land in the Go fakes' cache,
`$FOOTPRINT_AUDIT_GO_BIN` (default `~/.cache/footprint-audit/go/bin`); the Collector's file name
carries a hash of the manifest and the builder's version, so a changed manifest builds anew and a
warm cache builds nothing.

    python tools/collector/build.py            # build if needed (about 3 minutes cold), print the path
    python tools/collector/build.py --check    # exit 1 if not built; never runs Go
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "builder-config.yaml"
#: The Collector Builder, at the release of every collector module the manifest names.
BUILDER_MODULE = "go.opentelemetry.io/collector/cmd/builder"
BUILDER_VERSION = "v0.161.0"
#: A cold build fetches and compiles a few hundred modules: generous on a shared 2-core machine.
BUILD_TIMEOUT = 1800.0


class GoMissing(RuntimeError):
    """The Go toolchain is not on PATH, and the Collector is not built yet."""


def go_bin() -> Path:
    """The cache of the repository's Go programs (the Google fakes' too)."""
    default = Path.home() / ".cache" / "footprint-audit" / "go" / "bin"
    return Path(os.environ.get("FOOTPRINT_AUDIT_GO_BIN", default))


def dist_name(manifest: Path = MANIFEST) -> str:
    """The manifest's `dist.name`: what the builder calls the binary."""
    found = re.search(r"^dist:\n(?:[ \t]+.*\n|#.*\n|\n)*?[ \t]+name:[ \t]*([\w.-]+)", manifest.read_text(), re.M)
    if found is None:
        raise ValueError(f"{manifest}: no dist.name")
    return found.group(1)


def collector_path(manifest: Path = MANIFEST) -> Path:
    """Where the Collector of this manifest is cached, built or not."""
    key = hashlib.sha256(f"{BUILDER_MODULE}@{BUILDER_VERSION}\n".encode() + manifest.read_bytes()).hexdigest()[:16]
    return go_bin() / f"{dist_name(manifest)}-{key}"


def _run(argv: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{tail}")


def ensure_builder(go: str) -> Path:
    """The Collector Builder, installed with `go install` into the cache if missing."""
    path = go_bin() / f"ocb-{BUILDER_VERSION}"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ocb-install-") as work:
        env = {**os.environ, "GOBIN": work}
        _run([go, "install", f"{BUILDER_MODULE}@{BUILDER_VERSION}"], Path(work), env, "go install of the Collector Builder")
        staged = path.with_name(f"{path.name}.{os.getpid()}")
        shutil.copy2(Path(work) / "builder", staged)
        os.replace(staged, path)
    return path


def ensure_collector(manifest: Path = MANIFEST) -> Path:
    """The Collector of `manifest`, built now unless the cache holds it; `GoMissing` where it cannot be."""
    path = collector_path(manifest)
    if path.exists():
        return path
    go = shutil.which("go")
    if go is None:
        raise GoMissing("Go is missing: the test OpenTelemetry Collector is built by the Collector Builder "
                        f"(tools/collector/{manifest.name})")
    builder = ensure_builder(go)
    text = manifest.read_text()
    if re.search(r"^[ \t]+output_path:", text, re.M):
        raise ValueError(f"{manifest}: leave dist.output_path out, the build chooses it")
    with tempfile.TemporaryDirectory(prefix="otelcol-build-") as work:
        out = Path(work) / "dist"
        config = Path(work) / "builder-config.yaml"
        # the build folder is this run's own: a line added under `dist:` (JSON's string is YAML's too)
        config.write_text(re.sub(r"^dist:\n", lambda m: f"dist:\n  output_path: {json.dumps(str(out))}\n", text, count=1,
                                 flags=re.M))
        # --skip-strict-versioning=false: the build fails if Go resolved any named module to another version
        _run([str(builder), "--config", str(config), "--skip-strict-versioning=false"], Path(work), dict(os.environ),
             "the Collector Builder")
        staged = path.with_name(f"{path.name}.{os.getpid()}")
        shutil.copy2(out / dist_name(manifest), staged)
        os.replace(staged, path)
    for old in path.parent.glob(f"{dist_name(manifest)}-*"):  # the builds of earlier manifests
        if old != path and re.fullmatch(r".*-[0-9a-f]{16}", old.name):
            old.unlink(missing_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the Collector is not built; never runs Go")
    args = parser.parse_args(argv)
    if args.check:
        path = collector_path()
        print(path if path.exists() else f"not built: {path}")
        return 0 if path.exists() else 1
    try:
        print(ensure_collector())
    except GoMissing as missing:
        print(missing, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

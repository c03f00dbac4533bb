"""What an install holds: one import name, `footprint_audit`, with the four folders under it.

`setup.py build_py` lays out exactly the modules a wheel (or Dataflow's `--setup_file`
sdist, built on the workers) installs; the test then imports them from that layout alone,
outside the repository, as a worker would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return lib


def test_an_install_claims_one_top_level_name_and_ships_every_folder(tmp_path):
    lib = _build(tmp_path)
    assert sorted(p.name for p in lib.iterdir()) == ["footprint_audit"]
    pkg = lib / "footprint_audit"
    assert sorted(p.name for p in pkg.iterdir() if p.is_dir()) == ["pipelines", "readers", "schemas", "transforms"]
    for folder in ("pipelines", "readers", "schemas", "transforms"):
        shipped = sorted(str(p.relative_to(pkg / folder)) for p in (pkg / folder).rglob("*.py"))
        assert shipped == sorted(str(p.relative_to(ROOT / folder)) for p in (ROOT / folder).rglob("*.py")), folder
    assert (pkg / "schemas" / "views.sql").is_file()
    for page in ("report/report.css", "report/error_hook.js", "report/report.js", "diff/diff.css", "diff/diff.js"):
        assert (pkg / "pipelines" / page).is_file(), page


def test_the_installed_layout_imports_and_runs_without_the_repository(tmp_path):
    lib = _build(tmp_path)
    script = (
        "import footprint_audit, footprint_audit.pipelines.cli as cli, footprint_audit.transforms.decode.sources\n"
        "from footprint_audit.pipelines.report import asset, command as report\n"
        "assert footprint_audit.__path__ == [%r], footprint_audit.__path__\n"
        "assert 'create' in report.views_sql().lower()\n"
        "assert 'window.onerror' in asset('error_hook.js') and 'tr.pick' in asset('diff.css', 'footprint_audit.pipelines.diff')\n"
        "for old in ('readers', 'schemas', 'transforms', 'pipelines'):\n"
        "    try:\n"
        "        __import__(old)\n"
        "    except ImportError:\n"
        "        continue\n"
        "    raise SystemExit(old + ' is importable')\n"
        "raise SystemExit(cli.main(['--version']))\n"
    ) % str(lib / "footprint_audit")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", script], cwd=lib, env=env, capture_output=True, text=True)  # lib first
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("footprint-audit ")


def test_the_command_line_entry_point_names_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"] == {"footprint-audit": "footprint_audit.pipelines.cli:main"}

"""The import contract of the product folders, read from the source (no import runs).

- Layers: `readers` imports only `readers`; `schemas` adds `readers`; `transforms` adds
  `schemas` and never imports `pipelines`; `pipelines` may import them all.
- Rooms: each sub-package of `transforms/` and `pipelines/` (`transforms/decode/`, …) is
  imported from outside only through its entrance, its `__init__.py`: a name the entrance lists in
  `__all__`, or the room itself as a namespace (`from footprint_audit.transforms import join`).
  Its modules are the room's own business.

- The wing: only `pipelines/local_runner/` names Beam's local runner, its SDK harness or the Fn API
  (`FnApiRunner`, `SdkHarness`, `beam_fn_api_pb2*`); the rest goes through its entrance, `JobRunner`.

Tests and benchmarks may reach a room's modules (they test each one alone); the contract
holds for the product's own imports.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    "readers": {"readers"},
    "schemas": {"readers", "schemas"},
    "transforms": {"readers", "schemas", "transforms"},
    "pipelines": {"readers", "schemas", "transforms", "pipelines"},
}
ROOMED = ("transforms", "pipelines")
#: What only the local runner's wing may import (by name, from any module of Beam).
WING = Path("pipelines") / "local_runner"
WING_ONLY = ("FnApiRunner", "SdkHarness", "beam_fn_api_pb2", "fn_api_runner")


def _entrances(root: Path) -> dict[str, set[str]]:
    """`footprint_audit.TOP.ROOM` → the names its entrance lists in `__all__`."""
    entrances = {}
    for top in ROOMED:
        for init in sorted((root / top).glob("*/__init__.py")):
            listed: set[str] = set()
            for node in ast.parse(init.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                    listed = {ast.literal_eval(e) for e in node.value.elts}  # type: ignore[attr-defined]
            entrances[f"footprint_audit.{top}.{init.parent.name}"] = listed
    return entrances


def _imports(path: Path, package: str) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of each import in a module of `package`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            found.append((node.lineno, module, [a.name for a in node.names]))
    return found


def violations(root: Path) -> list[str]:
    """Every import of the product folders under `root` that breaks the contract, one line each."""
    entrances = _entrances(root)
    out = []
    for top, allowed in LAYERS.items():
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            parts = list(rel.with_suffix("").parts)
            package = "footprint_audit." + ".".join(parts[:-1])
            own_room = f"footprint_audit.{parts[0]}.{parts[1]}" if len(parts) > 2 else None
            for line, module, names in _imports(path, package):
                where = f"{rel}:{line}"
                named = [part for part in (*names, *module.split(".")) for w in WING_ONLY if part.startswith(w)]
                if named and WING not in rel.parents:
                    out.append(f"{where}: imports {named[0]} outside the local runner's wing ({WING})")
                bits = module.split(".")
                if bits[0] != "footprint_audit" or len(bits) < 2:
                    continue
                if bits[1] not in allowed:
                    out.append(f"{where}: {top} imports {module}")
                    continue
                if bits[1] not in ROOMED or len(bits) < 3:  # a room as a namespace is its entrance too
                    continue
                room = ".".join(bits[:3])
                if room not in entrances or room == own_room:
                    continue
                if len(bits) > 3:
                    out.append(f"{where}: imports {module}, inside the room {room}, not through its entrance")
                else:
                    for name in names:
                        if name not in entrances[room]:
                            out.append(f"{where}: imports {name} from {room}, which its entrance does not list")
    return out


def test_the_product_keeps_its_import_contract():
    assert violations(ROOT) == []


def test_every_room_has_an_entrance_and_each_name_it_lists_is_there():
    entrances = _entrances(ROOT)
    assert {d.rsplit(".", 2)[-2] + "/" + d.rsplit(".", 1)[-1] for d in entrances} == {
        f"{top}/{p.name}" for top in ROOMED for p in (ROOT / top).iterdir() if p.is_dir() and p.name != "__pycache__"}
    for entrance in entrances:
        module = __import__(entrance, fromlist=["__all__"])
        assert sorted(module.__all__) == sorted(entrances[entrance])
        for name in module.__all__:
            assert hasattr(module, name), f"{entrance} lists {name} but does not hold it"


def test_the_contract_fails_on_a_deliberate_violation(tmp_path):
    for top in LAYERS:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(tmp_path) == []
    sources = tmp_path / "transforms" / "decode" / "sources.py"
    sources.write_text(sources.read_text() + "\nfrom footprint_audit.transforms.join.keyed import JoinCallFn\n")
    parquet = tmp_path / "transforms" / "write" / "parquet.py"
    parquet.write_text(parquet.read_text() + "\nfrom footprint_audit.pipelines import cli\n")
    command = tmp_path / "pipelines" / "report" / "command.py"
    command.write_text(command.read_text() + "\nfrom footprint_audit.pipelines.output import publish\n")
    stream = tmp_path / "pipelines" / "stream" / "command.py"
    stream.write_text(stream.read_text() + "\nfrom apache_beam.runners.portability.fn_api_runner import FnApiRunner\n")
    found = violations(tmp_path)
    assert len(found) == 4, found
    assert "transforms.join.keyed, inside the room footprint_audit.transforms.join, not through its entrance" in found[0]
    assert "transforms imports footprint_audit.pipelines" in found[1]
    assert "imports publish from footprint_audit.pipelines.output, which its entrance does not list" in found[2]
    assert "pipelines/stream/command.py" in found[3] and "imports FnApiRunner outside the local runner's wing" in found[3]

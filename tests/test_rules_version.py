"""The reader rules' version moves with the rules (readers/rules.py).

The fingerprint of the readers (readers/*.py, `rules.py` aside) and of the conformance answers
(tests/data/conformance, its README aside) must be the one `RULES` records for the current
version: a rule or an answer changed without a new version fails here, with the line to add.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from helpers import ROOT
from footprint_audit.readers.rules import RULES, RULES_VERSION
from footprint_audit.transforms.read import READER_VERSION

READERS, CONFORMANCE = ROOT / "readers", ROOT / "tests" / "data" / "conformance"


def fingerprint(readers: Path, conformance: Path) -> str:
    """sha256 over each file's folder, name, length and bytes, in name order."""
    digest = hashlib.sha256()
    files = sorted(p for p in readers.glob("*.py") if p.name != "rules.py")
    files += sorted(p for p in conformance.iterdir() if p.name != "README.md")
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.parent.name}/{path.name} {len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def problem(readers: Path, conformance: Path) -> str | None:
    """Why the rules' version does not name these files (None: it does)."""
    found = fingerprint(readers, conformance)
    if found == RULES[RULES_VERSION]:
        return None
    return (f"readers/ or the conformance answers changed since rules version {RULES_VERSION}: add "
            f'"{int(RULES_VERSION) + 1}": "{found}" to RULES in readers/rules.py')


def test_the_rules_version_names_the_readers_and_the_answers_as_they_are():
    assert problem(READERS, CONFORMANCE) is None
    assert len(set(RULES.values())) == len(RULES)  # each version names other rules
    assert READER_VERSION == RULES_VERSION  # what a reading row and the manifest record


def test_a_changed_rule_or_answer_without_a_new_version_fails(tmp_path):
    readers, conformance = tmp_path / "readers", tmp_path / "conformance"
    shutil.copytree(READERS, readers)
    shutil.copytree(CONFORMANCE, conformance)
    assert problem(readers, conformance) is None
    emptiness = readers / "emptiness.py"
    emptiness.write_text(emptiness.read_text(encoding="utf-8").replace("MAX_BOUND_DEPTH = ", "MAX_BOUND_DEPTH = 1 + "),
                         encoding="utf-8")
    said = problem(readers, conformance)
    assert said is not None and said.startswith("readers/ or the conformance answers changed since rules version")
    shutil.copy2(READERS / "emptiness.py", emptiness)
    with (conformance / "edge.jsonl").open("a", encoding="utf-8") as f:
        f.write("\n")
    assert problem(readers, conformance) is not None

"""The version of the reader rules: what a reading says it was read by.

Pattern: declarations only.
Role:    `readings.reader_version` and the manifest hold `RULES_VERSION`, and
         `reassess --incremental` refuses an output read under another one, so
         readings of old and new rules are never mixed in one output. It names the
         rules, not the package: it moves whenever a reader here or a conformance
         answer (tests/data/conformance) changes, and only then.
         tests/test_rules_version.py fingerprints those files and fails until a
         change to them comes with a new version in `RULES`.
Emits:   nothing.
"""

from __future__ import annotations

#: Each rules version → the sha256 fingerprint of the readers and the conformance answers it names
#: (`tests/test_rules_version.py` says how it is computed). A new version is a new line; the last is current.
RULES = {
    "1": "1a15f456148b84eae0b4c170179f3d9e9d7f5a1f764a89445ee651a380d9f057",
}

RULES_VERSION = list(RULES)[-1]

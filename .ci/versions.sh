#!/usr/bin/env bash
# CI, after the whole suite: the wheel built (no packaging warning) and installed, not editable, into a
# fresh environment per Python version present (3.11 to 3.13); in each, the README's main job run from
# the wheel in a folder that holds only a copy of examples/ must print the README's summary; 3.12 and
# 3.13 also run a fast slice of the suite (the whole suite runs on the first Python, `.ci/run`).
set -euo pipefail
cd "$(dirname "$0")/.."
SLICE=(tests/test_readers_conformance.py tests/test_readers_units.py tests/test_calls.py tests/test_sources.py
       tests/test_reassess_e2e.py tests/test_import_contract.py)

echo "== the wheel"
rm -rf dist
.venv/bin/python -m pip wheel -v --no-deps -w dist . > dist.log 2>&1 || { tail -50 dist.log; exit 1; }
if grep -i "deprecat" dist.log; then echo "the wheel's build warns (above)"; exit 1; fi
wheel=$(ls "$PWD"/dist/*.whl)
echo "built $(basename "$wheel")"

expected=$(python3 - <<'PY'
import re
text = open("README.md", encoding="utf-8").read()
print(next(b for b in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M) if b.startswith("footprint-audit: ")), end="")
PY
)

for version in 3.11 3.12 3.13; do
  py=$(ls -d "$HOME"/.pyenv/versions/"$version".*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$py" ]; then
    if python3 -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))"; then
      py=$(command -v python3)
    else
      echo "== python $version: not on this machine, skipped"; continue
    fi
  fi
  env=".ci-env-$version"
  rm -rf "$env"
  "$py" -m venv "$env"
  "$env/bin/python" -m pip install -q --upgrade pip
  extras="report"; [ "$version" != "3.11" ] && extras="test,report"
  "$env/bin/python" -m pip install -q "$wheel[$extras]"
  work=$(mktemp -d)
  cp -r examples "$work/"
  got=$(cd "$work" && "$OLDPWD/$env/bin/footprint-audit" reassess --input 'examples/recordings/**' --output out/ \
        --declarations examples/declarations.json 2>/dev/null)
  if [ "$got" != "$expected" ]; then
    echo "== python $version: the README's main job, run from the wheel, printed:"; echo "$got"; exit 1
  fi
  echo "== python $("$env/bin/python" --version | cut -d' ' -f2): the README's main job from the wheel prints the README's summary"
  if [ "$version" != "3.11" ]; then
    "$env/bin/python" -m pytest -p no:cacheprovider "${SLICE[@]}" | tail -1
  fi
  rm -rf "$work" "$env"
done
rm -rf dist dist.log

#!/usr/bin/env bash
# Mutation testing of one module against the tests meant to guard it (mutmut, configured under
# [tool.mutmut] in pyproject.toml; docs/architecture.md, "Checking the tests"):
#
#     bash scripts/mutation.sh MODULE TESTS...      # e.g. escoba_env/faces/text.py tests/llm
#
# mutmut changes the module one small edit at a time (a comparison, a constant, an operator, an
# argument dropped) and runs, for each edit, the tests of TESTS that reach the function it changed;
# an edit that no test notices "survives". The run works on a copy of the checkout (its tracked and
# not-ignored files) in WORK (default: ${TMPDIR:-/tmp}/escoba-mutation/<module>), so the checkout is
# never touched; an interrupted run started again on an unchanged checkout goes on where it stopped.
# It ends with the counts and every surviving mutant, each shown as its diff (also kept in
# WORK/survivors.txt); `cd WORK && mutmut show NAME` shows one again, `mutmut browse` all of them.
# Environment: JOBS (parallel mutants, default 2), WORK, and MUTANTS: only the mutants whose names match
# these space-separated patterns (mutmut's names, `*` any text), e.g. a class's methods:
#     MUTANTS='agents.external.llm.xǁLLMAgentǁ*' bash scripts/mutation.sh agents/external/llm.py tests/llm
# (a run restricted so is run again whole when started again). Needs mutmut (pip install -e ".[dev]").
set -euo pipefail
if [ "$#" -lt 2 ] || [ ! -f "$1" ] || [[ "$1" != *.py ]]; then
  echo "usage: bash scripts/mutation.sh MODULE.py TESTS... (run from the repository root)" >&2
  exit 2
fi
command -v mutmut >/dev/null || { echo "mutation.sh: mutmut is not installed (pip install -e \".[dev]\")" >&2; exit 2; }
module=$1
shift
for t in "$@"; do
  [ -e "$t" ] || { echo "mutation.sh: no test path $t" >&2; exit 2; }
done
root=$(git rev-parse --show-toplevel)
cd "$root"
slug=$(echo "${module%.py}" | tr '/' '.')
work=${WORK:-${TMPDIR:-/tmp}/escoba-mutation/$slug}
mkdir -p "$work"

# The copy: refreshed from the checkout; mutmut's results are kept only while the files are the same.
tree=$( (git ls-files -z -co --exclude-standard | xargs -0 sha1sum; echo "$module $*") | sha1sum)
if [ "$(cat "$work/.tree" 2>/dev/null)" != "$tree" ]; then
  rm -rf "$work/mutants"
fi
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work"
echo "$tree" >"$work/.tree"

# This run's module and tests, added to the copy's [tool.mutmut] section.
python - "$work/pyproject.toml" "$module" "$@" <<'EOF'
import json
import sys
from pathlib import Path

path, module, tests = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
text = path.read_text()
head = "[tool.mutmut]\n"
if head not in text:
    sys.exit("mutation.sh: pyproject.toml has no [tool.mutmut] section")
run = f"only_mutate = {json.dumps([module])}\npytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
path.write_text(text.replace(head, head + run, 1))
EOF

cd "$work"
start=$(date +%s)
read -r -a only <<<"${MUTANTS:-}"
nice -n 5 mutmut run --max-children "${JOBS:-2}" ${only[@]+"${only[@]}"}
echo "mutation.sh: $module${MUTANTS:+ (mutants $MUTANTS)} against $* took $(( $(date +%s) - start )) s wall (JOBS=${JOBS:-2}) on $(nproc) cores"
mutmut results >"$work/results.txt" || true
survivors=$(grep -E ': (survived|no tests)$' "$work/results.txt" | sed 's/: .*//' || true)
: >"$work/survivors.txt"
for name in $survivors; do
  mutmut show "$name" >>"$work/survivors.txt" 2>&1 || true
done
echo "mutation.sh: $(grep -c ': survived$' "$work/results.txt" || true) survived, $(grep -c ': no tests$' \
  "$work/results.txt" || true) reached by no test; their diffs: $work/survivors.txt"
cat "$work/survivors.txt"

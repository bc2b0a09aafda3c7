#!/usr/bin/env bash
# Regenerates a chapter's expected output, JSON results and plots from a real run, so that the
# tutorial never quotes stale numbers:
#
#   bash scripts/update_expected_output.sh ch01      # or: all
#
# Writes chapters/<chapter>/expected_output.txt (the program's stdout, headed by the command),
# docs/results/<chapter>_<backend>.json, docs/images/<chapter>_*.png and the results table
# (scripts/plot_results.py), and pastes the output and the table into the tutorial between its
# `<!-- <chapter>-expected-output:begin/end -->` and `<!-- <chapter>-results:begin/end -->` markers. Uses the build of $NANOSERVE_PRESET (default sim: the CPU
# simulator, whose timings are labelled as such everywhere).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${NANOSERVE_PRESET:-sim}
bin=build/$preset
if [[ -z "${NANOSERVE_DATA:-}" && -d ../shared/data ]]; then
  export NANOSERVE_DATA=$(cd ../shared/data && pwd)
fi
cmake --build --preset "$preset" >/dev/null
# The Debian python3-matplotlib (scripts/bootstrap.sh) belongs to /usr/bin/python3, which a
# pyenv or virtualenv python3 earlier on PATH may hide.
python=python3
if ! "$python" -c "import matplotlib" 2>/dev/null && [[ -x /usr/bin/python3 ]]; then
  python=/usr/bin/python3
fi

run_chapter() {  # run_chapter <chapter dir> <program args...>
  local dir=$1
  shift
  local chapter=${dir%%_*}
  local program=$bin/chapters/$dir/$dir
  local json=docs/results/${chapter}_${preset}.json
  mkdir -p docs/results
  echo "running $program $* (this takes a few minutes on the simulator)" >&2
  {
    echo "\$ $dir $*"
    "$program" "$@" --json "$json"
  } > "chapters/$dir/expected_output.txt"
  "$python" scripts/plot_results.py "$json" --out docs/images --tables docs/results
  splice "chapters/$dir/README.md" "$chapter-expected-output" "chapters/$dir/expected_output.txt" fenced
  splice "chapters/$dir/README.md" "$chapter-results" "docs/results/${chapter}_${preset}_table.md" plain
}

splice() {  # splice <markdown file> <marker> <content file> fenced|plain
  "$python" - "$@" <<'PY'
import re, sys
path, marker, content_path, style = sys.argv[1:5]
text = open(path).read()
content = open(content_path).read().rstrip("\n")
if style == "fenced":
    content = "```\n" + content + "\n```"
begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
if not pattern.search(text):
    sys.exit(f"{path}: markers {begin} ... {end} not found")
open(path, "w").write(pattern.sub(lambda _: begin + "\n" + content + "\n" + end, text))
print("updated", path, "between", begin, "and", end)
PY
}

target=${1:-all}
chapters=(ch01 ch02 ch05)
if [[ "$target" != all && ! " ${chapters[*]} " =~ " $target " ]]; then
  echo "usage: $0 all|${chapters[*]// /|}" >&2
  exit 2
fi
want() { [[ "$target" == all || "$target" == "$1" ]]; }

if want ch01; then
  # A real model when there is one; 240 steps so that the no-cache cost has room to grow.
  model=synthetic:tiny
  if [[ -f "${NANOSERVE_DATA:-/nonexistent}/stories260K.bin" ]]; then model=stories260K.bin; fi
  run_chapter ch01_naive_kv_cache --model "$model" --steps 240 --check
fi

if want ch02; then
  # The tour (all three scenarios, small) on the real model when there is one.
  model=synthetic:tiny
  if [[ -f "${NANOSERVE_DATA:-/nonexistent}/stories260K.bin" ]]; then model=stories260K.bin; fi
  run_chapter ch02_paged_kv_cache --model "$model" --tour
fi

if want ch05; then
  # The results (JSON, plots, table) come from the full run — both real models when present,
  # every method and format, GPTQ act-order too, the whole evaluation slice, --check; the
  # expected output is the tour's, the run a reader starts with.
  program=$bin/chapters/ch05_quantization/ch05_quantization
  json=docs/results/ch05_${preset}.json
  mkdir -p docs/results
  echo "running $program --act-order --check (several minutes on the simulator)" >&2
  "$program" --act-order --check --json "$json" > /dev/null
  "$python" scripts/plot_results.py "$json" --out docs/images --tables docs/results
  model=synthetic:tiny
  if [[ -f "${NANOSERVE_DATA:-/nonexistent}/stories260K.bin" ]]; then model=stories260K.bin; fi
  {
    echo "\$ ch05_quantization --model $model --tour"
    "$program" --model "$model" --tour
  } > chapters/ch05_quantization/expected_output.txt
  splice chapters/ch05_quantization/README.md ch05-expected-output chapters/ch05_quantization/expected_output.txt fenced
  splice chapters/ch05_quantization/README.md ch05-results "docs/results/ch05_${preset}_table.md" plain
fi

#!/usr/bin/env bash
# Regenerates the chapters' expected outputs and, for chapters 1, 2 and 5, their JSON results and
# plots, so that the tutorials never quote stale numbers:
#
#   bash scripts/update_expected_output.sh [--expected-only] all|ch01|ch02|ch03|ch04|ch05|ch06|ch07|ch09
#
# Expected output: chapters/<chapter>/expected_output.txt is the stdout of the command in
# expected_args below on stories260K, headed by that command ("$ <program> <args>"), and is
# pasted into the tutorial between its `<!-- <chapter>-expected-output:begin/end -->` markers.
# The test chNN.expected_output (tests/smoke/smoke_test.cmake) reruns that first line and fails
# when the output's structure changed (tests/smoke/output_structure.py: numbers blanked), so each
# command is one the test suite can afford: the chapter's --tour, under ~20 s on the simulator.
#
# Results (skipped with --expected-only): docs/results/<chapter>_<backend>.json,
# docs/images/<chapter>_*.png and the results table (scripts/plot_results.py), pasted between the
# `<!-- <chapter>-results:begin/end -->` markers — ch01 from 240 steps with --check, ch02 from the
# tour, ch05 from the full run. Chapters 3, 4, 6 and 7 keep their results in
# chapters/<chapter>/results/, made by the commands their READMEs give.
#
# Uses the build of $NANOSERVE_PRESET (default sim: the CPU simulator, whose timings are labelled
# as such everywhere), configured again first so that the JSON's git stamp is current.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${NANOSERVE_PRESET:-sim}
bin=build/$preset
if [[ -z "${NANOSERVE_DATA:-}" && -d ../shared/data ]]; then
  export NANOSERVE_DATA=$(cd ../shared/data && pwd)
fi
expected_only=0
if [[ "${1:-}" == "--expected-only" ]]; then
  expected_only=1
  shift
fi
target=${1:-all}
chapters=(ch01 ch02 ch03 ch04 ch05 ch06 ch07 ch09)
if [[ "$target" != all && ! " ${chapters[*]} " =~ " $target " ]]; then
  echo "usage: $0 [--expected-only] all|$(IFS='|'; echo "${chapters[*]}")" >&2
  exit 2
fi
want() { [[ "$target" == all || "$target" == "$1" ]]; }

model=stories260K.bin  # the tutorials quote the real model; synthetic:tiny's text is noise
if [[ ! -f "${NANOSERVE_DATA:-/nonexistent}/$model" && ! -f "data/models/$model" ]]; then
  echo "$0: $model not found: set NANOSERVE_DATA (e.g. ../shared/data) or run data/download_models.sh" >&2
  exit 1
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" >/dev/null
# The Debian python3-matplotlib (scripts/bootstrap.sh) belongs to /usr/bin/python3, which a
# pyenv or virtualenv python3 earlier on PATH may hide.
python=python3
if ! "$python" -c "import matplotlib" 2>/dev/null && [[ -x /usr/bin/python3 ]]; then
  python=/usr/bin/python3
fi

# The command of each chapter's expected output: its --tour. Chapter 4's tour takes requests at
# 4/s on the CPU clock, so which requests a step admits depends on the timings; with every
# request at t = 0 (--rate inf) only the timings vary and the structure can be compared.
expected_args() {
  case $1 in
    ch04) echo "--model $model --tour --rate inf" ;;
    *) echo "--model $model --tour" ;;
  esac
}

program_dir() { local d; d=$(cd chapters && ls -d "$1"_*/); echo "${d%/}"; }

# expected_output <chapter> [--json PATH]: runs the command, writes expected_output.txt, splices it.
expected_output() {
  local chapter=$1
  shift
  local dir
  dir=$(program_dir "$chapter")
  local args
  read -r -a args <<<"$(expected_args "$chapter")"
  echo "running $dir ${args[*]} $*" >&2
  {
    echo "\$ $dir ${args[*]}"
    "$bin/chapters/$dir/$dir" "${args[@]}" "$@"
  } > "chapters/$dir/expected_output.txt"
  splice "chapters/$dir/README.md" "$chapter-expected-output" "chapters/$dir/expected_output.txt" fenced
}

# results <chapter> <json>: plots and the results table from the JSON, spliced into the tutorial.
results() {
  local chapter=$1 json=$2
  local dir
  dir=$(program_dir "$chapter")
  "$python" scripts/plot_results.py "$json" --out docs/images --tables docs/results
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

mkdir -p docs/results
json_of() { echo "docs/results/$1_${preset}.json"; }

if want ch01; then
  expected_output ch01
  if ((!expected_only)); then
    # 240 steps, so that the no-cache cost has room to grow (a few minutes on the simulator).
    echo "running ch01_naive_kv_cache --model $model --steps 240 --check (minutes)" >&2
    "$bin/chapters/ch01_naive_kv_cache/ch01_naive_kv_cache" --model "$model" --steps 240 --check \
      --json "$(json_of ch01)" > /dev/null
    results ch01 "$(json_of ch01)"
  fi
fi

if want ch02; then
  if ((expected_only)); then
    expected_output ch02
  else
    expected_output ch02 --json "$(json_of ch02)"  # the results are the tour's
    results ch02 "$(json_of ch02)"
  fi
fi

for chapter in ch03 ch04 ch06 ch07 ch09; do
  if want "$chapter"; then expected_output "$chapter"; fi
done

if want ch05; then
  expected_output ch05
  if ((!expected_only)); then
    # Both real models when present, every method and format, GPTQ act-order too, the whole
    # evaluation slice, --check (several minutes on the simulator).
    echo "running ch05_quantization --act-order --check (minutes)" >&2
    "$bin/chapters/ch05_quantization/ch05_quantization" --act-order --check --json "$(json_of ch05)" > /dev/null
    results ch05 "$(json_of ch05)"
  fi
fi

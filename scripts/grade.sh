#!/usr/bin/env bash
# The autograder: builds the tests that grade the exercises, runs their ctest labels (ex.chNN.k,
# tests/exercises.cmake) and prints a score table (exercise, tests passed/total, points), also
# written as JSON. Run it in a student's tree (or the reference tree, which scores full marks).
#   scripts/grade.sh [chNN ...] [--build-dir DIR] [--json PATH] [--no-build]
# Defaults: every chapter with exercises, build/sim (configured with the sim preset when
# missing), build/sim/grade.json. Exit status 0 when grading ran, 2 when it could not.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/sim
json=
do_build=1
chapters=()
while (($#)); do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    ch[0-9][0-9]) chapters+=("$1"); shift ;;
    *) echo "grade.sh: unknown argument '$1' (chNN, --build-dir DIR, --json PATH, --no-build)" >&2
       exit 2 ;;
  esac
done
json=${json:-$build/grade.json}
if ((do_build)); then
  [[ -f "$build/CMakeCache.txt" ]] || cmake --preset sim >/dev/null
  targets=(test_kernels)
  if ((${#chapters[@]})); then
    for c in "${chapters[@]}"; do targets+=("test_$c"); done
  else
    targets+=(test_ch01 test_ch02 test_ch03 test_ch04 test_ch05 test_ch06 test_ch07 test_ch08 test_ch09)
  fi
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null
fi
exec python3 scripts/grade.py "${chapters[@]}" --build-dir "$build" --json "$json"

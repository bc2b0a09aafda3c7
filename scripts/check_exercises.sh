#!/usr/bin/env bash
# CI's check of the course kit (scripts/check_exercises.py has the details): in the sim build,
# the reference passes every exercise label (ex.chNN.k), a student tree builds and fails all of
# them, and each exercise put back alone passes its own label and no other of its chapter.
#   scripts/check_exercises.sh [--all | --only chNN.k,...] [--sample N] [--build-dir DIR]
# Default: step 3 for 5 exercises, rotating with the commit count; --all for every one.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/check_exercises.py "$@"

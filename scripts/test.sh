#!/usr/bin/env bash
# The README's test command and the whole of CI (.ci/run calls this and nothing else):
#   1. sim preset: build and run every test
#   2. asan preset: build and run the kernel and common tests under ASan+UBSan
#   3. cuda preset: compile and link (tests need a GPU; scripts/gpu_check.sh runs them there)
#   4. fuzz preset: run each loader fuzzer briefly (clang libFuzzer)
#   5. docs: Doxygen with warnings as errors, then a link check of the site
# Between 1 and 2, scripts/check_exercises.sh checks the course kit in the sim build.
# Real-model tests read $NANOSERVE_DATA (e.g. ../shared/data) and skip when it is unset.
# Flags: --quick runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
jobs=$(nproc)
fuzz_seconds=${NANOSERVE_FUZZ_SECONDS:-15}

bash scripts/bootstrap.sh
start=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

step "sim: configure, build, test"
cmake --preset sim >/dev/null
cmake --build --preset sim -j "$jobs"
ctest --preset sim -j "$jobs"
((quick)) && { step "done (--quick)"; exit 0; }

step "exercises: reference passes, student tree fails, each exercise put back passes alone"
# Five exercises a commit, rotating (--all checks every one; docs/instructors.md). The ctest
# run above has just run the graded tests on the reference.
bash scripts/check_exercises.sh --reference-tested

step "asan: kernel and common tests under AddressSanitizer + UBSan"
cmake --preset asan >/dev/null
# Only what the kernels and common labels run: the chapters' tests stay in the sim build.
cmake --build --preset asan -j "$jobs" --target test_kernels test_common nanoserve bench_kernels \
  sim_microbench
ctest --preset asan -j "$jobs" -L 'kernels|common'

nvcc=$(bash scripts/find_nvcc.sh)
if [[ -n "$nvcc" ]]; then
  step "cuda: compile and link ($nvcc)"
  # Device code for sm_90 (the H200 the GPU checks run on) only: the check is that everything
  # compiles and links, and one architecture takes a quarter of the preset's four (no kernel
  # uses architecture-specific code). scripts/prepare_gpu_carry.sh reuses this build.
  cmake --preset cuda -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build --preset cuda -j "$jobs"
else
  step "cuda: skipped, no nvcc on this machine"
fi

step "fuzz: loaders, ${fuzz_seconds}s each"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzzers
for f in build/fuzz/fuzz/fuzz_*; do
  [[ -x "$f" ]] || continue
  name=$(basename "$f")
  corpus="build/fuzz/corpus/$name"
  mkdir -p "$corpus"
  seeds="fuzz/seeds/${name#fuzz_}"
  "$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=1024 -max_len=65536 "$corpus" \
       $( [[ -d "$seeds" ]] && echo "$seeds" ) >"build/fuzz/$name.log" 2>&1 \
    || { tail -n 40 "build/fuzz/$name.log"; exit 1; }
  echo "$name: $(grep -E '^Done|#[0-9]+.*DONE' "build/fuzz/$name.log" | tail -n 1)"
done

step "docs: Doxygen (warnings are errors)"
cmake --build --preset sim --target docs
python3 scripts/check_doc_links.py build/sim/docs/html

step "all green"

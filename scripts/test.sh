#!/usr/bin/env bash
# The README's test command and the whole of CI (.ci/run calls this and nothing else):
#   1. sim preset: build and run every test (the kernel tests also under the race checker; the
#      peer tests when npm can install peers/)
#   2. asan preset: build and run the kernel tests under ASan+UBSan (kernels compiled with FMA
#      contraction, so the kernel tests run both ways)
#   3. cuda preset: compile and link (tests need a GPU; scripts/gpu_check.sh runs them there)
#   4. fuzz preset: run each loader fuzzer briefly (clang libFuzzer), one per core
#   5. docs: Doxygen with warnings as errors, a link check of the site, every engine type has an example
# Between 1 and 2, scripts/check_exercises.sh checks the course kit in the sim build.
# Real-model tests read $NANOSERVE_DATA (e.g. ../shared/data) and skip when it is unset.
# Flags: --quick runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
jobs=$(nproc)
fuzz_seconds=${NANOSERVE_FUZZ_SECONDS:-10}

bash scripts/bootstrap.sh
start=$(date +%s)

# One compiler cache for the sim and cuda presets of this run (ccache, from bootstrap.sh). Most
# host files do not include kernels/cuda_compat.h, so the cuda preset's g++ compiles of them are
# the sim preset's, byte for byte: ccache's preprocessor mode finds them whatever the -D/-I
# flags, and NOHASHDIR/BASEDIR make build/sim and build/cuda look alike. (asan and fuzz compile
# with other flags: nothing to share, so no cache.) A clean clone starts with an empty cache
# (build/ccache), so CI times are those of a clean build.
cache=()
if command -v ccache >/dev/null 2>&1; then
  cache=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_DIR="${CCACHE_DIR:-$PWD/build/ccache}" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-4G}"
fi
step() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

# The other implementations the `peer` label compares with (llama.cpp through node-llama-cpp, HF
# tokenizers, @huggingface/jinja; peers/package-lock.json pins them): installed when npm can
# reach its registry, otherwise those tests skip with a message.
if command -v npm >/dev/null 2>&1; then
  (cd peers && timeout 300 npm ci --ignore-scripts --omit=optional --no-audit --no-fund \
     >/dev/null 2>&1) || echo "peers: npm ci failed (no registry?); the peer tests will skip" >&2
else
  echo "peers: no npm; the peer tests will skip" >&2
fi

step "sim: configure, build, test"
# NANOSERVE_RACECHECK_ALL: every kernel test once more under the shared-memory race checker
# (kernels/sim/README.md), as tests test_kernels_racecheck.* with the kernels label.
cmake --preset sim "${cache[@]}" -DNANOSERVE_RACECHECK_ALL=ON >/dev/null
cmake --build --preset sim -j "$jobs"
ctest --preset sim -j "$jobs"
((quick)) && { step "done (--quick)"; exit 0; }

step "exercises: reference passes, student tree fails, each exercise put back passes alone"
# Five exercises a commit, rotating (--all checks every one; docs/instructors.md). The ctest
# run above has just run the graded tests on the reference.
bash scripts/check_exercises.sh --reference-tested

step "asan: kernel tests under AddressSanitizer + UBSan, with FMA contraction"
# NANOSERVE_SIM_FP_CONTRACT: kernels contract a*b+c into FMAs as nvcc does (kernels/sim/README.md),
# so every kernel test runs both ways in CI: without contraction in the sim step, with it here.
# NANOSERVE_SANITIZE_COMMON=OFF: the host library (loaders, tokenizers, oracle) that the kernel
# tests link is built without instrumentation here — the fuzz step runs it under ASan+UBSan —
# which saves ~80 CPU-s of a cold build.
cmake --preset asan -DNANOSERVE_SIM_FP_CONTRACT=ON -DNANOSERVE_SANITIZE_COMMON=OFF >/dev/null
# Only the kernel tests (and the simulator's microbenchmark). The loaders, tokenizers and chat
# templates run under ASan+UBSan in the fuzz step below (clang, instrumented, fed their seeds and
# mutations); their unit tests (test_common, ~80 files: ~250 CPU-s to build under ASan) and the
# chapters' tests stay in the sim build.
cmake --build --preset asan -j "$jobs" --target test_kernels sim_microbench
# Not here (the sim step runs them): the reverse-order reruns of the kernel tests (the schedule is
# what they vary) and bench_kernels' runs (its kernels are the ones test_kernels checks under
# ASan; its 17 files cost ~30 s).
ctest --preset asan -j "$jobs" -L kernels -LE cli -E '[.]reverse$|bench_kernels'

nvcc=$(bash scripts/find_nvcc.sh)
if [[ -n "$nvcc" ]]; then
  step "cuda: compile and link ($nvcc)"
  # The check is that everything compiles and links, so device code is built as cheaply as that
  # allows: one architecture (compute_90, the H200 the GPU checks run on; no kernel uses
  # architecture-specific code), as PTX only (no ptxas) and with NVVM's optimizer off
  # (-Xcicc -O0; the front end, which finds every error a kernel author makes, runs in full).
  # qgemv.cu: 61 CPU-s for optimized sm_90 code, 33 s as optimized PTX, 5.4 s like this.
  # Optimized machine code is what scripts/prepare_gpu_carry.sh builds for a GPU run (ptxas and
  # its limits, e.g. 48 KiB of static shared memory, are checked there).
  # The host side of the .cu files likewise at -O0 without debug info (9.6 -> 5.9 s for
  # attention_decode.cu); the preset's flags come back with the next `cmake --preset cuda`.
  cmake --preset cuda "${cache[@]}" -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCMAKE_CUDA_ARCHITECTURES=90-virtual -DCMAKE_CUDA_FLAGS="-Xcicc -O0" \
    -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" >/dev/null
  cmake --build --preset cuda -j "$jobs"
else
  step "cuda: skipped, no nvcc on this machine"
fi

step "fuzz: loaders, ${fuzz_seconds}s each, $jobs at a time"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzzers
# Each fuzzer is one process on one core: run $jobs of them at once.
run_fuzzer() {
  local f=$1 name corpus seeds
  name=$(basename "$f")
  corpus="build/fuzz/corpus/$name"
  mkdir -p "$corpus"
  seeds="fuzz/seeds/${name#fuzz_}"
  "$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=1024 -max_len=65536 "$corpus" \
       $( [[ -d "$seeds" ]] && echo "$seeds" ) >"build/fuzz/$name.log" 2>&1 \
    || { echo "$name FAILED:"; tail -n 40 "build/fuzz/$name.log"; return 1; }
  echo "$name: $(grep -E '^Done|#[0-9]+.*DONE' "build/fuzz/$name.log" | tail -n 1)"
}
export -f run_fuzzer
export fuzz_seconds
find build/fuzz/fuzz -maxdepth 1 -name 'fuzz_*' -type f -perm -u+x | sort \
  | xargs -r -P "$jobs" -I{} bash -c 'run_fuzzer "$1"' _ {}

step "docs: Doxygen (warnings are errors)"
cmake --build --preset sim --target docs
python3 scripts/check_doc_links.py build/sim/docs/html
python3 scripts/check_doc_examples.py  # every engine type's docs show an example that is a test

step "all green"

#!/usr/bin/env bash
# The one prepared script to run on a GPU machine (docs/design.md, "Two kernel backends, one
# kernel source"; issue "GPU validation"):
#   1. device facts (GPU, driver, nvcc), commit and date
#   2. every test binary, `gpu`-labelled tests included (kernels vs the oracle on hardware,
#      greedy stories260K through the CUDA path)
#   3. nanoserve's logits against Hugging Face transformers' on small random HF checkpoints of
#      each architecture (scripts/hf_logits_check.py); compute-sanitizer memcheck and racecheck
#      over the kernel tests, where supported
#   4. end-to-end decode vs the roofline and vs Hugging Face transformers, the kernel
#      benchmark and PyTorch SDPA on its prefill-attention shapes, and each chapter's tour on
#      the GPU, JSON
# Everything lands in the folder given as $1 (default: $OUT when the device tool runs it, else
# results/gpu). Time-boxed to finish in under 8 minutes on an H200.
#
# Binaries come from gpu_carry/ (made here by scripts/prepare_gpu_carry.sh: the GPU machine has
# the driver and nvcc but not our dependencies). With --build it configures and builds the
# cuda preset in place instead (needs Eigen, GTest, CLI11, nlohmann-json, xxhash installed).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-results/gpu}}
mkdir -p "$out"
log="$out/gpu_check.log"
exec > >(tee -a "$log") 2>&1
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
step() { echo; echo "== [$(elapsed)s] $*"; }

bin=gpu_carry/bin
if [[ ! -d "$bin" && -f gpu_carry.tar.xz ]]; then
  step "unpacking gpu_carry.tar.xz"
  tar -xJf gpu_carry.tar.xz 2>/dev/null ||
    python3 -c "import tarfile; tarfile.open('gpu_carry.tar.xz').extractall()" || exit 1
fi
if [[ "${1:-}" == "--build" || ! -d "$bin" ]]; then
  step "building the cuda preset here"
  cmake --preset cuda -DCMAKE_CUDA_FLAGS="" >/dev/null && cmake --build --preset cuda -j "$(nproc)" || exit 1
  mkdir -p gpu_carry/bin
  find build/cuda -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' -o -name nanoserve \
       -o -name write_hf_checkpoints -o -name 'ch[0-9][0-9]_*' \) -exec cp {} gpu_carry/bin/ \;
fi
export NANOSERVE_DATA=${NANOSERVE_DATA:-$PWD/gpu_carry/data}
# The stamp of every results JSON: gpu_carry/GIT_SHA holds the commit and, on a second line,
# "+dirty" when the tree had changes (scripts/prepare_gpu_carry.sh). The sha keeps its "+dirty"
# (bench_kernels has no other way to say it); the chapters' JSON also gets git_dirty from
# NANOSERVE_GIT_DIRTY (common/report.h).
stamp=$(cat gpu_carry/GIT_SHA 2>/dev/null ||
        { git rev-parse --short=12 HEAD && { git diff --quiet HEAD || echo "+dirty"; }; } 2>/dev/null ||
        echo unknown)
export NANOSERVE_GIT_SHA=${stamp//$'\n'/}
if [[ "$stamp" == *+dirty* || "$stamp" == unknown ]]; then
  export NANOSERVE_GIT_DIRTY=true
else
  export NANOSERVE_GIT_DIRTY=false
fi

step "device"
{
  echo "{"
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"git_sha\": \"$NANOSERVE_GIT_SHA\","
  echo "  \"git_dirty\": $NANOSERVE_GIT_DIRTY,"
  echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)\","
  echo "  \"driver\": \"$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)\","
  echo "  \"memory\": \"$(nvidia-smi --query-gpu=memory.total --format=csv,noheader 2>/dev/null | head -n1)\","
  echo "  \"nvcc\": \"$(nvcc --version 2>/dev/null | tail -n1)\""
  echo "}"
} > "$out/device.json"
cat "$out/device.json"
if ! nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check: no GPU here (nvidia-smi failed): the tests below skip their gpu parts,"
  echo "           and the benchmarks are not run. This is a dry run."
  dry=1
else
  dry=0
fi

# NCCL (chapter 9's communicator on GPUs) is not part of our build's carry: the GPU machine's
# PyTorch ships it (the pip package nvidia-nccl-cu*); its library folder goes on the loader's path.
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
[[ -n "$nccl_lib" && -d "$nccl_lib" ]] && export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

status=0
step "tests (every binary; gpu-labelled tests run on the device)"
for t in "$bin"/test_*; do
  [[ -x "$t" ]] || continue
  name=$(basename "$t")
  # A binary that needs a library this machine lacks (Open MPI: chapter 9's MPI tests run in CI,
  # not here) is skipped with the library named; test_nccl runs NCCL at one rank (TP = 1).
  if missing=$(ldd "$t" 2>/dev/null | grep 'not found'); then
    echo "$name: skipped, missing here: $(awk '{print $1}' <<<"$missing" | tr '\n' ' ')"
    continue
  fi
  timeout 120 "$t" --gtest_brief=1 --gtest_output="json:$out/$name.json" > "$out/$name.log" 2>&1
  rc=$?
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$name.log" | tr '\n' ' ')
  echo "$name: exit $rc  $summary"
  ((rc == 0)) || { status=1; grep -E '^\[  FAILED|Failure|error' "$out/$name.log" | head -n 20; }
done

# Tensor parallelism on the GPU (chapter 9). TP = 1 over NCCL runs above, inside test_nccl
# (Ch09Nccl.TensorParallelAtOneRankGivesTheWholeModelsTokens: every collective of the scheme on
# the runner's stream, the whole model's greedy tokens). TP = 2 needs Open MPI to start the
# ranks: where mpirun and test_ch09_mpi's libraries are present, two ranks share the GPU(s) and
# their collectives go through MPI (host-staged in the cuda build, not NCCL). Prepared, not yet
# run on a GPU machine (none had MPI so far).
if ((dry == 0)) && command -v mpirun >/dev/null 2>&1 && [[ -x "$bin/test_ch09_mpi" ]] &&
   ! ldd "$bin/test_ch09_mpi" 2>/dev/null | grep -q 'not found'; then
  step "tensor parallelism TP = 2 under mpirun on the GPU (MPI transport)"
  timeout 120 mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2 \
    "$bin/test_ch09_mpi" --gtest_brief=1 --gtest_filter='Ch09TensorParallelMpi.*' \
    > "$out/tensor_parallel_np2.log" 2>&1
  rc=$?
  echo "test_ch09_mpi (TP 2): exit $rc"; grep -E '^\[ tp|FAILED' "$out/tensor_parallel_np2.log" | head -n 10
  ((rc == 0)) || status=1
else
  echo "tensor parallelism TP = 2: skipped (needs a GPU, mpirun and test_ch09_mpi's libraries)"
fi

# nanoserve links no MPI (chapter 9's --tensor-parallel opens libnanoserve_mpi.so at run time):
# here, without Open MPI or the plugin, it must start and refuse --tensor-parallel 2 in one line.
if [[ -x "$bin/nanoserve" ]]; then
  step "nanoserve --tensor-parallel 2 without mpirun: one clear line"
  msg=$(timeout 60 "$bin/nanoserve" generate -m synthetic:tiny --device gpu --tensor-parallel 2 \
        -n 2 2>&1 >/dev/null)
  rc=$?
  echo "exit $rc: $msg"
  if ((rc == 0 || rc >= 124)) || ! grep -Eq "needs Open MPI|needs as many ranks" <<<"$msg"; then
    status=1
  fi
fi

# The HF format against its reference implementation: write_hf_checkpoints writes a small random
# checkpoint of each architecture here (llama with Llama 3.1's rope_scaling, qwen2 with biases
# and tied embeddings, mistral with an explicit head_dim; sharded bf16), and nanoserve's logits
# (the oracle and the kernels in fp32, the kernels in bf16) are compared with transformers' on
# the same token ids, within the named tolerances of common/tolerances.h. Seconds; exit 3 means
# torch or transformers is missing here: said, not counted as a failure.
if ((dry == 0)) && [[ -x "$bin/nanoserve" && -x "$bin/write_hf_checkpoints" ]]; then
  step "peer: logits vs Hugging Face transformers on small HF checkpoints (llama, qwen2, mistral)"
  timeout 90 python3 scripts/hf_logits_check.py --bin "$bin" --json "$out/hf_logits.json"
  rc=$?
  if ((rc == 3)); then
    echo "hf_logits_check: not run (see its line above)"
  elif ((rc != 0)); then
    echo "hf_logits_check: exit $rc"; status=1
  fi
else
  echo "hf_logits_check: skipped (needs a GPU, nanoserve and write_hf_checkpoints in $bin)"
fi

if ((dry == 0)) && command -v compute-sanitizer >/dev/null 2>&1 && [[ -x "$bin/test_kernels" ]]; then
  # Sanitizers slow kernels by 10-100x: run the kernel tests on their smaller cases.
  for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool (kernel tests)"
    timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bin/test_kernels" --gtest_brief=1 --gtest_filter='-*Large*:*Bench*' \
      > "$out/sanitizer_$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc ($(grep -cE '^========= (Invalid|Race|Error)' "$out/sanitizer_$tool.log") reports)"
    tail -n 5 "$out/sanitizer_$tool.log"
    ((rc == 0 || rc == 124)) || status=1
  done
fi

# The benchmarks, most important first; each gets what is left of the 8-minute budget.
budget=470
left() { local l=$(( budget - $(elapsed) )); (( l > $1 )) && echo "$1" || echo $(( l > 0 ? l : 1 )); }
if ((dry == 0)) && [[ -x "$bin/bench_decode" ]]; then
  step "bench_decode: synthetic Llama-2-7B fp16, batch 1/8/32/128, CUDA graphs off/on, vs the copy roofline"
  timeout "$(left 150)" "$bin/bench_decode" --model synthetic:llama2-7b --dtype fp16 \
    --batch 1,8,32,128 --json "$out/bench_decode.json" || status=1
fi
if ((dry == 0)); then
  step "peer: Hugging Face transformers generate(), same shape and dtype"
  timeout "$(left 120)" python3 scripts/hf_peer_bench.py --shape llama2-7b --dtype fp16 \
    --batch 1,32 --json "$out/hf_peer.json" || echo "hf_peer_bench: not run to completion"
fi
if ((dry == 0)) && [[ -x "$bin/bench_kernels" ]]; then
  step "bench_kernels (full sizes)"
  timeout "$(left 150)" "$bin/bench_kernels" --json "$out/bench_kernels.json" || status=1
fi
if ((dry == 0)); then
  step "peer: PyTorch scaled_dot_product_attention on bench_kernels' attention_prefill shapes"
  timeout "$(left 60)" python3 scripts/sdpa_bench.py --json "$out/sdpa_bench.json" ||
    echo "sdpa_bench: not run to completion"
fi
for prog in "$bin"/ch[0-9][0-9]_*; do
  [[ -x "$prog" && $dry -eq 0 ]] || continue
  if ldd "$prog" 2>/dev/null | grep -q 'not found'; then
    echo "skipping $(basename "$prog"): a library it needs is missing here (ldd)"; continue
  fi
  (( $(elapsed) < budget - 20 )) || { echo "skipping $(basename "$prog"): out of time"; continue; }
  step "$(basename "$prog") --tour on the GPU"
  timeout "$(left 60)" "$prog" --tour --json "$out/$(basename "$prog").json" \
    > "$out/$(basename "$prog").log" 2>&1 || status=1
  tail -n 15 "$out/$(basename "$prog").log"
done

step "done in $(elapsed)s, status $status; results in $out"
exit $status

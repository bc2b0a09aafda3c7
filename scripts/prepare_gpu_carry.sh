#!/usr/bin/env bash
# Prepares gpu_carry/ (git-ignored) for scripts/gpu_check.sh on a GPU machine that has the CUDA
# driver but none of our build dependencies: builds the `cuda` preset here (static cudart,
# libstdc++ and xxhash, so the binaries are self-contained) and copies the programs, the test
# binaries and the small real-model files they use. Then, with the device tool:
#   run(command="bash scripts/gpu_check.sh", carry=["gpu_carry.tar.xz"], timeout_s=540)
# Budget: the device tool carries at most 64 MiB. Every binary holds the kernels' device code
# and a static cudart (~200 MB together, stripped), so they travel as one xz archive (~31 MB),
# which gpu_check.sh unpacks.
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc=$(bash scripts/find_nvcc.sh)
[[ -n "$nvcc" ]] || { echo "prepare_gpu_carry: no nvcc here" >&2; exit 1; }
# The lent machine is an H200 (sm_90): device code for it alone builds 4x faster and carries
# smaller binaries; NANOSERVE_CUDA_ARCHS overrides (e.g. "80;86;89;90", the preset's set).
# CMAKE_CUDA_FLAGS is reset: scripts/test.sh's compile-only check sets -Xcicc -O0 in the same
# build folder, and the GPU must run optimized code.
cmake --preset cuda -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_FLAGS="" \
  -DCMAKE_CUDA_ARCHITECTURES="${NANOSERVE_CUDA_ARCHS:-90}" >/dev/null
cmake --build --preset cuda -j "$(nproc)"

rm -rf gpu_carry && mkdir -p gpu_carry/bin gpu_carry/data
# Every executable of the build: test binaries, bench_kernels, nanoserve, chapter programs, and
# write_hf_checkpoints (the HF checkpoints scripts/hf_logits_check.py compares with transformers
# are written on the GPU machine, not carried).
while IFS= read -r exe; do
  cp "$exe" gpu_carry/bin/
done < <(find build/cuda -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' \
           -o -name 'nanoserve' -o -name 'write_hf_checkpoints' -o -name 'ch[0-9][0-9]_*' \) \
           ! -name '*.sh' | sort)
strip --strip-all gpu_carry/bin/* 2>/dev/null || true

data=${NANOSERVE_DATA:-../shared/data}
for f in stories260K.bin stories260K.gguf tok512.bin tinystories_valid_sample.txt \
         tinystories-656k/config.json tinystories-656k/model.safetensors \
         tinystories-656k/tokenizer.json tinystories-656k/tokenizer_config.json; do
  if [[ -f "$data/$f" ]]; then
    mkdir -p "gpu_carry/data/$(dirname "$f")"
    cp "$data/$f" "gpu_carry/data/$f"
  else
    echo "prepare_gpu_carry: $data/$f not found; tests needing it will skip on the GPU" >&2
  fi
done
git rev-parse --short=12 HEAD > gpu_carry/GIT_SHA
git diff --quiet HEAD || echo "+dirty" >> gpu_carry/GIT_SHA
ls -la gpu_carry/bin
echo "gpu_carry: $(du -sh gpu_carry | cut -f1) (limit 64 MiB), commit $(tr -d '\n' < gpu_carry/GIT_SHA)"
tar -cJf gpu_carry.tar.xz gpu_carry
echo "gpu_carry.tar.xz: $(du -h gpu_carry.tar.xz | cut -f1) (limit 64 MiB) — carry this file"

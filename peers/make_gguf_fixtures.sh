#!/usr/bin/env bash
# Regenerates tests/data/gguf_llama_cpp/: a synthetic Llama (rows multiples of 256) written by
# nanoserve in F32, quantized by llama.cpp itself (llama_model_quantize from the npm package
# @node-llama-cpp/linux-x64, pinned in peers/package-lock.json) into each type below, and for
# each file the FNV-1a 64 hash of every tensor as ggml's `to_float` dequantizes it
# (peers/ggml_reference.c). tests/common/test_gguf_ggml_reference.cpp checks that nanoserve
# decodes every tensor to the same fp32 bits.
#
#   usage: bash peers/make_gguf_fixtures.sh   (from the repository root, after
#          `cmake --build --preset sim --target nanoserve_common` and
#          `(cd peers && npm ci --ignore-scripts --omit=optional)`; needs $NANOSERVE_DATA or
#          ../shared/data for stories260K.gguf, whose vocabulary the model uses)
set -euo pipefail
cd "$(dirname "$0")/.."
lib=peers/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
data=${NANOSERVE_DATA:-../shared/data}
out=tests/data/gguf_llama_cpp
work=build/peers
mkdir -p "$out" "$work"
[[ -f "$lib/libllama.v0.4.0.so" ]] || { echo "npm packages missing: cd peers && npm ci --ignore-scripts --omit=optional" >&2; exit 1; }
gcc -O1 -std=c11 -Wall peers/ggml_reference.c -ldl -o "$work/ggml_reference"
g++ -std=c++17 -O1 -I. -I/usr/include/eigen3 peers/write_synthetic_gguf.cpp \
  build/sim/common/libnanoserve_common.a -lxxhash -lpthread -o "$work/write_synthetic_gguf"
"$work/write_synthetic_gguf" "$data/stories260K.gguf" "$work/synthetic-F32.gguf"
# llama_ftype numbers (llama.h): 2 Q4_0, 3 Q4_1, 7 Q8_0, 8 Q5_0, 9 Q5_1, 10 Q2_K, 12 Q3_K_M,
# 15 Q4_K_M, 17 Q5_K_M, 18 Q6_K.
for pair in 2:Q4_0 3:Q4_1 7:Q8_0 8:Q5_0 9:Q5_1 10:Q2_K 12:Q3_K_M 15:Q4_K_M 17:Q5_K_M 18:Q6_K; do
  ftype=${pair%%:*} name=${pair#*:}
  "$work/ggml_reference" quantize "$lib" "$work/synthetic-F32.gguf" "$out/synthetic-$name.gguf" \
    "$ftype" > "$work/quantize-$name.log" 2>&1 || { cat "$work/quantize-$name.log" >&2; exit 1; }
  "$work/ggml_reference" hashes "$lib" "$out/synthetic-$name.gguf" > "$out/synthetic-$name.hashes"
  printf '%-8s %8d bytes  types: %s\n' "$name" "$(stat -c %s "$out/synthetic-$name.gguf")" \
    "$(awk '{print $2}' "$out/synthetic-$name.hashes" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
done

#!/usr/bin/env bash
# The README's first command: set up, build (sim preset: runs anywhere, no GPU needed), and
# walk through what nanoserve does on the embedded default model.
#
# Model: stories260K (a real, tiny, trained Llama) when it can be found ($NANOSERVE_DATA,
# data/models/) or downloaded (~1 MB, sha256-verified); otherwise the synthetic model
# `synthetic:tiny`, whose random weights produce meaningless text — said plainly below.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
preset=${NANOSERVE_PRESET:-sim}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
bin=build/$preset

if [[ -z "${NANOSERVE_DATA:-}" && -d ../shared/data ]]; then
  export NANOSERVE_DATA=$(cd ../shared/data && pwd)
fi
have_stories() {
  [[ -f "${NANOSERVE_DATA:-/nonexistent}/stories260K.bin" || -f data/models/stories260K.bin ]]
}
if ! have_stories; then
  echo "stories260K not found; trying to download it (about 1 MB)…"
  bash data/download_models.sh stories260K || true
fi
if have_stories; then
  model=stories260K.bin
else
  model=synthetic:tiny
  echo
  echo "NOTE: no real model available (offline?). Using synthetic:tiny, a model with random"
  echo "      weights: everything below runs for real, but its text is meaningless."
fi

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
banner "1. The model: nanoserve info --model $model"
"$bin/apps/nanoserve/nanoserve" info --model "$model"

banner "2. Greedy decoding on the CPU oracle (Eigen, fp32)"
"$bin/apps/nanoserve/nanoserve" generate --model "$model" --temperature 0 --steps 120

banner "3. Sampling: temperature 0.8, top-p 0.9, seed 7 (same seed, same story, always)"
"$bin/apps/nanoserve/nanoserve" generate --model "$model" --prompt "Once upon a time" \
  --temperature 0.8 --top-p 0.9 --seed 7 --steps 80

if [[ "$model" != synthetic:* ]]; then
  banner "4. Quality: bits-per-byte on the TinyStories sample"
  "$bin/apps/nanoserve/nanoserve" eval --model "$model" --text tinystories_valid_sample.txt
fi

for program in "$bin"/chapters/ch*/ch*; do
  [[ -x "$program" ]] || continue
  banner "Chapter $(basename "$program")"
  "$program" --model "$model" --tour
done

banner "Next: bash scripts/test.sh runs every test; chapters/*/README.md are the tutorials."

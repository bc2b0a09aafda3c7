#!/usr/bin/env bash
# Installs every build dependency of nanoserve from Debian/Ubuntu packages. Idempotent: when
# everything is present it only says so. As root it runs apt-get; otherwise it prints the exact
# command to run and exits non-zero.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  libeigen3-dev            # the CPU oracle
  libgtest-dev libgmock-dev googletest
  libcli11-dev             # command lines
  libcpp-httplib-dev       # `nanoserve serve`: HTTP server, SSE (chapter 8)
  nginx                    # scripts/serve_cluster.sh: round-robin in front of replicas
  chromium                 # the live view's browser test (headless, driven by playwright-core)
  nlohmann-json3-dev       # JSON results, config.json, tokenizer.json
  libboost-context-dev     # fibers of the CUDA simulator
  libxxhash-dev            # prefix-cache block hashes
  ccache                   # scripts/test.sh: one compiler cache for the sim and cuda presets
  libpcre2-dev libutf8proc-dev  # tokenizers: regex pre-tokenizers (PCRE2), NFC (utf8proc)
  libopenmpi-dev openmpi-bin    # chapter 9: the ranks of a distributed run (mpirun), MPI collectives
  doxygen graphviz         # documentation
  clang libclang-rt-dev    # libFuzzer targets for the loaders
  python3 python3-matplotlib  # scripts/plot_results.py (tutorial plots from JSON results)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "bootstrap: missing packages. Run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
else
  echo "bootstrap: all build dependencies are installed" >&2
fi

# CUDA is optional here: without nvcc the sim preset is all there is (and it is enough for the
# tests). scripts/test.sh and scripts/gpu_check.sh use the nvcc this finds.
nvcc_path=""
if command -v nvcc >/dev/null 2>&1; then
  nvcc_path=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc_path=/usr/local/cuda/bin/nvcc
fi
if [[ -n "$nvcc_path" ]]; then
  echo "bootstrap: nvcc found at $nvcc_path ($("$nvcc_path" --version | tail -n 1))" >&2
else
  echo "bootstrap: no nvcc (checked PATH and /usr/local/cuda/bin); the cuda preset is skipped" >&2
fi

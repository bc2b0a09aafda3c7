#!/usr/bin/env bash
# Prints the path of nvcc (PATH first, then /usr/local/cuda/bin), or nothing. Sourced by scripts.
if command -v nvcc >/dev/null 2>&1; then
  command -v nvcc
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo /usr/local/cuda/bin/nvcc
fi

#!/usr/bin/env bash
# nanoserve_tp_text.sh NANOSERVE SOURCE_DIR MODEL LAUNCHER...: `nanoserve generate -m MODEL
# --device gpu -t 0 -n 16` split across 2 ranks (LAUNCHER: mpirun, its flags and -np 2) prints
# exactly the text of the one-device run — rank 1 printing nothing — and says it ran split.
# Skips (77) when MODEL is a file in neither $NANOSERVE_DATA nor SOURCE_DIR/data/models.
set -uo pipefail
bin=$1 root=$2 model=$3
shift 3
if [[ $model != synthetic:* && ! -f "${NANOSERVE_DATA:-/nonexistent}/$model" &&
      ! -f "$root/data/models/$model" ]]; then
  echo "skipped: $model is not in \$NANOSERVE_DATA (${NANOSERVE_DATA:-unset}) or data/models"
  exit 77
fi
args=(generate -m "$model" --device gpu -t 0 -n 16 -p "Once upon a time")
want=$("$bin" "${args[@]}" 2>/dev/null) || { echo "FAILED: the one-device run failed"; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
got=$(timeout --kill-after=5 60 "$@" "$bin" "${args[@]}" --tensor-parallel 2 2>"$err")
rc=$?
echo "one device:        $want"
echo "tensor-parallel 2: $got"
cat "$err"
((rc == 0)) || { echo "FAILED: the split run exited $rc"; exit 1; }
[[ "$got" == "$want" ]] || { echo "FAILED: the texts differ"; exit 1; }
grep -q "tensor-parallel 2 over Open MPI" "$err" || { echo "FAILED: stderr does not say it ran split"; exit 1; }
echo "ok: the same text at TP 2 as on one device"

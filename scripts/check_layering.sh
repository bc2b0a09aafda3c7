#!/usr/bin/env bash
# Checks that includes point one way (docs/mainpage.md, "Layout"):
#   chapters -> harness -> engine (disagg -> serve, decode -> model -> kv) -> common, kernels
# and that no chapter includes another chapter. Prints each offending include with its file and
# line, and exits 1 if there is one. Run by ctest (layering.*). Usage: check_layering.sh [ROOT]
# (a git checkout; default: this project).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# For a file, the include prefixes it may use (besides its own folder and system headers).
allowed() {
  local foundation='common/[a-z_]+\.h|common/(generation|loaders|tokenizer|chat|sampling|oracle|eval|quant|speculative|io|cli|roofline|dist)/'
  case "$1" in
    kernels/*)              echo 'kernels/' ;;
    common/engine/kv/*)     echo "$foundation|common/engine/kv/" ;;
    common/engine/model/*)  echo "$foundation|kernels/|common/engine/(kv|model)/" ;;
    common/engine/decode/*) echo "$foundation|kernels/|common/engine/(kv|model|decode)/" ;;
    common/engine/serve/*)  echo "$foundation|kernels/|common/engine/(kv|model|serve)/" ;;
    common/engine/disagg/*) echo "$foundation|kernels/|common/engine/(kv|model|serve|disagg)/" ;;
    common/harness/*)       echo "$foundation|kernels/|common/engine/|common/harness/" ;;
    common/*)               echo "$foundation|kernels/" ;;
    chapters/*)             local ch; ch=$(cut -d/ -f1-2 <<<"$1")
                            echo "common/|kernels/|$ch/" ;;
    apps/*)                 echo "common/|kernels/|apps/" ;;
    *)                      echo '.*' ;;
  esac
}

status=0
while IFS= read -r file; do
  pattern=$(allowed "$file")
  while IFS=: read -r line inc; do
    [[ -z "$inc" ]] && continue
    if ! grep -qE "^($pattern)" <<<"$inc"; then
      echo "$file:$line: includes \"$inc\", which its layer may not use (allowed: $pattern)"
      status=1
    fi
    # The model side reads only the scheduler's output, never the block manager.
    if [[ "$file" == common/engine/model/* || "$file" == common/engine/serve/model_executor.* ]] &&
       [[ "$inc" =~ ^common/engine/kv/(kv_cache_manager|block_pool)\.h$ ]]; then
      echo "$file:$line: includes \"$inc\": the model side reads the plan, not the manager"
      status=1
    fi
  done < <(grep -noE '^#include "[^"]+"' "$file" | sed -E 's/^([0-9]+):#include "([^"]+)"/\1:\2/')
done < <(git ls-files 'common/*' 'kernels/*' 'chapters/*' 'apps/*' | grep -E '\.(h|cpp|cu|cuh)$')
if ((status == 0)); then echo "layering: every include points one way"; fi
exit $status

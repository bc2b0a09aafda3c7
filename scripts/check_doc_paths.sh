#!/usr/bin/env bash
# Checks that the paths the documentation names exist, so that a move or a rename cannot leave a
# tutorial walking files that are gone. In every tracked Markdown file (READMEs, docs/*.md):
#   - a path in backticks that starts with a top-level folder of the project
#     (`common/engine/kv/block_pool.h`, `tests/ch02/`, `bash scripts/tour.sh ch01`) must be a
#     tracked file or a folder holding one; `a.{h,cpp}` is checked as a.h and a.cpp;
#   - a bare source file name in backticks (`block_pool.h`, `main.cpp`) must be the name of
#     some tracked file;
#   - a relative Markdown link or image (`](../../docs/images/x.png)`) must resolve, from the
#     folder of the file that holds it, to a tracked file.
# Fenced code blocks (commands, program output, diagrams) are not read. Skipped: placeholders
# (`chapters/chNN_*/`, `<name>`, `…`), git-ignored paths (build outputs, `data/models/`), and
# a few external file names (below). Prints each missing path as file:line and exits 1 if there
# is one. Run by ctest (docs.*). Usage: check_doc_paths.sh [ROOT] (a git checkout; default:
# this project).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

top='(apps|chapters|cmake|common|data|docs|fuzz|kernels|scripts|tests)/'
# Named in prose but not ours: headers of the CUDA toolkit the simulator stands in for, and
# files of the codebases docs/style.md points to.
external=' cuda_runtime.h cuda_runtime_api.h cuda_fp16.h cuda_bf16.h cuda_pipeline.h mma.h
  test_gpt2.cu '

declare -A tracked=() names=()
while IFS= read -r f; do
  tracked[$f]=1
  names[${f##*/}]=1
  d=$f
  while [[ $d == */* ]]; do d=${d%/*}; tracked[$d/]=1; done
done < <(git ls-files)

# Normalizes a/b/../c and ./ segments (links are relative to the Markdown file's folder).
normalize() {
  local -a out=() parts
  local p
  IFS=/ read -ra parts <<<"$1"
  for p in "${parts[@]}"; do
    case "$p" in
      ''|.) ;;
      ..) if ((${#out[@]})); then unset 'out[${#out[@]}-1]'; else echo "../"; return; fi ;;
      *) out+=("$p") ;;
    esac
  done
  local IFS=/
  echo "${out[*]}"
}

# expand "x.{h,cpp}" -> "x.h x.cpp" (one brace group is all the docs use)
expand() {
  if [[ $1 =~ ^(.*)\{([^{}]*)\}(.*)$ ]]; then
    local pre=${BASH_REMATCH[1]} alts=${BASH_REMATCH[2]} post=${BASH_REMATCH[3]} a
    IFS=, read -ra alts_list <<<"$alts"
    for a in "${alts_list[@]}"; do echo "$pre$a$post"; done
  else
    echo "$1"
  fi
}

status=0
checked=0
missing() {  # missing <file> <line> <what>
  echo "$1:$2: $3 does not exist"
  status=1
}

while IFS= read -r md; do
  dir=$(dirname "$md")
  # awk: "<line>\tcode\t<span>" for inline code spans, "<line>\tlink\t<target>" for links,
  # outside fenced blocks.
  while IFS=$'\t' read -r line kind text; do
    if [[ $kind == link ]]; then
      target=${text%%#*}
      target=${target%% *}
      [[ -z $target || $target =~ ^[a-z]+: || $target == /* ]] && continue
      path=$(normalize "$dir/$target")
      ((++checked))
      [[ $path == ../* ]] && { missing "$md" "$line" "link '$text' (outside the repository)"; continue; }
      [[ -n ${tracked[$path]:-} || -n ${tracked[$path/]:-} ]] || git check-ignore -q "$path" ||
        missing "$md" "$line" "link '$text'"
      continue
    fi
    for word in $text; do
      word=${word#(}
      word=${word%[,;.)]}
      [[ $word =~ ^(.*[^0-9:]):[0-9]+(-[0-9]+)?$ ]] && word=${BASH_REMATCH[1]}  # file:line
      [[ $word == *chNN* || $word == *'*'* || $word == *'<'* || $word == *'…'* ||
         $word == *'...'* || $word == *'$'* ]] && continue
      if [[ $word =~ ^$top ]]; then
        while IFS= read -r path; do
          ((++checked))
          [[ -n ${tracked[$path]:-} || -n ${tracked[${path%/}/]:-} ]] ||
            git check-ignore -q "$path" || missing "$md" "$line" "'$path'"
        done < <(expand "$word")
      elif [[ $word =~ ^[A-Za-z0-9_]+(\.\{[a-z,]+\}|\.(h|cpp|cu|cuh|sh))$ ]]; then
        while IFS= read -r name; do
          ((++checked))
          [[ $external =~ (^|[[:space:]])$name($|[[:space:]]) || -n ${names[$name]:-} ]] ||
            missing "$md" "$line" "file name '$name'"
        done < <(expand "$word")
      fi
    done
  done < <(awk '
    /^[ \t]*```/ { fenced = !fenced; next }
    fenced { next }
    {
      s = $0
      while (match(s, /`[^`]+`/)) {
        printf "%d\tcode\t%s\n", NR, substr(s, RSTART + 1, RLENGTH - 2)
        s = substr(s, RSTART + RLENGTH)
      }
      s = $0
      gsub(/`[^`]*`/, "", s)
      while (match(s, /\]\([^) ]+( "[^"]*")?\)/)) {
        t = substr(s, RSTART + 2, RLENGTH - 3)
        sub(/ ".*$/, "", t)
        printf "%d\tlink\t%s\n", NR, t
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$md")
done < <(git ls-files '*.md')
if ((status == 0)); then echo "doc paths: all $checked paths the documentation names exist"; fi
exit $status

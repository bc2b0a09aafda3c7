#!/usr/bin/env bash
# Writes a student copy of the project: every file git knows, with the exercise regions of the
# chosen chapters (default: all) replaced by their hint and a stub that compiles. The copy
# builds (sim preset) and the stubbed exercises' tests (ctest labels ex.chNN.k) fail until the
# student writes them; scripts/grade.sh scores them. Chapters not chosen keep the reference
# code, so a student who does only ch04 has working ch01-ch03 code.
#   scripts/make_student_tree.sh OUT [--chapters ch02,ch04]
# OUT must not exist or be empty. The copy gets a git repository with one commit, so a student
# can diff their work and the scripts that list files by git work there too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: scripts/make_student_tree.sh OUT [--chapters chNN,chMM]" >&2; exit 2; }
(($# >= 1)) || usage
out=$1; shift
chapters=
while (($#)); do
  case "$1" in
    --chapters) (($# >= 2)) || usage; chapters=$2; shift 2 ;;
    *) usage ;;
  esac
done
if [[ -n "$chapters" && ! "$chapters" =~ ^ch[0-9][0-9](,ch[0-9][0-9])*$ ]]; then
  echo "make_student_tree.sh: --chapters takes chNN[,chNN...], got '$chapters'" >&2
  exit 2
fi
python3 "$root/scripts/exercises.py" student --root "$root" --out "$out" \
  ${chapters:+--chapters "$chapters"}
if command -v git >/dev/null; then
  git -C "$out" init -q
  git -C "$out" add -A
  git -C "$out" -c user.name=nanoserve -c user.email=nanoserve@localhost \
    commit -qm "Student tree (exercises: ${chapters:-all chapters})"
fi

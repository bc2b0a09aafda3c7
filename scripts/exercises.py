#!/usr/bin/env python3
"""The course's exercise regions: list them, write a student tree, put regions back.

A region in the reference code (docs/instructors.md, "Exercise markers"):

    // BEGIN EXERCISE ch02.2 "The prefix hash chain" points=15 minutes=30
    // HINT: one line of the hint the student keeps
    // STUB: (void)bs;                       <- the stub body, one line per STUB line
    ...reference code...
    // END EXERCISE

`#` works as the comment prefix too (CMake, shell). An exercise may span several regions
(same id and title; points and minutes on the first). In a student tree the BEGIN, HINT and END
lines stay, the STUB lines become code and the reference code is gone, so the tree compiles
and the exercise's tests (ctest label ex.chNN.k, tests/exercises.cmake) fail.

Subcommands:
  list    [--root R] [--json]                       the exercises and their regions
  student --root R --out O [--chapters ch02,ch04]   copy R's git files to O, stubbing chapters
  apply   --root R --out O --stub ID,ID...          make O's region files the reference with
                                                    exactly these exercises stubbed (a file is
                                                    rewritten only when its text changes, so
                                                    an incremental build recompiles little)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

BEGIN = re.compile(r'^(\s*)(//|#)\s*BEGIN EXERCISE (ch\d\d\.\d+) "([^"]+)"\s*(.*?)\s*$')
END = re.compile(r'^\s*(//|#)\s*END EXERCISE\s*$')
# Files that may hold regions; the tool itself and the docs describe the syntax and are skipped.
SOURCE_SUFFIXES = ('.cpp', '.h', '.cu', '.cuh', '.cmake', '.sh', 'CMakeLists.txt')
SKIPPED = ('scripts/exercises.py', 'tests/cli/exercises_negative.sh')


class MarkerError(Exception):
    pass


def git_files(root):
    """The tree's files: git's (tracked and untracked-but-not-ignored) when `root` is the top of
    a work tree, else every file outside build/ and .git/ (a student tree without git)."""
    top = subprocess.run(['git', '-C', root, 'rev-parse', '--show-toplevel'], capture_output=True,
                         text=True)
    if top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(root):
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--cached', '--others',
                              '--exclude-standard'], check=True, capture_output=True).stdout
        return sorted(p for p in out.decode().split('\0')
                      if p and os.path.isfile(os.path.join(root, p)))
    files = []
    for d, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(d, root)
        if rel_dir == '.':
            dirs[:] = [x for x in dirs if x not in ('build', '.git')]
        for n in names:
            files.append(os.path.normpath(os.path.join(rel_dir, n)))
    return sorted(files)


def parse_attrs(text, where):
    attrs = {}
    for item in text.split():
        key, sep, value = item.partition('=')
        if not sep or key not in ('points', 'minutes'):
            raise MarkerError(f'{where}: unknown marker attribute {item!r} (points=N minutes=N)')
        if not value.isdigit():
            raise MarkerError(f'{where}: {key}={value!r} is not a whole number')
        attrs[key] = int(value)
    return attrs


def parse_file(path, rel):
    """Returns (lines, regions); a region is a dict with its line span and parts."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    regions, cur = [], None
    for n, line in enumerate(lines, 1):
        where = f'{rel}:{n}'
        m = BEGIN.match(line)
        if m:
            if cur:
                raise MarkerError(f'{where}: BEGIN EXERCISE inside the region opened at line {cur["begin"]}')
            indent, prefix, ex_id, title, attrs = m.groups()
            cur = dict(id=ex_id, title=title, attrs=parse_attrs(attrs, where), file=rel,
                       begin=n, indent=indent, prefix=prefix, hints=[], stub=[], body=[])
            continue
        if END.match(line):
            if not cur:
                raise MarkerError(f'{where}: END EXERCISE without BEGIN')
            if not cur['hints']:
                raise MarkerError(f'{rel}:{cur["begin"]}: exercise {cur["id"]} has no HINT line')
            if not cur.get('has_stub') and not cur.get('student'):
                raise MarkerError(f'{rel}:{cur["begin"]}: exercise {cur["id"]} has no STUB line')
            cur['end'] = n
            regions.append(cur)
            cur = None
            continue
        if cur is None:
            continue
        stripped = line.strip()
        tag = cur['prefix'] + ' '
        if stripped.startswith(f'{tag}TODO({cur["id"]}):'):
            cur['student'] = True  # a student tree's region: hint, TODO, the stub as code
            cur['body'].append(line)
        elif not cur['body'] and stripped.startswith(tag + 'HINT:'):
            cur['hints'].append(line)
        elif not cur['body'] and stripped.startswith(tag + 'STUB:'):
            cur['has_stub'] = True
            code = line.split('STUB:', 1)[1]
            code = code[1:] if code.startswith(' ') else code
            if code:
                cur['stub'].append(cur['indent'] + code)
        else:
            cur['body'].append(line)
    if cur:
        raise MarkerError(f'{rel}:{cur["begin"]}: BEGIN EXERCISE {cur["id"]} is never closed')
    return lines, regions


def scan(root):
    """Every region file of the tree: {rel: (lines, regions)}, and the exercises by id."""
    files, exercises = {}, {}
    for rel in git_files(root):
        if rel in SKIPPED or not rel.endswith(SOURCE_SUFFIXES):
            continue
        path = os.path.join(root, rel)
        try:
            with open(path, encoding='utf-8') as f:
                text = f.read()
                if 'BEGIN EXERCISE' not in text and 'END EXERCISE' not in text:
                    continue
        except UnicodeDecodeError:
            continue
        lines, regions = parse_file(path, rel)
        if not regions:
            continue
        files[rel] = (lines, regions)
        for r in regions:
            ex = exercises.setdefault(r['id'], dict(id=r['id'], chapter=r['id'].split('.')[0],
                                                    title=r['title'], points=None, minutes=None,
                                                    regions=[]))
            if ex['title'] != r['title']:
                raise MarkerError(f'{rel}:{r["begin"]}: {r["id"]} is titled "{r["title"]}" here '
                                  f'but "{ex["title"]}" at {ex["regions"][0]}')
            for key in ('points', 'minutes'):
                if key in r['attrs']:
                    if ex[key] is not None:
                        raise MarkerError(f'{rel}:{r["begin"]}: {r["id"]} declares {key} twice')
                    ex[key] = r['attrs'][key]
            ex['regions'].append(f'{rel}:{r["begin"]}-{r["end"]}')
    for ex in exercises.values():
        for key in ('points', 'minutes'):
            if ex[key] is None:
                raise MarkerError(f'{ex["regions"][0]}: {ex["id"]} declares no {key}=N')
    return files, dict(sorted(exercises.items(), key=lambda kv: sort_key(kv[0])))


def load_snapshot(path):
    """scan() over the texts a `snapshot` saved, so a tree stubbed in place can be restored."""
    with open(path, encoding='utf-8') as f:
        texts = json.load(f)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in texts.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), 'w', encoding='utf-8') as f:
                f.write(text)
        return scan(tmp)


def sort_key(ex_id):
    chapter, k = ex_id.split('.')
    return (chapter, int(k))


def render(lines, regions, stubbed):
    """The file's text with the regions of the exercises in `stubbed` replaced by their stub."""
    out, pos = [], 0
    for r in regions:
        if r['id'] not in stubbed:
            continue
        out.extend(lines[pos:r['begin'] - 1])
        out.append(lines[r['begin'] - 1])
        out.extend(r['hints'])
        out.append(f'{r["indent"]}{r["prefix"]} TODO({r["id"]}): replace this stub with your code.')
        out.extend(r['stub'])
        out.append(lines[r['end'] - 1])
        pos = r['end']
    out.extend(lines[pos:])
    return '\n'.join(out)


def write_if_changed(path, text):
    try:
        with open(path, encoding='utf-8') as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return True


def select(exercises, spec, what):
    """Exercise ids from 'ch02,ch04.1' style lists (a chapter means all its exercises)."""
    if spec in (None, '', 'all'):
        return set(exercises) if spec != '' else set()
    chosen = set()
    for item in spec.split(','):
        item = item.strip()
        hits = [e for e in exercises if e == item or exercises[e]['chapter'] == item]
        if not hits:
            raise MarkerError(f'{what}: {item!r} names no exercise (have: {", ".join(exercises)})')
        chosen.update(hits)
    return chosen


def apply(root, out, files, stubbed):
    changed = []
    for rel, (lines, regions) in files.items():
        if write_if_changed(os.path.join(out, rel), render(lines, regions, stubbed)):
            changed.append(rel)
    return changed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('list')
    p.add_argument('--root', default='.')
    p.add_argument('--json', action='store_true')
    p = sub.add_parser('student')
    p.add_argument('--root', default='.')
    p.add_argument('--out', required=True)
    p.add_argument('--chapters', default=None)
    p = sub.add_parser('apply')
    p.add_argument('--root', default='.')
    p.add_argument('--out', required=True)
    p.add_argument('--stub', default='')
    p.add_argument('--reference', metavar='FILE',
                   help='parse the regions from this JSON snapshot (written by `snapshot`) '
                        'instead of --root: for stubbing a tree in place and putting it back')
    p = sub.add_parser('snapshot')
    p.add_argument('--root', default='.')
    p.add_argument('--out', required=True, help='JSON file: every region file\'s reference text')
    args = ap.parse_args()
    try:
        if getattr(args, 'reference', None):
            files, exercises = load_snapshot(args.reference)
        else:
            files, exercises = scan(args.root)
        if args.cmd == 'list':
            if args.json:
                json.dump(list(exercises.values()), sys.stdout, indent=2)
                print()
            else:
                for e in exercises.values():
                    print(f'{e["id"]:9} {e["points"]:3} pts {e["minutes"]:3} min  {e["title"]}  '
                          f'[{", ".join(e["regions"])}]')
        elif args.cmd == 'student':
            stubbed = select(exercises, args.chapters, '--chapters')
            out = os.path.abspath(args.out)
            if os.path.exists(out) and os.listdir(out):
                raise MarkerError(f'{out} exists and is not empty')
            for rel in git_files(args.root):
                dst = os.path.join(out, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(os.path.join(args.root, rel), dst)
            apply(args.root, out, files, stubbed)
            print(f'student tree in {out}: {len(stubbed)} exercise(s) stubbed: '
                  f'{", ".join(sorted(stubbed, key=sort_key)) or "none"}')
        elif args.cmd == 'snapshot':
            with open(args.out, 'w', encoding='utf-8') as f:
                json.dump({rel: '\n'.join(lines) for rel, (lines, _) in files.items()}, f)
        elif args.cmd == 'apply':
            stubbed = select(exercises, args.stub, '--stub')
            for rel in apply(args.root, args.out, files, stubbed):
                print(f'rewrote {rel}')
    except MarkerError as e:
        print(f'exercises: {e}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())

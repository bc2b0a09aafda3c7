#!/usr/bin/env python3
"""CI's check of the course kit (scripts/check_exercises.sh runs it; docs/instructors.md).

In a configured sim build (default build/sim) of this tree:
  1. reference: every exercise label ex.chNN.k passes (all its tests);
  2. student: make_student_tree.sh writes a student tree, and the same stubs, written over this
     tree's region files, build (the test executables, which link every library that holds a
     region) and fail every exercise label (no test passes);
  3. one exercise back: for each selected exercise k of chapter N, the tree with only chapter
     N's exercises stubbed except k (earlier and later chapters are reference code, as for a
     student doing chapter N alone) makes ex.N.k pass and every other label of chapter N fail.
Finally the reference text goes back and the build is brought up to date again.

The stubs are written over this tree's files rather than a copy so that one incremental
build (ccache, the build directory CI already has) serves every state: a copy would need a
build of its own from scratch. Only the files that hold exercise regions change; they are put
back byte for byte on exit, also after an error or Ctrl-C (a snapshot of them is kept in the
build directory as well: `scripts/exercises.py apply --reference SNAPSHOT --out . --stub ''`).

Step 3 runs every exercise with --all; by default about --sample of them (5), every
ceil(n / sample)-th one from an offset that rotates with the commit count (set
NANOSERVE_EXERCISE_ROTATION=r to choose it), so that consecutive commits cover all of them.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import exercises as ex  # noqa: E402

TEST_TARGETS = ['test_kernels'] + [f'test_ch{i:02d}' for i in (1, 2, 3, 4, 5, 6, 7, 8, 9)]


def log(msg):
    print(f'[check_exercises {time.strftime("%H:%M:%S")}] {msg}', flush=True)


def build(build_dir, targets, what):
    cmd = ['cmake', '--build', build_dir, '-j', str(os.cpu_count() or 2)]
    if targets:
        cmd += ['--target'] + targets
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = '\n'.join((r.stdout + r.stderr).splitlines()[-40:])
        raise SystemExit(f'check_exercises: the build failed ({what}):\n{tail}')


def grade(build_dir, chapters, scratch):
    out = os.path.join(scratch, 'grade.json')
    r = subprocess.run([sys.executable, os.path.join(HERE, 'grade.py'), *chapters, '--root', ROOT,
                        '--build-dir', build_dir, '--json', out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'check_exercises: grading failed:\n{r.stdout}{r.stderr}')
    with open(out) as f:
        return {row['exercise']: row for row in json.load(f)['exercises']}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build-dir', default=os.path.join(ROOT, 'build', 'sim'))
    group = ap.add_mutually_exclusive_group()
    group.add_argument('--all', action='store_true', help='step 3 for every exercise')
    group.add_argument('--only', help='step 3 for these exercises or chapters (ch02.3,ch05)')
    ap.add_argument('--reference-tested', action='store_true',
                    help='step 1 only checks that every exercise has tests: the caller (CI) has '
                         'just run every test of this build, the graded ones included')
    ap.add_argument('--sample', type=int, default=5,
                    help='step 3 for about this many exercises, rotating (default 5)')
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.build_dir, 'CMakeCache.txt')):
        raise SystemExit(f'check_exercises: {args.build_dir} is not a configured build '
                         '(cmake --preset sim first)')

    files, exercises = ex.scan(ROOT)
    ids = list(exercises)
    if args.all:
        chosen = ids
    elif args.only:
        chosen = sorted(ex.select(exercises, args.only, '--only'), key=ex.sort_key)
    else:
        period = max(1, math.ceil(len(ids) / args.sample))  # `sample` exercises a run
        rotation = os.environ.get('NANOSERVE_EXERCISE_ROTATION')
        if rotation is None:
            count = subprocess.run(['git', '-C', ROOT, 'rev-list', '--count', 'HEAD'],
                                   capture_output=True, text=True).stdout.strip() or '0'
            rotation = count
        chosen = [e for i, e in enumerate(ids) if i % period == int(rotation) % period]

    scratch = os.path.join(args.build_dir, 'exercise_check')
    os.makedirs(scratch, exist_ok=True)
    snapshot = {rel: '\n'.join(lines) for rel, (lines, _) in files.items()}
    with open(os.path.join(scratch, 'reference.json'), 'w', encoding='utf-8') as f:
        json.dump(snapshot, f)

    def restore(*_):
        for rel, text in snapshot.items():
            ex.write_if_changed(os.path.join(ROOT, rel), text)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *a: sys.exit(130))

    def state(stubbed):
        for rel in ex.apply(ROOT, ROOT, files, set(stubbed)):
            pass

    problems = []
    timings = {}
    try:
        t = time.time()
        log(f'1. reference: {len(ids)} exercises')
        build(args.build_dir, TEST_TARGETS, 'reference')
        if args.reference_tested:
            out = subprocess.run(['ctest', '--test-dir', args.build_dir, '-N', '--show-only=json-v1',
                                  '-L', '^ex\\.'], check=True, capture_output=True, text=True).stdout
            labels = {p['value'][i] for t in json.loads(out).get('tests', [])
                      for p in t.get('properties', []) if p.get('name') == 'LABELS'
                      for i in range(len(p['value']))}
            for e in ids:
                if 'ex.' + e not in labels:
                    problems.append(f'reference: no test carries ex.{e} (tests/exercises.cmake)')
        for e, row in ({} if args.reference_tested else grade(args.build_dir, [], scratch)).items():
            if row['passed'] != row['total']:
                problems.append(f'reference: ex.{e} passes {row["passed"]}/{row["total"]} '
                                f'(failing: {", ".join(row["failed_tests"])})')
        timings['reference'] = time.time() - t

        t = time.time()
        log('2. student tree (every exercise stubbed)')
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'student')
            r = subprocess.run(['bash', os.path.join(HERE, 'make_student_tree.sh'), out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f'check_exercises: make_student_tree.sh failed:\n{r.stderr}')
            for rel, (lines, regions) in files.items():
                with open(os.path.join(out, rel), encoding='utf-8') as f:
                    if f.read() != ex.render(lines, regions, set(ids)):
                        problems.append(f'student tree: {rel} is not the stubbed text')
        state(ids)
        # The test executables link every library that holds a region, and a stub only changes
        # a function body, so the programs (which link the same libraries) cannot fail to link.
        build(args.build_dir, TEST_TARGETS, 'the student tree')
        for e, row in grade(args.build_dir, [], scratch).items():
            if row['passed'] != 0:
                problems.append(f'student tree: ex.{e} still passes {row["passed"]}/{row["total"]} '
                                'tests with every exercise stubbed')
        timings['student'] = time.time() - t

        t = time.time()
        log(f'3. one exercise back at a time: {", ".join(chosen) or "none"}'
            f'{"" if args.all or args.only else " (rotation; --all for every one)"}')
        for e in chosen:
            chapter = exercises[e]['chapter']
            siblings = [x for x in ids if exercises[x]['chapter'] == chapter]
            state([x for x in siblings if x != e])
            build(args.build_dir, TEST_TARGETS, f'{e} put back')
            rows = grade(args.build_dir, [chapter], scratch)
            for x in siblings:
                row = rows[x]
                if x == e and row['passed'] != row['total']:
                    problems.append(f'{e} put back: ex.{e} passes only {row["passed"]}/{row["total"]} '
                                    f'(failing: {", ".join(row["failed_tests"])})')
                if x != e and row['passed'] == row['total']:
                    problems.append(f'{e} put back: ex.{x} passes too, though {x} is still a stub '
                                    '(its tests do not test it, or depend on ' + e + ')')
            log(f'   {e}: ' + ', '.join(f'ex.{x} {rows[x]["passed"]}/{rows[x]["total"]}' for x in siblings))
        timings['one back'] = time.time() - t
    finally:
        restore()
    t = time.time()
    build(args.build_dir, TEST_TARGETS, 'the reference again')
    timings['rebuild'] = time.time() - t
    log('times: ' + ', '.join(f'{k} {v:.0f} s' for k, v in timings.items()))
    if problems:
        for p in problems:
            print('check_exercises: ' + p, file=sys.stderr)
        return 1
    log(f'ok: the reference passes all {len(ids)} labels, the student tree builds and fails them '
        f'all, and {len(chosen)} exercise(s) pass alone when put back')
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""The autograder behind scripts/grade.sh: runs the ex.* ctest labels of a configured and built
tree and prints, per exercise, its tests passed/total and its points; writes the same as JSON.

Points are the exercise's points (its BEGIN EXERCISE marker) times the fraction of its tests
that pass, rounded to one decimal. An exercise that no test grades is an error (the labels of
tests/exercises.cmake and the markers disagree), as is a chapter with no exercise.
"""
import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


def exercises(root):
    out = subprocess.run([sys.executable, os.path.join(HERE, 'exercises.py'), 'list', '--root', root,
                          '--json'], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def labelled_tests(build, label_regex):
    """{test name: [labels]} of the tests whose labels match."""
    out = subprocess.run(['ctest', '--test-dir', build, '-N', '--show-only=json-v1', '-L', label_regex],
                         check=True, capture_output=True, text=True).stdout
    tests = {}
    for t in json.loads(out).get('tests', []):
        labels = []
        for p in t.get('properties', []):
            if p.get('name') == 'LABELS':
                labels = p.get('value', [])
        tests[t['name']] = labels
    return tests


def run_tests(build, label_regex, junit, jobs):
    if os.path.exists(junit):
        os.remove(junit)
    subprocess.run(['ctest', '--test-dir', build, '-L', label_regex, '-j', str(jobs),
                    '--output-junit', junit, '--timeout', '300'],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    if os.path.exists(junit):
        for case in ET.parse(junit).getroot().iter('testcase'):
            status = case.get('status', '')
            failed = case.find('failure') is not None or case.find('error') is not None
            results[case.get('name')] = status == 'run' and not failed
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('chapters', nargs='*', help='chNN ... (default: every chapter with exercises)')
    ap.add_argument('--root', default=os.path.dirname(HERE))
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--json', required=True, help='where the score table goes as JSON')
    ap.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()

    all_ex = exercises(args.root)
    chapters = sorted({e['chapter'] for e in all_ex})
    for c in args.chapters:
        if c not in chapters:
            print(f'grade: {c!r} has no exercises (chapters with exercises: {", ".join(chapters)})',
                  file=sys.stderr)
            return 2
    wanted = [e for e in all_ex if not args.chapters or e['chapter'] in args.chapters]
    regex = '^ex\\.(' + '|'.join(sorted({e['chapter'] for e in wanted})) + ')\\.'
    tests = labelled_tests(args.build_dir, regex)
    junit = os.path.join(os.path.abspath(args.build_dir), 'grade_junit.xml')
    results = run_tests(args.build_dir, regex, junit, args.jobs)

    rows, errors = [], []
    for e in wanted:
        label = 'ex.' + e['id']
        mine = sorted(t for t, labels in tests.items() if label in labels)
        if not mine:
            errors.append(f'{e["id"]}: no test carries the label {label} (tests/exercises.cmake)')
            continue
        passed = [t for t in mine if results.get(t, False)]
        points = round(e['points'] * len(passed) / len(mine), 1)
        rows.append(dict(exercise=e['id'], title=e['title'], passed=len(passed), total=len(mine),
                         points=points, max_points=e['points'],
                         failed_tests=[t for t in mine if t not in passed]))
    known = {'ex.' + e['id'] for e in all_ex}
    for label in sorted({l for labels in tests.values() for l in labels if l.startswith('ex.')} - known):
        errors.append(f'tests carry {label} but no BEGIN EXERCISE marker declares {label[3:]} '
                      '(were the marker lines removed?)')
    if errors:
        for m in errors:
            print('grade: ' + m, file=sys.stderr)
        return 2

    width = max(len(r['title']) for r in rows)
    print(f'{"exercise":9} {"title":{width}} {"tests":>9} {"points":>11}')
    for r in rows:
        tests_col = f'{r["passed"]}/{r["total"]}'
        points_col = f'{r["points"]:g}/{r["max_points"]}'
        print(f'{r["exercise"]:9} {r["title"]:{width}} {tests_col:>9} {points_col:>11}')
    total = round(sum(r['points'] for r in rows), 1)
    max_total = sum(r['max_points'] for r in rows)
    print(f'{"total":9} {"":{width}} {"":>9} {f"{total:g}/{max_total}":>11}')
    report = dict(chapters=sorted({e['chapter'] for e in wanted}), exercises=rows, points=total,
                  max_points=max_total)
    with open(args.json, 'w') as f:
        json.dump(report, f, indent=2)
        f.write('\n')
    print(f'wrote {args.json}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

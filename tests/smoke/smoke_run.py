#!/usr/bin/env python3
"""Runs one smoke test: a program's command line, judged on everything it reports.

    smoke_run.py [--expect REGEX]... [--json PATH [--field NAME]... [--records TABLE:F1,F2]...]
                 [--expected-output FILE] [--needs-data FILE] -- PROGRAM ARGS...

Fails (exit 1, the reason on stderr) when the program
  - exits non-zero or is killed by a signal;
  - prints a failed check: a line with the word FAILED (ch01 `check ...: FAILED`, ch05's
    check line and table cells) or ending in ": NO" (ch01 `generated the same tokens: NO`,
    ch02 `replies identical ...: NO`, `identical shared and unshared ...: NO`);
  - lacks a match of an --expect regex in its stdout + stderr (Python syntax, '.' spans lines);
  - with --json: leaves no file at PATH (a stale one is deleted first), or one that does not
    parse, or one without a top-level --field, or without a record of every --records TABLE
    (the records are the report's "records" array, or the file itself when it is an array;
    TABLE '*' means any record), or with such a record that lacks one of the fields;
  - with --expected-output: prints a stdout whose structure (output_structure.py: the lines
    with their numbers blanked) differs from FILE's.
With --needs-data it exits 77 (ctest: skipped) when FILE is not in $NANOSERVE_DATA or data/models.
The program's output is echoed, stdout then stderr, so that ctest --output-on-failure shows it.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from output_structure import differences  # noqa: E402

SKIP = 77
# What the chapter programs print when a check fails (see the docstring).
FAILED_CHECK = re.compile(r"\bFAILED\b|:\s*NO\s*$", re.M)


def fail(reason):
    print(f"smoke_run: FAIL: {reason}", file=sys.stderr)
    sys.exit(1)


def find_data(name, source_dir):
    dirs = [os.environ.get("NANOSERVE_DATA", ""), os.path.join(source_dir, "data", "models")]
    return any(d and os.path.exists(os.path.join(d, name)) for d in dirs)


def check_json(path, fields, record_specs):
    if not os.path.exists(path):
        fail(f"{path}: the program wrote no JSON file")
    try:
        with open(path) as f:
            report = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        fail(f"{path}: not valid JSON: {e}")
    if fields and not isinstance(report, dict):
        fail(f"{path}: top level is a {type(report).__name__}, not an object with {fields}")
    for name in fields:
        if name not in report:
            fail(f"{path}: no top-level field '{name}' (has: {', '.join(sorted(report))})")
    if "git_dirty" in fields and not isinstance(report["git_dirty"], bool):
        fail(f"{path}: git_dirty is {report['git_dirty']!r}, not true or false")
    records = report.get("records") if isinstance(report, dict) else report
    if record_specs and not isinstance(records, list):
        fail(f"{path}: no records array")
    for spec in record_specs:
        table, _, names = spec.partition(":")
        wanted = [n for n in names.split(",") if n]
        rows = [r for r in records if isinstance(r, dict) and (table == "*" or r.get("table") == table)]
        if not rows:
            tables = sorted({str(r.get("table")) for r in records if isinstance(r, dict)})
            fail(f"{path}: no record of table '{table}' (tables: {', '.join(tables)})")
        for i, row in enumerate(rows):
            missing = [n for n in wanted if n not in row]
            if missing:
                fail(f"{path}: record {i} of table '{table}' lacks {', '.join(missing)}")
    print(f"smoke_run: {path}: parsed; fields {', '.join(fields) or '-'}; "
          f"records {', '.join(s.partition(':')[0] for s in record_specs) or '-'}")


def main():
    parser = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[2].strip())
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--json")
    parser.add_argument("--field", action="append", default=[])
    parser.add_argument("--records", action="append", default=[])
    parser.add_argument("--expected-output")
    parser.add_argument("--needs-data")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if args.needs_data and not find_data(args.needs_data, source_dir):
        print(f"smoke_run: skipped: {args.needs_data} is not in $NANOSERVE_DATA or data/models")
        return SKIP
    if args.json and os.path.exists(args.json):
        os.remove(args.json)  # a file left by an earlier run must not pass for this one

    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = run.stdout.decode("utf-8", "replace")
    err = run.stderr.decode("utf-8", "replace")
    sys.stdout.write(out)
    sys.stdout.write(err)
    sys.stdout.flush()

    if run.returncode < 0:
        fail(f"killed by signal {-run.returncode}")
    if run.returncode != 0:
        fail(f"exit status {run.returncode}")
    both = out + err
    bad = FAILED_CHECK.search(both)
    if bad:
        line = both[both.rfind("\n", 0, bad.start()) + 1:].split("\n", 1)[0]
        fail(f"a check failed: {line.strip()}")
    for pattern in args.expect:
        if not re.search(pattern, both, re.S):
            fail(f"output lacks /{pattern}/")
    if args.json:
        check_json(args.json, args.field, args.records)
    if args.expected_output:
        with open(args.expected_output) as f:
            diff = differences(f.read(), out)
        if diff:
            fail(f"stdout differs in structure from {args.expected_output} (rerun "
                 "scripts/update_expected_output.sh if the change is intended):\n" + "\n".join(diff))
        print(f"smoke_run: stdout has the structure of {args.expected_output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

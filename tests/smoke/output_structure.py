#!/usr/bin/env python3
"""Compares a program's output with a chapter's expected_output.txt in structure.

    python3 tests/smoke/output_structure.py EXPECTED ACTUAL      # exit 0 = same structure

Structure is every line with its numbers blanked: timings change from run to run, but the
lines, their words, table headers, row labels and generated text must not. A number is blanked
when it stands alone — "15.4", "34.2%", "2.37x", "(2.6 tok/s)", "+0.07%", "9.54e-06" — not
when it is part of a name: "b=4", "layers-2", "int4-g128-sym", "stories260K", "p50", "1..1"
keep their digits. Runs of spaces count as one (a wider number shifts a table's columns). A
first line "$ command" (expected_output.txt records its command there) is not compared.
"""
import difflib
import re
import sys

# A standalone number: not glued to a word, a dot, '=', '+' or '-' on its left, nor to a word or
# a dot that goes on ("1..1", "5.x") on its right; an optional sign, exponent and '%' or 'x'
# (ratios) belong to it. A sentence's full stop after it is not part of a name.
NUMBER = re.compile(r"(?<![\w.=+-])[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:%|x)?(?!\w|\.[\w.])")


def normalize(line):
    """The structure of one line: numbers blanked to '#', whitespace runs as one space."""
    return " ".join(NUMBER.sub("#", line).split())


def structure(text):
    """The normalised lines of an output, without a leading "$ command" line and trailing blanks."""
    lines = text.splitlines()
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines.pop()
    return [normalize(line) for line in lines]


def differences(expected_text, actual_text, limit=40):
    """An empty list when both have the same structure, else the first lines of a unified diff."""
    want, got = structure(expected_text), structure(actual_text)
    if want == got:
        return []
    diff = list(difflib.unified_diff(want, got, "expected (numbers as #)", "actual (numbers as #)",
                                     lineterm="", n=1))
    return diff[:limit] + ([f"... ({len(diff) - limit} more diff lines)"] if len(diff) > limit else [])


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    with open(argv[1]) as f:
        expected = f.read()
    with open(argv[2]) as f:
        actual = f.read()
    diff = differences(expected, actual)
    if diff:
        print(f"output_structure: {argv[2]} differs in structure from {argv[1]}:", file=sys.stderr)
        print("\n".join(diff), file=sys.stderr)
        return 1
    print(f"output_structure: {argv[2]} has the structure of {argv[1]} "
          f"({len(structure(expected))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Every public type of the engine has a documented example of use (issue 18): each class or
struct declared at namespace scope in a header under common/engine/ must carry, in the `///`
comment just above it, a `\\snippet FILE NAME` (or a `\\code` block). A snippet must name a
file under tests/ that holds the `//! [NAME]` marker twice (the example is a test that
compiles and runs, so the documentation cannot go stale).

    scripts/check_doc_examples.py [ROOT]      (ROOT: the project, default: this script's ../)

Prints each type without an example as `header:line: Type (why)` and exits 1 when there is
one. Nested types (indented, e.g. a private `Plan`), forward declarations and enums are not
types a reader uses on their own and are not checked. Python's standard library only.
"""
import os
import re
import sys

DECLARATION = re.compile(r'^(?:class|struct)\s+(\w+)\b')  # at column 0: namespace scope
FORWARD = re.compile(r'^(?:class|struct)\s+\w+\s*;')
SNIPPET = re.compile(r'\\snippet\s+(\S+)\s+(\S+)')


def comment_above(lines, i):
    """The `///` lines directly above line i (template<> lines skipped), top first."""
    j = i - 1
    while j >= 0 and lines[j].startswith('template'):
        j -= 1
    block = []
    while j >= 0 and lines[j].lstrip().startswith('///'):
        block.append(lines[j])
        j -= 1
    return block[::-1]


def snippet_problem(root, path, name):
    """Why `\\snippet path name` shows nothing, or None when it is fine."""
    if not path.startswith('tests/'):
        return f'snippet file {path} is not under tests/ (examples are tests)'
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return f'snippet file {path} does not exist'
    with open(full, encoding='utf-8') as f:
        markers = sum(line.strip() == f'//! [{name}]' for line in f)
    if markers != 2:
        return f'{path} has {markers} "//! [{name}]" markers, not 2'
    return None


def check(root):
    """(problems, number of types checked)."""
    problems = []
    types = 0
    engine = os.path.join(root, 'common', 'engine')
    for folder, _, files in sorted(os.walk(engine)):
        for name in sorted(files):
            if not name.endswith('.h'):
                continue
            header = os.path.join(folder, name)
            rel = os.path.relpath(header, root)
            with open(header, encoding='utf-8') as f:
                lines = f.read().splitlines()
            for i, line in enumerate(lines):
                m = DECLARATION.match(line)
                if not m or FORWARD.match(line):
                    continue
                types += 1
                comment = '\n'.join(comment_above(lines, i))
                where = f'{rel}:{i + 1}: {m.group(1)}'
                snippets = SNIPPET.findall(comment)
                if not snippets and '\\code' not in comment:
                    problems.append(f'{where} (no \\snippet or \\code example in its comment)')
                for path, marker in snippets:
                    why = snippet_problem(root, path, marker)
                    if why:
                        problems.append(f'{where} ({why})')
    return problems, types


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    if not os.path.isdir(os.path.join(root, 'common', 'engine')):
        print(f'{root}: no common/engine/ here', file=sys.stderr)
        return 2
    problems, types = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} engine type(s) without a working example (a \\snippet of a test)',
              file=sys.stderr)
        return 1
    print(f'check_doc_examples: {types} engine types, each with an example')
    return 0


if __name__ == '__main__':
    sys.exit(main())

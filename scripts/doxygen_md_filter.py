#!/usr/bin/env python3
"""Doxygen input filter for Markdown (docs/Doxyfile.in, FILTER_PATTERNS): a link to a term of
the glossary, `[KV cache](../../docs/glossary.md#glossary_kv_cache)`, becomes
`[KV cache](@ref glossary_kv_cache)`, a link to the term's anchor on the site. (Doxygen 1.9 turns
a link to a Markdown page into a link to that page, but leaves one with a #fragment as it is,
pointing at a .md file the site does not hold.) The file keeps the relative link, which opens
the glossary where the README is read on a Git forge (a forge makes its anchors from the
heading's text, so there the fragment may not scroll to the word). Everything else passes through unchanged, line for
line, so Doxygen's line numbers stay right.

    scripts/doxygen_md_filter.py FILE      (prints the filtered FILE)
"""
import re
import sys

GLOSSARY_TERM = re.compile(r'\]\((?:[./]*/)?(?:docs/)?glossary\.md#(glossary_\w+)\)')


def main():
    with open(sys.argv[1], encoding='utf-8') as f:
        sys.stdout.write(GLOSSARY_TERM.sub(r'](@ref \1)', f.read()))
    return 0


if __name__ == '__main__':
    sys.exit(main())

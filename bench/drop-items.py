#!/usr/bin/env python3
"""What drop mode would lose on a template-heavy site.

Crawls a static HTML tree (default: rust-doc's core) breadth-first through
a real nginx with the simhash module in tag mode, and for every page the
module calls a duplicate records the X-Simhash-Distance and -Score and
whether the page is a *different item* from the page it duplicates.

Different item: the two pages' item names differ.  A rustdoc title is
"NAME in PATH - Rust" (or "PATH - Rust" for a module page); the item name
is NAME with its kind, so `fn._mm_mask_min_ss` in core::arch::x86 and the
same function re-exported in core::arch::x86_64 are one item (a true
duplicate: the same text under two URLs), while _mm_mask_min_ss and
_mm_mask_mul_ss are two items however alike their pages are.  Outside
rustdoc the whole <title> is the item name.

In tag mode (no --rule) it prints, for each candidate rule on the
fingerprints alone (distance <= H and score <= S, S as X-Simhash-Score
prints it), how many duplicates the rule would drop and how many of those
are different items.  With --rule (e.g. 'simhash_action drop;') it counts
what the proxy dropped: of the crawl, and then of every 10th page fetched
again from a mirror (a second origin port serving the same tree) and with
a session id in the query: those should all go.

usage: bench/drop-items.py [--root DIR] [--start core/index.html]
                           [--max N] [--module SO]
"""

import argparse
import html
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_nginx(prefix, module, root, drop_rule):
    origin, mirror, proxy = free_port(), free_port(), free_port()
    for d in ("logs", "tmp", "conf"):
        os.makedirs(os.path.join(prefix, d), exist_ok=True)
    conf = f"""
load_module {module};
pid {prefix}/logs/nginx.pid;
error_log {prefix}/logs/error.log;
worker_processes 1;
events {{ }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/f;
    uwsgi_temp_path {prefix}/tmp/u;
    scgi_temp_path {prefix}/tmp/s;
    include /etc/nginx/mime.types;
    simhash_zone zone=m:256m;
    server {{
        listen 127.0.0.1:{origin};
        root {root};
    }}
    server {{
        listen 127.0.0.1:{mirror};
        root {root};
    }}
    server {{
        listen 127.0.0.1:{proxy};
        location / {{
            simhash m;
            {drop_rule}
            proxy_pass http://$http_host$request_uri;
        }}
    }}
}}
"""
    path = os.path.join(prefix, "conf", "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    user = [] if os.geteuid() else ["-g", "user nobody nogroup;"]
    subprocess.run(["nginx", "-p", prefix, "-c", path] + user, check=True)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", proxy), 0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proxy, origin, mirror


TITLE = re.compile(rb"<title>(.*?)</title>", re.S | re.I)
HREF = re.compile(rb'href="([^"#?]+)')


def item_name(title, url):
    """rustdoc: the kind (from the file name) and NAME of "NAME in PATH";
    other pages: the whole title"""
    if title.endswith(" - Rust"):
        t = title[: -len(" - Rust")]
        name = t.split(" in ", 1)[0] if " in " in t else t
        kind = os.path.basename(url).split(".", 1)[0]
        return kind + ":" + name
    return title


def fetch(opener, url):
    try:
        resp = opener.open(url, timeout=30)
        return resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def proxy_opener(proxy):
    return urllib.request.build_opener(urllib.request.ProxyHandler(
        {"http": f"http://127.0.0.1:{proxy}"}))


def title_of(root, path):
    """the page's title, from the file (a dropped response has no body)"""
    try:
        with open(os.path.join(root, path), "rb") as f:
            m = TITLE.search(f.read())
    except OSError:
        return ""
    return html.unescape(m.group(1).decode("utf-8", "replace")) if m else ""


def crawl(proxy, origin, root, start, limit):
    opener = proxy_opener(proxy)
    base = f"http://127.0.0.1:{origin}/"
    queue, seen, pages = deque([start]), {start}, []
    while queue and len(pages) < limit:
        path = queue.popleft()
        code, body, h = fetch(opener, base + path)
        title = title_of(root, path)
        if code in (204, 410):  # dropped: the links are the file's
            with open(os.path.join(root, path), "rb") as f:
                body = f.read()
        pages.append({
            "path": path, "code": code, "title": title,
            "status": h.get("X-Simhash-Status", ""),
            "dup": h.get("X-Simhash-Duplicate-Of", ""),
            "distance": int(h.get("X-Simhash-Distance", "-1")),
            "score": float(h.get("X-Simhash-Score", "-1")),
        })
        for href in HREF.findall(body):
            href = href.decode("utf-8", "replace")
            if "://" in href or not href.endswith(".html"):
                continue
            u = urllib.parse.urljoin("/" + path, href).lstrip("/")
            u = os.path.normpath(u)
            if u.startswith(start.split("/")[0] + "/") and u not in seen:
                seen.add(u)
                queue.append(u)
    return pages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/usr/share/doc/rust-doc/html")
    ap.add_argument("--start", default="core/index.html")
    ap.add_argument("--max", type=int, default=100000)
    ap.add_argument("--module", default=os.path.join(
        TOP, "build/nginx/ngx_http_simhash_module.so"))
    ap.add_argument("--rule", default="",
                    help="a directive for the proxy's location, e.g. "
                         "'simhash_action drop;' (drops are then counted)")
    ap.add_argument("--tsv", help="write every duplicate here")
    a = ap.parse_args()

    prefix = tempfile.mkdtemp(prefix="drop-items.")
    os.chmod(prefix, 0o755)
    proxy, origin, mirror = start_nginx(prefix, a.module, a.root, a.rule)
    try:
        pages = crawl(proxy, origin, a.root, a.start, a.max)
        # of pages the index stored (new), and of the others
        variants = {}
        opener = proxy_opener(proxy)
        sample = pages[::10]
        for p in sample:
            kind = "stored" if p["status"] == "new" else "not stored"
            code, _, _ = fetch(opener,
                               f"http://127.0.0.1:{mirror}/{p['path']}")
            sid = os.urandom(8).hex()
            code2, _, _ = fetch(opener, f"http://127.0.0.1:{origin}/"
                                f"{p['path']}?sessionid={sid}")
            v = variants.setdefault(kind, [0, 0, 0])
            v[0] += 1
            v[1] += code in (204, 410)
            v[2] += code2 in (204, 410)
    finally:
        subprocess.run(["nginx", "-p", prefix, "-c",
                        os.path.join(prefix, "conf", "nginx.conf"),
                        "-s", "stop"])
        time.sleep(0.5)
        shutil.rmtree(prefix, ignore_errors=True)

    by_key = {}
    for p in pages:
        by_key[f"/{p['path']}"] = p
    if a.rule:
        dups_all = [p for p in pages if p["status"] == "duplicate"]
    dups = []
    for p in pages:
        if p["status"] != "duplicate":
            continue
        of = urllib.parse.urlsplit(p["dup"]).path
        q = by_key.get(of)
        if q is None:
            continue
        p["other"] = item_name(q["title"], q["path"]) != \
            item_name(p["title"], p["path"])
        p["of"] = of
        dups.append(p)

    print(f"pages {len(pages)}  duplicates {len(dups)}  "
          f"different items among them "
          f"{sum(p['other'] for p in dups)}")
    dropped = [p for p in pages if p["code"] in (204, 410)]
    if a.rule:
        print(f"with '{a.rule}': of the crawl's {len(dups_all)} duplicates "
              f"dropped {len(dropped)}, different items among them "
              f"{sum(p.get('other', False) for p in dropped)}")
        for k, v in sorted(variants.items()):
            print(f"every 10th page, {k} ({v[0]}): mirror dropped {v[1]}, "
                  f"session-id variant dropped {v[2]}")
        return
    if a.tsv:
        with open(a.tsv, "w") as f:
            for p in dups:
                f.write(f"{p['distance']}\t{p['score']}\t{int(p['other'])}"
                        f"\t{p['path']}\t{p['of']}\n")
    print("rule                  drops  different  share")
    for h in (0, 1, 2, 3, 4, 6, 10):
        for s in (0, 1, 2, 3, 4, 6, 8, 12):
            d = [p for p in dups if p["distance"] <= h and p["score"] <= s]
            o = sum(p["other"] for p in d)
            if d:
                print(f"H<={h:<2} score<={s:<4}      {len(d):6d} {o:9d}  "
                      f"{100.0 * o / len(d):5.2f}%")


if __name__ == "__main__":
    main()

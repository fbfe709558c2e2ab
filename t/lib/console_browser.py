#!/usr/bin/python3
"""The console (simhash_stats ?format=html) in a real browser: headless
Chromium driven by Selenium (Debian's chromium, chromium-driver and
python3-selenium; tools/deps.sh console).  Run by t/console.t, which starts
nginx, makes the traffic and reads the lines printed here as tests:

  console_browser.py STATS_URL PIDFILE DROPPED PREDICTED NEW [SLASHED]

STATS_URL: the simhash_stats location; PIDFILE: nginx's, for a reload
(SIGHUP) while the page is open; DROPPED, PREDICTED, NEW: keys whose last
decision was a drop, a prediction, a new page ("-": no why? checks);
SLASHED: the same statistics at a URL whose path starts with //host/ (the
page must read this origin's JSON, not host's).  Prints "ok - NAME" or
"not ok - NAME" (and "# ..." notes); every wait has a limit, none is a
fixed sleep.
"""

import json
import os
import signal
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

STATS, PIDFILE, DROPPED, PREDICTED, NEW = sys.argv[1:6]
SLASHED = sys.argv[6] if len(sys.argv) > 6 else "-"
failed = 0


def check(cond, name, note=None):
    global failed
    print(("ok - " if cond else "not ok - ") + name, flush=True)
    if not cond:
        failed += 1
        if note is not None:
            for line in str(note).splitlines():
                print("# " + line, flush=True)
    return cond


def until(fn, limit=20.0, step=0.1):
    """fn() until it is true or `limit` seconds passed; its last value."""
    end = time.time() + limit
    while True:
        v = fn()
        if v or time.time() > end:
            return v
        time.sleep(step)


def stats():
    req = urllib.request.Request(STATS + "?format=json",
                                 headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read().decode())


opts = webdriver.ChromeOptions()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
          "--disable-dev-shm-usage", "--no-first-run",
          "--disable-extensions", "--window-size=1280,2000"):
    opts.add_argument(a)
opts.binary_location = "/usr/bin/chromium"
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})

driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"),
                          options=opts)
driver.set_page_load_timeout(30)
js = driver.execute_script


def updates():
    return js("return window.simhashUpdates || 0;")


def figures():
    """Every figure of the page: its data-k and its text."""
    return js("""
        var o = {};
        document.querySelectorAll('#zones [data-k]').forEach(function (e) {
            o[e.getAttribute('data-k')] = e.textContent;
        });
        return o;""")


def location_text(u):
    t = "location %s: " % (urllib.request.unquote(u["location"])
                           or "(server)")
    if u["action"] == "drop":
        t += "drops duplicates (%d, keys=%s)" % (u["code"], u["keys"])
    else:
        t += "tags duplicates (X-Simhash-* headers), drops none"
    t += ", DUST " + u["dust"]
    if u["dust"] == "on":
        t += " (predicted duplicates " + ("answered without a fetch)"
                                          if u["action"] == "drop"
                                          else "tagged)")
    elif u["dust"] == "learn":
        t += " (learns rules, predicts nothing)"
    return t


def expected(j):
    """The same figures from the JSON, as the page should write them."""
    o = {}
    for name, z in j["zones"].items():
        o[name + "/entries"] = str(z["entries"])
        o[name + "/capacity"] = str(z["capacity"])
        o[name + "/evictions"] = str(z["evictions"])
        if "figures" in z:
            o[name + "/node"] = urllib.request.unquote(z["figures"]["node"])
        for k, v in z["responses"].items():
            o[name + "/responses/" + k] = str(v)
        if "dust" in z:
            o[name + "/dust/predictions"] = str(z["dust"]["predictions"])
            o[name + "/dust/saved"] = str(z["dust"]["saved"])
        for k in ("connected", "published", "applied", "outbox", "refused",
                  "refused_version", "refused_mac", "refused_replay",
                  "refused_unsequenced"):
            if k in z.get("replication", {}):
                o["%s/replication/%s" % (name, k)] = \
                    str(z["replication"][k])
        for i, n in enumerate(z.get("replication_nodes", [])):
            p = "%s/nodes/%d/" % (name, i)
            o[p + "node"] = urllib.request.unquote(n["node"])
            o[p + "lag_ms"] = "%d ms" % n["lag_ms"]
            o[p + "entries"] = str(n["entries"])
        if "cluster" in z:
            # the zone's Redis Cluster: every worker's counts
            cl, p = z["cluster"], name + "/cluster/"
            for k in ("lookups", "found", "new", "moved", "asked",
                      "refreshes", "writes", "write_errors"):
                o[p + k] = str(cl[k])
            o[p + "incomplete"] = str(sum(cl["incomplete"].values()))
            for c, v in cl["incomplete"].items():
                o[p + "incomplete/" + c] = str(v)
            us = cl["lookup_us"]
            for b, v in us.items():
                if b not in ("sum", "count"):
                    o[p + "lookup_us/" + b] = str(v)
            # whole microseconds, rounded down, as the page shows them
            o[p + "mean_us"] = "%d \u00b5s" % (us["sum"] // us["count"]
                                             if us["count"] else 0)
        for i, n in enumerate(z.get("cluster_nodes", [])):
            # the slot map of the worker that answered (the tests that
            # compare it run one worker)
            q = "%s/cluster_nodes/%d/" % (name, i)
            o[q + "node"] = urllib.request.unquote(n["node"])
            o[q + "slots"] = str(n["slots"])
            o[q + "ranges"] = n["ranges"] or "-"
            o[q + "connected"] = "yes" if n["connected"] else "no"
            # (not "reconnects": a node down is tried again meanwhile)
        if "snapshot" in z:
            for k in ("saves", "errors", "restored", "refused"):
                o["%s/snapshot/%s" % (name, k)] = str(z["snapshot"][k])
            for k in ("last_duration_ms", "last_hold_ms"):
                o["%s/snapshot/%s" % (name, k)] = "%d ms" % z["snapshot"][k]
        for i, e in enumerate(z.get("sites", {}).get("top", [])):
            p = "%s/sites/%d/" % (name, i)
            o[p + "site"] = urllib.request.unquote(e["site"])
            hosts = ", ".join("%s %d" % (urllib.request.unquote(h["host"]),
                                         h["wasted"]) for h in e["hosts"])
            if e["hosts_seen"] > len(e["hosts"]):
                hosts += " (of %d)" % e["hosts_seen"]
            o[p + "hosts"] = hosts
            for k in ("wasted", "pages", "duplicates", "predicted",
                      "dropped", "fetches_saved"):
                o[p + k] = str(e[k])
            o[p + "error"] = "\u00b1" + str(e["error"])
        for i, r in enumerate(z.get("rule_outcomes", [])):
            p = "%s/outcomes/%d/" % (name, i)
            o[p + "host"] = urllib.request.unquote(r["host"])
            for k in ("made", "verified", "failed"):
                o[p + k] = str(r[k])
        for i, u in enumerate(z.get("locations", [])):
            # what each location does, in words
            o["%s/locations/%d" % (name, i)] = location_text(u)
        for i, r in enumerate(z.get("dust_rules", [])):
            p = "%s/rules/%d/" % (name, i)
            o[p + "host"] = urllib.request.unquote(r["host"])
            o[p + "state"] = r["state"]
            for k in ("support", "against", "made", "verified", "failed",
                      "host_predictions", "host_saved"):
                o[p + k] = str(r[k])
    return o


def same_figures(label):
    """The page's figures equal the JSON's, after an update that began
    after the JSON was read (nothing changes meanwhile: no traffic)."""
    j = stats()
    n = updates()
    until(lambda: updates() >= n + 1)
    want = expected(j)
    got = figures()
    diff = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    check(not diff and want, label + ": the figures equal the JSON's",
          json.dumps(diff, indent=1, ensure_ascii=False))
    return j


def charts_drawn(j, label):
    for name, z in j["zones"].items():
        for ev in ("new", "duplicate", "dropped", "predicted"):
            info = js("""
                var s = document.querySelector('svg[data-chart="' +
                                               arguments[0] + '"]');
                if (!s) { return null; }
                var r = s.querySelectorAll('rect'), sum = 0, tall = 0;
                r.forEach(function (x) {
                    sum += +x.getAttribute('data-v');
                    if (+x.getAttribute('height') > 0) { tall++; }
                });
                var b = s.getBoundingClientRect();
                var head = s.parentNode.querySelector('.head');
                var max = s.querySelector('text[data-axis="max"]');
                var tips = s.querySelectorAll('rect > title').length;
                var v = [];
                r.forEach(function (x) { v.push(+x.getAttribute('data-v')); });
                return [r.length, sum, tall, b.width, b.height,
                        head ? +head.getAttribute('data-minute') : null,
                        head ? head.textContent : null,
                        max ? max.textContent : null, tips,
                        s.querySelectorAll('text').length, v];""",
                      name + "/" + ev)
            slots = z["rates"][ev]
            total = sum(slots)
            check(info is not None and info[0] == z["rates"]["slots"]
                  and info[1] == total and (total == 0 or info[2] > 0)
                  and info[3] > 0 and info[4] > 0,
                  "%s: the %s chart draws its %d events" % (label, ev,
                                                             total),
                  info)
            # the headline: the events of the last minute (its slots, the
            # filling one included), not the last whole slot times 6; of
            # the bars drawn (the JSON read above may be a slot older)
            per = 60 // z["rates"]["step"]
            bars = info[10] if info is not None else []
            minute = sum(bars[-per:])
            check(info is not None and info[5] == minute
                  and info[6].startswith("%d %s in the last minute, %d in "
                                         % (minute, ev, sum(bars))),
                  "%s: the %s headline counts the last minute (%d)"
                  % (label, ev, minute), info)
            # a scale (0 to the highest bar), the time, a tooltip a bar
            check(info is not None and info[7] == str(max(bars))
                  and info[8] == len(slots) and info[9] >= 5,
                  "%s: the %s chart has its scale, time and tooltips"
                  % (label, ev), info)


def why(key, would, status, action):
    n = js("return window.simhashExplained || 0;")
    box = driver.find_element(By.ID, "why-url")
    box.clear()
    box.send_keys(key)
    driver.find_element(By.ID, "why-go").click()
    until(lambda: js("return window.simhashExplained || 0;") > n)
    ans = driver.find_element(By.ID, "why-answer")
    text = ans.text
    got = js("""var e = document.querySelector('#why-answer [data-would]');
                return e ? e.getAttribute('data-would') : null;""")
    check(got == would, "why? %s: would %s" % (key, would), got)
    check(("%s, %s" % (status, action)) in text,
          "why? %s: last decision %s, %s" % (key, status, action), text)
    return text


def console_errors():
    return [e for e in driver.get_log("browser")
            if e.get("level") in ("SEVERE", "ERROR")]


try:
    driver.get(STATS + "?format=html&refresh=1")
    check(until(lambda: updates() >= 1), "the page loads and reads the JSON")
    check("simhash console" in driver.title, "its title")

    j = same_figures("loaded")
    charts_drawn(j, "loaded")
    # every heading of the sites' and rules' tables, bar the host and the
    # rule's text, says what it means; the page points to the manual
    tips = js("""var o = [];
        document.querySelectorAll('table.sites th, table.rules th')
          .forEach(function (e) {
            if (!e.getAttribute('title')) { o.push(e.textContent); }
          });
        return o;""")
    check(not [h for h in tips if h not in ("host", "rule")],
          "every figure's heading has a tooltip", tips)
    check("docs/module.md" in driver.find_element(By.TAG_NAME, "body").text,
          "the page names the manual")
    for name, z in j["zones"].items():
        check(len(z.get("locations", [])) > 0,
              "%s: the JSON lists the locations that use it" % name, z)
    if DROPPED != "-":
        check(js("return document.querySelectorAll('table.sites tr')"
                 ".length;") > 1, "the top sites' table has rows")
        check(js("return document.querySelectorAll('table.rules tr')"
                 ".length;") > 1, "the rules' table has rows")

    if DROPPED != "-":
        t = why(DROPPED, "fetch", "duplicate", "dropped")
        check("duplicate of" in t, "why? dropped: names its original", t)
        first = js("""var p = document.querySelector('#why-answer p');
                      return p ? p.textContent : null;""")
        check(first is not None and first.startswith("dropped ")
              and " s ago as a duplicate of " in first,
              "why? dropped: its first line says it was dropped, when "
              "and of what", first)
        check(" nats" in t, "why? dropped: the score in nats", t)
        t = why(PREDICTED, "predicted", "duplicate", "predicted")
        check("drop_param(sid)" in t and "for," in t,
              "why? predicted: the rule and its evidence", t)
        check("keys=path names" in t,
              "why? predicted: the fetched form keys=path would name", t)
        why(NEW, "stored", "new", "passed")
    for name, z in j["zones"].items():
        if "cluster_nodes" in z:
            check(js("return document.querySelectorAll("
                     "'[data-zone=\"" + name + "\"] table.cluster-nodes tr')"
                     ".length;") == len(z["cluster_nodes"]) + 1,
                  "%s: a row for each node of the cluster" % name)
            heads = js("""var o = [];
                document.querySelectorAll('[data-zone="' + arguments[0] +
                    '"] table.cluster th, [data-zone="' + arguments[0] +
                    '"] table.cluster-nodes th').forEach(function (e) {
                    if (!e.getAttribute('title')) { o.push(e.textContent); }
                });
                return o;""", name)
            check(not heads, "%s: every cluster heading has a tooltip" % name,
                  heads)
        if "replication" in z:
            check(js("return document.querySelectorAll("
                     "'[data-zone=\"" + name + "\"] table.nodes tr')"
                     ".length;") == len(z["replication_nodes"]) + 1,
                  "%s: a row for each other node" % name)

    # a reload while the page is open: it goes on updating, and right
    with open(PIDFILE) as f:
        pid = int(f.read().strip())
    n = updates()
    os.kill(pid, signal.SIGHUP)
    check(until(lambda: updates() >= n + 3, limit=30),
          "the page keeps updating through a reload")
    state = driver.find_element(By.ID, "state").get_attribute("class")
    check(state != "err", "no error shown after the reload", state)
    same_figures("after the reload")
    if DROPPED != "-":
        why(DROPPED, "fetch", "duplicate", "dropped")

    errs = console_errors()
    check(not errs, "no console errors", json.dumps(errs, indent=1))

    # opened at a path of //host/...: its fetches are of this origin and
    # this path, never protocol-relative to that host
    if SLASHED != "-":
        driver.get(SLASHED + "?format=html&refresh=1")
        check(until(lambda: updates() >= 1),
              "opened at //host/...: the page reads this origin's JSON",
              json.dumps(console_errors(), indent=1))

    # SH_CONSOLE_SCREENSHOT=FILE.png: what the page looked like, for a human
    if os.environ.get("SH_CONSOLE_SCREENSHOT"):
        driver.save_screenshot(os.environ["SH_CONSOLE_SCREENSHOT"])
finally:
    driver.quit()

print("# %d failed" % failed)
sys.exit(1 if failed else 0)

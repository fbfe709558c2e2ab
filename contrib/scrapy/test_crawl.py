#!/usr/bin/env python3
"""Crawls one site through the simhash gateway with simhash_gateway.py:
every link on a start URL's host is followed; one JSON line per response
(url, status, simhash_status, duplicate_of), or per failed request (the
request and the error as the errback has them), goes to --out.  Used by
t/https.t; also a small example of a spider using the middleware.

usage: test_crawl.py --start https://host/ [--start URL ...]
                     --gateway http://proxy:3127
                     [--proxy http://proxy:3128] --out FILE

Every start URL's host is crawled; --proxy: the forward proxy for plain
http URLs (SIMHASH_PROXY).
"""

import argparse
import json
import os
import sys
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scrapy                                   # noqa: E402
from scrapy.crawler import CrawlerProcess      # noqa: E402


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start, out, **kw):
        super().__init__(**kw)
        self.start_urls = start
        self.hosts = {urlsplit(u).netloc for u in start}
        self.out = open(out, "w")

    def parse(self, response):
        s = response.meta.get("simhash", {})
        self.out.write(json.dumps({
            "url": response.url, "status": response.status,
            "simhash_status": s.get("status", ""),
            "duplicate_of": s.get("duplicate_of", ""),
            "download_slot": response.meta.get("download_slot", ""),
        }) + "\n")
        self.out.flush()
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc in self.hosts:
                yield scrapy.Request(url, callback=self.parse,
                                     errback=self.failed)

    def start_requests(self):
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse,
                                 errback=self.failed, dont_filter=True)

    # a request that failed (after RetryMiddleware gave up): which one the
    # error names, as a spider's errback sees it
    def failed(self, failure):
        self.out.write(json.dumps({
            "failed": repr(failure.request), "error": repr(failure.value),
        }) + "\n")
        self.out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", required=True, action="append")
    ap.add_argument("--gateway", required=True)
    ap.add_argument("--proxy")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    process = CrawlerProcess(settings={
        "SIMHASH_GATEWAY": a.gateway,
        "SIMHASH_PROXY": a.proxy,
        "DOWNLOADER_MIDDLEWARES": {
            "simhash_gateway.SimhashGatewayMiddleware": 950,
        },
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    })
    process.crawl(SiteSpider, start=a.start, out=a.out)
    process.start()


if __name__ == "__main__":
    main()

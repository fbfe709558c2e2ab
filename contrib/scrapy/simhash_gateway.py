"""Scrapy downloader middleware: HTTPS through ngx_simhash's gateway.

Scrapy, like every client, sends https through an HTTP proxy with CONNECT,
a tunnel the proxy cannot look into; nginx has no CONNECT anyway.  This
middleware sends each https request to the gateway of
conf-examples/forward-proxy.conf instead,

    https://example.org/a?b  ->  GATEWAY/fetch/https/example.org/a?b

and gives the crawler back what it would have had without it:

  - response.url is the real URL, so relative and root-relative links
    resolve against the site, not the gateway;
  - a redirect's Location is the real URL (the gateway maps it into
    itself; it is mapped back here), so RedirectMiddleware follows it
    through this middleware again;
  - download_slot is the real host: per-domain concurrency and delays
    hold as if there were no gateway;
  - the gateway request skips the duplicate filter (dont_filter): the
    real URL went through it already when the spider yielded it;
  - response.meta["simhash"]: the X-Simhash-* decision (status, hash,
    duplicate_of, distance, score), also left in response.headers; for
    plain http URLs through the forward proxy (SIMHASH_PROXY or
    http_proxy) as for https ones through the gateway;
  - the log and the errors name the real URL: the gateway request is a
    GatewayRequest, whose repr is the site's URL, so that RetryMiddleware's
    "Gave up retrying <GET https://site/...>" (a 502 when the gateway
    refused the site's certificate), "Crawled (200) <GET ...>" and
    "Error downloading <GET ...>" say which site failed, not
    "<GET http://proxy:3127/fetch/...>" for every one.

Settings:
  SIMHASH_GATEWAY   the gateway's base URL, e.g. http://proxy:3127
                    (required; without it the middleware is off)
  SIMHASH_PROXY     optional: the forward proxy for plain http URLs, e.g.
                    http://proxy:3128 (sets meta["proxy"]; or use the
                    http_proxy environment variable)

Enable it close to the downloader, after RedirectMiddleware (600) in the
request direction so that a redirect's new request is rewritten too:

    DOWNLOADER_MIDDLEWARES = {"simhash_gateway.SimhashGatewayMiddleware": 950}
"""

from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.exceptions import NotConfigured

__all__ = ["GatewayRequest", "SimhashGatewayMiddleware"]

_HEADERS = {
    "status": b"X-Simhash-Status",
    "hash": b"X-Simhash",
    "duplicate_of": b"X-Simhash-Duplicate-Of",
    "distance": b"X-Simhash-Distance",
    "score": b"X-Simhash-Score",
}


class GatewayRequest(Request):
    """A request to the gateway that Scrapy's log lines call by its site's
    URL: every middleware and the log formatter print a request as its
    repr, and the url itself must stay the gateway's to be downloaded.
    A module-level class, so that disk queues can store it."""

    def __repr__(self):
        real = self.meta.get("simhash_real_url", self.url)
        return f"<{self.method} {real}>"

    __str__ = __repr__


class SimhashGatewayMiddleware:

    def __init__(self, gateway, proxy=None):
        self.gateway = gateway.rstrip("/")
        self.prefix = self.gateway + "/fetch/"
        self.proxy = proxy

    @classmethod
    def from_crawler(cls, crawler):
        gateway = crawler.settings.get("SIMHASH_GATEWAY")
        if not gateway:
            raise NotConfigured("SIMHASH_GATEWAY is not set")
        return cls(gateway, crawler.settings.get("SIMHASH_PROXY"))

    # https://host/path?q -> GATEWAY/fetch/https/host/path?q
    def to_gateway(self, url):
        u = urlsplit(url)
        path = u.path or "/"
        query = "?" + u.query if u.query else ""
        return f"{self.prefix}{u.scheme}/{u.netloc}{path}{query}"

    # GATEWAY/fetch/https/host/path?q -> https://host/path?q; other URLs
    # unchanged
    def from_gateway(self, url):
        if not url.startswith(self.prefix):
            return url
        scheme, _, rest = url[len(self.prefix):].partition("/")
        return f"{scheme}://{rest}"

    def process_request(self, request, spider):
        if request.url.startswith(self.prefix):
            return None                     # ours already
        u = urlsplit(request.url)
        if u.scheme == "http":
            if self.proxy and "proxy" not in request.meta:
                request.meta["proxy"] = self.proxy
            return None
        if u.scheme != "https":
            return None
        meta = dict(request.meta)
        meta["simhash_real_url"] = request.url
        meta.setdefault("download_slot", u.netloc)
        meta.pop("proxy", None)             # the gateway is no proxy
        return request.replace(cls=GatewayRequest,
                               url=self.to_gateway(request.url), meta=meta,
                               dont_filter=True)

    # The decision is read from every response: through the gateway
    # (https) and through the forward proxy (http) alike.  A response that
    # went through neither has no X-Simhash-* headers, and an empty dict.
    def process_response(self, request, response, spider):
        request.meta["simhash"] = {
            name: response.headers.get(h).decode("latin-1")
            for name, h in _HEADERS.items() if response.headers.get(h)
        }
        if not request.url.startswith(self.prefix):
            return response
        location = response.headers.get(b"Location")
        if location is not None and 300 <= response.status < 400:
            absolute = urljoin(request.url, location.decode("latin-1"))
            response.headers[b"Location"] = self.from_gateway(absolute)
        return response.replace(url=self.from_gateway(request.url))

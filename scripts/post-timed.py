#!/usr/bin/env python3
"""Latency of one keep-alive HTTPS connection POSTing a request body
template again and again, each request timed from its first byte sent to
its answer's last byte read, every request a new pod uid (the template's
"@UID@", fixed width). For bodies of megabytes, where wrk's numbers do not
hold: wrk starts a request's clock again each time a TLS write has to wait
for the socket, so it times only the end of a large body (docs/benchmarks.md,
"wrk and large bodies").

    scripts/post-timed.py URL TEMPLATE SECONDS

Runs one unmeasured request, then requests until SECONDS have passed (at
least five), and prints the median as wrk prints it ("50% <ms>ms"), with
the count, minimum and maximum. Loopback measurement only: the server's
certificate is not checked. Exits non-zero on any answer but 200.
"""
import http.client
import ssl
import statistics
import sys
import time
import urllib.parse


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    url, template, seconds = urllib.parse.urlsplit(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    text = open(template, "rb").read()
    at = text.find(b"@UID@")
    if at < 0:
        sys.exit(f"no @UID@ marker in {template}")
    head, tail = text[:at], text[at + len(b"@UID@"):]
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context)
    times, n, end = [], 0, None
    while end is None or time.monotonic() < end or len(times) < 5:
        body = head + b"post-timed-%012d" % n + tail
        start = time.perf_counter()
        connection.request("POST", url.path, body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        took = (time.perf_counter() - start) * 1000
        if answer.status != 200:
            sys.exit(f"request {n}: HTTP {answer.status}: {data[:300]!r}")
        if n == 0:
            end = time.monotonic() + seconds  # the first request only warms up
        else:
            times.append(took)
        n += 1
    print(f"  {len(times)} requests, each timed from its first byte to its answer's last")
    print(f"  min {min(times):.2f}ms, max {max(times):.2f}ms")
    print(f"     50%   {statistics.median(times):.2f}ms")


if __name__ == "__main__":
    main()

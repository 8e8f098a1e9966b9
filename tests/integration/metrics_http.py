#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""HTTP client side of tests/integration/metrics.sh (python3's standard
library only: curl is not in the test tier's packages).

  metrics_http.py get URL              print the body; exit 1 unless 200 with
                                       the Prometheus text content type
  metrics_http.py code URL METHOD      print the status code (0: no answer)
  metrics_http.py promq URL QUERY      print the value of an instant query's
                                       first sample ("" when there is none)
  metrics_http.py hold HOST PORT N     open N TCP connections, send nothing,
                                       print how many pubd kept open (after
                                       one more round trip), hold them until
                                       stdin closes
  metrics_http.py attempt URL SECS [SRC]
                                       one GET (from address SRC) waiting at
                                       most SECS: print "STATUS SECONDS"
                                       (status 0: no answer, or closed)
  metrics_http.py until_ok URL SECS [SRC]
                                       GET (from SRC) until one is answered
                                       200, for at most SECS: print the
                                       seconds it took, or "none"
  metrics_http.py slowloris HOST PORT N SRC INTERVAL
                                       hold N connections from SRC, each
                                       sending one header line every INTERVAL
                                       s and never ending its request; one
                                       closed is opened again. Prints "ready"
                                       once all N are open, then "reopened R"
                                       whenever R grows; exits on SIGTERM
"""
import http.client
import json
import selectors
import signal
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        body = r.read()
        if r.status != 200 or r.headers.get("Content-Type") != CONTENT_TYPE:
            print(f"status {r.status}, content type {r.headers.get('Content-Type')}", file=sys.stderr)
            return 1
    sys.stdout.write(body.decode())
    return 0


def code(url, method):
    data = b"x" if method in ("POST", "PUT") else None
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(r.status)
    except urllib.error.HTTPError as e:
        print(e.code)
    except OSError:
        print(0)
    return 0


def promq(url, query):
    q = urllib.parse.urlencode({"query": query})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5) as r:
            doc = json.load(r)
    except OSError:
        print("")
        return 0
    res = doc.get("data", {}).get("result", [])
    print(res[0]["value"][1] if res else "")
    return 0


def still_open(s):
    """True while the peer has not closed the connection."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def hold(host, port, n):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect((host, port))
            socks.append(s)
        except OSError:
            s.close()
    # The server closes what is over its limits at accept: wait (bounded)
    # until the count of open ones stops changing.
    deadline = time.monotonic() + 5
    last = -1
    while time.monotonic() < deadline:
        now = sum(1 for s in socks if still_open(s))
        if now == last:
            break
        last = now
        time.sleep(0.2)  # poll interval
    print(sum(1 for s in socks if still_open(s)), flush=True)
    sys.stdin.read()  # until the test closes our stdin
    for s in socks:
        s.close()
    return 0


def get_from(url, secs, src):
    """One GET of url from address src (None: any); the status, 0 when
    there was no answer."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=secs,
                                      source_address=(src, 0) if src else None)
    try:
        conn.request("GET", u.path)
        r = conn.getresponse()
        r.read()
        return r.status
    except OSError:
        return 0
    except http.client.HTTPException:
        return 0
    finally:
        conn.close()


def attempt(url, secs, src):
    t0 = time.monotonic()
    status = get_from(url, secs, src)
    print(f"{status} {time.monotonic() - t0:.2f}")
    return 0


def until_ok(url, secs, src):
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        if get_from(url, 1, src) == 200:
            print(f"{time.monotonic() - t0:.2f}")
            return 0
        time.sleep(0.1)  # between attempts, as a scraper retrying would
    print("none")
    return 0


def slowloris(host, port, n, src, interval):
    def opened():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((src, 0))
        s.settimeout(5)
        try:
            s.connect((host, port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            s.close()
            return None
        s.setblocking(False)
        return s

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    sel = selectors.DefaultSelector()
    socks, reopened, ready = set(), 0, False
    next_line = time.monotonic() + interval
    while not stop:
        while len(socks) < n and not stop:
            s = opened()
            if s is None:
                time.sleep(0.05)  # refused: try again, as an attacker would
                continue
            socks.add(s)
            sel.register(s, selectors.EVENT_READ)
            if ready:
                reopened += 1
                print(f"reopened {reopened}", flush=True)
        if not ready:
            print("ready", flush=True)
            ready = True
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                if s.recv(4096):
                    continue  # an answer it did not ask for: keep holding
            except BlockingIOError:
                continue
            except OSError:
                pass
            sel.unregister(s)
            socks.discard(s)
            s.close()
        if time.monotonic() >= next_line:
            for s in list(socks):
                try:
                    s.send(b"X-Slow: 1\r\n")
                except OSError:
                    pass  # seen closed by the select above
            next_line += interval
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "get":
        return get(argv[2])
    if len(argv) == 4 and argv[1] == "code":
        return code(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "promq":
        return promq(argv[2], argv[3])
    if len(argv) == 5 and argv[1] == "hold":
        return hold(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) in (4, 5) and argv[1] == "attempt":
        return attempt(argv[2], float(argv[3]), argv[4] if len(argv) == 5 else None)
    if len(argv) in (4, 5) and argv[1] == "until_ok":
        return until_ok(argv[2], float(argv[3]), argv[4] if len(argv) == 5 else None)
    if len(argv) == 7 and argv[1] == "slowloris":
        return slowloris(argv[2], int(argv[3]), int(argv[4]), argv[5], float(argv[6]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

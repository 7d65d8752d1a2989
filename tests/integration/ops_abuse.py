"""Abuse of a running daemon's admin socket and metrics listener, one phase
per run, for ops-abuse.sh: prints its figures as TAP comments and exits 0
when the phase held, 1 (with why) when not.

    ops_abuse.py PHASE PID ADMIN_SOCKET METRICS_HOST:PORT

Phases:
  connections  300 connections held open that send nothing (150 on each
               listener), while a well-behaved client asks on both;
  slow         160 clients that send a byte a second (80 on each), while
               a well-behaved client asks on both; every slow one is cut
               off by the server at its deadline;
  malformed    an oversized URL (414), oversized headers (431), a declared
               body over the limit (413), a chunked one that outgrows it
               (closed), a bad length (400), bytes that are not HTTP
               (closed without a reply); each followed by a good request;
  burst        300 requests from 30 clients at once, all answered;
  reload       reloads (POST /v1/reload and SIGHUP) while 16 clients ask
               without pause; every request is answered.

A well-behaved request must be answered within GOOD_BOUND_S, however the
abuse goes. The limits are the daemon's documented ones (autoscaled(8)).
"""

import os
import signal
import socket
import sys
import threading
import time

GOOD_BOUND_S = 2.0
REQUEST_TIMEOUT_S = 10      # HTTPD_REQUEST_TIMEOUT_S
CONNECTION_MEMORY = 65536   # HTTPD_CONNECTION_MEMORY
ADMIN_MAX_BODY = 4096

PHASE, PID, ADMIN, METRICS = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
MHOST, MPORT = METRICS.rsplit(":", 1)
MPORT = int(MPORT)
failures = []


def comment(msg):
    print("# " + msg, flush=True)


def fail(msg):
    failures.append(msg)
    comment("FAILED: " + msg)


def connect(kind, timeout=5.0):
    if kind == "admin":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(ADMIN)
    else:
        s = socket.create_connection((MHOST, MPORT), timeout=timeout)
    s.settimeout(timeout)
    return s


def exchange(kind, raw, timeout=5.0):
    """Sends raw bytes and reads until the server closes; returns what came
    back (b"" when it closed without a word)."""
    s = connect(kind, timeout)
    out = b""
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            out += b
    finally:
        s.close()
    return out


def status_of(reply):
    parts = reply.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and reply.startswith(b"HTTP/1.") and parts[1].isdigit() else None


def good(kind):
    """One well-behaved request; returns (status, seconds)."""
    path = "/v1/health" if kind == "admin" else "/metrics"
    t0 = time.monotonic()
    try:
        reply = exchange(kind, ("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % path).encode())
        st = status_of(reply)
    except OSError as e:
        comment("%s: %s" % (kind, e))
        st = None
    return st, time.monotonic() - t0


def check_good(label):
    worst = 0.0
    for kind in ("admin", "metrics"):
        st, dt = good(kind)
        worst = max(worst, dt)
        if st != 200:
            fail("%s: a well-behaved request to %s got %s" % (label, kind, st))
        elif dt > GOOD_BOUND_S:
            fail("%s: a well-behaved request to %s took %.2f s" % (label, kind, dt))
    return worst


def alive():
    try:
        os.kill(PID, 0)
        return True
    except OSError:
        return False


def phase_connections():
    held = []
    for i in range(300):
        try:
            held.append(connect("admin" if i % 2 else "metrics", timeout=1.0))
        except OSError:
            pass  # a full backlog refuses a Unix client at once
    comment("connections held open: %d" % len(held))
    worst = max(check_good("idle connections") for _ in range(5))
    comment("slowest well-behaved request while they are held: %.0f ms" % (worst * 1000))
    for s in held:
        s.close()


def phase_slow():
    head = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
    clients = []
    for i in range(160):
        try:
            s = connect("admin" if i % 2 else "metrics", timeout=1.0)
            s.sendall(head)
            s.setblocking(False)
            clients.append([s, time.monotonic(), None])
        except OSError:
            pass
    comment("slow clients connected: %d" % len(clients))
    start = time.monotonic()
    worst = 0.0
    last_good = 0.0
    deadline = start + REQUEST_TIMEOUT_S + 8
    # One byte a second from each, until the server has closed them all:
    # the deliberate pacing of a slowloris client.
    while any(c[2] is None for c in clients) and time.monotonic() < deadline:
        for c in clients:
            if c[2] is not None:
                continue
            try:
                b = c[0].recv(4096)
                if not b:
                    c[2] = time.monotonic()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                c[2] = time.monotonic()
                continue
            try:
                c[0].send(b"a")
            except BlockingIOError:
                pass
            except OSError:
                c[2] = time.monotonic()
        if time.monotonic() - last_good >= 1.0 and time.monotonic() < start + REQUEST_TIMEOUT_S:
            worst = max(worst, check_good("slow clients"))
            last_good = time.monotonic()
        time.sleep(1.0)
    open_ = [c for c in clients if c[2] is None]
    if open_:
        fail("%d slow clients still connected %.0f s after they began" % (len(open_), time.monotonic() - start))
    lifetimes = sorted(c[2] - c[1] for c in clients if c[2] is not None)
    if lifetimes:
        comment("slow clients cut off after %.1f s (first) to %.1f s (last); the limit is %d s" %
                (lifetimes[0], lifetimes[-1], REQUEST_TIMEOUT_S))
        if lifetimes[-1] > REQUEST_TIMEOUT_S + 6:
            fail("a slow client was cut off only after %.1f s" % lifetimes[-1])
        if lifetimes[-1] < REQUEST_TIMEOUT_S - 1:
            fail("the slow clients were all cut off before their deadline (%.1f s)" % lifetimes[-1])
    comment("slowest well-behaved request during the slow clients: %.0f ms" % (worst * 1000))
    for c in clients:
        c[0].close()


def phase_malformed():
    cases = [
        ("a URL longer than a connection's memory",
         b"GET /v1/groups/" + b"a" * (CONNECTION_MEMORY + 1024) + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414),
        ("headers longer than a connection's memory",
         b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"b" * (CONNECTION_MEMORY + 1024) + b"\r\n\r\n",
         431),
        ("a declared body over the limit, none of it sent",
         b"POST /v1/reload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999\r\n\r\n", 413),
        ("a body over the limit",
         b"POST /v1/groups/web/pause HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" %
         (ADMIN_MAX_BODY + 1) + b" " * (ADMIN_MAX_BODY + 1), 413),
        ("a chunked body that outgrows the limit",
         b"POST /v1/groups/web/pause HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n" +
         (b"1000\r\n" + b" " * 4096 + b"\r\n") * 4 + b"0\r\n\r\n", "closed"),
        ("a length that is no number",
         b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\n", 400),
        ("bytes that are not HTTP (a TLS hello)", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "closed"),
        ("a request line with no version", b"GARBAGE\r\n\r\n", "closed"),
    ]
    for kind in ("admin", "metrics"):
        for name, raw, want in cases:
            if kind == "metrics":
                raw = raw.replace(b"/v1/groups/web/pause", b"/metrics").replace(b"/v1/reload", b"/metrics")
            try:
                s = connect(kind)
                try:
                    s.sendall(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                reply = b""
                while True:
                    try:
                        b = s.recv(65536)
                    except ConnectionResetError:
                        break
                    if not b:
                        break
                    reply += b
                s.close()
            except OSError as e:
                fail("%s on %s: %s" % (name, kind, e))
                continue
            got = status_of(reply) if reply else "closed"
            comment("%s on %s: %s" % (name, kind, got))
            if got != want:
                fail("%s on %s: expected %s, got %s" % (name, kind, want, got))
            check_good(name)


def run_clients(n_threads, per_thread, paths, label):
    results = []
    lock = threading.Lock()

    def client(i):
        for k in range(per_thread):
            kind, path, method = paths[(i + k) % len(paths)]
            t0 = time.monotonic()
            try:
                reply = exchange(kind, ("%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                        "Content-Length: 0\r\n\r\n" % (method, path)).encode(), timeout=10)
                st = status_of(reply)
            except OSError as e:
                st = str(e)
            with lock:
                results.append((st, time.monotonic() - t0))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    return threads, results


def phase_burst():
    paths = [("admin", "/v1/groups", "GET"), ("admin", "/v1/groups/web", "GET"), ("metrics", "/metrics", "GET")]
    threads, results = run_clients(30, 10, paths, "burst")
    for t in threads:
        t.join()
    bad = [r for r in results if r[0] != 200]
    comment("burst: %d requests, %d answered 200, slowest %.0f ms" %
            (len(results), len(results) - len(bad), max(r[1] for r in results) * 1000))
    if bad:
        fail("burst: %d requests not answered 200: %s" % (len(bad), sorted(set(str(r[0]) for r in bad))))
    check_good("after the burst")


def phase_reload():
    paths = [("admin", "/v1/groups", "GET"), ("metrics", "/metrics", "GET"), ("admin", "/v1/groups/web", "GET")]
    threads, results = run_clients(16, 25, paths, "reload")
    reloads = []
    for i in range(6):
        if i % 2:
            os.kill(PID, signal.SIGHUP)
            reloads.append("SIGHUP")
        else:
            st = status_of(exchange("admin", b"POST /v1/reload HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                    b"Content-Length: 0\r\n\r\n", timeout=10))
            reloads.append(st)
            if st != 200:
                fail("reload %d through the admin API got %s" % (i, st))
    for t in threads:
        t.join()
    bad = [r for r in results if r[0] != 200]
    comment("reloads during the requests: %s" % reloads)
    comment("requests during the reloads: %d, %d answered 200, slowest %.0f ms" %
            (len(results), len(results) - len(bad), max(r[1] for r in results) * 1000))
    if bad:
        fail("during the reloads %d requests were not answered 200: %s" %
             (len(bad), sorted(set(str(r[0]) for r in bad))))


{"connections": phase_connections, "slow": phase_slow, "malformed": phase_malformed, "burst": phase_burst,
 "reload": phase_reload}[PHASE]()
if not alive():
    fail("the daemon is gone")
sys.exit(1 if failures else 0)

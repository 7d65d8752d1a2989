"""Shared machinery of the cloud API emulators used by the test suite.

An Emulator is a threaded HTTP server on 127.0.0.1 with routes, a record of
every request (method, path, query, headers, body, reply status), per-test
fault injection and an optional added latency. Tests run it in-process
(start()/stop()); the benchmark runs it as a program (see main()).

Faults are rules matched in order against each request:
    add_fault(method="POST", path=r"/resize$", status=429, times=2,
              headers={"Retry-After": "1"}, body={...}, delay_ms=0, after=False)
`after=True` lets the request take effect and then replaces the reply (a
reply lost on the way back); `status=None` with delay_ms only slows the
reply. `mutate=fn` (with status=None) lets the request take effect and
passes its Reply to fn, whose return value (a Reply) is sent instead: a
malformed or spoofed version of the real reply. A rule with times=N fires N
times (-1: always)."""

import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Reply:
    def __init__(self, status=200, body=None, headers=None):
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


class Emulator:
    def __init__(self, latency_ms=0):
        self.lock = threading.RLock()
        self.requests = []
        self.faults = []
        self.latency_ms = latency_ms
        self.routes = []
        self.server = None
        self.thread = None
        # Seconds a kept-alive connection may stay idle before the
        # emulator closes it (None: as long as the client keeps it), as
        # the clouds' front ends do; each open connection is a thread.
        self.idle_timeout_s = None

    # -- routing -----------------------------------------------------------
    def route(self, method, pattern, handler):
        self.routes.append((method, re.compile(pattern), handler))

    def add_fault(self, method=None, path=None, status=None, times=1, headers=None, body=None,
                  delay_ms=0, after=False, query=None, mutate=None):
        with self.lock:
            self.faults.append({"method": method, "path": re.compile(path) if path else None,
                                "query": query, "status": status, "times": times,
                                "headers": dict(headers or {}), "body": body,
                                "delay_ms": delay_ms, "after": after, "mutate": mutate})

    def clear(self):
        with self.lock:
            self.requests = []
            self.faults = []

    def _take_fault(self, method, path, query):
        with self.lock:
            for f in self.faults:
                if f["times"] == 0:
                    continue
                if f["method"] and f["method"] != method:
                    continue
                if f["path"] and not f["path"].search(path):
                    continue
                if f["query"] and f["query"] not in query:
                    continue
                if f["times"] > 0:
                    f["times"] -= 1
                return f
        return None

    def dispatch(self, req):
        for method, rx, handler in self.routes:
            if method != req["method"]:
                continue
            m = rx.fullmatch(req["path"])
            if m:
                return handler(req, *m.groups())
        return Reply(404, {"error": {"code": 404, "message": "no route for %s %s" % (req["method"], req["path"])}})

    # -- queries for tests -------------------------------------------------
    def find(self, method=None, path=None):
        rx = re.compile(path) if path else None
        with self.lock:
            return [r for r in self.requests
                    if (not method or r["method"] == method) and (not rx or rx.search(r["path"]))]

    def save_log(self, filename):
        with self.lock, open(filename, "w") as f:
            json.dump(self.requests, f, indent=1)

    # -- server ------------------------------------------------------------
    def start(self, port=0):
        emu = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, Nagle and
            # the client's delayed ACK add 40 ms to every reply.
            disable_nagle_algorithm = True
            timeout = emu.idle_timeout_s

            def log_message(self, *args):
                pass

            def _serve(self):
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = raw.decode("utf-8", "replace")
                query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
                try:
                    js = json.loads(body) if body else None
                except ValueError:
                    js = None
                req = {"method": self.command, "path": urllib.parse.unquote(url.path), "rawpath": url.path,
                       "query": query, "rawquery": url.query,
                       "headers": {k.lower(): v for k, v in self.headers.items()},
                       "body": body, "json": js, "time": time.time()}
                with emu.lock:
                    emu.requests.append(req)
                fault = emu._take_fault(self.command, req["path"], url.query)
                delay = emu.latency_ms + (fault["delay_ms"] if fault else 0)
                if delay:
                    time.sleep(delay / 1000.0)
                if fault and fault["status"] and not fault["after"]:
                    reply = Reply(fault["status"], fault["body"], fault["headers"])
                else:
                    try:
                        reply = emu.dispatch(req)
                    except Exception as e:  # a bug in the emulator must show in the test
                        reply = Reply(500, {"error": {"code": 500, "message": "emulator: %r" % e}})
                    if fault and fault["status"]:
                        reply = Reply(fault["status"], fault["body"], fault["headers"])
                    elif fault:
                        reply.headers.update(fault["headers"])
                        if fault["mutate"]:
                            reply = fault["mutate"](reply)
                req["status"] = reply.status
                if isinstance(reply.body, (dict, list)):
                    data = json.dumps(reply.body).encode()
                    ctype = "application/json"
                elif reply.body is None:
                    data = b""
                    ctype = "application/json"
                else:
                    data = str(reply.body).encode()
                    ctype = "text/plain"
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.headers.pop("Content-Type", ctype))
                for k, v in reply.headers.items():
                    # A list is sent as one header line per item (Azure's
                    # budgets come so, one line per policy).
                    for item in (v if isinstance(v, list) else [v]):
                        self.send_header(k, str(item))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 512

            def handle_error(self, request, client_address):
                # A client that gave up on a slow reply is part of the tests.
                import sys as _sys
                if not isinstance(_sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def error_body(code, message, reason=None, domain="global"):
    """A Google-style error body."""
    e = {"message": message, "domain": domain}
    if reason:
        e["reason"] = reason
    return {"error": {"code": code, "message": message, "errors": [e]}}


def run_main(make, argv):
    """Runs an emulator as a program until stdin closes or SIGTERM:
    --port-file F (writes the port), --latency-ms N, --setup JSON (passed to
    the emulator's setup()), --log F (written at exit)."""
    import argparse
    import signal
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--setup", default="{}")
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    emu = make(args.latency_ms)
    emu.setup(json.loads(args.setup))
    url = emu.start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(url.rsplit(":", 1)[1])
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    done.wait()
    emu.stop()
    if args.log:
        emu.save_log(args.log)
    sys.exit(0)

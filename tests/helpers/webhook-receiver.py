#!/usr/bin/env python3
"""A webhook receiver for the notification tests.

Listens on 127.0.0.1 (an ephemeral port, written to PORT_FILE), answers
POSTs with the status codes given in CODES in turn (the last one repeats),
verifies X-Autoscaled-Signature with SECRET on its own (Python's hmac, not
the daemon's code) and appends one JSON line per request to LOG_FILE.

usage: webhook-receiver.py PORT_FILE LOG_FILE SECRET CODES
"""
import hashlib
import hmac
import http.server
import json
import os
import sys

port_file, log_file, secret, codes = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].split(",")
state = {"n": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        sig = self.headers.get("X-Autoscaled-Signature")
        want = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        entry = {
            "path": self.path,
            "body": body.decode("utf-8", "replace"),
            "signature": sig,
            "signature_ok": sig is not None and hmac.compare_digest(sig, want),
            "delivery": self.headers.get("X-Autoscaled-Delivery"),
            "content_type": self.headers.get("Content-Type"),
        }
        code = int(codes[min(state["n"], len(codes) - 1)])
        state["n"] += 1
        with open(log_file, "a") as f:
            f.write(json.dumps(entry) + "\n")
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.timeout = 30
server.serve_forever()

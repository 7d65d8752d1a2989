#!/usr/bin/env python3
"""Local servers for the source integration tests, each on a free loopback
port written to PORTFILE once it listens.

  fixture-server.py http DIR PORTFILE   files of DIR, plus:
      /hang        reads the request and never answers
      /headers     a JSON object of the request's headers
      /big/N       N bytes of a JSON array of zeros
      /count       a JSON object counting the requests served so far
  fixture-server.py https DIR PORTFILE CERT KEY   the same over TLS
  fixture-server.py hang PORTFILE       TCP: accepts and never answers
  fixture-server.py garbage PORTFILE    TCP: answers any connection with noise
  fixture-server.py hang-unix PATH      a UNIX socket that accepts and never answers
"""
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time

served = 0
lock = threading.Lock()


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global served
        with lock:
            served += 1
        if self.path == "/hang":
            time.sleep(3600)
        elif self.path == "/headers":
            self.reply(json.dumps({k.lower(): v for k, v in self.headers.items()}))
        elif self.path.startswith("/big/"):
            n = int(self.path[5:])
            body = b"[" + b"0," * ((n - 2) // 2) + b"0]"
            self.reply(body)
        elif self.path == "/count":
            self.reply(json.dumps({"served": served}))
        else:
            super().do_GET()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that gives up (timeout, size limit) is expected here.
        pass


def write_port(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.rename(tmp, path)


def tcp(portfile, garbage, unix_path=None):
    if unix_path:
        s = socket.socket(socket.AF_UNIX)
        s.bind(unix_path)
        s.listen(128)
    else:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        write_port(portfile, s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        if garbage:
            try:
                c.recv(4096)
                c.sendall(b"\x00\x01garbage that is no protocol at all\r\n")
            except OSError:
                pass
            c.close()
        else:
            held.append(c)


def main():
    mode = sys.argv[1]
    if mode in ("http", "https"):
        os.chdir(sys.argv[2])
        srv = Server(("127.0.0.1", 0), Handler)
        if mode == "https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(sys.argv[4], sys.argv[5])
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        write_port(sys.argv[3], srv.server_address[1])
        srv.serve_forever()
    elif mode in ("hang", "garbage"):
        tcp(sys.argv[2], mode == "garbage")
    elif mode == "hang-unix":
        tcp(None, False, sys.argv[2])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A small HTTP/1.1 upstream for the proxy tests (keep-alive, chunked, slow, big, broken).

Usage: upstream.py PORT_FILE   — binds 127.0.0.1:0, writes the port to PORT_FILE, serves until killed.
Paths:
  /echo...         JSON: method, path (as received, with query), headers, body length, connection id
  /chunked         a chunked response in three chunks, with a trailer
  /big?n=N         N bytes (pattern i*31+7 & 255), Content-Length
  /stream?n=N      N bytes chunked, in 64 KiB chunks
  /slow?ms=M       waits M ms, then answers "slow"
  /status/N        status N with a small body (none for 204/304)
  /close           "bye" and Connection: close
  /broken          promises 100 bytes, sends 10 and closes
  /hop             a response with hop-by-hop fields that must not reach the client
  /brief           "brief", keep-alive; then this connection is closed after 200 ms without a request
  /open            JSON {"open": N}: connections open now (this one included)
"""
import http.server
import json
import socketserver
import sys
import threading
import time
import urllib.parse

COUNTER = {"n": 0, "open": 0}
LOCK = threading.Lock()


def pattern(n):
    return bytes((i * 31 + 7) & 255 for i in range(n))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        with LOCK:
            COUNTER["n"] += 1
            COUNTER["open"] += 1
            self.conn_id = COUNTER["n"]

    def finish(self):
        try:
            super().finish()
        finally:
            with LOCK:
                COUNTER["open"] -= 1

    def body(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, data, ctype="text/plain", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        if status not in (204, 304):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(data)

    def handle_any(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        body = self.body()
        if u.path.startswith("/echo"):
            out = {"method": self.command, "path": self.path, "body_length": len(body),
                   "body": body.decode("latin-1"), "connection_id": self.conn_id,
                   "headers": [[k, v] for k, v in self.headers.items()]}
            self.send(200, json.dumps(out).encode(), "application/json")
        elif u.path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Sum")
            self.end_headers()
            for part in (b"alpha-", b"beta-", b"gamma"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Sum: 3\r\n\r\n")
        elif u.path == "/big":
            self.send(200, pattern(int(q.get("n", ["0"])[0])), "application/octet-stream")
        elif u.path == "/stream":
            n = int(q.get("n", ["0"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = pattern(65536)
            left = n
            while left > 0:
                part = block[: min(left, 65536)]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                left -= len(part)
            self.wfile.write(b"0\r\n\r\n")
        elif u.path == "/slow":
            time.sleep(int(q.get("ms", ["1000"])[0]) / 1000.0)
            self.send(200, b"slow")
        elif u.path.startswith("/status/"):
            self.send(int(u.path.split("/")[2]), b"status body")
        elif u.path == "/close":
            self.send(200, b"bye", extra=[("Connection", "close")])
            self.close_connection = True
        elif u.path == "/broken":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/brief":
            self.send(200, b"brief")
            self.connection.settimeout(0.2)  # the next request must come within 200 ms
        elif u.path == "/open":
            with LOCK:
                n = COUNTER["open"]
            self.send(200, json.dumps({"open": n}).encode(), "application/json")
        elif u.path == "/hop":
            self.send(200, b"hop", extra=[("Connection", "X-Secret"), ("X-Secret", "1"),
                                          ("Keep-Alive", "timeout=5"), ("X-Kept", "yes")])
        else:
            self.send(404, b"no such upstream path")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as f:
        f.write(str(srv.server_address[1]))
    srv.serve_forever()

#!/usr/bin/env python3
"""A small HTTP/1.1 upstream for the proxy tests (keep-alive, chunked, slow, big, broken).

Usage: upstream.py PORT_FILE [--small-rcvbuf] [--tls CERT KEY]   — binds 127.0.0.1:0, writes the port
to PORT_FILE, serves until killed. --tls: HTTPS with Python's ssl module (no ALPN; connections
close without a TLS close_notify), as many dev backends are.
Paths:
  /echo...         JSON: method, path (as received, with query), headers, body length, connection id
  /chunked         a chunked response in three chunks, with a trailer
  /big?n=N         N bytes (pattern i*31+7 & 255), Content-Length
  /stream?n=N      N bytes chunked, in 64 KiB chunks
  /slow?ms=M       waits M ms, then answers "slow"
  /trickle?n=N&ms=M  a head with Content-Length N, then the body a byte at a time, M ms apart
  /status/N        status N with a small body (none for 204/304)
  /close           "bye" and Connection: close
  /close-delimited?n=N  N bytes of the pattern with no Content-Length, Connection: close, then the
                   connection closes (the body ends there: HTTP/1.0 style)
  /early           413 at once without reading the request body, then the connection closes
  /broken          promises 100 bytes, sends 10 and closes
  /hop             a response with hop-by-hop fields that must not reach the client
  /brief           "brief", keep-alive; then this connection is closed after 200 ms without a request
  /abrupt          "abrupt" without Connection: close; then this connection is closed at once
  /open            JSON {"open": N}: connections open now (this one included)
  /upload?rate=B   reads the request body as it comes (Content-Length or chunked; at most B bytes/s
                   if given) and answers JSON: bytes, crc32 (zlib), chunked, trailers, seconds taken
  /upload-fail?after=N  reads N body bytes, then resets the connection without a response
  /hits            JSON {"upload_fail": N}: how many requests /upload-fail saw
"""
import http.server
import json
import socketserver
import sys
import threading
import time
import urllib.parse
import zlib
import socket
import ssl
import struct

COUNTER = {"n": 0, "open": 0, "upload_fail": 0}
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
        if self.path.startswith("/upload") or self.path == "/early":
            return b""  # read by the handler itself, as it streams; /early never reads it
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def body_pieces(self, limit=None):
        """Yields the request body in pieces of at most 256 KiB (de-chunked), stopping after
        `limit` bytes if given. Sets self.trailers for a chunked body."""
        self.trailers = []
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            got = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    break
                left = size
                while left:
                    piece = self.rfile.read(min(left, 262144))
                    if not piece:
                        raise ConnectionError("body cut short")
                    left -= len(piece)
                    got += len(piece)
                    yield piece
                    if limit is not None and got >= limit:
                        return
                self.rfile.readline()
            while True:
                line = self.rfile.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                self.trailers.append([name.strip(), value.strip()])
            return
        left = int(self.headers.get("Content-Length", "0") or 0)
        if limit is not None:
            left = min(left, limit)
        while left:
            piece = self.rfile.read(min(left, 262144))
            if not piece:
                raise ConnectionError("body cut short")
            left -= len(piece)
            yield piece

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
        if u.path == "/upload":
            rate = int(q.get("rate", ["0"])[0])
            start = time.monotonic()
            count, crc = 0, 0
            for piece in self.body_pieces():
                count += len(piece)
                crc = zlib.crc32(piece, crc)
                if rate:
                    ahead = start + count / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
            out = {"bytes": count, "crc32": crc, "seconds": time.monotonic() - start,
                   "chunked": "chunked" in self.headers.get("Transfer-Encoding", "").lower(),
                   "content_length": self.headers.get("Content-Length"),
                   "expect": self.headers.get("Expect"), "trailers": self.trailers}
            self.send(200, json.dumps(out).encode(), "application/json")
            return
        if u.path == "/upload-fail":
            with LOCK:
                COUNTER["upload_fail"] += 1
            for _ in self.body_pieces(int(q.get("after", ["0"])[0])):
                pass
            # RST instead of FIN: SO_LINGER with a zero timeout.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if u.path == "/hits":
            with LOCK:
                n = COUNTER["upload_fail"]
            self.send(200, json.dumps({"upload_fail": n}).encode(), "application/json")
            return
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
        elif u.path == "/trickle":
            n, ms = int(q.get("n", ["1"])[0]), int(q.get("ms", ["100"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            self.wfile.flush()
            for i in range(n):
                time.sleep(ms / 1000.0)
                self.wfile.write(b"t")
                self.wfile.flush()
        elif u.path.startswith("/status/"):
            self.send(int(u.path.split("/")[2]), b"status body")
        elif u.path == "/close":
            self.send(200, b"bye", extra=[("Connection", "close")])
            self.close_connection = True
        elif u.path == "/close-delimited":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(pattern(int(q.get("n", ["1000"])[0])))
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/early":
            self.send(413, b"too big, says the upstream\n", extra=[("Connection", "close")])
            self.close_connection = True
        elif u.path == "/broken":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/abrupt":
            self.send(200, b"abrupt")
            self.close_connection = True  # closed at once, without announcing it (no Connection: close)
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

    def server_bind(self):
        # --small-rcvbuf: small receive buffers (inherited by accepted sockets), so a slow reader
        # here is felt upstream of it at once instead of after megabytes of kernel buffering.
        if "--small-rcvbuf" in sys.argv:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        super().server_bind()


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    if "--tls" in sys.argv:
        at = sys.argv.index("--tls")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[at + 1], sys.argv[at + 2])
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    with open(sys.argv[1], "w") as f:
        f.write(str(srv.server_address[1]))
    srv.serve_forever()

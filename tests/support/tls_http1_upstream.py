#!/usr/bin/env python3
"""An HTTPS upstream as many dev backends are (Python's ssl module, HTTP/1.1, no ALPN), for the
proxy tests. Debian python3.

Usage: tls_http1_upstream.py PORT_FILE CERT KEY   — binds 127.0.0.1:0, writes the port, serves
until killed.
  GET  /close?n=N   HTTP/1.0-style: no Content-Length, "Connection: close", N bytes of the test
                    pattern ((i * 31 + 7) & 255), then the socket closes without a TLS close_notify
  POST /early       answers 413 at once without reading the body, then closes
  anything else     200 "ok" with a Content-Length (keep-alive)
"""
import http.server
import os
import socketserver
import ssl
import sys
import urllib.parse


def pattern(n):
    return bytes((i * 31 + 7) & 255 for i in range(n))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/close":
            n = int(urllib.parse.parse_qs(url.query).get("n", ["1000"])[0])
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(pattern(n))
            self.wfile.flush()
            self.close_connection = True
            return
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if self.path == "/early":
            body = b"too big, says the upstream\n"
            self.send_response(413)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        self.do_GET()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[2], sys.argv[3])
    server = Server(("127.0.0.1", 0), Handler)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


main()

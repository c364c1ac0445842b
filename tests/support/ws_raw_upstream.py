#!/usr/bin/env python3
"""An upstream that accepts any WebSocket upgrade and then is no WebSocket at all (for the tunnel
capture tests): after the 101 it sends one text frame "hi", then echoes every byte it receives,
frames or not, until the client half-closes.

Usage: ws_raw_upstream.py PORT_FILE   — binds 127.0.0.1:0, writes the port, serves until killed.
"""
import base64
import hashlib
import os
import socket
import sys
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def serve(conn):
    with conn:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        key = b""
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"sec-websocket-key":
                key = value.strip()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n" + b"\x81\x02hi")
        if rest:
            conn.sendall(rest)
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            conn.sendall(chunk)
        conn.shutdown(socket.SHUT_WR)


def main():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()

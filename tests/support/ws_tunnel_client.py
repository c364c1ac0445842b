#!/usr/bin/env python3
"""Clients through Portico's `ws: true` proxy for the tunnel capture tests (python3-websockets 10.4).

Usage: ws_tunnel_client.py MODE URL   — prints "ok" and exits 0, or what went wrong and exits 1.
A wss:// URL is not verified (the tests' self-signed certificate).
  talk     to ws_upstream.py (echo), without compression: text, binary, a fragmented text message,
           a ping, a 1 MiB binary message, then a close with code 4001 "bye"
  deflate  the same conversation with permessage-deflate negotiated
  garbage  to ws_raw_upstream.py over a raw socket: the upgrade, the upstream's frame "hi", one
           masked text frame "ok", then 300 KiB that are no frames; every byte must come back
"""
import asyncio
import os
import socket
import ssl
import sys
import threading
import urllib.parse

import websockets


def check(cond, what):
    if not cond:
        print(what)
        sys.exit(1)


def big():
    return bytes((i * 31 + 7) & 255 for i in range(1 << 20))


async def talk(url, compression):
    ctx = None
    if url.startswith("wss:"):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    async with websockets.connect(url, ssl=ctx, max_size=None, compression=compression) as ws:
        check((ws.extensions != []) == (compression is not None), "extensions: %r" % ws.extensions)
        await ws.send("hello")
        check(await ws.recv() == "hello", "text echo")
        await ws.send(bytes([0, 255, 1, 254]) * 4)
        check(await ws.recv() == bytes([0, 255, 1, 254]) * 4, "binary echo")
        await ws.send(["frag", "men", "ted"])  # one message in four frames (the last one empty)
        check(await ws.recv() == "fragmented", "fragmented echo")
        await asyncio.wait_for(await ws.ping(b"p"), 5)
        await ws.send(big())
        check(await ws.recv() == big(), "1 MiB echo")
        await ws.close(code=4001, reason="bye")
        check(ws.close_code == 4001, "close code %r" % ws.close_code)
    print("ok")


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        check(chunk, "EOF after %d of %d bytes" % (len(out), n))
        out += chunk
    return out


def garbage(url):
    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (u.path, u.netloc)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        check(chunk, "no 101: %r" % head)
        head += chunk
    head, rest = head.split(b"\r\n\r\n", 1)
    check(head.startswith(b"HTTP/1.1 101"), "status: %r" % head)
    rest += recv_exact(s, max(0, 4 - len(rest)))
    check(rest == b"\x81\x02hi", "first frame: %r" % rest)
    key = b"\x01\x02\x03\x04"
    frame = b"\x81\x82" + key + bytes(c ^ key[i % 4] for i, c in enumerate(b"ok"))
    junk = b"\x3f" + os.urandom(300 * 1024)  # RSV2/RSV3 set: no frame, then noise
    sent = frame + junk
    got = []
    reader = threading.Thread(target=lambda: got.append(recv_exact(s, len(sent))))  # both ways at once
    reader.start()
    s.sendall(sent)
    reader.join(30)
    check(got and got[0] == sent, "echo differs")
    s.shutdown(socket.SHUT_WR)
    check(s.recv(1) == b"", "EOF after the half-close")
    s.close()
    print("ok")


mode, url = sys.argv[1], sys.argv[2]
if mode == "garbage":
    garbage(url)
else:
    asyncio.run(talk(url, "deflate" if mode == "deflate" else None))

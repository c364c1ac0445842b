#!/usr/bin/python3
"""An HTTPS origin with a page that talks to a WebSocket echo on the same origin (python3-websockets).

Usage: https_ws_origin.py PORT_FILE CERT KEY   — binds 127.0.0.1:0 with TLS (CERT/KEY, PEM; no
ALPN, so HTTP/1.1), writes the port to PORT_FILE once listening, serves until killed.
Paths:
  /         an HTML page whose script opens wss://<its own host>/ws, sends "hello from the page",
            writes "echo: <the answer>" into <div id="out"> (or "error: ..." if the socket fails)
            and closes the socket (1000 "done"). The page's <img src="/gate"> holds its load event
            until then, so a headless browser's --dump-dom (taken at the load event) sees the echo
            without racing it.
  /gate     a 1x1 SVG, answered once a /ws session has ended (at most 20 s after the request)
  /ws       WebSocket: each text message back as "echo of <message>", binary ones as they came
  /seen     JSON: the messages /ws received so far (what the client really sent)
  anything else: 404
Every request's path is logged on stderr ("GET /path"), flushed at once.
"""
import asyncio
import http
import json
import os
import ssl
import sys

import websockets

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>wss through the proxy</title></head>
<body><div id="out">waiting</div>
<script>
const out = document.getElementById("out");
const ws = new WebSocket("wss://" + location.host + "/ws");
ws.onopen = () => ws.send("hello from the page");
ws.onmessage = (e) => { out.textContent = "echo: " + e.data; ws.close(1000, "done"); };
ws.onerror = () => { out.textContent = "error: the WebSocket failed"; };
</script>
<img src="/gate" alt="">
</body></html>
"""
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'

SEEN = []
SESSION_ENDED = asyncio.Event()


async def page(path, request_headers):
    print("GET " + path, file=sys.stderr, flush=True)
    if path == "/ws":
        return None  # the WebSocket handshake goes on
    if path == "/":
        return http.HTTPStatus.OK, [("Content-Type", "text/html; charset=utf-8"),
                                    ("Cache-Control", "no-store")], PAGE
    if path == "/gate":
        try:
            await asyncio.wait_for(SESSION_ENDED.wait(), 20)
        except asyncio.TimeoutError:
            print("/gate: no /ws session ended within 20 s", file=sys.stderr, flush=True)
        return http.HTTPStatus.OK, [("Content-Type", "image/svg+xml"), ("Cache-Control", "no-store")], SVG
    if path == "/seen":
        return http.HTTPStatus.OK, [("Content-Type", "application/json")], json.dumps(SEEN).encode()
    return http.HTTPStatus.NOT_FOUND, [("Content-Type", "text/plain")], b"no such page\n"


async def echo(ws, path=None):
    try:
        async for message in ws:
            SEEN.append(message if isinstance(message, str) else message.hex())
            await ws.send("echo of " + message if isinstance(message, str) else message)
    finally:
        SESSION_ENDED.set()


async def main():
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[2], sys.argv[3])
    async with websockets.serve(echo, "127.0.0.1", 0, ssl=tls, process_request=page) as server:
        port = server.sockets[0].getsockname()[1]
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())

#!/usr/bin/env python3
"""A WebSocket upstream for the proxy tests (Debian python3-websockets 10.4).

Usage: ws_upstream.py PORT_FILE [CERT KEY]   — binds 127.0.0.1:0, writes the port, serves until
killed; with CERT and KEY (PEM files) over TLS (wss://, no ALPN).
Every message is sent back as it came, except the text "headers?", answered with a JSON object
of the upgrade request: its path and its header fields (lower-case names).
"""
import asyncio
import json
import os
import ssl
import sys

import websockets


async def handler(ws, path):
    async for message in ws:
        if message == "headers?":
            await ws.send(json.dumps({"path": path, "headers": {k.lower(): v for k, v in ws.request_headers.raw_items()}}))
        else:
            await ws.send(message)


async def main():
    tls = None
    if len(sys.argv) > 3:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    async with websockets.serve(handler, "127.0.0.1", 0, max_size=None, ssl=tls) as server:
        port = server.sockets[0].getsockname()[1]
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        await asyncio.Future()


asyncio.run(main())

#!/usr/bin/env python3
"""A WebSocket client through Portico's `ws: true` proxy to ws_upstream.py (python3-websockets 10.4).

Usage: ws_proxy_client.py URL   — prints "ok" and exits 0, or what went wrong and exits 1.
"""
import asyncio
import json
import sys

import websockets


def check(cond, what):
    if not cond:
        print(what)
        sys.exit(1)


async def main(url):
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send("h\u00e9llo")
        check(await ws.recv() == "h\u00e9llo", "text echo")
        big = bytes((i * 31 + 7) & 255 for i in range(4 << 20))
        await ws.send(big)
        check(await ws.recv() == big, "4 MiB binary echo")
        for i in range(50):
            await ws.send("m%d" % i)
        for i in range(50):
            check(await ws.recv() == "m%d" % i, "message %d" % i)
        await ws.send("headers?")
        info = json.loads(await ws.recv())
        h = info["headers"]
        check(info["path"] == "/chat?room=1", "path: %r" % info["path"])
        check(h.get("x-forwarded-for", "").endswith("127.0.0.1"), "x-forwarded-for: %r" % h)
        check(h.get("upgrade", "").lower() == "websocket", "upgrade: %r" % h)
        check("portico" in h.get("via", ""), "via: %r" % h)
        pong = await ws.ping(b"p")
        await asyncio.wait_for(pong, 5)
    print("ok")


asyncio.run(main(sys.argv[1]))

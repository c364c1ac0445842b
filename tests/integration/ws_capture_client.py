#!/usr/bin/env python3
"""WebSocket clients for tst_capture_websocket (Debian python3-websockets 10.4): each mode runs one
scripted conversation whose messages the test then looks for in the capture.
usage: ws_capture_client.py MODE PATH   env: PORT, TLS=1"""
import asyncio, os, ssl, sys, websockets

TLS = os.environ.get("TLS") == "1"
BASE = ("wss" if TLS else "ws") + "://127.0.0.1:" + os.environ["PORT"]
CTX = None
if TLS:
    CTX = ssl.create_default_context(); CTX.check_hostname = False; CTX.verify_mode = ssl.CERT_NONE


def conn(path):
    return websockets.connect(BASE + path, ssl=CTX, max_size=None, compression=None)


async def main(mode, path):
    if mode == "echo":
        # text, binary (not UTF-8), ping, then a normal close (1000 "done").
        async with conn(path) as ws:
            await ws.send("hello"); assert await ws.recv() == "hello"
            await ws.send(bytes([0, 255, 1, 254]) * 4); assert await ws.recv() == bytes([0, 255, 1, 254]) * 4
            await asyncio.wait_for(await ws.ping(b"p"), 5)
            await ws.close(code=1000, reason="done")
        print("ok", flush=True)
    elif mode == "rooms":
        # three members; member 0 says something, member 2 answers in binary; then all leave in order.
        c = [await conn(path) for _ in range(3)]
        await c[0].send("from 0")
        assert await asyncio.wait_for(c[1].recv(), 5) == "from 0"
        assert await asyncio.wait_for(c[2].recv(), 5) == "from 0"
        await c[2].send(b"\x01\x02")
        assert await asyncio.wait_for(c[0].recv(), 5) == b"\x01\x02"
        assert await asyncio.wait_for(c[1].recv(), 5) == b"\x01\x02"
        for x in c:
            await x.close()
        print("ok", flush=True)
    elif mode.startswith("many"):
        n = int(mode[4:])
        async with conn(path) as ws:
            for i in range(n):
                m = "m%d-payload" % i
                await ws.send(m); assert await ws.recv() == m
        print("ok", flush=True)
    elif mode == "hold":
        # one message, then wait for a line on stdin before closing (a long-lived session).
        async with conn(path) as ws:
            await ws.send("still here"); assert await ws.recv() == "still here"
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        print("ok", flush=True)
    elif mode == "open":
        async with conn(path) as ws:
            pass
        print("ok", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))

#!/usr/bin/env python3
"""WebSocket test clients for tst_websocket / tst_live_reload (Debian python3-websockets 10.4).
usage: ws_client.py MODE PATH   env: PORT, TLS=1"""
import asyncio, os, ssl, sys, websockets, zlib, socket, struct, base64
TLS = os.environ.get("TLS") == "1"
BASE = ("wss" if TLS else "ws") + "://127.0.0.1:" + os.environ["PORT"]
CTX = None
if TLS:
    CTX = ssl.create_default_context(); CTX.check_hostname = False; CTX.verify_mode = ssl.CERT_NONE

def conn(path, **kw):
    return websockets.connect(BASE + path, ssl=CTX, max_size=None, **kw)

async def main(mode, path):
    if mode == "echo":
        async with conn(path, compression=None) as ws:
            await ws.send("h\u00e9llo \U0001F600"); print("text", await ws.recv() == "h\u00e9llo \U0001F600")
            b = bytes(range(256)) * 300
            await ws.send(b); print("binary", await ws.recv() == b)
            await ws.send(["frag", "mented"]); print("fragmented", await ws.recv() == "fragmented")
            pong = await ws.ping(b"p"); await asyncio.wait_for(pong, 5); print("pong True")
    elif mode == "deflate":
        async with conn(path) as ws:
            print("ext", ws.response_headers.get("Sec-WebSocket-Extensions"))
            big = "compressible text " * 20000
            await ws.send(big); print("big", await ws.recv() == big)
            await ws.send("tiny"); print("tiny", await ws.recv() == "tiny")
    elif mode == "rooms":
        c = [await websockets.connect(BASE + path, ssl=CTX) for _ in range(3)]
        await c[0].send("from 0")
        print("c1", await asyncio.wait_for(c[1].recv(), 5), "c2", await asyncio.wait_for(c[2].recv(), 5))
        try:
            await asyncio.wait_for(c[0].recv(), 0.5); print("sender got its own message")
        except asyncio.TimeoutError:
            print("sender skipped")
        await c[2].send(b"\x01\x02")
        print("c0", await asyncio.wait_for(c[0].recv(), 5), "c1", await asyncio.wait_for(c[1].recv(), 5))
        other = await websockets.connect(BASE + path + "-other", ssl=CTX)
        await other.send("elsewhere")
        try:
            await asyncio.wait_for(c[0].recv(), 0.5); print("room leaked")
        except asyncio.TimeoutError:
            print("rooms separate")
        for x in c + [other]: await x.close()
    elif mode == "close":
        ws = await conn(path)
        await ws.close(code=4321, reason="bye")
        print("close", ws.close_code, ws.close_reason)
    elif mode == "toobig":
        ws = await conn(path)
        await ws.send("x" * 2000)
        try:
            await asyncio.wait_for(ws.recv(), 5)
        except websockets.ConnectionClosed as e:
            print("closed", e.rcvd.code if e.rcvd else None)
    elif mode == "proto":
        async with conn(path, subprotocols=["a", "b", "c"]) as ws:
            print("proto", ws.subprotocol)
    elif mode == "quiet":
        # sends nothing (no pings of its own either) for 2.5 s, answering only the server's pings
        async with conn(path, ping_interval=None) as ws:
            await asyncio.sleep(2.5)
            await ws.send("still here"); print("alive", await asyncio.wait_for(ws.recv(), 5) == "still here")
    elif mode == "hold":
        a = await conn(path); b = await conn(path)
        await a.send("hello room")
        print("got", await asyncio.wait_for(b.recv(), 5), flush=True)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await a.close(); await b.close()
        print("done", flush=True)

async def listen(path):
    async with conn(path) as ws:
        print("ready", flush=True)
        for _ in range(2):
            print(await asyncio.wait_for(ws.recv(), 20), flush=True)

def rawdeflate(path):
    s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
    if TLS: s = CTX.wrap_socket(s)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n\r\n" % (path, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head: head += s.recv(1)
    print("ext", [l for l in head.decode().split("\r\n") if l.lower().startswith("sec-websocket-extensions")])
    text = ("portico " * 500).encode()
    c = zlib.compressobj(6, zlib.DEFLATED, -15); z = c.compress(text) + c.flush(zlib.Z_SYNC_FLUSH)
    z = z[:-4]
    m = os.urandom(4)
    s.sendall(bytes([0xC1, 0x80 | 126]) + struct.pack(">H", len(z)) + m + bytes(x ^ m[i % 4] for i, x in enumerate(z)))
    def exact(n):
        b = b""
        while len(b) < n: b += s.recv(n - len(b))
        return b
    b0, b1 = exact(2); n = b1 & 0x7F
    if n == 126: n = struct.unpack(">H", exact(2))[0]
    payload = exact(n)
    d = zlib.decompressobj(-15)
    print("rsv1", bool(b0 & 0x40), "wire", n, "same", d.decompress(payload + b"\x00\x00\xff\xff") == text)

if sys.argv[1] == "rawdeflate":
    rawdeflate(sys.argv[2])
elif sys.argv[1] == "listen":
    asyncio.run(listen(sys.argv[2]))
else:
    asyncio.run(main(sys.argv[1], sys.argv[2]))

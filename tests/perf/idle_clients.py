#!/usr/bin/python3
"""Opens N keep-alive connections to 127.0.0.1:PORT, sends one request on each, reads its
response, then holds them all open until stdin closes. Prints "ready N" once all are answered.
Bounded: at most N connections, one request each. Loopback only."""
import selectors, socket, sys

port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "/hello.txt"
req = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()
socks, sel, pending = [], selectors.DefaultSelector(), 0
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, bytearray())
    socks.append(s)
    pending += 1
    while pending > 200 or (i == n - 1 and pending):  # keep at most 200 unanswered
        for key, _ in sel.select(timeout=10):
            buf = key.data
            buf += key.fileobj.recv(65536)
            if b"\r\n\r\n" in buf:  # small responses arrive whole
                sel.unregister(key.fileobj)
                pending -= 1
print("ready", len(socks), flush=True)
sys.stdin.read()

#!/usr/bin/python3
"""A client of a forward proxy that controls what curl cannot: the CONNECT target and the TLS
server name apart, and a client that closes right after the server's first flight, without an
alert (what a pinned app does when it does not like the certificate).

  connect_tls_client.py --proxy PORT --connect HOST:PORT --sni NAME --cafile PEM [--path /echo]
      CONNECT, then TLS with SNI NAME verified against PEM only, then GET PATH. Prints the
      response's status line and body; exit 0, or 3 when the certificate was not trusted.
  connect_tls_client.py --proxy PORT --connect HOST:PORT --sni NAME --close-after-hello
      CONNECT, send a ClientHello, read the server's answer, close the socket without a word.
  connect_tls_client.py --proxy PORT --connect HOST:PORT --sni NAME --cafile PEM --hold N
      N such tunnels (GET PATH answered in each), held open: prints "open N", then waits until
      its standard input closes (at most 60 s).
"""
import argparse
import socket
import ssl
import sys
import time


def connect(proxy_port, target):
    s = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("proxy closed before answering CONNECT")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: " + head.decode(errors="replace"))
    return s


def get(args):
    s = connect(args.proxy, args.connect)
    ctx = ssl.create_default_context(cafile=args.cafile)
    ctx.check_hostname = True
    try:
        tls = ctx.wrap_socket(s, server_hostname=args.sni)
    except ssl.SSLCertVerificationError as e:
        print("VERIFY_FAILED", e)
        return 3
    tls.sendall(f"GET {args.path} HTTP/1.1\r\nHost: {args.sni}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = tls.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    print(head.split(b"\r\n")[0].decode())
    print(body.decode(errors="replace"))
    # Hold the socket a moment (the proxy looks up which process holds it while it exists).
    time.sleep(0.2)
    return 0


def close_after_hello(args):
    s = connect(args.proxy, args.connect)
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=args.sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    s.sendall(outgoing.read())
    # The server's first flight (TLS 1.3: ServerHello to Finished; its certificate inside).
    s.settimeout(5)
    got = 0
    deadline = time.time() + 5
    while time.time() < deadline and got < 400:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += len(chunk)
    time.sleep(0.05)
    s.close()  # no alert, no close_notify
    print("read", got)
    return 0 if got else 4


def hold(args):
    ctx = ssl.create_default_context(cafile=args.cafile)
    held = []
    for _ in range(args.hold):
        tls = ctx.wrap_socket(connect(args.proxy, args.connect), server_hostname=args.sni)
        tls.sendall(f"GET {args.path} HTTP/1.1\r\nHost: {args.sni}\r\n\r\n".encode())
        if not tls.recv(65536).startswith(b"HTTP/1.1 200"):
            return 5
        held.append(tls)
    print("open", len(held), flush=True)
    import select
    select.select([sys.stdin], [], [], 60)
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--proxy", type=int, required=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--sni", required=True)
    p.add_argument("--cafile")
    p.add_argument("--path", default="/echo")
    p.add_argument("--close-after-hello", action="store_true")
    p.add_argument("--hold", type=int, default=0)
    args = p.parse_args()
    if args.hold:
        return hold(args)
    return close_after_hello(args) if args.close_after_hello else get(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""A small HTTP/1.1 forward proxy for tests of `portico bench --proxy` (RFC 9110 §7.6, §9.3.6).

usage: forward_proxy.py PORTFILE [--refuse]. Binds 127.0.0.1 on a free port and writes the port
to PORTFILE once listening. For each client
connection it reads the first request head and then:
  - CONNECT host:port: connects there, answers "200 Connection established" and pipes bytes both
    ways (a tunnel; TLS or h2c go through it unread);
  - an absolute-form request (GET http://host:port/path): connects to that origin, sends the head
    on unchanged (origin servers accept absolute-form, RFC 9112 §3.2.2) and pipes the rest;
  - anything else: 400.
Each first request is logged on stderr as "CONNECT <authority>" or "ABSOLUTE <method> <target>",
flushed at once, so a test can count them. Only loopback targets are accepted (403 otherwise).
--refuse answers every CONNECT with "403 Forbidden" instead.
"""
import asyncio
import ipaddress
import socket
import sys

REFUSE = "--refuse" in sys.argv
# The connections' tasks, held so that none is garbage-collected while it pipes (asyncio keeps only
# weak references to the tasks start_server creates).
TASKS = set()


def loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            writer.close()


def split_authority(authority, default_port):
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else str(default_port)
    else:
        host, _, port = authority.partition(":")
        port = port or str(default_port)
    return host, int(port)


async def answer(writer, status):
    """A final answer without a body; the connection closes."""
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


async def open_upstream(writer, host, port, refuse):
    """(reader, writer) to host:port; None after answering 403 (refused, or not loopback) or 502."""
    if refuse or not loopback(host):
        await answer(writer, b"403 Forbidden")
        return None
    try:
        return await asyncio.open_connection(host, port)
    except OSError:
        await answer(writer, b"502 Bad Gateway")
        return None


async def handle(reader, writer):
    task = asyncio.current_task()
    TASKS.add(task)
    task.add_done_callback(TASKS.discard)
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3:
        await answer(writer, b"400 Bad Request")
        return
    method, target, _ = parts
    if method == "CONNECT":
        print("CONNECT " + target, file=sys.stderr, flush=True)
        upstream = await open_upstream(writer, *split_authority(target, 443), REFUSE)
        if upstream:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(pipe(reader, upstream[1]), pipe(upstream[0], writer))
        return
    if target.startswith("http://"):
        print("ABSOLUTE " + method + " " + target, file=sys.stderr, flush=True)
        authority = target[len("http://"):].split("/", 1)[0]
        upstream = await open_upstream(writer, *split_authority(authority, 80), False)
        if upstream:
            upstream[1].write(head)
            await asyncio.gather(pipe(reader, upstream[1]), pipe(upstream[0], writer))
        return
    await answer(writer, b"400 Bad Request")


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, family=socket.AF_INET)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

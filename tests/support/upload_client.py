#!/usr/bin/env python3
"""A client that streams a large request body (a fixed pattern) and reports what happened, as JSON.

Usage:
  upload_client.py h1 PORT PATH BYTES [METHOD] HTTP/1.1, Content-Length, raw socket (POST)
  upload_client.py h1-chunked PORT PATH BYTES  HTTP/1.1, chunked (1 MiB chunks, an X-Sum trailer)
  upload_client.py h2 URL BYTES                h2c with prior knowledge through curl -T - (no length)
  upload_client.py curl URL BYTES [ARG...]     curl -T - with these arguments (-k --http2, ...)

Prints {"status", "body", "sent", "crc32", "send_done", "seconds", "closed"}: the response's status
and body, the bytes written and their zlib crc32, when the last byte was written (seconds from the
start; null if the writes failed) and when the response was complete, and whether the server closed
the connection after it (h1 modes). The response is read while the body is being written, so an
early answer (502, 413) is seen even if the server stops reading.
"""
import json
import socket
import subprocess
import sys
import threading
import time
import zlib

BLOCK = bytes((i * 31 + 7) & 255 for i in range(1048573))  # not a power of two: offsets shift


def pieces(total):
    sent = 0
    while sent < total:
        piece = BLOCK[: min(len(BLOCK), total - sent)]
        sent += len(piece)
        yield piece


def read_response(sock, out):
    data = b""
    try:
        while True:
            while b"\r\n\r\n" not in data:
                more = sock.recv(65536)
                if not more:
                    out["closed"] = True
                    return
                data += more
            head, _, data = data.partition(b"\r\n\r\n")
            status = int(head.split(b" ")[1])
            if 100 <= status < 200:
                continue  # interim (100 Continue)
            out["status"] = status
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(data) < length:
                more = sock.recv(65536)
                if not more:
                    break
                data += more
            out["body"] = data[:length].decode("latin-1")
            out["done_at"] = time.monotonic()
            sock.settimeout(1)
            try:
                out["closed"] = sock.recv(1) == b""
            except (socket.timeout, OSError):
                out["closed"] = isinstance(sys.exc_info()[1], ConnectionResetError)
            return
    except OSError:
        out["closed"] = True


def h1(port, path, total, chunked, method="POST"):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    start = time.monotonic()
    out = {"status": 0, "body": "", "closed": False}
    reader = threading.Thread(target=read_response, args=(sock, out), daemon=True)
    reader.start()
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
    head += "Transfer-Encoding: chunked\r\n" if chunked else "Content-Length: %d\r\n" % total
    sent, crc, send_done = 0, 0, None
    try:
        sock.sendall((head + "\r\n").encode())
        for piece in pieces(total):
            if "done_at" in out or out["closed"]:
                break  # answered already: stop sending
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            sent += len(piece)
            crc = zlib.crc32(piece, crc)
        if sent == total:
            if chunked:
                sock.sendall(b"0\r\nX-Sum: %d\r\n\r\n" % crc)
            send_done = time.monotonic() - start
    except OSError:
        pass
    reader.join(60)
    done = out.pop("done_at", time.monotonic())
    sock.close()
    out.update(sent=sent, crc32=crc, send_done=send_done, seconds=done - start)
    return out


def curl(url, total, args):
    start = time.monotonic()
    curl = subprocess.Popen(["curl", "-sS", "--max-time", "120", "-T", "-", "-X", "POST",
                             "-w", "\n%{http_code}"] + args + [url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sent, crc, send_done = 0, 0, None
    try:
        for piece in pieces(total):
            curl.stdin.write(piece)
            sent += len(piece)
            crc = zlib.crc32(piece, crc)
        curl.stdin.close()
        send_done = time.monotonic() - start
    except OSError:
        pass
    output = curl.stdout.read()
    curl.wait()
    body, _, status = output.rpartition(b"\n")
    return {"status": int(status or 0), "body": body.decode("latin-1"), "sent": sent, "crc32": crc,
            "send_done": send_done, "seconds": time.monotonic() - start, "closed": None}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode in ("h1", "h1-chunked"):
        result = h1(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), mode == "h1-chunked",
                    sys.argv[5] if len(sys.argv) > 5 else "POST")
    elif mode == "h2":
        result = curl(sys.argv[2], int(sys.argv[3]), ["--http2-prior-knowledge"])
    else:
        result = curl(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    print(json.dumps(result))

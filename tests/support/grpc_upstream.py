#!/usr/bin/env python3
"""A gRPC upstream for the proxy tests (python3-grpcio, generic handlers, raw bytes: no protoc).

Usage: grpc_upstream.py PORT_FILE   — binds 127.0.0.1:0 (h2c), writes the port, serves until killed.
Methods of /test.Echo/ (messages are bytes):
  Unary          the request back; b"fail" → INVALID_ARGUMENT "bad request: fail" with
                 grpc-status-details-bin b"\\x08\\x03details"; b"empty-fail" → Trailers-Only
                 FAILED_PRECONDITION (no message sent at all)
  Metadata       JSON of the invocation metadata (te, x-forwarded-for, via, grpc-timeout, ...)
  ServerStream   request "N" → N messages b"msg-0" ... b"msg-{N-1}"
  ClientStream   all requests joined with b"|"
  Bidi           each request back as it comes (ping-pong clients see it before sending more)
  Slow           sleeps 3 s, then the request back (deadlines)
  Sleep          request "N" → sleeps N ms, then the request back (just under a deadline)
  Forever        b"tick-i" every 50 ms until cancelled; cancellations are counted
  Cancelled      the number of Forever calls that saw their cancellation, as ASCII
"""
import json
import sys
import threading
import time
from concurrent import futures

import grpc

CANCELLED = {"n": 0}
LOCK = threading.Lock()


def unary(request, context):
    if request == b"fail":
        context.set_trailing_metadata((("grpc-status-details-bin", b"\x08\x03details"),))
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad request: fail")
    if request == b"empty-fail":
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "nothing to send")
    return request


def metadata(request, context):
    return json.dumps([[k, v if isinstance(v, str) else v.hex()] for k, v in context.invocation_metadata()]).encode()


def server_stream(request, context):
    for i in range(int(request.decode() or "0")):
        yield b"msg-%d" % i


def client_stream(request_iterator, context):
    return b"|".join(request_iterator)


def bidi(request_iterator, context):
    for r in request_iterator:
        yield r


def slow(request, context):
    time.sleep(3)
    return request


def sleep(request, context):
    time.sleep(int(request) / 1000.0)
    return request


def forever(request, context):
    done = threading.Event()

    def on_done():
        if not done.is_set():
            with LOCK:
                CANCELLED["n"] += 1

    context.add_callback(on_done)
    i = 0
    while context.is_active() and i < 2000:
        yield b"tick-%d" % i
        i += 1
        time.sleep(0.05)
    done.set()


def cancelled(request, context):
    with LOCK:
        return str(CANCELLED["n"]).encode()


def main():
    ident = lambda b: b
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, ident, ident),
        "Metadata": grpc.unary_unary_rpc_method_handler(metadata, ident, ident),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, ident, ident),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream, ident, ident),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi, ident, ident),
        "Slow": grpc.unary_unary_rpc_method_handler(slow, ident, ident),
        "Sleep": grpc.unary_unary_rpc_method_handler(sleep, ident, ident),
        "Forever": grpc.unary_stream_rpc_method_handler(forever, ident, ident),
        "Cancelled": grpc.unary_unary_rpc_method_handler(cancelled, ident, ident),
    }
    options = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=options)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(port))
    import os

    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.wait_for_termination()


if __name__ == "__main__":
    main()

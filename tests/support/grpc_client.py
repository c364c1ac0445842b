#!/usr/bin/env python3
"""gRPC calls through Portico to grpc_upstream.py, one scenario per run (python3-grpcio, h2c).

Usage: grpc_client.py HOST:PORT SCENARIO [AUTHORITY]   — prints "ok" and exits 0, or prints what
went wrong and exits 1. AUTHORITY (":authority", picks Portico's vhost) defaults to HOST:PORT.
"""
import json
import queue
import socket
import sys
import threading
import time

import grpc

target, scenario = sys.argv[1], sys.argv[2]
authority = sys.argv[3] if len(sys.argv) > 3 else target
prefix = "/test.Echo"
options = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20),
           ("grpc.default_authority", authority), ("grpc.enable_retries", 0)]
channel = grpc.insecure_channel(target, options=options)
ident = lambda b: b


def uu(name):
    return channel.unary_unary(prefix + "/" + name, request_serializer=ident, response_deserializer=ident)


def us(name):
    return channel.unary_stream(prefix + "/" + name, request_serializer=ident, response_deserializer=ident)


def su(name):
    return channel.stream_unary(prefix + "/" + name, request_serializer=ident, response_deserializer=ident)


def ss(name):
    return channel.stream_stream(prefix + "/" + name, request_serializer=ident, response_deserializer=ident)


def check(cond, what):
    if not cond:
        print(what)
        sys.exit(1)


def expect_error(fn, code):
    try:
        fn()
    except grpc.RpcError as e:
        check(e.code() == code, "expected %s, got %s: %s" % (code, e.code(), e.details()))
        return e
    check(False, "expected %s, the call succeeded" % code)


def raw_trailers_only():
    # One gRPC call over a raw h2 connection: the Trailers-Only answer must be one HEADERS frame
    # with END_STREAM that carries :status and grpc-status.
    import h2.config
    import h2.connection
    import h2.events

    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    msg = b"empty-fail"
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", authority),
                          (":path", prefix + "/Unary"), ("content-type", "application/grpc"), ("te", "trailers")])
    conn.send_data(1, b"\x00" + len(msg).to_bytes(4, "big") + msg, end_stream=True)
    sock.sendall(conn.data_to_send())
    frames = []
    ended = False
    while not ended:
        data = sock.recv(65536)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, (h2.events.ResponseReceived, h2.events.TrailersReceived, h2.events.DataReceived)):
                frames.append(ev)
            if isinstance(ev, h2.events.StreamEnded) or isinstance(ev, h2.events.StreamReset):
                ended = True
        sock.sendall(conn.data_to_send())
    check(len(frames) == 1 and isinstance(frames[0], h2.events.ResponseReceived),
          "expected one HEADERS frame, got %r" % frames)
    check(frames[0].stream_ended is not None, "the HEADERS frame did not end the stream")
    headers = dict(frames[0].headers)
    check(headers.get("grpc-status") == "9" and headers.get(":status") == "200", "headers: %r" % headers)


def raw_call(frames, path="/Unary"):
    # One gRPC call over a raw h2 connection whose request body goes as the given DATA frames (the
    # last one ends the stream); returns the response's (headers, data, trailers) or a reset.
    import h2.config
    import h2.connection
    import h2.events

    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", authority),
                          (":path", prefix + path), ("content-type", "application/grpc"), ("te", "trailers")])
    for i, f in enumerate(frames):
        conn.send_data(1, f, end_stream=i == len(frames) - 1)
        sock.sendall(conn.data_to_send())
        time.sleep(0.02)  # separate DATA frames, and separate reads at the proxy
    headers, data, trailers, reset = {}, b"", {}, None
    ended = False
    while not ended:
        chunk = sock.recv(65536)
        if not chunk:
            break
        for ev in conn.receive_data(chunk):
            if isinstance(ev, h2.events.ResponseReceived):
                headers = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                data += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, 1)
            elif isinstance(ev, h2.events.TrailersReceived):
                trailers = dict(ev.headers)
            elif isinstance(ev, h2.events.StreamReset):
                reset, ended = ev.error_code, True
            if isinstance(ev, h2.events.StreamEnded):
                ended = True
        sock.sendall(conn.data_to_send())
    sock.close()
    return headers, data, trailers, reset


# EchoMessage (tests/support/grpc_test.proto) {text: "hello", n: 42, inner: {label: "x", values: [1, 2, 3]}}
PROTO_MESSAGE = bytes.fromhex("0a0568656c6c6f102a1a080a01781203010203")


def main():
    if scenario == "proto":
        check(uu("Unary")(PROTO_MESSAGE, timeout=10) == PROTO_MESSAGE, "proto echo")
    elif scenario == "split":
        # One message whose 5-byte prefix and payload are split across four DATA frames.
        msg = b"\x00\x00\x00\x00\x05hello"
        headers, data, trailers, reset = raw_call([msg[:2], msg[2:7], msg[7:8], msg[8:]])
        check(reset is None and data == msg and trailers.get("grpc-status") == "0",
              "split: %r %r %r %r" % (headers, data, trailers, reset))
    elif scenario == "corrupt":
        # A message that says 100 bytes and ends the stream after 10: the upstream's error, whatever it is.
        raw_call([b"\x00\x00\x00\x00\x64" + b"0123456789"])
    elif scenario == "unary":
        check(uu("Unary")(b"hello", timeout=10) == b"hello", "unary echo")
        big = bytes((i * 31 + 7) & 255 for i in range(8 << 20))
        check(uu("Unary")(big, timeout=30) == big, "8 MiB echo")
    elif scenario == "metadata":
        got = json.loads(uu("Metadata")(b"", timeout=10, metadata=(("x-custom", "kept"),)))
        md = {}
        for k, v in got:
            md.setdefault(k, []).append(v)
        check(md.get("x-custom") == ["kept"], "x-custom: %r" % got)
        check("x-forwarded-for" in md and md["x-forwarded-for"][0].endswith("127.0.0.1"), "xff: %r" % got)
        check(any(v.endswith("portico") for v in md.get("via", [])), "via: %r" % got)
    elif scenario == "server_stream":
        # The client half-closes after its one message and keeps receiving.
        got = list(us("ServerStream")(b"100", timeout=10))
        check(got == [b"msg-%d" % i for i in range(100)], "server stream: %d messages" % len(got))
    elif scenario == "client_stream":
        got = su("ClientStream")(iter([b"m%d" % i for i in range(50)]), timeout=10)
        check(got == b"|".join(b"m%d" % i for i in range(50)), "client stream: %r" % got[:80])
    elif scenario == "bidi":
        # Ping-pong: each message goes only after the previous answer came back, so the proxy
        # must stream the request body (a buffering proxy deadlocks here).
        q = queue.Queue()

        def requests():
            for i in range(20):
                yield b"ping-%d" % i
                check(q.get(timeout=5) == b"ping-%d" % i, "bidi: answer %d" % i)

        call = ss("Bidi")(requests(), timeout=15)
        n = 0
        for r in call:
            q.put(r)
            n += 1
        check(n == 20, "bidi: %d answers" % n)
        # All requests first, then a half-close, then all answers.
        got = list(ss("Bidi")(iter([b"a", b"b", b"c"]), timeout=10))
        check(got == [b"a", b"b", b"c"], "bidi half-closed: %r" % got)
    elif scenario == "error":
        e = expect_error(lambda: uu("Unary")(b"fail", timeout=10), grpc.StatusCode.INVALID_ARGUMENT)
        check(e.details() == "bad request: fail", "details: %r" % e.details())
        md = dict(e.trailing_metadata() or ())
        check(md.get("grpc-status-details-bin") == b"\x08\x03details", "details-bin: %r" % (md,))
        expect_error(lambda: uu("Unary")(b"empty-fail", timeout=10), grpc.StatusCode.FAILED_PRECONDITION)
    elif scenario == "trailers_only":
        raw_trailers_only()
    elif scenario == "deadline":
        t0 = time.monotonic()
        expect_error(lambda: uu("Slow")(b"x", timeout=0.3), grpc.StatusCode.DEADLINE_EXCEEDED)
        check(time.monotonic() - t0 < 2, "deadline took %.2fs" % (time.monotonic() - t0))
    elif scenario == "deadline_capped":
        # No deadline from the client: the route's grpc_timeout_max applies.
        t0 = time.monotonic()
        expect_error(lambda: uu("Slow")(b"x"), grpc.StatusCode.DEADLINE_EXCEEDED)
        check(time.monotonic() - t0 < 2.5, "capped deadline took %.2fs" % (time.monotonic() - t0))
        # A client deadline above the cap is replaced by it too.
        t0 = time.monotonic()
        expect_error(lambda: uu("Slow")(b"x", timeout=10), grpc.StatusCode.DEADLINE_EXCEEDED)
        check(time.monotonic() - t0 < 2.5, "capped 10 s deadline took %.2fs" % (time.monotonic() - t0))
    elif scenario == "deadline_capped_under":
        # Just under the route's grpc_timeout_max: a call that takes ~30% of it completes, with no
        # deadline from the client and with one above the cap.
        check(uu("Sleep")(b"90") == b"90", "sleep 90 ms without a deadline")
        check(uu("Sleep")(b"90", timeout=10) == b"90", "sleep 90 ms with a 10 s deadline")
    elif scenario == "cancel":
        before = int(uu("Cancelled")(b"", timeout=5))
        call = us("Forever")(b"", timeout=30)
        for i, m in enumerate(call):
            if i == 2:
                break
        call.cancel()
        for _ in range(60):
            if int(uu("Cancelled")(b"", timeout=5)) > before:
                break
            time.sleep(0.05)
        check(int(uu("Cancelled")(b"", timeout=5)) > before, "the upstream never saw the cancellation")
    elif scenario == "unavailable":
        e = expect_error(lambda: uu("Unary")(b"x", timeout=5), grpc.StatusCode.UNAVAILABLE)
        check("502 Bad Gateway: upstream 127.0.0.1:" in e.details() and "refused" in e.details(),
              "details: %r" % e.details())
    else:
        check(False, "unknown scenario " + scenario)
    print("ok")


main()

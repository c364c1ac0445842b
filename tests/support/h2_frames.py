# Raw HTTP/2 frame sequences for RFC 9113 conformance (tst_http2_conformance): sends each case on a
# fresh connection (h2c, or h2 over TLS with TLS=1) and prints "CASE -> FRAMES / END", where FRAMES
# lists the RST_STREAM(id,code), GOAWAY(last,code) and HEADERS(id) frames the server sent and END
# says how the connection ended (open, closed, reset). Frames are built by hand: a client library
# refuses to send what these cases need.
import os, socket, ssl, struct, sys, time
from hpack import Encoder

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST, SETTINGS, GOAWAY = 0, 1, 2, 3, 4, 7
enc = None


def frame(t, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload


def headers(sid, end_stream=True, path="/ok", method=None):
    block = enc.encode([(":method", method or ("GET" if end_stream else "POST")), (":path", path),
                        (":scheme", "https" if os.environ.get("TLS") == "1" else "http"), (":authority", "t")])
    return frame(HEADERS, 0x4 | (0x1 if end_stream else 0), sid, block)


def connect():
    s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
    if os.environ.get("TLS") == "1":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s


def run(make, preface=PREFACE, idle=1.0):
    global enc
    enc = Encoder()
    s = connect()
    end = "open"
    buf = b""
    try:
        s.sendall(preface + frame(SETTINGS, 0, 0))
        for c in make():
            if c == "wait":
                time.sleep(0.3)
            else:
                s.sendall(c)
        s.settimeout(idle)
        while True:
            d = s.recv(65536)
            if not d:
                end = "closed"
                break
            buf += d
    except socket.timeout:
        pass
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        end = "reset"
    out = []
    i = 0
    while i + 9 <= len(buf):
        n = int.from_bytes(buf[i:i + 3], "big")
        t = buf[i + 3]
        sid = int.from_bytes(buf[i + 5:i + 9], "big") & 0x7fffffff
        p = buf[i + 9:i + 9 + n]
        if t == RST:
            out.append("RST_STREAM(%d,%d)" % (sid, int.from_bytes(p[:4], "big")))
        elif t == GOAWAY:
            out.append("GOAWAY(%d,%d)" % (int.from_bytes(p[:4], "big") & 0x7fffffff, int.from_bytes(p[4:8], "big")))
        elif t == HEADERS:
            out.append("HEADERS(%d)" % sid)
        i += 9 + n
    if buf.startswith(b"HTTP/1."):
        out.append("HTTP/1.x")
    return " ".join(out) + " / " + end


rst = lambda sid, code=8: frame(RST, 0, sid, struct.pack(">I", code))
prio = lambda sid, dep: frame(PRIORITY, 0, sid, struct.pack(">IB", dep, 15))
CASES = {
    # Legitimate sequences that must keep working: a body in several DATA frames right behind its
    # HEADERS, trailers, a PRIORITY for another stream.
    "post-body": lambda: [headers(1, False, "/ok", "POST") + frame(DATA, 0, 1, b"a") + frame(DATA, 1, 1, b"b")],
    "trailers": lambda: [headers(1, False, "/ok", "POST"), frame(DATA, 0, 1, b"a"),
                         frame(HEADERS, 0x5, 1, enc.encode([("x-t", "1")]))],
    "priority-other": lambda: [prio(3, 1), headers(1, True)],
    # RFC 9113 §5.1: after the client's RST_STREAM, DATA is a stream error and HEADERS a connection error.
    "data-after-rst": lambda: [headers(1, False, "/slow"), rst(1), "wait", frame(DATA, 0, 1, b"x")],
    "headers-after-rst": lambda: [headers(1, False, "/slow"), rst(1), "wait", headers(1, True)],
    # §5.1: frames on a stream closed after END_STREAM both ways: connection error STREAM_CLOSED.
    "data-after-close": lambda: [headers(1, True), "wait", frame(DATA, 0, 1, b"x")],
    # §5.1: DATA on a half-closed (remote) stream: STREAM_CLOSED.
    "data-half-closed": lambda: [headers(1, True, "/slow"), frame(DATA, 0, 1, b"x")],
    # §5.1.1: HEADERS opening a stream below an id already opened: connection PROTOCOL_ERROR.
    "lower-stream-id": lambda: [headers(5, True), "wait", headers(3, True)],
    # §5.3.1 and §6.3.
    "priority-self-open": lambda: [headers(1, True, "/slow"), prio(1, 1)],
    "priority-self-idle": lambda: [prio(1, 1)],
    "priority-stream-0": lambda: [prio(0, 1)],
    # §3.4: an invalid preface after the preface's first line.
    "bad-preface": "bad-preface",
}
for name in sys.argv[1:] or list(CASES):
    if CASES[name] == "bad-preface":
        result = run(lambda: [], preface=b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
    else:
        result = run(CASES[name])
    print(name, "->", result, flush=True)

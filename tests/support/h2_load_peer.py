#!/usr/bin/env python3
"""An HTTP/2 cleartext server (prior knowledge, python3-h2: another implementation than nghttp2)
for the load generator's client (client::Connection over h2_client_codec): what a real server may
do that Portico's own does not.

Usage: h2_load_peer.py PORT_FILE   — binds 127.0.0.1:0, writes the port to PORT_FILE, serves until killed.
Its SETTINGS: MAX_CONCURRENT_STREAMS 2 (the client must queue), the RFC's 65,535-byte windows (an
upload larger than that needs the WINDOW_UPDATEs it sends as it reads).
Paths:
  /length     200, body: the request body's length in decimal
  /trailers   200, body "abc", then trailers (x-checksum: 1)
  /early      103 Early Hints, then 200 "ok"
  /padded     200, body "padded" in a DATA frame with 50 bytes of padding
  /slowbody   200 at once, its body "late" 300 ms later
  /refuse     GOAWAY at once naming this stream as the last, so every later stream of the
              connection is not processed (RFC 9113 §6.8) and gets no answer; this one gets 200 "one"
              50 ms later; the connection closes 200 ms after that
  /abort      no answer: GOAWAY (ENHANCE_YOUR_CALM, this stream the last) and a FIN at once
  /big        200 with a 20,000-byte header field (HEADERS + CONTINUATION) and body "big"
  /goaway     GOAWAY at once, naming the highest stream received as the last (as nginx does when
              keepalive_requests is reached), then 50 ms later 200 "bye"; the connection closes
              200 ms after that
  else        404
"""
import asyncio
import sys

import h2.config
import h2.connection
import h2.events
import h2.settings


def goaway_frame(last, code):
    """A GOAWAY frame (RFC 9113 §6.8), written by hand: python3-h2 sends nothing after its own."""
    return b"\x00\x00\x08\x07\x00\x00\x00\x00\x00" + last.to_bytes(4, "big") + code.to_bytes(4, "big")


class Connection(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 2})
        self.h2.initiate_connection()
        self.flush()
        self.requests = {}
        self.goaway = False
        self.last = None  # /refuse: the last stream processed

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.transport.write(data)

    def data_received(self, data):
        try:
            events = self.h2.receive_data(data)
        except Exception as e:  # a protocol error: h2 queued GOAWAY
            print("h2_load_peer:", repr(e), file=sys.stderr)
            self.flush()
            self.transport.close()
            return
        for e in events:
            if isinstance(e, h2.events.RequestReceived):
                self.requests[e.stream_id] = [dict(e.headers)[":path"], 0]
            elif isinstance(e, h2.events.DataReceived):
                self.requests[e.stream_id][1] += len(e.data)
                self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.respond(e.stream_id)
        self.flush()

    def answer_then_close(self, sid, body):
        """50 ms later a 200 with `body` on `sid`, then the connection closes 200 ms after."""
        loop = asyncio.get_event_loop()

        def answer():
            self.h2.send_headers(sid, [(":status", "200")])
            self.h2.send_data(sid, body, end_stream=True)
            self.flush()
            loop.call_later(0.2, self.transport.close)
        loop.call_later(0.05, answer)

    def respond(self, sid):
        path, length = self.requests.pop(sid)
        if self.last is not None and sid > self.last:
            return  # not processed (GOAWAY)
        ok = [(":status", "200")]
        if path == "/length":
            body = str(length).encode()
            self.h2.send_headers(sid, ok + [("content-length", str(len(body)))])
            self.h2.send_data(sid, body, end_stream=True)
        elif path == "/trailers":
            self.h2.send_headers(sid, ok)
            self.h2.send_data(sid, b"abc")
            self.h2.send_headers(sid, [("x-checksum", "1")], end_stream=True)
        elif path == "/early":
            self.h2.send_headers(sid, [(":status", "103"), ("link", "</a.css>; rel=preload")])
            self.h2.send_headers(sid, ok)
            self.h2.send_data(sid, b"ok", end_stream=True)
        elif path == "/slowbody":
            self.h2.send_headers(sid, ok)

            def late():
                self.h2.send_data(sid, b"late", end_stream=True)
                self.flush()
            asyncio.get_event_loop().call_later(0.3, late)
        elif path == "/refuse":
            self.last = sid
            self.flush()
            self.transport.write(goaway_frame(sid, 0))
            self.answer_then_close(sid, b"one")
        elif path == "/abort":
            self.flush()
            self.transport.write(goaway_frame(sid, 0xb))
            self.transport.write_eof()  # a FIN, the socket still open for reading
        elif path == "/padded":
            self.h2.send_headers(sid, ok)
            self.h2.send_data(sid, b"padded", end_stream=True, pad_length=50)
        elif path == "/big":
            self.h2.send_headers(sid, ok + [("x-big", "b" * 20000)])
            self.h2.send_data(sid, b"big", end_stream=True)
        elif path == "/goaway":
            if not self.goaway:
                self.goaway = True
                self.flush()
                last = self.h2.highest_inbound_stream_id
                self.transport.write(goaway_frame(last, 0))
            self.answer_then_close(sid, b"bye")
        else:
            self.h2.send_headers(sid, [(":status", "404")], end_stream=True)


async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Connection, "127.0.0.1", 0)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


asyncio.run(main())

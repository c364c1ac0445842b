#!/usr/bin/env python3
"""An HTTP/2 cleartext upstream (prior knowledge, python3-h2) that says which connection a request
came on, for the HTTP/2 upstream pool tests (a portico upstream does not tell its connections apart).

Usage: h2c_upstream.py PORT_FILE   — binds 127.0.0.1:0, writes the port to PORT_FILE, serves until killed.
Paths (any method; a request body is read and dropped):
  /conn    JSON: connection_id (1, 2, ... in accept order), client_port, open (connections open now,
           this one included), goaways (GOAWAY frames received so far, all connections)
  /brief   the same; then this connection is closed (a TCP FIN, no GOAWAY) 200 ms later
  /held    200 with its HEADERS at once and its body ("released") only when /release is asked
  /release sends the body of every held response; 200 "ok"
  else     404
"""
import asyncio
import json
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions

STATE = {"n": 0, "open": 0, "goaways": 0}
HELD = []  # (connection, stream id) of /held responses whose body waits for /release


class Connection(asyncio.Protocol):
    def connection_made(self, transport):
        STATE["n"] += 1
        STATE["open"] += 1
        self.id = STATE["n"]
        self.port = transport.get_extra_info("peername")[1]
        self.transport = transport
        self.paths = {}
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.initiate_connection()
        transport.write(self.h2.data_to_send())

    def connection_lost(self, exc):
        STATE["open"] -= 1

    def data_received(self, data):
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.write(self.h2.data_to_send())
            self.transport.close()
            return
        for e in events:
            if isinstance(e, h2.events.RequestReceived):
                self.paths[e.stream_id] = dict(e.headers).get(":path", "")
            elif isinstance(e, h2.events.DataReceived):
                self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.respond(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                self.paths.pop(e.stream_id, None)
            elif isinstance(e, h2.events.ConnectionTerminated):
                STATE["goaways"] += 1
        self.transport.write(self.h2.data_to_send())

    def respond(self, stream_id):
        path = self.paths.pop(stream_id, "").split("?")[0]
        if path == "/held":
            self.h2.send_headers(stream_id, [(":status", "200"), ("content-type", "text/plain"),
                                             ("content-length", "8")])
            HELD.append((self, stream_id))
            return
        if path == "/release":
            for conn, held in HELD:
                try:
                    conn.h2.send_data(held, b"released", end_stream=True)
                except h2.exceptions.H2Error:
                    continue
                conn.transport.write(conn.h2.data_to_send())
            HELD.clear()
            status, body = 200, b"ok"
        elif path in ("/conn", "/brief"):
            status = 200
            body = json.dumps({"connection_id": self.id, "client_port": self.port,
                               "open": STATE["open"], "goaways": STATE["goaways"]}).encode()
        else:
            status, body = 404, b"no such upstream path"
        try:
            self.h2.send_headers(stream_id, [(":status", str(status)), ("content-type", "application/json"),
                                             ("content-length", str(len(body)))])
            self.h2.send_data(stream_id, body, end_stream=True)
        except h2.exceptions.H2Error:
            return  # the stream or the connection went away meanwhile
        if path == "/brief":
            asyncio.get_running_loop().call_later(0.2, self.transport.close)


async def main():
    server = await asyncio.get_running_loop().create_server(Connection, "127.0.0.1", 0)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

// The front door of every accepted connection: it picks the session that serves it. A cleartext
// socket goes to an HTTP/1.1 Connection, which hands it on to an H2Connection when the client
// opens with the HTTP/2 preface instead of a request (h2c with prior knowledge, RFC 9113 §3.3).
// On a TLS listener the handshake runs here first, under the listener's header_timeout, and the
// protocol the client and server agreed by ALPN (RFC 7301) picks the session: "h2" → H2Connection,
// anything else (http/1.1, or no ALPN) → Connection. Sessions never see a handshake.
#pragma once

#include "io/session.h"

#include <cstdint>
#include <string>

namespace portico::server {

class Worker;

/// Starts serving `socket`, accepted by `worker` on the listener bound to `localPort` (which
/// decides TLS: the worker's snapshot holds the listener's contexts). On the worker's thread.
/// A handshake that fails or times out closes the socket and counts in the worker's and the
/// listener's tlsHandshakeFailures (a timeout in timeouts); at most one line a second is logged.
void acceptConnection(Worker& worker, io::Socket socket, std::uint16_t localPort);

/// An intercepted CONNECT (serve::ResponseWriter::intercept): writes `toClient` (the 200, after
/// anything queued before it), then runs the TLS handshake with a leaf for the client's SNI name,
/// or `host` without one (the listener's intercepting ServerTls in the worker's snapshot),
/// `pending` being bytes the client sent after the CONNECT head. Then, by ALPN, an H2Connection
/// or a Connection serves the tunnel, every request forwarded to `host`:`port` over verified TLS
/// (proxy::interceptedOrigin). Under the listener's header_timeout; a failed handshake (a client
/// that refuses the CA's certificate) closes the tunnel and is logged at most once a second.
void startIntercepted(Worker& worker, io::Socket socket, std::uint16_t localPort, const std::string& host,
                      std::uint16_t port, std::string toClient, std::string pending);

} // namespace portico::server

// The server side of the WebSocket opening handshake (RFC 6455 §4.2) for HTTP/1.1 connections.
#pragma once

#include "capture/hooks.h"

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <memory>
#include <string>

namespace portico::net {
struct Snapshot;
class Worker;
} // namespace portico::net

namespace portico::ws {

/// A handshake that was accepted: what the session needs once the 101 is queued.
struct Accepted {
    std::shared_ptr<const net::Snapshot> snapshot; ///< keeps `action` and the hub alive
    const config::WebSocketAction* action = nullptr;
    bool liveReload = false;
    std::string route;            ///< Room mode: the route's path (rooms of different routes are distinct)
    std::string room;             ///< Room mode: the room's name
    bool deflate = false;         ///< permessage-deflate negotiated (always server_no_context_takeover)
    bool clientNoContext = false; ///< ... with client_no_context_takeover
    int serverWindowBits = 15;    ///< ... and this server_max_window_bits (9..15)
    std::string target;
    std::string host;
    std::string subprotocol;
    capture::WsCapturePtr capture; ///< the session's capture record (null when capture is off)
};

/// Answers a request for a WebSocket endpoint (serve::isWebSocketEndpoint; serve() returned Next::Upgrade).
/// On success `res` holds the 101 (Upgrade, Connection, Sec-WebSocket-Accept, and the selected
/// Sec-WebSocket-Protocol / Sec-WebSocket-Extensions) and the result is non-null; otherwise `res` holds the
/// refusal:
///  - 405 + Allow: GET for other methods;
///  - 426 + "Upgrade: websocket" for a request that is no WebSocket upgrade (RFC 9110 §15.5.22);
///  - 426 + "Sec-WebSocket-Version: 13" for another version (§4.4);
///  - 400 for a missing, repeated or malformed Sec-WebSocket-Key (§4.2.1 item 5);
///  - 403 when the live-reload endpoint is asked with a Host that servedHost() refuses (DNS
///    rebinding), or with an Origin that is not a page of this server (same scheme and port as the
///    request, a host servedHost() accepts); and for `websocket` routes when Origin is present, not
///    a page of this server, and not in the route's `origins` (§10.2; cases HST-01/02);
///  - 503 while the server drains.
/// `tls` tells which scheme the same-origin check expects (https/http).
std::unique_ptr<Accepted> acceptUpgrade(net::Worker& worker, std::size_t vhostIndex,
                                        const routing::RouteResult& route, const http::Request& req, bool tls,
                                        http::Response& res);

/// True if `host` (a Host field value, with or without port; case-insensitive) is a loopback name
/// ("localhost", "*.localhost", RFC 6761 §6.3), an IP literal (a typed address cannot be a rebound
/// DNS name), or a vhost name of the config (exact or `*.suffix`; a bare "*" does not count).
/// "localhost.evil.example" and "127.0.0.1.nip.io" are refused.
bool servedHost(const config::Config& config, std::string_view host);

} // namespace portico::ws

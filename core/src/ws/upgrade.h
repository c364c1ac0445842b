// The server side of the WebSocket opening handshake (RFC 6455 §4.2) for HTTP/1.1 connections.
#pragma once

#include "capture/hooks.h"

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <memory>
#include <string>

namespace portico::ws {

class Hub;

/// A handshake that was accepted: what the session needs once the 101 is queued.
struct Accepted {
    std::shared_ptr<const void> snapshot; ///< the server's config snapshot: keeps `config`, `action` alive
    const config::Config* config = nullptr;
    std::shared_ptr<Hub> hub; ///< the engine's hub (rooms, live reload, counters)
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
/// What the server's snapshot gives acceptUpgrade: `config` and `hub` stay alive as long as
/// `keepAlive` (the snapshot itself) does; `hub` null when sessions are not available (503).
struct UpgradeContext {
    std::shared_ptr<const void> keepAlive;
    const config::Config* config = nullptr;
    std::shared_ptr<Hub> hub;
    bool draining = false; ///< the server stops: 503
};
std::unique_ptr<Accepted> acceptUpgrade(UpgradeContext context, std::size_t vhostIndex,
                                        const routing::RouteResult& route, const http::Request& req, bool tls,
                                        http::Response& res);

/// True if `host` (a Host field value, with or without port; case-insensitive) is a loopback name
/// ("localhost", "*.localhost", RFC 6761 §6.3), an IP literal (a typed address cannot be a rebound
/// DNS name), or a vhost name of the config (exact or `*.suffix`; a bare "*" does not count).
/// "localhost.evil.example" and "127.0.0.1.nip.io" are refused.
bool servedHost(const config::Config& config, std::string_view host);

} // namespace portico::ws

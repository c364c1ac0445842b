// The one place a request becomes a response, for every protocol (h2o's h2o_process_request):
// server-wide answers (501, OPTIONS *), the path's normal form, the vhost and route, and the
// route's action. The sessions (HTTP/1.1 connection, HTTP/2 stream) parse, call serve(), then
// write what it produced, forward it (proxy) or, on HTTP/1.1, hand the socket to a WebSocket
// session; they never decide what a request means.
#pragma once

#include "capture/hooks.h"

#include <portico/config/config.h>
#include <portico/handlers/dispatch.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace portico::serve {

/// Where a request arrived, and the worker's state the actions use.
struct Context {
    const config::Config& config;
    const routing::Router& router; ///< compiled from `config` (the same snapshot)
    handlers::WorkerState& state;
    std::uint16_t localPort = 0; ///< the listener's bound port (vhost selection by port)
    int httpVersion = 1;         ///< 1 (HTTP/1.x) or 2; decides whether a WebSocket upgrade is possible
};

/// What the session does with the response serve() produced.
enum class Next {
    Respond, ///< write `res` (which may ask for a delay or a dropped connection: res.fate)
    Forward, ///< forward the request to `res.forward`'s upstream (proxy::forward); `res` holds the
             ///< extra fields and the Server switch for the upstream's response
    Upgrade, ///< HTTP/1.1 only: the request is for a WebSocket endpoint of `Routed`; the session
             ///< completes the opening handshake (ws::acceptUpgrade), which fills `res`
};

/// The vhost and route serve() chose. `routed` is false when the request was answered before
/// routing (501, OPTIONS *, a path that does not normalise).
struct Routed {
    bool routed = false;
    std::size_t vhost = 0; ///< index into config.vhosts
    routing::RouteResult route;
};

/// Capture stamps serve() fills when capture is on (both null when off).
struct Stamps {
    std::int64_t* routeNs = nullptr;        ///< steady-clock nanoseconds when the route was chosen
    capture::RouteLabels* labels = nullptr; ///< the vhost's and route's labels
};

/// Produces the answer to `req` into `res` (which serve() resets first). `req` arrives with
/// method, methodToken, target, rawPath, query, host, headers and body set; serve() sets
/// `req.path` to the normalised path (a view into `pathScratch`, valid while that string is
/// untouched). In order:
///  - a method Portico does not implement → 501 (RFC 9110 §9.1; no route can name one);
///  - `OPTIONS *` → 204 with the server-wide Allow (RFC 9110 §9.3.7);
///  - CONNECT → 501: Portico is an origin server and reverse proxy, not a forward proxy, and does
///    not offer extended CONNECT (RFC 9110 §9.3.6, RFC 8441);
///  - a path that does not normalise (dot segments above the root, bad percent-encoding, NUL)
///    → 400;
///  - otherwise the vhost (Host, then the listener's port, then the default) and the route;
///    on HTTP/1.1 a WebSocket endpoint (isWebSocketEndpoint) → Next::Upgrade; everything else
///    runs handlers::dispatch (static, respond, redirect, fallback root, 404/405, the vhost's
///    error pages and extra fields; a `websocket` route on HTTP/2 gets 426, RFC 8441 not being
///    offered), and a `proxy` route then → Next::Forward.
/// Never throws.
Next serve(const Context& ctx, http::Request& req, std::string& pathScratch, http::Response& res,
           Routed& routed, const Stamps& stamps = {});

/// Whether a request, known by its head only, goes to a route that streams its request body
/// (proxy::streamsRequestBody): then the session starts the exchange before the body arrives
/// (bounded-memory uploads, gRPC client streaming). `rawPath` is the target's path without the
/// query. False for every request serve() would answer before routing, for Upgrade requests
/// (`upgrade`: a WebSocket bootstrap keeps the buffered path) and for every other action.
/// One route match; `pathScratch` is overwritten.
bool streamsRequestBody(const Context& ctx, http::Method method, std::string_view rawPath,
                        std::string_view host, bool upgrade, std::string& pathScratch);

/// Whether a request known by its head only is refused whatever its body (RFC 9110 §10.1.1: the
/// answer to "Expect: 100-continue" is then the final status, and the body is never read): an
/// unimplemented method or CONNECT (501), no route for the path (404) or for the method (405), or a method
/// other than GET/HEAD/OPTIONS on a vhost's static root (405). A path that does not normalise is
/// left to serve() (false). `pathScratch` is overwritten.
bool refusedByHead(const Context& ctx, http::Method method, std::string_view rawPath, std::string_view host,
                   std::string& pathScratch);

/// Whether `req` (routed to `route` in `vhost`; `req.path` normalised) is for a WebSocket endpoint:
/// a `websocket` route, or the live-reload endpoint of a vhost that has it. Cheap; false otherwise.
bool isWebSocketEndpoint(const config::Vhost& vhost, const routing::RouteResult& route,
                         const http::Request& req);

} // namespace portico::serve

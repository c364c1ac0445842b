// The one place a request becomes a response, for every protocol (h2o's h2o_process_request):
// server-wide answers (501, OPTIONS *), the path's normal form, the vhost and route, and the
// route's action. The sessions (HTTP/1.1 connection, HTTP/2 stream) parse, call serve(), and
// carry out what it asks through their ResponseWriter: write a response, take an upstream's
// answer for a forwarded request, or (HTTP/1.1) complete a WebSocket upgrade. They never decide
// what a request means.
#pragma once

#include "capture/hooks.h"
#include "client/call.h"

#include <portico/config/config.h>
#include <portico/handlers/dispatch.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>
#include <portico/rules/rules.h>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace portico::proxy {
struct InterceptedOrigin;
}

namespace portico::serve {

class Paused; // serve/breakpoint.h

/// Where a request arrived, and the worker's state the actions use.
struct Context {
    const config::Config& config;
    const routing::Router& router; ///< compiled from `config` (the same snapshot)
    handlers::WorkerState& state;
    std::uint16_t localPort = 0; ///< the listener's bound port (vhost selection by port)
    int httpVersion = 1;         ///< 1 (HTTP/1.x) or 2; decides whether a WebSocket upgrade is possible
    bool forwardProxy = false;   ///< the listener is also a forward proxy (config::Listen::forwardProxy)
    /// The session is an intercepted CONNECT tunnel's inside: every request goes to this origin.
    const proxy::InterceptedOrigin* origin = nullptr;
    /// The snapshot's compiled `rules:` (null or empty: none run).
    const rules::RuleSet* rules = nullptr;
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

/// Where a forwarded request's call runs and who gets the upstream's answer
/// (ResponseWriter::forwardTo; the arguments of proxy::forward).
struct ForwardTarget {
    boost::asio::io_context* io = nullptr; ///< the session's worker
    std::shared_ptr<void> owner;           ///< kept alive while the call runs (the session)
    std::shared_ptr<const void> snapshot;  ///< the config snapshot the action belongs to
    client::Sink* sink = nullptr;          ///< gets the upstream's answer; outlives the call
    bool tls = false;                      ///< the request came over TLS (X-Forwarded-Proto, Forwarded)
    bool bodyFollows = false; ///< the request body streams (Call::requestBody), req.body is not used
};

/// How a session carries out what serve() decided: implemented once by the HTTP/1.1 connection
/// and once by the HTTP/2 session (per stream). serve() calls exactly one of respond(), upgrade()
/// or the pair forwardTo() + forwarding(), on the caller's thread, before it returns.
class ResponseWriter {
public:
    virtual ~ResponseWriter() = default;
    /// A response made here, whole (an action of handlers::dispatch, or an answer before routing):
    /// write `res` as it says — status, fields, body, `res.delay` before writing, `res.fate`
    /// (close after it; Drop: reset the connection on HTTP/1.1, the stream on HTTP/2).
    virtual void respond(const http::Request& req, http::Response& res) = 0;
    /// The answer comes from an upstream (`res.forward`, a config::ProxyAction): the session
    /// records what it needs of `req` for its log and capture and returns where the call runs and
    /// the Sink that gets the answer. `res` holds the vhost's and route's extra fields and the
    /// Server switch for the upstream's response. May set `req.clientAddress` (X-Forwarded-For).
    virtual ForwardTarget forwardTo(http::Request& req, const http::Response& res) = 0;
    /// The call now carrying the request (proxy::forward's result, never null); the session keeps
    /// it to resume, feed (a streamed body) or cancel it.
    virtual void forwarding(std::shared_ptr<client::Call> call) = 0;
    /// HTTP/1.1 only (Context::httpVersion 1): `req` is for a WebSocket endpoint of `routed`
    /// (isWebSocketEndpoint); the session completes the opening handshake (ws::acceptUpgrade,
    /// which fills `res` with the 101 or the refusal), writes it and returns true. The default
    /// returns false (a session that cannot switch protocols): serve() then dispatches the request
    /// as on HTTP/2 (a `websocket` route gets 426).
    virtual bool upgrade(const http::Request& req, http::Response& res, const Routed& routed) {
        (void)req;
        (void)res;
        (void)routed;
        return false;
    }
    /// HTTP/1.1 on a forward proxy listener: CONNECT `host`:`port` (not the proxy itself) may be
    /// intercepted (the listener's forward_proxy.intercept, the host not in tls_passthrough):
    /// then the session answers 200, terminates the client's TLS with a leaf from the local CA and
    /// serves the tunnel's requests with Context::origin, and returns true. False: serve() opens
    /// a tunnel whose bytes pass unread.
    virtual bool intercept(const http::Request& req, std::string_view host, std::uint16_t port) {
        (void)req;
        (void)host;
        (void)port;
        return false;
    }
    /// A breakpoint rule holds this exchange (serve/breakpoint.h): the session sets `paused.io` and
    /// `paused.wake`, keeps `paused` (shared_from_this) and holds the exchange — HTTP/1.1 reads no
    /// further request on the connection, HTTP/2 holds only this stream — until `wake` runs on its
    /// thread; it then calls serve::resume() with this writer's kind of writer. False (the default):
    /// it cannot hold it (its request body streams): the record notes the breakpoint as skipped and
    /// the exchange goes on.
    virtual bool pause(Paused& paused) {
        (void)paused;
        return false;
    }
};

/// Produces the answer to `req` into `res` (which serve() resets first) and hands it to `writer`.
/// `req` arrives with method, methodToken, target, rawPath, query, host, headers and body set;
/// serve() sets `req.path` to the normalised path (a view into `pathScratch`, valid while that
/// string is untouched). In order:
///  - the request-stage rules (Context::rules, rules/rules.h): their header changes replace
///    `req.headers` (a view of `res.ruledRequestFields` from then on); a rule's `fail` answers here,
///    with its status (and `X-Portico-Rule: NAME`) or a reset (Fate::Drop), and nothing else runs;
///    a rule's `breakpoint` pauses the exchange here (writer.pause(); serve/breakpoint.h), and
///    serve::resume() carries on from this point once the user (or the rule's timeout) decides;
///    the response-stage rules (applied to a local answer before writer.respond()) may pause it too;
///  - a method Portico does not implement → 501 (RFC 9110 §9.1; no route can name one);
///  - `OPTIONS *` → 204 with the server-wide Allow (RFC 9110 §9.3.7);
///  - on a forward proxy listener (Context::forwardProxy), over HTTP/1.1:
///    - CONNECT host:port (RFC 9110 §9.3.6) → a tunnel: proxy::startConnect to the host through
///      writer.forwardTo()/forwarding(); the session answers 200 and pipes the bytes, or the
///      call's 502/504. A target without a port → 400; the listener itself → 508 (a loop);
///    - an absolute-form request ("GET http://host/path", RFC 9112 §3.2.2) → forwarded to that
///      origin (proxy::originAction: transparent, Proxy-* fields dropped); the listener itself → 508;
///  - inside an intercepted tunnel (Context::origin): every request → forwarded to that origin
///    (an HTTP/1.1 WebSocket upgrade over HTTP/1.1, the rest by ALPN), CONNECT → 501;
///  - any other CONNECT → 501 (no extended CONNECT either, RFC 8441);
///  - a path that does not normalise (dot segments above the root, bad percent-encoding, NUL)
///    → 400;
///  - otherwise the vhost (Host, then the listener's port, then the default) and the route;
///    on HTTP/1.1 a WebSocket endpoint (isWebSocketEndpoint) → writer.upgrade() when the writer
///    can switch protocols; everything else
///    runs handlers::dispatch (static, respond, redirect, fallback root, 404/405, the vhost's
///    error pages and extra fields; a `websocket` route on HTTP/2 gets 426, RFC 8441 not being
///    offered); a `proxy`, `grpc` or `fastcgi` route is forwarded (proxy::forward to
///    writer.forwardTo()'s target, the call to writer.forwarding()), any other answer goes to
///    writer.respond().
/// `routed` (optional) receives the vhost and route chosen. Never throws.
void serve(const Context& ctx, http::Request& req, std::string& pathScratch, http::Response& res,
           ResponseWriter& writer, const Stamps& stamps = {}, Routed* routed = nullptr);

/// Whether a request, known by its head only, goes to a route that streams its request body
/// (proxy::streamsRequestBody): then the session starts the exchange before the body arrives
/// (bounded-memory uploads, gRPC client streaming). `rawPath` is the target's path without the
/// query; `absoluteForm`: the target was absolute-form (on a forward proxy listener every such
/// request streams, as it goes to an origin). Inside an intercepted tunnel every request but
/// CONNECT streams. False for every request serve() would answer before routing, for Upgrade requests
/// (`upgrade`: a WebSocket bootstrap keeps the buffered path) and for every other action.
/// One route match; `pathScratch` is overwritten.
bool streamsRequestBody(const Context& ctx, http::Method method, std::string_view rawPath,
                        std::string_view host, bool upgrade, std::string& pathScratch,
                        bool absoluteForm = false);

/// Whether a request whose body would stream (streamsRequestBody) is read whole instead, so that a
/// request-stage replace_body can rewrite it or a breakpoint show it (rules::RuleSet::mayNeedRequestBody):
/// its length is known (`length`: Content-Length; nullopt for a chunked or HTTP/2 body without one) and at
/// most limits.max_rewrite_body and limits.max_body_bytes, and it is not a gRPC call (`grpc`: its content
/// type is application/grpc*; those always stream). False when Context::rules is null.
bool rulesReadBodyWhole(const Context& ctx, std::string_view rawPath, std::optional<std::uint64_t> length,
                        bool grpc);

/// Whether a request known by its head only is refused whatever its body (RFC 9110 §10.1.1: the
/// answer to "Expect: 100-continue" is then the final status, and the body is never read): an
/// unimplemented method or CONNECT (501), no route for the path (404) or for the method (405), or a method
/// other than GET/HEAD/OPTIONS on a vhost's static root (405). A path that does not normalise is
/// left to serve() (false), and so is every request a forward proxy listener passes on (CONNECT,
/// `absoluteForm`). `pathScratch` is overwritten.
bool refusedByHead(const Context& ctx, http::Method method, std::string_view rawPath, std::string_view host,
                   std::string& pathScratch, bool absoluteForm = false);

/// Whether `req` (routed to `route` in `vhost`; `req.path` normalised) is for a WebSocket endpoint:
/// a `websocket` route, or the live-reload endpoint of a vhost that has it. Cheap; false otherwise.
bool isWebSocketEndpoint(const config::Vhost& vhost, const routing::RouteResult& route,
                         const http::Request& req);

} // namespace portico::serve

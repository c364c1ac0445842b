// serve(): the one route-and-dispatch stage of every session (HTTP/1.1 and HTTP/2).
#include "serve/serve.h"

#include "handlers/live_reload.h"
#include "proxy/forward.h"

#include <portico/http/path.h>

#include <variant>

namespace portico::serve {

bool isWebSocketEndpoint(const config::Vhost& vhost, const routing::RouteResult& route,
                         const http::Request& req) {
    if (vhost.liveReload && req.path == handlers::kLiveReloadPath) return true;
    return route.kind == routing::RouteResult::Kind::Matched && route.route &&
           std::holds_alternative<config::WebSocketAction>(route.route->action);
}

namespace {

// The answers before routing; true when `res` holds one.
bool answeredBeforeRouting(http::Request& req, std::string& pathScratch, http::Response& res) {
    if (req.method == http::Method::Other || req.method == http::Method::Connect) {
        handlers::errorResponse(501, res);
        return true;
    }
    if (req.method == http::Method::Options && req.target == "*") {
        res.status = 204;
        res.addHeader("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH");
        return true;
    }
    if (http::normalizePath(req.rawPath, pathScratch) != http::PathError::None) {
        handlers::errorResponse(400, res);
        return true;
    }
    req.path = pathScratch;
    return false;
}

} // namespace

void serve(const Context& ctx, http::Request& req, std::string& pathScratch, http::Response& res,
           ResponseWriter& writer, const Stamps& stamps, Routed* routedOut) {
    res.reset();
    req.path = {};
    Routed scratch;
    Routed& routed = routedOut ? *routedOut : scratch;
    routed.routed = false;
    if (answeredBeforeRouting(req, pathScratch, res)) {
        writer.respond(req, res);
        return;
    }
    routed.routed = true;
    routed.vhost = ctx.router.selectVhost(req.host, ctx.localPort);
    routed.route = ctx.router.match(routed.vhost, req.method, req.path);
    const config::Vhost& vhost = ctx.config.vhosts[routed.vhost];
    if (stamps.routeNs) *stamps.routeNs = capture::nowNs();
    if (stamps.labels) *stamps.labels = capture::labelsFor(vhost, routed.route);
    if (ctx.httpVersion == 1 && isWebSocketEndpoint(vhost, routed.route, req) &&
        writer.upgrade(req, res, routed))
        return;
    handlers::Exchange ex{ctx.config, vhost, routed.route, req, ctx.state};
    handlers::dispatch(ex, res);
    if (!res.forward) {
        writer.respond(req, res);
        return;
    }
    const auto& action = *static_cast<const config::ProxyAction*>(res.forward);
    ForwardTarget to = writer.forwardTo(req, res);
    writer.forwarding(proxy::forward(*to.io, std::move(to.owner), std::move(to.snapshot), action, req, to.tls,
                                     to.sink, to.bodyFollows));
}

bool streamsRequestBody(const Context& ctx, http::Method method, std::string_view rawPath,
                        std::string_view host, bool upgrade, std::string& pathScratch) {
    if (upgrade || method == http::Method::Other || method == http::Method::Connect) return false;
    if (http::normalizePath(rawPath, pathScratch) != http::PathError::None) return false;
    const std::size_t vh = ctx.router.selectVhost(host, ctx.localPort);
    const routing::RouteResult rr = ctx.router.match(vh, method, pathScratch);
    if (rr.kind != routing::RouteResult::Kind::Matched || !rr.route) return false;
    const auto* px = std::get_if<config::ProxyAction>(&rr.route->action);
    return px && proxy::streamsRequestBody(*px);
}

bool refusedByHead(const Context& ctx, http::Method method, std::string_view rawPath, std::string_view host,
                   std::string& pathScratch) {
    if (method == http::Method::Other || method == http::Method::Connect) return true; // 501, as serve()
    if (http::normalizePath(rawPath, pathScratch) != http::PathError::None) return false;
    const std::size_t vh = ctx.router.selectVhost(host, ctx.localPort);
    const auto kind = ctx.router.match(vh, method, pathScratch).kind;
    const bool readOnly =
        method == http::Method::Get || method == http::Method::Head || method == http::Method::Options;
    return kind == routing::RouteResult::Kind::NotFound ||
           kind == routing::RouteResult::Kind::MethodNotAllowed ||
           (kind == routing::RouteResult::Kind::Fallback && !readOnly); // static files: 405
}

} // namespace portico::serve

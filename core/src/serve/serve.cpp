// serve(): the one route-and-dispatch stage of every session (HTTP/1.1 and HTTP/2).
#include "serve/serve.h"

#include "handlers/actions.h"
#include "handlers/live_reload.h"
#include "proxy/connect.h"
#include "proxy/forward.h"
#include "proxy/origin.h"

#include <portico/config/network.h>
#include <portico/http/path.h>

#include <unistd.h>

#include <span>
#include <variant>

namespace portico::serve {

bool isWebSocketEndpoint(const config::Vhost& vhost, const routing::RouteResult& route,
                         const http::Request& req) {
    if (vhost.liveReload && req.path == handlers::kLiveReloadPath) return true;
    return route.kind == routing::RouteResult::Kind::Matched && route.route &&
           std::holds_alternative<config::WebSocketAction>(route.route->action);
}

namespace {

// The labels a forward proxy's exchanges carry in capture and statistics (no vhost, no route).
constexpr std::string_view kForwardProxyLabel = "(forward proxy)";

bool isAbsoluteForm(std::string_view target) {
    return (target.size() > 7 && http::iequals(target.substr(0, 7), "http://")) ||
           (target.size() > 8 && http::iequals(target.substr(0, 8), "https://"));
}

// The replace_body actions of the response-stage rules that applied to a local answer, on its body
// (an owned or shared one, or a file read whole when it is not over max_rewrite_body).
void rewriteLocalBody(const Context& ctx, http::Response& res, std::span<const rules::BodyEdit> edits) {
    const int status = res.status;
    if (status < 200 || status == 204 || status == 304 || res.bodyLength() == 0) return; // no body
    std::string why = rules::RuleSet::bodySkipReason(res.fieldBlock());
    if (why.empty() && status == 206) why = "partial content (206)";
    if (why.empty() && res.bodyLength() > ctx.rules->maxRewriteBody())
        why = "body over max_rewrite_body, " + std::to_string(ctx.rules->maxRewriteBody()) + " bytes";
    thread_local std::string fileBody;
    std::string_view body = res.bodyView();
    if (why.empty() && res.bodyKind() == http::Response::BodyKind::File) {
        fileBody.resize(static_cast<std::size_t>(res.bodyLength()));
        std::size_t got = 0;
        while (got < fileBody.size()) {
            const ssize_t n = ::pread(res.file()->fd, fileBody.data() + got, fileBody.size() - got,
                                      static_cast<off_t>(res.fileOffset() + got));
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        if (got != fileBody.size()) why = "the file could not be read";
        body = fileBody;
    }
    if (!why.empty()) {
        rules::RuleSet::noteSkipped(edits, why, res.ruleNames);
    } else {
        thread_local std::string out;
        if (ctx.rules->rewriteBody(edits, body, out, res.ruleNames)) {
            // The body as it was, for the record: kept before ownedBody() clears the owned one.
            res.originalResponseBody.assign(body);
            res.ownedBody().swap(out); // `body` may view the owned body: replaced only now
            if (out.capacity() > 64 * 1024) std::string().swap(out);
        }
    }
    if (fileBody.capacity() > 64 * 1024) std::string().swap(fileBody);
}

// A response made here: the response-stage rules the request selected change its fields (and,
// with replace_body, its body), then it goes out.
void respond(const Context& ctx, const http::Request& req, http::Response& res, ResponseWriter& writer) {
    if (!res.pendingRules.empty() && !res.sendsNothing()) {
        thread_local std::string fields;
        thread_local std::vector<rules::BodyEdit> edits;
        edits.clear();
        if (ctx.rules->applyResponse(res.pendingRules, res.status, res.fieldBlock(), fields, res.ruleNames,
                                     &edits)) {
            res.originalResponseFields.assign(res.fieldBlock());
            res.replaceFields(fields);
        }
        if (!edits.empty()) rewriteLocalBody(ctx, res, edits);
    }
    writer.respond(req, res);
}

// A forward proxy listener's CONNECT and absolute-form requests (serve.h); false when `req` is
// neither (the vhosts serve it).
bool forwardProxy(const Context& ctx, http::Request& req, http::Response& res, ResponseWriter& writer,
                  const Stamps& stamps) {
    const bool connect = req.method == http::Method::Connect;
    if (ctx.httpVersion != 1 || (!connect && !isAbsoluteForm(req.target))) return false;
    if (stamps.routeNs) *stamps.routeNs = capture::nowNs();
    if (stamps.labels) *stamps.labels = {kForwardProxyLabel, connect ? "(tunnel)" : "(origin)"};
    std::string host;
    std::uint16_t port = 0;
    std::string_view scheme, authority = req.target;
    if (!connect) {
        const std::size_t colon = req.target.find(':');
        scheme = req.target.substr(0, colon);
        authority = req.target.substr(colon + 3);
        authority = authority.substr(0, authority.find_first_of("/?#"));
    }
    if (!proxy::splitAuthority(authority, host, port) || (connect && port == 0)) {
        handlers::errorResponse(400, res); // RFC 9110 §9.3.6: CONNECT names host and port
        res.ownedBody().append(connect ? "CONNECT needs host:port\n" : "invalid authority in the target\n");
        respond(ctx, req, res, writer);
        return true;
    }
    if (!connect && http::iequals(scheme, "https")) {
        // The client could not check the origin's certificate here, and this path does not verify
        // it either: refused rather than forwarded unchecked (clients send CONNECT for https).
        handlers::errorResponse(400, res);
        res.ownedBody().append("absolute-form https:// is not forwarded: send CONNECT for https\n");
        respond(ctx, req, res, writer);
        return true;
    }
    if (port == 0) port = 80;
    // A name `hosts:` maps to this listener's address is a loop too.
    const config::HostOverride* mapped = config::findHostOverride(ctx.config.hosts, host);
    if (proxy::isOwnListener(host, port, ctx.localPort) ||
        (mapped && proxy::isOwnListener(mapped->address, port, ctx.localPort))) {
        handlers::errorResponse(508, res); // the request would come back here
        res.ownedBody().append("the target is this proxy's own listener\n");
        respond(ctx, req, res, writer);
        return true;
    }
    if (connect) {
        if (writer.intercept(req, host, port)) return true;
        ForwardTarget to = writer.forwardTo(req, res);
        writer.forwarding(proxy::startConnect(*to.io, std::move(to.owner), std::move(host), port,
                                              config::ProxyAction{}.connectTimeout, to.sink,
                                              &ctx.config.hosts));
        return true;
    }
    std::string error;
    auto action = proxy::originAction(scheme, authority, error);
    if (!action) {
        handlers::errorResponse(400, res);
        res.ownedBody().append(error + "\n");
        respond(ctx, req, res, writer);
        return true;
    }
    res.forward = action.get();
    ForwardTarget to = writer.forwardTo(req, res);
    // The call keeps the session's snapshot and the origin's action alive (the per-thread cache
    // may drop it meanwhile).
    struct Keep {
        std::shared_ptr<const void> snapshot;
        std::shared_ptr<const config::ProxyAction> action;
    };
    auto keep = std::make_shared<Keep>(Keep{std::move(to.snapshot), action});
    writer.forwarding(proxy::forward(*to.io, std::move(to.owner),
                                     std::shared_ptr<const void>(keep, keep.get()), *action, req, to.tls,
                                     to.sink, to.bodyFollows, nullptr, &ctx.config.hosts));
    return true;
}

// A request inside an intercepted tunnel: to the tunnel's origin, whatever its target.
void interceptedRequest(const Context& ctx, http::Request& req, http::Response& res, ResponseWriter& writer,
                        const Stamps& stamps) {
    if (stamps.routeNs) *stamps.routeNs = capture::nowNs();
    if (stamps.labels) *stamps.labels = {kForwardProxyLabel, "(intercepted)"};
    if (req.method == http::Method::Connect || req.method == http::Method::Other) {
        handlers::errorResponse(501, res);
        respond(ctx, req, res, writer);
        return;
    }
    const proxy::InterceptedOrigin& o = *ctx.origin;
    bool upgrade = false;
    if (ctx.httpVersion == 1)
        for (const auto& h : req.headers)
            upgrade =
                upgrade || (http::iequals(h.name, "upgrade") && http::listHasToken(h.value, "websocket"));
    const config::ProxyAction& action = upgrade ? *o.wsAction : *o.action;
    res.forward = &action;
    ForwardTarget to = writer.forwardTo(req, res);
    // The session holds the origin (and so the action and its TLS contexts) for its whole life.
    writer.forwarding(proxy::forward(*to.io, std::move(to.owner), std::move(to.snapshot), action, req, true,
                                     to.sink, to.bodyFollows, upgrade ? &o.h1Options : &o.h2Options,
                                     &ctx.config.hosts));
}

constexpr std::string_view kRuleLabel = "(rule)";

// A request-stage rule's map_local or map_remote: the exchange is answered from a file or folder,
// or by another origin, instead of what it was meant for.
void mappedByRule(const Context& ctx, const rules::RequestVerdict& v, http::Request& req,
                  std::string& pathScratch, http::Response& res, ResponseWriter& writer,
                  const Stamps& stamps) {
    if (stamps.routeNs) *stamps.routeNs = capture::nowNs();
    if (stamps.labels)
        *stamps.labels = {kRuleLabel, v.mappedBy->name.empty()
                                          ? std::string_view(v.map->kind == config::RuleAction::Kind::MapLocal
                                                                 ? "map_local"
                                                                 : "map_remote")
                                          : std::string_view(v.mappedBy->name)};
    if (v.map->kind == config::RuleAction::Kind::MapRemote) {
        const config::ProxyAction& action = v.map->mapRemote;
        res.forward = &action;
        ForwardTarget to = writer.forwardTo(req, res);
        writer.forwarding(proxy::forward(*to.io, std::move(to.owner), std::move(to.snapshot), action, req,
                                         to.tls, to.sink, to.bodyFollows, nullptr, &ctx.config.hosts));
        return;
    }
    if (http::normalizePath(req.rawPath, pathScratch) != http::PathError::None) {
        handlers::errorResponse(400, res);
        respond(ctx, req, res, writer);
        return;
    }
    req.path = pathScratch;
    static const config::Vhost kNoVhost;        // no live reload, no error pages
    static const routing::RouteResult kNoRoute; // what serveStatic does not read
    const rules::MapLocal& local = ctx.rules->mapLocal(v.map);
    const handlers::Exchange ex{ctx.config, kNoVhost, kNoRoute, req, ctx.state};
    handlers::serveStatic(ex, local.root, local.pathFor(req.path), res);
    respond(ctx, req, res, writer);
}

// A request-stage rule's fail: `res` holds the answer.
void failedByRule(const Context& ctx, const rules::RequestVerdict& v, http::Response& res) {
    // An unnamed rule by its place, as records name it.
    const std::string name = v.failedBy->name.empty()
                                 ? "rules[" + std::to_string(v.failedBy - ctx.config.rules.data()) + "]"
                                 : v.failedBy->name;
    switch (v.fail->failure) {
    case config::RuleAction::Failure::Reset:
        res.fate = http::Response::Fate::Drop;
        return;
    case config::RuleAction::Failure::Close:
        res.fate = http::Response::Fate::Silent;
        return;
    case config::RuleAction::Failure::Timeout:
        res.fate = http::Response::Fate::Hold;
        return;
    case config::RuleAction::Failure::Status:
        break;
    }
    const int status = v.fail->failStatus;
    res.status = status;
    if (name.find_first_of("\r\n") == std::string::npos) res.addHeader("X-Portico-Rule", name);
    if (status < 200 || status == 204 || status == 304) return; // no content (RFC 9110 §6.4.1)
    res.addHeader("Content-Type", "text/plain; charset=utf-8");
    res.setBody(std::to_string(status) + " " + std::string(http::reasonPhrase(status)) +
                ": failed by rule '" + name + "'\n");
}

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
    res.clearRuleState();
    if (ctx.rules && !ctx.rules->empty()) {
        const rules::RequestVerdict v = ctx.rules->applyRequest(req, ctx.httpVersion, res);
        if (v.fail) {
            failedByRule(ctx, v, res);
            res.pendingRules.clear(); // a failed exchange's answer is the rule's own
            writer.respond(req, res);
            return;
        }
        if (v.map) {
            mappedByRule(ctx, v, req, pathScratch, res, writer, stamps);
            return;
        }
    }
    if (ctx.origin) {
        interceptedRequest(ctx, req, res, writer, stamps);
        return;
    }
    if (ctx.forwardProxy && forwardProxy(ctx, req, res, writer, stamps)) return;
    if (answeredBeforeRouting(req, pathScratch, res)) {
        respond(ctx, req, res, writer);
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
        respond(ctx, req, res, writer);
        return;
    }
    const auto& action = *static_cast<const config::ProxyAction*>(res.forward);
    ForwardTarget to = writer.forwardTo(req, res);
    writer.forwarding(proxy::forward(*to.io, std::move(to.owner), std::move(to.snapshot), action, req, to.tls,
                                     to.sink, to.bodyFollows, nullptr, &ctx.config.hosts));
}

bool streamsRequestBody(const Context& ctx, http::Method method, std::string_view rawPath,
                        std::string_view host, bool upgrade, std::string& pathScratch, bool absoluteForm) {
    if (upgrade || method == http::Method::Other || method == http::Method::Connect) return false;
    if (ctx.forwardProxy && absoluteForm && ctx.httpVersion == 1) return true; // to an origin
    if (ctx.origin) return true;                                               // an intercepted tunnel's
    if (http::normalizePath(rawPath, pathScratch) != http::PathError::None) return false;
    const std::size_t vh = ctx.router.selectVhost(host, ctx.localPort);
    const routing::RouteResult rr = ctx.router.match(vh, method, pathScratch);
    if (rr.kind != routing::RouteResult::Kind::Matched || !rr.route) return false;
    const auto* px = std::get_if<config::ProxyAction>(&rr.route->action);
    return px && proxy::streamsRequestBody(*px);
}

bool rulesReadBodyWhole(const Context& ctx, std::string_view rawPath, std::optional<std::uint64_t> length,
                        bool grpc) {
    if (!ctx.rules || !length || grpc || !ctx.rules->mayRewriteRequestBody(rawPath)) return false;
    return *length <= std::min(ctx.rules->maxRewriteBody(), ctx.config.limits.maxBodyBytes);
}

bool refusedByHead(const Context& ctx, http::Method method, std::string_view rawPath, std::string_view host,
                   std::string& pathScratch, bool absoluteForm) {
    if (ctx.rules && !ctx.rules->empty()) return false; // a rule may answer what routing would refuse
    if ((ctx.forwardProxy && ctx.httpVersion == 1 && (absoluteForm || method == http::Method::Connect)) ||
        ctx.origin)
        return false; // passed on by the forward proxy
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

// serve(): the one route-and-dispatch stage of every session (HTTP/1.1 and HTTP/2).
#include "serve/serve.h"

#include "handlers/actions.h"
#include "handlers/live_reload.h"
#include "proxy/connect.h"
#include "proxy/forward.h"
#include "proxy/origin.h"
#include "serve/breakpoint.h"

#include <portico/config/network.h>
#include <portico/config/writer.h>
#include <portico/http/path.h>

#include <unistd.h>

#include <span>
#include <variant>

namespace portico::serve {

void noteBreakpoint(std::string& names, const rules::BreakpointHit& hit, std::string_view what) {
    if (!names.empty()) names.push_back('\n');
    names.append(hit.ruleName());
    names.append(": breakpoint ");
    names.append(what);
}

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

constexpr std::string_view kRuleLabel = "(rule)";

// A file body read whole into `out`; false when the file could not be read.
bool readFileBody(const http::Response& res, std::string& out) {
    out.resize(static_cast<std::size_t>(res.bodyLength()));
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t n = ::pread(res.file()->fd, out.data() + got, out.size() - got,
                                  static_cast<off_t>(res.fileOffset() + got));
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    return got == out.size();
}

// ---- breakpoints (serve/breakpoint.h) ----

using FieldList = std::vector<std::pair<std::string, std::string>>;

FieldList fieldList(std::string_view block) {
    FieldList out;
    http::forEachFieldLine(block, [&](std::string_view n, std::string_view v) { out.emplace_back(n, v); });
    return out;
}

template <class Fields> std::string fieldBlock(const Fields& fields) {
    std::string out;
    for (const auto& f : fields) {
        const auto& [name, value] = f;
        out.append(name);
        out.append(": ");
        out.append(value);
        out.append("\r\n");
    }
    return out;
}

// A paused exchange for `req` (and the rule state of `res`); null, with a note in the record, when
// nothing could decide it (no Paused queue: a headless engine refuses such configs at load).
std::shared_ptr<Paused> makePaused(const Context& ctx, const rules::BreakpointHit& hit,
                                   config::Rule::Stage stage, const http::Request& req, http::Response& res) {
    rules::BreakpointQueue* queue = ctx.rules ? ctx.rules->breakpoints() : nullptr;
    if (!queue || !queue->enabled()) {
        noteBreakpoint(res.ruleNames, hit, "skipped (no Paused queue: breakpoints pause in the desktop app)");
        return nullptr;
    }
    auto p = std::make_shared<Paused>();
    p->hit = hit;
    rules::PausedExchange& e = p->shown;
    e.stage = stage;
    e.rule = hit.ruleName();
    e.httpVersion = ctx.httpVersion;
    e.scheme.assign(req.scheme);
    e.clientAddress.assign(req.clientAddress);
    e.request.method.assign(req.methodToken);
    e.request.target.assign(req.target);
    e.request.host.assign(req.host);
    for (const auto& h : req.headers)
        e.request.headers.emplace_back(h.name, h.value);
    e.request.body.assign(req.body);
    p->versionMajor = req.versionMajor;
    p->versionMinor = req.versionMinor;
    p->keepAlive = req.keepAlive;
    p->scheme.assign(req.scheme);
    return p;
}

void saveRuleState(const http::Response& res, Paused& p) {
    Paused::RuleState& s = p.ruleState;
    s.pendingRules = res.pendingRules;
    s.ruleNames = res.ruleNames;
    s.originalRequestFields = res.originalRequestFields;
    s.originalResponseFields = res.originalResponseFields;
    s.originalRequestBody = res.originalRequestBody;
    s.originalResponseBody = res.originalResponseBody;
    s.streamedBodyNotes = res.streamedBodyNotes;
    s.throttle = res.throttle;
}

void restoreRuleState(Paused& p, http::Response& res) {
    res.ruleStateUsed = true;
    Paused::RuleState& s = p.ruleState;
    res.ruledRequestFields.clear();
    res.ruledRequestBody.clear();
    res.pendingRules = s.pendingRules;
    res.ruleNames = s.ruleNames;
    res.originalRequestFields = s.originalRequestFields;
    res.originalResponseFields = s.originalResponseFields;
    res.originalRequestBody = s.originalRequestBody;
    res.originalResponseBody = s.originalResponseBody;
    res.streamedBodyNotes = s.streamedBodyNotes;
    res.throttle = s.throttle;
}

// Hands `p` to the session and the queue: true when the exchange now waits (the session holds it).
bool holdPaused(const Context& ctx, const std::shared_ptr<Paused>& p, http::Response& res,
                ResponseWriter& writer, const Stamps& stamps) {
    saveRuleState(res, *p);
    if (!writer.pause(*p) || !p->io) {
        noteBreakpoint(res.ruleNames, p->hit, "skipped (the request body streams)");
        return false;
    }
    // Until it is resumed and routed, the record names the breakpoint's rule.
    if (stamps.routeNs) *stamps.routeNs = capture::nowNs();
    if (stamps.labels)
        *stamps.labels = {kRuleLabel, p->hit.rule->name.empty() ? std::string_view("breakpoint")
                                                                : std::string_view(p->hit.rule->name)};
    p->start(*ctx.rules->breakpoints());
    return true;
}

// A request-stage breakpoint: true when the exchange now waits (serve::resume carries on).
[[gnu::noinline]] bool pauseRequest(const Context& ctx, const rules::RequestVerdict& v,
                                    const http::Request& req, http::Response& res, ResponseWriter& writer,
                                    const Stamps& stamps) {
    auto p = makePaused(ctx, v.breakpoint, config::Rule::Stage::Request, req, res);
    if (!p) return false;
    p->verdict = v;
    return holdPaused(ctx, p, res, writer, stamps);
}

// A response-stage breakpoint on a local answer: the answer waits, whole.
bool pauseResponse(const Context& ctx, const rules::BreakpointHit& hit, const http::Request& req,
                   http::Response& res, ResponseWriter& writer) {
    std::string fileBody;
    std::string_view body = res.bodyView();
    if (res.bodyKind() == http::Response::BodyKind::File) {
        if (res.bodyLength() > ctx.rules->maxRewriteBody()) {
            noteBreakpoint(res.ruleNames, hit,
                           "skipped (body over max_rewrite_body, " +
                               std::to_string(ctx.rules->maxRewriteBody()) + " bytes)");
            return false;
        }
        if (!readFileBody(res, fileBody)) {
            noteBreakpoint(res.ruleNames, hit, "skipped (the file could not be read)");
            return false;
        }
        body = fileBody;
    }
    auto p = makePaused(ctx, hit, config::Rule::Stage::Response, req, res);
    if (!p) return false;
    rules::PausedMessage m;
    m.status = res.status;
    m.headers = fieldList(res.fieldBlock());
    m.body.assign(body);
    p->shown.response = std::move(m);
    p->serverHeader = res.serverHeader;
    p->fate = res.fate;
    p->delay = res.delay;
    return holdPaused(ctx, p, res, writer, {});
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
        if (!readFileBody(res, fileBody)) why = "the file could not be read";
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
        rules::BreakpointHit hit;
        if (ctx.rules->applyResponse(res.pendingRules, res.status, res.fieldBlock(), fields, res.ruleNames,
                                     &edits, &hit)) {
            res.originalResponseFields.assign(res.fieldBlock());
            res.replaceFields(fields);
        }
        if (!edits.empty()) rewriteLocalBody(ctx, res, edits);
        if (hit && pauseResponse(ctx, hit, req, res, writer)) return;
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

// What serve() does once the request-stage rules ran (`v`: what they decided, null when none ran).
[[gnu::always_inline]] inline void afterRules(const Context& ctx, const rules::RequestVerdict* v,
                                              http::Request& req, std::string& pathScratch,
                                              http::Response& res, ResponseWriter& writer,
                                              const Stamps& stamps, Routed& routed) {
    if (v && v->fail) {
        failedByRule(ctx, *v, res);
        res.pendingRules.clear(); // a failed exchange's answer is the rule's own
        writer.respond(req, res);
        return;
    }
    if (v && v->map) {
        mappedByRule(ctx, *v, req, pathScratch, res, writer, stamps);
        return;
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

// The request (after the request-stage rules, as the user left it) in `p.current`, normalised: an
// absolute URL given for an origin-form request sets the Host; a changed body updates Content-Length.
void settleEdit(Paused& p) {
    rules::PausedMessage& m = p.current;
    const rules::PausedMessage& was = p.shown.request;
    if (isAbsoluteForm(m.target) && !isAbsoluteForm(was.target)) {
        std::string_view rest = std::string_view(m.target).substr(m.target.find("://") + 3);
        const std::size_t slash = rest.find_first_of("/?");
        m.host.assign(rest.substr(0, slash));
        m.target = slash == std::string_view::npos ? std::string("/") : std::string(rest.substr(slash));
        if (m.target.front() == '?') m.target.insert(0, "/");
    }
    // The Host field and `host` are one thing: whichever the user changed wins.
    if (m.host == was.host)
        for (const auto& [name, value] : m.headers)
            if (http::iequals(name, "host") && !value.empty()) m.host = value;
    for (auto& [name, value] : m.headers) {
        if (http::iequals(name, "host") && m.host != was.host) value = m.host;
        if (http::iequals(name, "content-length") && m.body.size() != was.body.size())
            value = std::to_string(m.body.size());
    }
}

// `req` as views of `p.current`.
void buildRequest(Paused& p, http::Request& req) {
    const rules::PausedMessage& m = p.current;
    req = http::Request{};
    req.method = http::methodFromToken(m.method);
    req.methodToken = m.method;
    req.target = m.target;
    std::string_view path = m.target;
    if (isAbsoluteForm(path)) {
        path.remove_prefix(path.find("://") + 3);
        const std::size_t slash = path.find_first_of("/?");
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
    }
    const std::size_t q = path.find('?');
    req.rawPath = path.substr(0, q);
    req.query = q == std::string_view::npos ? std::string_view() : path.substr(q + 1);
    req.versionMajor = p.versionMajor;
    req.versionMinor = p.versionMinor;
    req.keepAlive = p.keepAlive;
    // Static text: a session reuses its Request, and this one's views must not outlive `p`.
    req.scheme = p.scheme == "https" ? std::string_view("https") : std::string_view("http");
    req.host = m.host;
    req.body = m.body;
    req.clientAddress = p.shown.clientAddress;
    p.headerViews.clear();
    for (const auto& [name, value] : m.headers)
        p.headerViews.push_back({name, value});
    req.headers = p.headerViews;
}

// What changed between the paused message and the edit, for the record ("method was GET, URL was /a,
// headers, body").
std::string changesText(const rules::PausedMessage& was, const rules::PausedMessage& now) {
    std::string out;
    auto add = [&](std::string_view what) {
        if (!out.empty()) out.append(", ");
        out.append(what);
    };
    if (was.method != now.method) add("method was " + was.method);
    if (was.target != now.target || was.host != now.host) add("URL was " + was.host + was.target);
    if (was.status != now.status) add("status was " + std::to_string(was.status));
    if (was.headers != now.headers) add("headers");
    if (was.body != now.body) add("body");
    return out;
}

} // namespace

void resume(const Context& ctx, Paused& p, http::Request& req, std::string& pathScratch, http::Response& res,
            ResponseWriter& writer, const Stamps& stamps) {
    const rules::BreakpointDecision d = p.decision.value_or(rules::BreakpointDecision{});
    const bool responseStage = p.shown.stage == config::Rule::Stage::Response;
    res.reset();
    restoreRuleState(p, res);
    p.current = p.shown.request;
    const bool editRequest = !responseStage && d.kind == rules::BreakpointDecision::Kind::Resume && d.edited;
    if (editRequest) {
        p.current = *d.edited;
        settleEdit(p);
    }
    buildRequest(p, req);
    req.path = {};
    Routed routed;
    switch (d.kind) {
    case rules::BreakpointDecision::Kind::Abort:
        noteBreakpoint(res.ruleNames, p.hit,
                       d.abort == rules::BreakpointDecision::Abort::Close ? "(aborted: close)"
                                                                          : "(aborted: reset)");
        res.fate = d.abort == rules::BreakpointDecision::Abort::Close ? http::Response::Fate::Silent
                                                                      : http::Response::Fate::Drop;
        res.pendingRules.clear();
        writer.respond(req, res);
        return;
    case rules::BreakpointDecision::Kind::Respond: {
        noteBreakpoint(res.ruleNames, p.hit, "(answered here)");
        res.status = d.response.status;
        for (const auto& [name, value] : d.response.headers)
            res.addHeader(name, value);
        if (!d.response.body.empty()) res.setBody(d.response.body);
        res.pendingRules.clear(); // the user's answer is theirs
        writer.respond(req, res);
        return;
    }
    case rules::BreakpointDecision::Kind::Resume:
        break;
    }
    const std::string how =
        d.timedOut ? "(resumed unchanged after the " + config::formatDuration(p.shown.timeout) + " timeout)"
                   : "(resumed)";
    if (responseStage) {
        const rules::PausedMessage& was = *p.shown.response;
        const rules::PausedMessage& m = d.edited ? *d.edited : was;
        if (d.edited) {
            noteBreakpoint(res.ruleNames, p.hit, "(resumed with changes: " + changesText(was, m) + ")");
            if (res.originalResponseFields.empty() && was.headers != m.headers)
                res.originalResponseFields = fieldBlock(was.headers);
            if (res.originalResponseBody.empty() && was.body != m.body) res.originalResponseBody = was.body;
        } else {
            noteBreakpoint(res.ruleNames, p.hit, how);
        }
        res.status = m.status;
        res.serverHeader = p.serverHeader;
        res.fate = p.fate;
        res.delay = p.delay;
        for (const auto& [name, value] : m.headers)
            res.addHeader(name, value);
        if (!m.body.empty()) res.setBody(m.body);
        res.pendingRules.clear(); // applied before the pause
        writer.respond(req, res);
        return;
    }
    if (editRequest) {
        const rules::PausedMessage& was = p.shown.request;
        // What the user changed (Host and Content-Length follow by themselves).
        noteBreakpoint(res.ruleNames, p.hit, "(resumed with changes: " + changesText(was, *d.edited) + ")");
        if (res.originalRequestFields.empty() && was.headers != p.current.headers)
            res.originalRequestFields = fieldBlock(was.headers);
        if (was.body != p.current.body) {
            if (res.originalRequestBody.empty()) res.originalRequestBody = was.body;
            res.ruledRequestBody = p.current.body; // what the record shows as sent
            req.body = res.ruledRequestBody;
        }
    } else {
        noteBreakpoint(res.ruleNames, p.hit, how);
    }
    afterRules(ctx, &p.verdict, req, pathScratch, res, writer, stamps, routed);
}

std::shared_ptr<Paused> pauseUpstreamAnswer(const rules::RuleSet& set, const rules::BreakpointHit& hit,
                                            rules::PausedMessage request, rules::PausedMessage answer,
                                            int httpVersion, std::string_view scheme,
                                            std::string_view clientAddress, boost::asio::io_context& io,
                                            std::function<void()> wake, std::shared_ptr<void> owner,
                                            std::string& ruleNames) {
    rules::BreakpointQueue* queue = set.breakpoints();
    if (!queue || !queue->enabled()) {
        noteBreakpoint(ruleNames, hit, "skipped (no Paused queue: breakpoints pause in the desktop app)");
        return nullptr;
    }
    auto p = std::make_shared<Paused>();
    p->hit = hit;
    p->shown.stage = config::Rule::Stage::Response;
    p->shown.rule = hit.ruleName();
    p->shown.httpVersion = httpVersion;
    p->shown.scheme.assign(scheme);
    p->shown.clientAddress.assign(clientAddress);
    p->shown.request = std::move(request);
    p->shown.response = std::move(answer);
    p->io = &io;
    p->wake = std::move(wake);
    p->owner = std::move(owner);
    p->start(*queue);
    return p;
}

bool settleUpstreamAnswer(const Paused& p, rules::PausedMessage& answer,
                          rules::BreakpointDecision::Abort& abort, std::string& ruleNames,
                          std::string& originalFields, std::string& originalBody) {
    const rules::BreakpointDecision d = p.decision.value_or(rules::BreakpointDecision{});
    const rules::PausedMessage& was = *p.shown.response;
    switch (d.kind) {
    case rules::BreakpointDecision::Kind::Abort:
        abort = d.abort;
        noteBreakpoint(ruleNames, p.hit,
                       d.abort == rules::BreakpointDecision::Abort::Close ? "(aborted: close)"
                                                                          : "(aborted: reset)");
        return false;
    case rules::BreakpointDecision::Kind::Respond:
        noteBreakpoint(ruleNames, p.hit, "(answered here)");
        answer = d.response;
        return true;
    case rules::BreakpointDecision::Kind::Resume:
        break;
    }
    if (!d.edited) {
        noteBreakpoint(ruleNames, p.hit,
                       d.timedOut ? "(resumed unchanged after the " +
                                        config::formatDuration(p.shown.timeout) + " timeout)"
                                  : std::string("(resumed)"));
        answer = was;
        return true;
    }
    answer = *d.edited;
    noteBreakpoint(ruleNames, p.hit, "(resumed with changes: " + changesText(was, answer) + ")");
    if (originalFields.empty() && was.headers != answer.headers) originalFields = fieldBlock(was.headers);
    if (originalBody.empty() && was.body != answer.body) originalBody = was.body;
    return true;
}

void serve(const Context& ctx, http::Request& req, std::string& pathScratch, http::Response& res,
           ResponseWriter& writer, const Stamps& stamps, Routed* routedOut) {
    res.reset();
    req.path = {};
    Routed scratch;
    Routed& routed = routedOut ? *routedOut : scratch;
    routed.routed = false;
    res.clearRuleState();
    // afterRules is inlined at both calls: a request without rules pays only the test below.
    if (ctx.rules && !ctx.rules->empty()) [[unlikely]] {
        const rules::RequestVerdict v = ctx.rules->applyRequest(req, ctx.httpVersion, res);
        if (v.breakpoint && pauseRequest(ctx, v, req, res, writer, stamps)) return;
        afterRules(ctx, &v, req, pathScratch, res, writer, stamps, routed);
        return;
    }
    afterRules(ctx, nullptr, req, pathScratch, res, writer, stamps, routed);
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
    if (!ctx.rules || !length || grpc || !ctx.rules->mayNeedRequestBody(rawPath)) return false;
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

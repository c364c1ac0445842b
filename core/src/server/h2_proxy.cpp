// A proxied HTTP/2 stream: starting the forward, and the stream's client::Sink, which hands the
// upstream's head, body, trailers and resets to nghttp2 with backpressure.
#include "server/h2_connection.h"
#include "server/h2_stream.h"

#include "capture/hooks.h"
#include "proxy/forward.h"
#include "server/worker.h"

#include <nghttp2/nghttp2.h>

namespace portico::server {

// serve() forwards this stream's request: its sink (the upstream's answer becomes this stream's
// response), a gRPC call's capture, and whether the body streams.
serve::ForwardTarget H2Connection::forwardTo(Stream& s, const http::Request& req) {
    captureRequest(s);
    if (s.streaming && !s.res.streamedBodyNotes.empty()) { // request-stage replace_body rules: skipped
        if (!s.res.ruleNames.empty()) s.res.ruleNames.push_back('\n');
        s.res.ruleNames.append(s.res.streamedBodyNotes);
    }
    // The record has the request body as it goes upstream (a request-stage replace_body's result).
    if (cap_ && !s.streaming && !s.res.ruledRequestBody.empty()) {
        s.capBodySize = req.body.size();
        s.capBody.assign(req.body.substr(0, std::min<std::size_t>(req.body.size(), cap_->cfg.bodyBytes)));
    }
    auto sink = std::make_unique<ProxySink>();
    sink->conn = this;
    sink->id = s.id;
    sink->extra.assign(s.res.fieldBlock());
    sink->serverHeader = s.res.serverHeader;
    if (!s.res.pendingRules.empty()) sink->rulesSnapshot = worker_.snapshotPtr();
    for (const auto& h : req.headers)
        if (h.name == "content-type" && h.value.starts_with("application/grpc")) sink->grpc = true;
    if (cap_ && sink->grpc) {
        // A gRPC call: its record carries the messages both ways (capture only).
        s.capGrpc = std::make_unique<capture::GrpcCapture>(cap_->cfg.bodyBytes, cap_->cfg.wsMessages);
        sink->capGrpc = s.capGrpc.get();
        if (!s.streaming) capture::grpcData(*s.capGrpc, true, s.body);
    }
    const auto& action = *static_cast<const config::ProxyAction*>(s.res.forward);
    if (s.streaming && !proxy::streamsRequestBody(action)) {
        // The config changed between the head and the dispatch; cannot happen within one
        // snapshot, but never forward a body we do not have.
        s.streaming = false;
    }
    client::Sink* raw = sink.get();
    s.proxy = std::move(sink);
    return {&worker_.io(), shared_from_this(), worker_.snapshotPtr(), raw, ssl_ != nullptr, s.streaming};
}

void H2Connection::forwarding(Stream& s, std::shared_ptr<client::Call> call) {
    s.proxy->exchange = std::move(call); // not captured yet: the record needs the upstream's side
    s.body.clear();
}

void H2Connection::ProxySink::onUpstreamConnected() {
    if (!conn->cap_) return;
    if (Stream* s = conn->stream(id)) s->capUpstreamNs = capture::nowNs();
}

void H2Connection::ProxySink::onUpstreamHeadersOnly(int status, std::string_view fields) {
    headersOnly = true;
    done = true;
    exchange.reset();
    onUpstreamHead(status, fields, std::nullopt);
}

void H2Connection::ProxySink::onUpstreamReset(std::uint32_t code, bool sent, const std::string& message) {
    // gRPC's PROTOCOL-HTTP2.md maps the code to the call's status at the client, so a gRPC call
    // gets the upstream's reset as it was; other requests get a 502 while nothing was sent.
    // A head held for replace_body was not sent either.
    if ((!sent || rewriting) && !headSent && !grpc && code != NGHTTP2_REFUSED_STREAM) {
        onUpstreamError(502, message);
        return;
    }
    exchange.reset();
    H2Connection* c = conn;
    if (!c->stream(id)) return;
    nghttp2_submit_rst_stream(c->session_, NGHTTP2_FLAG_NONE, id, code);
    c->flush();
}

void H2Connection::ProxySink::onUpstreamHead(int status, std::string_view fields,
                                             std::optional<std::uint64_t> len) {
    Stream* s = conn->stream(id);
    if (!s) return;
    http::Response& res = s->res;
    res.reset();
    res.status = status;
    // Inside an intercepted tunnel the origin's head passes as it came (Date, Server included).
    s->originHead = conn->origin_ != nullptr;
    res.serverHeader = serverHeader && !s->originHead;
    proxy::mergeResponseFields(
        fields, extra, [&](std::string_view name, std::string_view value) { res.addHeader(name, value); },
        s->originHead);
    length = len;
    if (conn->cap_) s->capUpstreamByteNs = capture::nowNs();
    if (!res.pendingRules.empty() && rulesSnapshot) { // response-stage rules (reset() kept them)
        thread_local std::string ruled;
        const rules::RuleSet& set = rulesSnapshot->rules;
        bodyEdits.clear();
        rules::BreakpointHit hit;
        if (set.applyResponse(res.pendingRules, status, res.fieldBlock(), ruled, res.ruleNames, &bodyEdits,
                              &hit)) {
            res.originalResponseFields.assign(res.fieldBlock());
            res.replaceFields(ruled);
        }
        const bool noBody = status < 200 || status == 204 || status == 304 || headersOnly || s->head;
        if (!bodyEdits.empty() && !noBody) {
            std::string why =
                grpc ? std::string("gRPC message") : rules::RuleSet::bodySkipReason(res.fieldBlock());
            if (why.empty() && len && *len > set.maxRewriteBody())
                why = "body over max_rewrite_body, " + std::to_string(set.maxRewriteBody()) + " bytes";
            if (!why.empty()) {
                rules::RuleSet::noteSkipped(bodyEdits, why, res.ruleNames);
                bodyEdits.clear();
            }
        } else {
            bodyEdits.clear();
        }
        if (hit && grpc) { // its messages and trailers stream; a gRPC call is not held
            serve::noteBreakpoint(res.ruleNames, hit, "skipped (gRPC call)");
            hit = {};
        } else if (hit && !noBody && len && *len > set.maxRewriteBody()) {
            serve::noteBreakpoint(res.ruleNames, hit,
                                  "skipped (body over max_rewrite_body, " +
                                      std::to_string(set.maxRewriteBody()) + " bytes)");
            hit = {};
        }
        if (!bodyEdits.empty() || hit) {
            // The body is gathered first (onUpstreamBody); the head goes at its end.
            rewriting = true;
            breakpoint = hit;
            res.pendingRules.clear();
            return;
        }
    }
    res.pendingRules.clear();
    rulesSnapshot.reset();
    headSent = true;
    conn->submit(*s);
    conn->flush();
}

// A held head (`rewriting`) is submitted now, with `length`; `pending` holds the body to send. The
// caller flushes (wake()).
void H2Connection::ProxySink::releaseHead() {
    rewriting = false;
    breakpoint = {};
    bodyEdits.clear();
    rulesSnapshot.reset();
    headSent = true;
    if (Stream* s = conn->stream(id)) conn->submit(*s);
}

bool H2Connection::ProxySink::onUpstreamBody(std::string_view data) {
    if (rewriting) {
        const std::uint64_t limit = rulesSnapshot->rules.maxRewriteBody();
        if (pending.size() + data.size() <= limit) {
            pending.append(data);
            if (conn->cap_ && capBody.size() < conn->cap_->cfg.bodyBytes)
                capBody.append(data.substr(0, conn->cap_->cfg.bodyBytes - capBody.size()));
            return true; // nothing goes out before the end
        }
        // Longer than the upstream said, or it said nothing: it passes as it comes, unchanged.
        if (Stream* s = conn->stream(id)) {
            rules::RuleSet::noteSkipped(bodyEdits,
                                        "body over max_rewrite_body, " + std::to_string(limit) + " bytes",
                                        s->res.ruleNames);
            if (breakpoint)
                serve::noteBreakpoint(s->res.ruleNames, breakpoint,
                                      "skipped (body over max_rewrite_body, " + std::to_string(limit) +
                                          " bytes)");
        }
        releaseHead(); // `pending` (what was gathered) goes first; wake() below sends
    }
    pending.append(data);
    if (conn->cap_) {
        if (capBody.size() < conn->cap_->cfg.bodyBytes)
            capBody.append(data.substr(0, conn->cap_->cfg.bodyBytes - capBody.size()));
        if (capGrpc) capture::grpcData(*capGrpc, false, data);
    }
    const bool full = pending.size() - offset >= kProxyHighWater;
    if (full) paused = true;
    wake(); // may end the stream and destroy this sink: nothing is touched after it
    return !full;
}

void H2Connection::ProxySink::onUpstreamEnd() {
    done = true;
    exchange.reset();
    if (rewriting) {
        // The whole body: rewritten, it goes out after the held head, with its own length.
        Stream* s = conn->stream(id);
        if (!s) return;
        thread_local std::string out;
        if (rulesSnapshot->rules.rewriteBody(bodyEdits, pending, out, s->res.ruleNames)) {
            pending.swap(out);
            if (conn->cap_) {
                capBody.assign(pending, 0, std::min<std::size_t>(pending.size(), conn->cap_->cfg.bodyBytes));
                s->res.originalResponseBody.swap(out); // the body as the upstream sent it
            }
        }
        if (out.capacity() > 64 * 1024) std::string().swap(out);
        offset = 0;
        if (breakpoint && conn->pauseAnswer(*s)) return; // the user decides (H2Connection::resumeAnswer)
        if (!s->head) length = pending.size();
        releaseHead();
    }
    wake(); // may end the stream and destroy this sink: nothing is touched after it
}

// A response-stage breakpoint on the upstream's answer, gathered whole (ProxySink::onUpstreamEnd):
// the stream waits in the Paused queue. False when nothing can decide it (the answer goes on).
bool H2Connection::pauseAnswer(Stream& s) {
    ProxySink& sink = *s.proxy;
    rules::PausedMessage request, answer;
    request.method = s.method;
    request.target = s.path;
    request.host = s.host;
    for (const auto& f : s.fields)
        if (!f.trailer)
            request.headers.emplace_back(std::string_view(s.arena).substr(f.name, f.nameLen),
                                         std::string_view(s.arena).substr(f.value, f.valueLen));
    request.body = s.capBody; // what capture kept of it ("" without capture)
    answer.status = s.res.status;
    http::forEachFieldLine(s.res.fieldBlock(), [&](std::string_view n, std::string_view v) {
        answer.headers.emplace_back(n, v);
    });
    answer.body = sink.pending;
    auto paused = serve::pauseUpstreamAnswer(
        sink.rulesSnapshot->rules, sink.breakpoint, std::move(request), std::move(answer), 2,
        ssl_ ? "https" : "http", clientAddress_, worker_.io(),
        [weak = weak_from_this(), id = s.id] {
            if (auto c = weak.lock()) c->resumeAnswer(id);
        },
        nullptr, s.res.ruleNames);
    if (!paused) return false;
    s.pausedSnapshot = sink.rulesSnapshot;
    s.paused = std::move(paused);
    return true;
}

void H2Connection::resumeAnswer(std::int32_t id) {
    Stream* s = closed_ ? nullptr : stream(id);
    if (!s || !s->paused || !s->proxy) return;
    const std::shared_ptr<const Snapshot> snap = std::move(s->pausedSnapshot); // outlives `paused`
    const std::shared_ptr<serve::Paused> paused = std::move(s->paused);
    ProxySink& sink = *s->proxy;
    rules::PausedMessage answer;
    rules::BreakpointDecision::Abort how = rules::BreakpointDecision::Abort::Reset;
    std::string originalBody;
    if (!serve::settleUpstreamAnswer(*paused, answer, how, s->res.ruleNames, s->res.originalResponseFields,
                                     cap_ ? s->res.originalResponseBody : originalBody)) {
        sink.rewriting = false;
        sink.breakpoint = {};
        if (how == rules::BreakpointDecision::Abort::Close)
            nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
        else
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        flush();
        return;
    }
    http::Response& res = s->res;
    res.reset(); // keeps the rule state
    res.status = answer.status;
    res.serverHeader = sink.serverHeader && !s->originHead;
    for (const auto& [name, value] : answer.headers)
        res.addHeader(name, value);
    const bool noBody = answer.status == 204 || answer.status == 304 || s->head;
    sink.pending = noBody ? std::string() : std::move(answer.body);
    sink.offset = 0;
    if (cap_)
        sink.capBody.assign(sink.pending, 0, std::min<std::size_t>(sink.pending.size(), cap_->cfg.bodyBytes));
    if (!s->head) sink.length = sink.pending.size();
    sink.releaseHead();
    sink.wake(); // may end the stream: nothing is touched after it
}

void H2Connection::ProxySink::onUpstreamError(int status, const std::string& message) {
    exchange.reset();
    H2Connection* c = conn;
    Stream* s = c->stream(id);
    if (!s) return;
    if (status == 0 && rewriting) status = 502; // the head was held for replace_body: nothing was sent
    rewriting = false;
    if (status == 0 || headSent) {
        nghttp2_submit_rst_stream(c->session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
        c->flush();
        return;
    }
    if (grpc) {
        // A gRPC client reads the reason from grpc-message, not from an HTML-ish body: answer
        // Trailers-Only with UNAVAILABLE (502) or DEADLINE_EXCEEDED (504), message percent-encoded
        // (gRPC over HTTP/2, "Responses").
        std::string fields = "content-type: application/grpc\r\ngrpc-status: ";
        fields += status == 504 ? "4" : "14";
        fields += "\r\ngrpc-message: ";
        static constexpr char kHex[] = "0123456789ABCDEF";
        const std::string text =
            std::to_string(status) + " " + std::string(http::reasonPhrase(status)) + ": " + message;
        for (unsigned char ch : text) {
            if (ch >= 0x20 && ch <= 0x7e && ch != '%') {
                fields.push_back(static_cast<char>(ch));
            } else {
                fields.push_back('%');
                fields.push_back(kHex[ch >> 4]);
                fields.push_back(kHex[ch & 15]);
            }
        }
        fields += "\r\n";
        s->capUpstreamByteNs = -1;
        onUpstreamHeadersOnly(200, fields); // may end the stream and destroy this sink
        return;
    }
    s->res.reset();
    handlers::errorResponse(status, s->res);
    s->res.setBody(std::to_string(status) + " " + std::string(http::reasonPhrase(status)) + ": " + message +
                   "\n");
    auto self = std::move(s->proxy); // back to a plain response; destroyed at the end of this call
    c->logExchange(*s);
    if (c->cap_) s->capFirstByteNs = c->captureStats(*s);
    c->submit(*s);
    c->flush();
}

} // namespace portico::server

// The HTTP/1.1 connection's side of a proxied exchange (client::Sink): starting the forward,
// streaming a request body upstream as it arrives (bounded by kUploadHighWater), and writing the
// upstream's response back (Content-Length or chunked, trailers, upgrades to a tunnel).
#include "server/connection.h"

#include "capture/hooks.h"
#include "io/drained.h"
#include "io/transport.h"
#include "proxy/tunnel.h"
#include "serve/serve.h"
#include "server/front_door.h"
#include "server/worker.h"
#include "tls/server_tls.h"

#include <portico/handlers/dispatch.h>

#include <algorithm>
#include <charconv>
#include <sys/socket.h>

namespace portico::server {
namespace asio = boost::asio;

namespace {
// A streamed request body: reading from the client pauses while this many bytes wait for the
// upstream, and resumes once half of them went up. Bounds an upload's memory per exchange.
constexpr std::size_t kUploadHighWater = 256 * 1024;
constexpr int kUploadReadsPerTurn = 32; // reads per wakeup before yielding to other connections

// A replace_body's gathered response is done with (sent, or the exchange ended): a large buffer is
// not kept for the rest of the connection's life. `Rewrite` is Rare::ProxyRewrite.
template <class Rewrite> void endRewrite(Rewrite& rw) {
    rw.active = false;
    rw.hit = {};
    rw.edits.clear();
    rw.snapshot.reset();
    rw.body.clear();
    if (rw.body.capacity() > 64 * 1024) std::string().swap(rw.body);
}
} // namespace

// serve() forwards this request: the state the upstream's answer (client::Sink, below) and the
// access log and capture need, which outlives the request's views.
serve::ForwardTarget Connection::forwardTo(http::Request& req, const http::Response& res, bool bodyFollows) {
    Rare& r = rare();
    r.proxyFields.assign(res.fieldBlock());
    r.proxyServerHeader = res.serverHeader;
    r.proxyHead = req.method == http::Method::Head;
    r.proxyMinor = req.versionMinor;
    r.proxyKeep = req.keepAlive && !worker_.draining();
    r.proxyChunked = false;
    r.proxyHeadSent = false;
    r.proxyPaused = false;
    r.proxyConnect = req.method == http::Method::Connect;
    r.proxyTransparent = res.forward && static_cast<const config::ProxyAction*>(res.forward)->transparent;
    if (r.clientAddress.empty()) {
        boost::system::error_code ec;
        auto remote = socket_.remote_endpoint(ec);
        if (!ec) r.clientAddress = remote.address().to_string();
    }
    req.clientAddress = r.clientAddress;
    r.proxyTrailers.clear();
    auto& pr = r.proxyRecord;
    // Read by finishProxied, and by a response-stage breakpoint's Paused queue entry.
    if (worker_.accessLog() || cap() || !res.pendingRules.empty()) {
        pr.method.assign(req.methodToken);
        pr.target.assign(req.target);
        pr.host.assign(req.host);
        pr.referer.assign(req.header("Referer"));
        pr.userAgent.assign(req.header("User-Agent"));
    }
    pr.headers.clear();
    pr.body.clear();
    pr.bodySize = req.body.size();
    pr.status = 0;
    pr.responseHead.clear();
    pr.responseBody.clear();
    pr.responseBytes = 0;
    pr.upstreamNs = pr.upstreamByteNs = -1;
    pr.resolvedNs = pr.tcpNs = pr.sentNs = -1;
    pr.upstreamAddress.clear();
    pr.upstreamTls.clear();
    pr.upstreamAlpn.clear();
    pr.ruleNames.assign(res.ruleNames);
    if (bodyFollows && !res.streamedBodyNotes.empty()) { // request-stage replace_body rules: skipped
        if (!pr.ruleNames.empty()) pr.ruleNames.push_back('\n');
        pr.ruleNames.append(res.streamedBodyNotes);
    }
    pr.originalRequestFields.assign(res.originalRequestFields);
    pr.originalResponseFields.clear();
    for (std::string* body : {&pr.originalRequestBody, &pr.originalResponseBody})
        if (!body->empty()) { // a large one's buffer is not kept
            body->clear();
            if (body->capacity() > 64 * 1024) std::string().swap(*body);
        }
    r.proxyRules.assign(res.pendingRules.begin(), res.pendingRules.end());
    if (!r.proxyRules.empty()) r.proxyRulesSnapshot = worker_.snapshotPtr();
    if (r.proxyRewrite) endRewrite(*r.proxyRewrite);
    if (res.throttle.active()) {
        // A streamed body's time at the throttle's `up` rate is reckoned from its declared length.
        std::uint64_t upBytes = req.body.size();
        if (bodyFollows) {
            const std::string_view cl = req.header("Content-Length");
            upBytes = 0;
            std::from_chars(cl.data(), cl.data() + cl.size(), upBytes);
        }
        startPace(res.throttle, upBytes);
    }
    if (cap() || !res.pendingRules.empty()) {
        // Credentials meant for this proxy are not kept in records (sessions get shared).
        for (const auto& h : req.headers)
            pr.headers.emplace_back(h.name, http::iequals(h.name, "proxy-authorization")
                                                ? std::string_view("[redacted]")
                                                : h.value);
        const std::uint64_t keep = cap() ? cap()->cfg.bodyBytes : std::uint64_t{64 * 1024};
        pr.body.assign(req.body.substr(0, std::min<std::size_t>(req.body.size(), keep)));
        // The request body before a request-stage replace_body: a byte past the capture's prefix
        // tells the record it was cut.
        if (cap() && !res.originalRequestBody.empty())
            pr.originalRequestBody.assign(res.originalRequestBody, 0,
                                          static_cast<std::size_t>(std::min<std::uint64_t>(
                                              res.originalRequestBody.size(), cap()->cfg.bodyBytes + 1)));
    }
    return {&worker_.io(), shared_from_this(), worker_.snapshotPtr(), this, ssl() != nullptr, bodyFollows};
}

void Connection::forwarding(std::shared_ptr<client::Call> call) {
    rare().proxy = std::move(call); // not captured yet: the record needs the upstream's side
    phase_ = Phase::Proxy;
    deadline_ = Clock::time_point::max();
}

// Does the request whose head was just parsed go to a route that streams request bodies
// (proxy::streamsRequestBody)? One route match, only for bodies that did not come with their head.
bool Connection::proxiesBody() {
    const Snapshot& snap = worker_.snapshot();
    const http1::RequestHead& head = worker_.head();
    // An Upgrade request keeps the buffered path (`ws: true` hands the socket over on a 101).
    bool upgrade = false;
    for (std::size_t i = 0; i < head.headerCount && !upgrade; ++i)
        upgrade = http::iequals(head.headers[i].name, "upgrade");
    const serve::Context ctx{*snap.config, snap.router, worker_.handlerState(), localPort_, 1, forwardProxy_,
                             origin(),     &snap.rules};
    if (!serve::streamsRequestBody(ctx, head.method, head.rawPath, head.host, upgrade, worker_.pathScratch(),
                                   !head.authority.empty()))
        return false;
    if (snap.rules.empty()) return true;
    // A request-stage replace_body may want it whole.
    bool grpc = false;
    for (std::size_t i = 0; i < head.headerCount; ++i)
        if (http::iequals(head.headers[i].name, "content-type"))
            grpc = http::istartsWith(head.headers[i].value, "application/grpc");
    std::optional<std::uint64_t> length;
    if (head.framing == http1::RequestHead::Framing::ContentLength) length = head.contentLength;
    return !serve::rulesReadBodyWhole(ctx, head.rawPath, length, grpc);
}

// The request's body did not come with its head and its route proxies: the exchange starts now and
// the body follows as it arrives (client::Call::requestBody), reading from the client only while less
// than kUploadHighWater bytes wait for the upstream. False (nothing done) for any other route: the
// body is read whole first, as before. `headBytes`: the head's size at the start of in_.
bool Connection::startUpload(std::size_t headBytes) {
    if (!proxiesBody()) return false;
    const http1::RequestHead& head = worker_.head();
    const bool chunked = head.framing == http1::RequestHead::Framing::Chunked;
    const std::uint64_t length = head.contentLength;
    handle({}, {}, true);
    if (!proxying()) {
        // Answered without its body after all (cannot happen within one snapshot): the body is
        // never read, so the connection cannot carry another request.
        closeAfterWrite_ = true;
        in_.clear();
        resetBodyState();
        return true;
    }
    Rare& r = *rareIf();
    r.uploading = true;
    r.uploadPaused = false;
    r.uploadHeld = 0;
    r.uploadDeadline = Clock::now() + worker_.snapshot().config->limits.bodyTimeout;
    if (chunked) {
        // The decoder already took r.chunkPos bytes after the head; what it decoded goes first.
        in_.consume(headBytes + r.chunkPos);
        r.chunkPos = 0;
        r.uploadLeft = 0;
        if (!r.chunkBody.empty()) {
            std::string first;
            first.swap(r.chunkBody);
            giveUpload(first);
        }
    } else {
        in_.consume(headBytes);
        r.uploadLeft = length;
    }
    feedUpload();
    if (uploading() && !closed_) waitUpload();
    return true;
}

// Body bytes to the exchange, and to the record (size, a bounded prefix for the capture).
void Connection::giveUpload(std::string_view data) {
    if (data.empty()) return;
    Rare& r = *rareIf();
    r.uploadHeld += data.size();
    auto& pr = r.proxyRecord;
    pr.bodySize += data.size();
    if (cap() && pr.body.size() < cap()->cfg.bodyBytes)
        pr.body.append(data.substr(0, cap()->cfg.bodyBytes - pr.body.size()));
    r.proxy->requestBody(data); // copies; never calls back from inside
}

// Hands the body bytes in in_ to the exchange (de-chunked); ends the upload at the body's end.
// Bytes after the body (a pipelined request) stay in in_.
void Connection::feedUpload() {
    Rare& r = *rareIf();
    if (!r.uploading || in_.empty()) return;
    if (!r.chunkActive) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(in_.size(), r.uploadLeft));
        giveUpload(in_.unread().substr(0, n));
        in_.consume(n);
        r.uploadLeft -= n;
        if (r.uploadLeft == 0) endUpload({});
        return;
    }
    std::size_t used = 0;
    http1::ParseError err;
    r.chunkBody.clear();
    const auto cs = r.chunked.decode(in_.unread(), r.chunkBody, used, err);
    if (cs == http1::ChunkedDecoder::Status::Error) {
        worker_.counters().parseErrors.fetch_add(1, std::memory_order_relaxed);
        failUpload(err.status, err.reason);
        return;
    }
    giveUpload(r.chunkBody);
    r.chunkBody.clear();
    if (cs == http1::ChunkedDecoder::Status::Done)
        endUpload(r.chunked.trailers()); // they point into in_: copied before it moves on
    in_.consume(used);
}

// Reads body bytes and hands them on until the socket has no more (then waits), the body ends,
// or kUploadHighWater bytes wait upstream (then onRequestBodyConsumed resumes it).
void Connection::pumpUpload() {
    for (int round = 0;; ++round) {
        if (closed_ || !uploading()) return;
        Rare& r = *rareIf();
        if (r.uploadHeld >= kUploadHighWater) {
            r.uploadPaused = true; // the upstream is slower: the client waits (TCP backpressure)
            r.uploadDeadline = Clock::time_point::max();
            return;
        }
        if (round == kUploadReadsPerTurn) {
            asio::post(worker_.io(), [self = shared_from_this()] { self->pumpUpload(); });
            return;
        }
        if (!in_.allocated()) in_ = worker_.buffers().acquire();
        std::size_t room = 0;
        char* p = in_.readRoom(room);
        const io::IoResult res = io::transportRead(socket_.native_handle(), ssl(), p, room);
        switch (res.status) {
        case io::IoStatus::Ok:
            in_.commit(res.n);
            r.uploadDeadline = Clock::now() + worker_.snapshot().config->limits.bodyTimeout;
            feedUpload();
            continue;
        case io::IoStatus::WantRead:
            waitUpload();
            return;
        case io::IoStatus::WantWrite: // TLS needs to write first
            socket_.async_wait(Socket::wait_write,
                               [self = shared_from_this()](const boost::system::error_code& ec) {
                                   if (!ec && !self->closed_) self->pumpUpload();
                               });
            return;
        case io::IoStatus::Eof: // the client gave up mid-body: the upstream request is cancelled
        case io::IoStatus::Error:
            abort();
            return;
        }
    }
}

void Connection::waitUpload() {
    if (ssl() && io::transportPending(ssl())) {
        asio::post(worker_.io(), [self = shared_from_this()] { self->pumpUpload(); });
        return;
    }
    socket_.async_wait(Socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec && !self->closed_) self->pumpUpload();
    });
}

void Connection::endUpload(std::span<const http::Header> trailers) {
    Rare& r = *rareIf();
    r.uploading = false;
    r.uploadDeadline = Clock::time_point::max();
    if (cap()) cap()->bodyDoneNs = capture::nowNs();
    r.proxy->requestEnd(trailers);
    resetBodyState();
}

// The exchange ended (answered, or failed) while the client was still sending the body: the rest
// is never read, so the connection closes after the response.
void Connection::stopUpload() {
    if (!uploading()) return;
    Rare& r = *rareIf();
    r.uploading = false;
    r.uploadDeadline = Clock::time_point::max();
    r.proxyKeep = false;
    resetBodyState();
}

// The body broke off here (bad chunked framing → 400, past max_body_bytes → 413, body_timeout →
// 408): the upstream request is cancelled; the client gets `status` and a close, or, when the
// upstream's response has started already, an aborted connection.
void Connection::failUpload(int status, std::string_view why) {
    Rare& r = *rareIf();
    stopUpload();
    if (auto x = std::move(r.proxy)) x->cancel();
    r.proxyPaused = false;
    if (r.proxyHeadSent) {
        finishProxied(why);
        abort();
        return;
    }
    answerProxied(status, {});
}

void Connection::onRequestBodyConsumed(std::size_t n) {
    if (!rareIf()) return;
    Rare& r = *rareIf();
    r.uploadHeld -= std::min(n, r.uploadHeld);
    if (r.uploading && r.uploadPaused && r.uploadHeld <= kUploadHighWater / 2) {
        r.uploadPaused = false;
        r.uploadDeadline = Clock::now() + worker_.snapshot().config->limits.bodyTimeout;
        // Posted: an HTTP/2 upstream reports this from inside its session's send.
        asio::post(worker_.io(), [self = shared_from_this()] { self->pumpUpload(); });
    }
}

void Connection::onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> length) {
    onUpstreamHeadBodyFollows(status, fields, length);
    pumpProxy();
}

// Queues the response head; the body bytes that follow (onUpstreamBody) or the end (onUpstreamEnd)
// write it together with them. A response-stage replace_body holds the head back instead until the
// body is whole (Rare::ProxyRewrite); then this writes it with the body's new length.
void Connection::onUpstreamHeadBodyFollows(int status, std::string_view fields,
                                           std::optional<std::uint64_t> length) {
    Rare& r = *rareIf();
    if (!out_.allocated()) out_ = worker_.buffers().acquire();
    const bool noBody = status < 200 || status == 204 || status == 304;
    r.proxyRecord.status = status;
    if (cap() && r.proxyRecord.upstreamByteNs < 0) r.proxyRecord.upstreamByteNs = capture::nowNs();
    std::string_view ruledFields; // the fields after the response-stage rules, when they ran
    bool ruled = false;
    if (!r.proxyRules.empty()) { // response-stage rules: on the fields as they would go out
        thread_local std::string merged, changedFields;
        thread_local std::vector<rules::BodyEdit> edits;
        merged.clear();
        edits.clear();
        proxy::mergeResponseFields(
            fields, r.proxyFields,
            [&](std::string_view name, std::string_view value) {
                merged.append(name);
                merged.append(": ");
                merged.append(value);
                merged.append("\r\n");
            },
            r.proxyTransparent);
        const rules::RuleSet& set = r.proxyRulesSnapshot->rules;
        rules::BreakpointHit hit;
        const bool changed = set.applyResponse(r.proxyRules, status, merged, changedFields,
                                               r.proxyRecord.ruleNames, &edits, &hit);
        if (changed) r.proxyRecord.originalResponseFields.assign(merged);
        ruledFields = changed ? changedFields : merged;
        ruled = true;
        r.proxyRules.clear();
        const bool bodyLess = noBody || r.proxyHead;
        if (!edits.empty() && !bodyLess) {
            std::string why = rules::RuleSet::bodySkipReason(ruledFields);
            if (why.empty() && length && *length > set.maxRewriteBody())
                why = "body over max_rewrite_body, " + std::to_string(set.maxRewriteBody()) + " bytes";
            if (!why.empty()) {
                rules::RuleSet::noteSkipped(edits, why, r.proxyRecord.ruleNames);
                edits.clear();
            }
        } else {
            edits.clear();
        }
        if (hit && !bodyLess && length && *length > set.maxRewriteBody()) {
            serve::noteBreakpoint(r.proxyRecord.ruleNames, hit,
                                  "skipped (body over max_rewrite_body, " +
                                      std::to_string(set.maxRewriteBody()) + " bytes)");
            hit = {};
        }
        if (!edits.empty() || hit) {
            // The body is gathered first (onUpstreamBody), the head goes with it.
            if (!r.proxyRewrite) r.proxyRewrite = std::make_unique<Rare::ProxyRewrite>();
            Rare::ProxyRewrite& rw = *r.proxyRewrite;
            rw.active = true;
            rw.status = status;
            rw.length = length;
            rw.fields.assign(ruledFields);
            rw.body.clear();
            if (length) rw.body.reserve(static_cast<std::size_t>(*length));
            rw.edits.assign(edits.begin(), edits.end());
            rw.hit = hit;
            rw.snapshot = std::move(r.proxyRulesSnapshot);
            return;
        }
        r.proxyRulesSnapshot.reset();
    }
    const std::size_t headStart = out_.size();
    if (r.proxyTransparent)
        out_.append(http::statusLine11(status)); // the origin's Date and Server follow
    else
        appendStatusLines(status, r.proxyServerHeader);
    auto emit = [&](std::string_view name, std::string_view value) {
        out_.append(name);
        out_.append(": ");
        out_.append(value);
        out_.append("\r\n");
    };
    if (ruled)
        http::forEachFieldLine(ruledFields, emit);
    else
        proxy::mergeResponseFields(fields, r.proxyFields, emit, r.proxyTransparent);
    if (!noBody) {
        if (length) {
            out_.append("Content-Length: ");
            out_.appendDecimal(*length);
            out_.append("\r\n");
        } else if (!r.proxyHead && r.proxyMinor >= 1) {
            out_.append("Transfer-Encoding: chunked\r\n");
            r.proxyChunked = true;
        } else if (!r.proxyHead) {
            r.proxyKeep = false; // an HTTP/1.0 client: the close ends the body
        }
    }
    if (!r.proxyKeep)
        out_.append("Connection: close\r\n");
    else if (r.proxyMinor == 0)
        out_.append("Connection: keep-alive\r\n");
    out_.append("\r\n");
    if (cap()) r.proxyRecord.responseHead.assign(out_.unread().substr(headStart));
    r.proxyHeadSent = true;
}

bool Connection::onUpstreamBody(std::string_view data) {
    Rare& r = *rareIf();
    if (r.proxyHead) return true;
    if (r.proxyRewrite && r.proxyRewrite->active) {
        Rare::ProxyRewrite& rw = *r.proxyRewrite;
        const std::uint64_t limit = rw.snapshot->rules.maxRewriteBody();
        if (rw.body.size() + data.size() <= limit) {
            rw.body.append(data);
            return true; // nothing goes out before the end
        }
        // Longer than the upstream said, or it said nothing: it passes as it comes, unchanged.
        rules::RuleSet::noteSkipped(rw.edits,
                                    "body over max_rewrite_body, " + std::to_string(limit) + " bytes",
                                    r.proxyRecord.ruleNames);
        if (rw.hit)
            serve::noteBreakpoint(r.proxyRecord.ruleNames, rw.hit,
                                  "skipped (body over max_rewrite_body, " + std::to_string(limit) +
                                      " bytes)");
        rw.active = false;
        r.proxyFields.clear(); // merged into rw.fields already
        onUpstreamHeadBodyFollows(rw.status, rw.fields, rw.length);
        const bool more = onUpstreamBody(rw.body);
        endRewrite(rw);
        if (closed_) return false;
        return onUpstreamBody(data) && more;
    }
    r.proxyRecord.responseBytes += data.size();
    if (cap() && r.proxyRecord.responseBody.size() < cap()->cfg.bodyBytes)
        r.proxyRecord.responseBody.append(
            data.substr(0, cap()->cfg.bodyBytes - r.proxyRecord.responseBody.size()));
    if (!out_.allocated()) out_ = worker_.buffers().acquire();
    if (r.proxyChunked) {
        char size[20];
        auto e = std::to_chars(size, size + sizeof size, data.size(), 16);
        out_.append(size, static_cast<std::size_t>(e.ptr - size));
        out_.append("\r\n");
    }
    out_.append(data);
    if (r.proxyChunked) out_.append("\r\n");
    return pumpProxy();
}

void Connection::onUpstreamEnd() {
    Rare& r = *rareIf();
    stopUpload();
    if (r.proxyRewrite && r.proxyRewrite->active) {
        // The whole body: rewritten, it goes out after the held head with its own length.
        Rare::ProxyRewrite& rw = *r.proxyRewrite;
        thread_local std::string out;
        if (rw.snapshot->rules.rewriteBody(rw.edits, rw.body, out, r.proxyRecord.ruleNames)) {
            rw.body.swap(out);
            if (cap()) r.proxyRecord.originalResponseBody.swap(out); // the body as the upstream sent it
        }
        if (out.capacity() > 64 * 1024) std::string().swap(out);
        if (rw.hit) {
            // A response-stage breakpoint: the whole answer waits for the user (resumeAnswer).
            const auto& pr = r.proxyRecord;
            rules::PausedMessage request, answer;
            request.method = pr.method;
            request.target = pr.target;
            request.host = pr.host;
            request.headers = pr.headers;
            request.body = pr.body;
            answer.status = rw.status;
            http::forEachFieldLine(rw.fields, [&](std::string_view n, std::string_view v) {
                answer.headers.emplace_back(n, v);
            });
            answer.body = rw.body;
            auto paused = serve::pauseUpstreamAnswer(
                rw.snapshot->rules, rw.hit, std::move(request), std::move(answer), 1,
                ssl() ? "https" : "http", r.clientAddress, worker_.io(),
                [weak = weak_from_this()] {
                    if (auto self = weak.lock()) self->resumeAnswer();
                },
                shared_from_this(), r.proxyRecord.ruleNames);
            if (paused) {
                r.paused = std::move(paused);
                r.pausedSnapshot = rw.snapshot;
                auto done = std::move(r.proxy); // finished: holding() keeps the connection waiting
                r.proxyPaused = false;
                watchWhileHeld();
                return;
            }
        }
        sendGathered();
        return;
    }
    endProxied();
}

void Connection::sendGathered() {
    Rare& r = *rareIf();
    Rare::ProxyRewrite& rw = *r.proxyRewrite;
    rw.active = false;
    r.proxyFields.clear(); // merged into rw.fields already
    // A HEAD's answer keeps the upstream's length; every other goes with the body it has now.
    onUpstreamHeadBodyFollows(rw.status, rw.fields, r.proxyHead ? rw.length : rw.body.size());
    if (!rw.body.empty()) onUpstreamBody(rw.body);
    endRewrite(rw);
    endProxied();
}

void Connection::resumeAnswer() {
    if (closed_ || !holding()) return;
    Rare& r = *rareIf();
    const std::shared_ptr<const Snapshot> snap = std::move(r.pausedSnapshot); // outlives `paused`
    const std::shared_ptr<serve::Paused> paused = std::move(r.paused);
    Rare::ProxyRewrite& rw = *r.proxyRewrite;
    auto& pr = r.proxyRecord;
    rules::PausedMessage answer;
    rules::BreakpointDecision::Abort how = rules::BreakpointDecision::Abort::Reset;
    std::string originalBody; // the record keeps it only with capture
    if (!serve::settleUpstreamAnswer(*paused, answer, how, pr.ruleNames, pr.originalResponseFields,
                                     cap() ? pr.originalResponseBody : originalBody)) {
        endRewrite(rw);
        r.proxyKeep = false;
        finishProxied(how == rules::BreakpointDecision::Abort::Close
                          ? "closed without an answer (breakpoint aborted)"
                          : "connection reset (breakpoint aborted)");
        closeAfterWrite_ = true;
        if (how == rules::BreakpointDecision::Abort::Reset) { // as Fate::Drop (serialize): RST, not FIN
            resetAfterWrite_ = true;
            linger l{1, 0};
            ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        phase_ = Phase::Write;
        if (!writeWaiting_) drive();
        return;
    }
    rw.status = answer.status;
    rw.fields.clear();
    for (const auto& [name, value] : answer.headers) {
        rw.fields.append(name);
        rw.fields.append(": ");
        rw.fields.append(value);
        rw.fields.append("\r\n");
    }
    rw.body = std::move(answer.body);
    sendGathered();
}

// The upstream's answer has gone out whole (or into out_): the exchange ends.
void Connection::endProxied() {
    Rare& r = *rareIf();
    if (r.proxyChunked && !r.proxyHead) {
        if (!out_.allocated()) out_ = worker_.buffers().acquire();
        out_.append("0\r\n");
        out_.append(r.proxyTrailers); // RFC 9112 §7.1.2: the trailer section of the last chunk
        out_.append("\r\n");
    }
    auto done = std::move(r.proxy); // the exchange is finished; released when this returns
    r.proxyPaused = false;
    finishProxied({});
    if (!r.proxyKeep) closeAfterWrite_ = true;
    phase_ = Phase::Write;
    if (!writeWaiting_) drive();
}

void Connection::onUpstreamUpgrade(std::string_view fields, client::UpstreamSocket upstream,
                                   client::SslPtr upstreamSsl, std::string_view leftover) {
    // The upstream accepted the WebSocket upgrade: the 101 goes to the client and both sockets
    // become a tunnel (proxy/tunnel.h); this object is finished, as after startWebSocket.
    Rare& r = *rareIf();
    auto done = std::move(r.proxy);
    r.proxyRules.clear(); // a 101 or a tunnel's 200: no response-stage rules
    r.proxyRulesSnapshot.reset();
    std::string toClient(out_.allocated() ? out_.unread() : std::string_view());
    if (r.proxyConnect) {
        startConnectTunnel(std::move(toClient), std::move(upstream));
        return;
    }
    toClient.append("HTTP/1.1 101 Switching Protocols\r\n");
    proxy::mergeResponseFields(
        fields, r.proxyFields,
        [&](std::string_view name, std::string_view value) {
            toClient.append(name);
            toClient.append(": ");
            toClient.append(value);
            toClient.append("\r\n");
        },
        r.proxyTransparent);
    toClient.append("Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    r.proxyRecord.status = 101;
    if (cap()) {
        r.proxyRecord.upstreamByteNs = capture::nowNs();
        std::string_view head = std::string_view(toClient).substr(toClient.find("HTTP/1.1 101"));
        r.proxyRecord.responseHead.assign(head.substr(0, head.find("\r\n\r\n") + 2));
    }
    capture::WsCapturePtr wsCapture;
    finishProxied({}, cap() ? &wsCapture : nullptr);
    // RFC 7692 §5: RSV1 marks compressed messages once the upstream accepted permessage-deflate.
    bool deflate = false;
    if (wsCapture)
        http::forEachFieldLine(fields, [&](std::string_view name, std::string_view value) {
            if (!http::iequals(name, "sec-websocket-extensions")) return;
            std::string v(value);
            for (char& c : v)
                c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
            deflate = deflate || v.find("permessage-deflate") != std::string::npos;
        });
    proxy::startTunnel(worker_, std::move(socket_), ssl(), std::move(upstream), upstreamSsl.release(),
                       toClient, leftover, in_.allocated() ? in_.unread() : std::string_view(),
                       std::move(wsCapture), deflate);
    if (extra_) extra_->ssl = nullptr;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    releaseBuffers();
}

// A forward proxy's CONNECT reached its host (proxy::startConnect): the 200 goes to the client and
// both sockets become a tunnel of raw bytes; with capture on, its record counts them.
void Connection::startConnectTunnel(std::string toClient, client::UpstreamSocket upstream) {
    Rare& r = *rareIf();
    const std::size_t headAt = toClient.size();
    toClient.append("HTTP/1.1 200 Connection established\r\n\r\n"); // RFC 9110 §9.3.6: no content
    r.proxyRecord.status = 200;
    if (cap()) {
        r.proxyRecord.upstreamByteNs = capture::nowNs();
        r.proxyRecord.responseHead.assign(
            std::string_view(toClient).substr(headAt, toClient.size() - headAt - 2));
    }
    capture::WsCapturePtr tunnelCapture;
    finishProxied({}, cap() ? &tunnelCapture : nullptr);
    if (tunnelCapture) tunnelCapture->record.protocol = capture::Protocol::Http1;
    proxy::startTunnel(worker_, std::move(socket_), ssl(), std::move(upstream), nullptr, toClient, {},
                       in_.allocated() ? in_.unread() : std::string_view(), std::move(tunnelCapture), false,
                       true);
    if (extra_) extra_->ssl = nullptr;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    releaseBuffers();
}

// serve() asks whether this CONNECT is intercepted: the listener's forward_proxy.intercept, and the
// host not in its tls_passthrough list. The handshake starts once the request is done (drive).
bool Connection::intercept(const http::Request& req, std::string_view host, std::uint16_t port) {
    (void)req;
    const Snapshot& snap = worker_.snapshot();
    auto it = snap.intercept.find(localPort_);
    if (it == snap.intercept.end() || proxy::matchesHostGlob(host, it->second.options.tlsPassthrough))
        return false;
    const std::string authority = proxy::authorityText(host, port);
    if (it->second.tls->refused(authority)) return false; // its client refused our certificate before
    Rare& r = rare();
    r.interceptHost.assign(host);
    r.interceptPort = port;
    return true;
}

// The intercepted CONNECT's 200 goes out (with whatever was queued before it), then the socket and
// the bytes the client sent after the CONNECT (its ClientHello, often) go to the TLS handshake;
// this object is finished, as after startH2.
void Connection::startIntercept() {
    Rare& r = *rareIf();
    std::string toClient(out_.allocated() ? out_.unread() : std::string_view());
    toClient.append("HTTP/1.1 200 Connection established\r\n\r\n");
    std::string pending(in_.allocated() ? in_.unread() : std::string_view());
    const std::string host = std::move(r.interceptHost);
    const std::uint16_t port = r.interceptPort;
    r.interceptPort = 0;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    releaseBuffers();
    startIntercepted(worker_, std::move(socket_), localPort_, host, port, std::move(toClient),
                     std::move(pending));
}

void Connection::onUpstreamConnected() {
    if (cap()) rareIf()->proxyRecord.upstreamNs = capture::nowNs();
}

void Connection::onUpstreamConnection(std::int64_t resolvedNs, std::int64_t tcpConnectedNs,
                                      std::string_view address) {
    if (!cap()) return;
    auto& pr = rareIf()->proxyRecord;
    pr.resolvedNs = resolvedNs;
    pr.tcpNs = tcpConnectedNs;
    pr.upstreamAddress.assign(address);
}

void Connection::onUpstreamTls(std::string_view version, std::string_view alpn) {
    if (!cap()) return;
    auto& pr = rareIf()->proxyRecord;
    pr.upstreamTls.assign(version);
    pr.upstreamAlpn.assign(alpn);
}

void Connection::onRequestSent() {
    if (cap()) rareIf()->proxyRecord.sentNs = capture::nowNs();
}

void Connection::onUpstreamTrailers(std::string_view fields) {
    // Only a chunked body has room for them; fields that would change the framing never pass.
    http::forEachFieldLine(fields, [&](std::string_view name, std::string_view value) {
        if (http::iequals(name, "content-length") || http::iequals(name, "transfer-encoding")) return;
        std::string& t = rareIf()->proxyTrailers;
        t.append(name);
        t.append(": ");
        t.append(value);
        t.append("\r\n");
    });
}

void Connection::onUpstreamError(int status, const std::string& message) {
    Rare& r = *rareIf();
    stopUpload();
    auto done = std::move(r.proxy);
    r.proxyPaused = false;
    if (r.proxyRewrite && r.proxyRewrite->active && status == 0) status = 502; // nothing was sent yet
    if (status == 0 || r.proxyHeadSent) {
        if (r.proxyRewrite) endRewrite(*r.proxyRewrite);
        finishProxied(message);
        abort(); // mid-body: the promised framing cannot be kept
        return;
    }
    answerProxied(status, message);
}

// A proxied exchange's answer made here (502/504 from the upstream's side, 400/408/413 from the
// request body's): `status` with `message` (or the default error body), then what the exchange's
// end does (the record, the write; a close when the request body was left unread).
void Connection::answerProxied(int status, const std::string& message) {
    Rare& r = *rareIf();
    r.proxyRules.clear(); // response-stage rules change what an action or upstream answered
    r.proxyRulesSnapshot.reset();
    if (r.proxyRewrite) endRewrite(*r.proxyRewrite); // a held head is not sent: this answers instead
    http::Response& res = worker_.response();
    res.reset();
    res.clearRuleState();
    handlers::errorResponse(status, res);
    if (!message.empty())
        res.setBody(std::to_string(status) + " " + std::string(http::reasonPhrase(status)) + ": " + message +
                    "\n");
    http::Request req;
    req.keepAlive = r.proxyKeep;
    req.versionMinor = r.proxyMinor;
    req.method = r.proxyHead ? http::Method::Head : http::Method::Get;
    const std::size_t headStart = out_.allocated() ? out_.size() : 0;
    serialize(req, res);
    r.proxyRecord.status = status;
    r.proxyRecord.responseBytes = res.bodyLength();
    if (cap()) {
        std::string_view sent = out_.unread().substr(headStart);
        r.proxyRecord.responseHead.assign(sent.substr(0, sent.find("\r\n\r\n") + 2));
        r.proxyRecord.responseBody.assign(res.bodyView());
    }
    finishProxied({});
    phase_ = Phase::Write;
    if (!writeWaiting_) drive();
}

// Writes what the proxied response queued. False (the exchange pauses) while the client is slower
// than the upstream and the output buffer is past its mark.
bool Connection::pumpProxy() {
    constexpr std::size_t kHighWater = 256 * 1024;
    switch (flushNow()) {
    case Flush::Failed:
        abort();
        return false;
    case Flush::Blocked:
        waitWrite();
        if (out_.size() >= kHighWater) {
            rareIf()->proxyPaused = true;
            return false;
        }
        return true;
    case Flush::Paced: // a rule's throttle: the timer drives the rest
        waitPace();
        if (out_.size() >= kHighWater) {
            rareIf()->proxyPaused = true;
            return false;
        }
        return true;
    case Flush::Done:
        break;
    }
    return true;
}

} // namespace portico::server

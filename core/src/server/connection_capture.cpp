// The capture side of the HTTP/1.1 connection, kept apart from its state machine: building the
// record of an exchange from what the connection has, statistics and Server-Timing.
#include "capture/hooks.h"
#include "server/connection.h"
#include "server/worker.h"
#include "ws/upgrade.h"

namespace portico::server {

void Connection::captureStart() {
    const Snapshot& snap = worker_.snapshot();
    extra().cap = capture::beginConnection(worker_.recorder(), *snap.config,
                                           capture::peerName(socket_.native_handle()));
    if (forwardProxy_ && cap()) capture::askClientProcess(*cap(), socket_.native_handle());
}

void Connection::addServerTiming(http::Response& res) {
    std::string& value = worker_.timingScratch();
    const auto start =
        std::chrono::duration_cast<std::chrono::nanoseconds>(requestStart_.time_since_epoch()).count();
    capture::serverTimingValue(start, cap()->headNs, cap()->routeNs, capture::nowNs(), value);
    res.addHeader("Server-Timing", value);
}

void Connection::captureExchange(const http::Request& req, const http::Response& res, std::size_t headStart,
                                 std::string_view error) {
    capture::ConnCapture& cc = *cap();
    const std::int64_t start =
        std::chrono::duration_cast<std::chrono::nanoseconds>(requestStart_.time_since_epoch()).count();
    const std::int64_t now = capture::nowNs();
    capture::recordStats(*cc.rec, cc.labels,
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - start)) +
                             static_cast<std::uint64_t>(res.delay.count()),
                         res.sendsNothing() ? 0 : res.status);
    capture::ExchangeInput in;
    in.protocol = capture::Protocol::Http1;
    in.httpVersion = static_cast<std::uint8_t>(10 + req.versionMinor);
    in.streamId = ++cc.requests;
    in.ssl = ssl();
    in.localPort = localPort_;
    // A dropped exchange has no response (no status, no head), as on HTTP/2.
    const bool dropped = res.sendsNothing();
    in.req = &req;
    in.res = dropped ? nullptr : &res;
    in.rules = res.ruleNames;
    in.originalRequestFields = res.originalRequestFields;
    in.originalResponseFields = res.originalResponseFields;
    in.originalRequestBody = res.originalRequestBody;
    in.originalResponseBody = res.originalResponseBody;
    if (!dropped && out_.allocated() && out_.size() > headStart) {
        std::string_view sent = out_.unread().substr(headStart);
        auto end = sent.find("\r\n\r\n");
        in.responseHead = sent.substr(0, end == std::string_view::npos ? sent.size() : end + 2);
    }
    in.requestHeadBytes = cc.headBytes;
    in.requestBodySize = req.body.size();
    const bool noBody =
        res.status < 200 || res.status == 204 || res.status == 304 || req.method == http::Method::Head;
    in.responseHasBody = !noBody && !dropped;
    in.responseBodySize = in.responseHasBody ? res.bodyLength() : 0;
    in.error = res.fate == http::Response::Fate::Drop ? std::string_view("connection reset (fault injection)")
               : res.fate == http::Response::Fate::Silent
                   ? std::string_view("connection closed without an answer (rule fail: close)")
               : res.fate == http::Response::Fate::Hold
                   ? std::string_view("no answer, held until the client gave up (rule fail: timeout)")
                   : error;
    in.labels = cc.labels;
    in.requestStartNs = start;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestHeaders)] = cc.headNs >= 0 ? cc.headNs : start;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestBodyDone)] = cc.bodyDoneNs;
    in.phases[static_cast<std::size_t>(capture::Phase::RouteMatched)] = cc.routeNs;
    if (dropped) {
        // Final now: nothing will be written for it. Published at once, not left pending with the
        // answers queued before it, whose completion ("connection closed before the response was
        // sent" when the reset comes first) would replace its error. Those are published first
        // (the ring's order) and completed when written.
        capture::h1Yield(cc);
        if (capture::writeRecord(cc, 0, in)) cc.rec->publish(1);
    } else if (rareIf() && rareIf()->upgrade && res.status == 101) {
        // A WebSocket session: its record starts here and is published by the session.
        rareIf()->upgrade->capture = capture::wsBegin(cc, in);
    } else {
        capture::h1Serialized(cc, in);
    }
    cc.resetRequest();
    if (closed_) capture::h1Closed(cc); // nothing more will be written
}

// A proxied exchange ended (response handed over, an error answered, or aborted mid-body): its
// access log line and, with capture on, its record with the upstream phases. The request's views
// are gone by now, so both come from the copy forwardTo made.
void Connection::finishProxied(std::string_view error, capture::WsCapturePtr* ws) {
    const Rare::ProxyRecord& pr = rareIf()->proxyRecord;
    const bool noBody = rareIf()->proxyHead || pr.status < 200 || pr.status == 204 || pr.status == 304;
    if (AccessLogger* log = worker_.accessLog()) {
        AccessRecord a;
        a.time = std::chrono::system_clock::now();
        boost::system::error_code ec;
        auto remote = socket_.remote_endpoint(ec);
        if (!ec) a.client = remote.address().to_string();
        a.method = pr.method.empty() ? "-" : pr.method;
        a.target = pr.target.empty() ? "-" : pr.target;
        a.host = pr.host;
        a.referer = pr.referer;
        a.userAgent = pr.userAgent;
        a.versionMinor = rareIf()->proxyMinor;
        a.status = pr.status;
        a.bytes = noBody ? 0 : pr.responseBytes;
        a.durationNs =
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - requestStart_).count();
        log->push(std::move(a));
    }
    if (!cap()) return;
    capture::ConnCapture& cc = *cap();
    const std::int64_t start =
        std::chrono::duration_cast<std::chrono::nanoseconds>(requestStart_.time_since_epoch()).count();
    const std::int64_t now = capture::nowNs();
    capture::recordStats(*cc.rec, cc.labels,
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - start)), pr.status);
    std::vector<http::Header> headers;
    headers.reserve(pr.headers.size());
    for (const auto& [name, value] : pr.headers)
        headers.push_back({name, value});
    http::Request req;
    req.methodToken = pr.method;
    req.target = pr.target;
    req.host = pr.host;
    req.headers = headers;
    req.body = pr.body;
    http::Response res;
    res.status = pr.status;
    res.setBody(pr.responseBody);
    capture::ExchangeInput in;
    in.protocol = capture::Protocol::Http1;
    in.httpVersion = static_cast<std::uint8_t>(10 + rareIf()->proxyMinor);
    in.streamId = ++cc.requests;
    in.ssl = ssl();
    in.localPort = localPort_;
    in.req = &req;
    in.res = pr.status ? &res : nullptr;
    in.responseHead = pr.responseHead;
    in.requestHeadBytes = cc.headBytes;
    in.requestBodySize = pr.bodySize;
    in.responseHasBody = !noBody;
    in.responseBodySize = noBody ? 0 : pr.responseBytes;
    in.error = error;
    in.labels = cc.labels;
    in.requestStartNs = start;
    auto phase = [&](capture::Phase p) -> std::int64_t& { return in.phases[static_cast<std::size_t>(p)]; };
    phase(capture::Phase::RequestHeaders) = cc.headNs >= 0 ? cc.headNs : start;
    phase(capture::Phase::RequestBodyDone) = cc.bodyDoneNs;
    phase(capture::Phase::RouteMatched) = cc.routeNs;
    phase(capture::Phase::UpstreamResolved) = pr.resolvedNs;
    phase(capture::Phase::UpstreamTcpConnected) = pr.tcpNs;
    phase(capture::Phase::UpstreamConnected) = pr.upstreamNs;
    phase(capture::Phase::UpstreamRequestSent) = pr.sentNs;
    in.upstreamAddress = pr.upstreamAddress;
    in.upstreamTlsVersion = pr.upstreamTls;
    in.upstreamAlpn = pr.upstreamAlpn;
    in.rules = pr.ruleNames;
    in.originalRequestFields = pr.originalRequestFields;
    in.originalResponseFields = pr.originalResponseFields;
    in.originalRequestBody = pr.originalRequestBody;
    in.originalResponseBody = pr.originalResponseBody;
    // A forward proxy's own requests: absolute-form (RFC 9112 §3.2.2) and CONNECT tunnels.
    if (forwardProxy_ && !origin()) {
        if (http::iequals(pr.method, "CONNECT"))
            in.source = capture::Source::Tunnel;
        else if (!pr.target.empty() && pr.target.front() != '/' && pr.target != "*")
            in.source = capture::Source::Forward;
    }
    phase(capture::Phase::UpstreamFirstByte) = pr.upstreamByteNs;
    phase(capture::Phase::ResponseFirstByte) = pr.upstreamByteNs;
    if (ws) {
        // The tunnel publishes it (open, then closed with its messages), as a local session does.
        *ws = capture::wsBegin(cc, in);
        cc.resetRequest();
        return;
    }
    if (error.empty()) phase(capture::Phase::ResponseDone) = now;
    // Records of earlier pipelined responses may still wait for their flush: this one goes after.
    if (cc.pending)
        capture::h1Serialized(cc, in);
    else if (capture::writeRecord(cc, 0, in))
        cc.rec->publish(1);
    cc.resetRequest();
}

} // namespace portico::server

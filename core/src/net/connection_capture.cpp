// The capture side of the HTTP/1.1 connection, kept apart from its state machine: building the
// record of an exchange from what the connection has, statistics and Server-Timing.
#include "capture/hooks.h"
#include "net/connection.h"
#include "net/worker.h"
#include "ws/upgrade.h"

namespace portico::net {

void Connection::captureStart() {
    const Snapshot& snap = worker_.snapshot();
    cap_ = capture::beginConnection(worker_.recorder(), *snap.config,
                                    capture::peerName(socket_.native_handle()));
}

void Connection::addServerTiming(http::Response& res) {
    std::string& value = worker_.timingScratch();
    const auto start =
        std::chrono::duration_cast<std::chrono::nanoseconds>(requestStart_.time_since_epoch()).count();
    capture::serverTimingValue(start, cap_->headNs, cap_->routeNs, capture::nowNs(), value);
    res.addHeader("Server-Timing", value);
}

void Connection::captureExchange(const http::Request& req, const http::Response& res, std::size_t headStart,
                                 std::string_view error) {
    capture::ConnCapture& cc = *cap_;
    const std::int64_t start =
        std::chrono::duration_cast<std::chrono::nanoseconds>(requestStart_.time_since_epoch()).count();
    const std::int64_t now = capture::nowNs();
    capture::recordStats(*cc.rec, cc.labels,
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - start)) +
                             static_cast<std::uint64_t>(res.delay.count()),
                         res.fate == http::Response::Fate::Drop ? 0 : res.status);
    capture::ExchangeInput in;
    in.protocol = capture::Protocol::Http1;
    in.httpVersion = static_cast<std::uint8_t>(10 + req.versionMinor);
    in.streamId = ++cc.requests;
    in.ssl = ssl_;
    in.localPort = localPort_;
    in.req = &req;
    in.res = &res;
    if (res.fate != http::Response::Fate::Drop && out_.allocated() && out_.size() > headStart) {
        std::string_view sent = out_.unread().substr(headStart);
        auto end = sent.find("\r\n\r\n");
        in.responseHead = sent.substr(0, end == std::string_view::npos ? sent.size() : end + 2);
    }
    in.requestHeadBytes = cc.headBytes;
    in.requestBodySize = req.body.size();
    const bool noBody =
        res.status < 200 || res.status == 204 || res.status == 304 || req.method == http::Method::Head;
    in.responseHasBody = !noBody;
    in.responseBodySize = noBody ? 0 : res.bodyLength();
    in.error = res.fate == http::Response::Fate::Drop ? std::string_view("connection reset (fault injection)")
                                                      : error;
    in.labels = cc.labels;
    in.requestStartNs = start;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestHeaders)] = cc.headNs >= 0 ? cc.headNs : start;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestBodyDone)] = cc.bodyDoneNs;
    in.phases[static_cast<std::size_t>(capture::Phase::RouteMatched)] = cc.routeNs;
    if (rare_ && rare_->upgrade && res.status == 101) {
        // A WebSocket session: its record starts here and is published by the session.
        rare_->upgrade->capture = capture::wsBegin(cc, in);
    } else {
        capture::h1Serialized(cc, in);
    }
    cc.resetRequest();
    if (closed_) capture::h1Closed(cc); // fault injection reset the connection
}

} // namespace portico::net

// Capture of HTTP/2 exchanges: the statistics reading and the record of each stream.
#include "server/h2_connection.h"
#include "server/h2_stream.h"

#include "capture/hooks.h"
#include "server/worker.h"

#include <nghttp2/nghttp2.h>

namespace portico::server {

std::int64_t H2Connection::captureStats(Stream& s) {
    const std::int64_t now = capture::nowNs();
    const std::int64_t start = s.capHeadNs >= 0 ? s.capHeadNs : now;
    capture::recordStats(*cap_->rec, s.capLabels,
                         static_cast<std::uint64_t>(now - start) +
                             static_cast<std::uint64_t>(s.res.delay.count()),
                         s.res.sendsNothing() ? 0 : s.res.status);
    return now;
}

void H2Connection::captureStream(Stream& s, std::string_view error) {
    if (s.capHeadNs < 0) return; // already captured, or began before capture
    std::vector<http::Header>& headers = worker_.h2Headers();
    std::vector<http::Header>& trailers = worker_.h2Trailers();
    headers.clear();
    trailers.clear();
    // The request's HPACK-decoded size: the pseudo-header fields (kept apart, in Stream) and the rest.
    std::uint64_t headBytes = 0;
    if (!s.method.empty()) headBytes += 7 + s.method.size();
    if (!s.scheme.empty()) headBytes += 7 + s.scheme.size();
    if (!s.authority.empty()) headBytes += 10 + s.authority.size();
    if (!s.path.empty()) headBytes += 5 + s.path.size();
    for (const auto& f : s.fields) {
        http::Header h{std::string_view(s.arena).substr(f.name, f.nameLen),
                       std::string_view(s.arena).substr(f.value, f.valueLen)};
        (f.trailer ? trailers : headers).push_back(h);
        if (!f.trailer) headBytes += f.nameLen + f.valueLen;
    }
    http::Request req;
    req.headers = headers;
    // A rule changed the request's fields: the record has them as sent on, and the originals.
    if (!s.res.originalRequestFields.empty()) req.headers = s.res.ruledRequestFields;
    req.trailers = trailers;
    req.body = s.capBody;
    capture::ExchangeInput in;
    in.requestHeadBytes = headBytes;
    // "Date: ...\r\n", as submit() sends it; an intercepted origin's head carries its own.
    if (const std::string_view date = worker_.dateLine(); date.size() > 8 && !s.originHead)
        in.h2Date = date.substr(6, date.size() - 8);
    in.protocol = capture::Protocol::Http2;
    in.httpVersion = 20;
    in.streamId = static_cast<std::uint32_t>(s.id);
    in.ssl = ssl_;
    in.localPort = localPort_;
    in.req = &req;
    in.method = s.method;
    in.target = s.path;
    in.authority = s.host.empty() ? std::string_view(s.authority) : std::string_view(s.host);
    in.scheme = s.scheme;
    const ProxySink* proxied = s.proxy.get();
    // A proxied stream has answered only once the upstream's head went out: a call the client
    // cancelled before it is recorded with no status, not the 200 a Response starts with.
    const bool answered = s.dispatched && !s.res.sendsNothing() && (!proxied || proxied->headSent);
    in.res = answered ? &s.res : nullptr;
    in.rules = s.res.ruleNames;
    in.originalRequestFields = s.res.originalRequestFields;
    in.originalResponseFields = s.res.originalResponseFields;
    in.originalRequestBody = s.res.originalRequestBody;
    in.originalResponseBody = s.res.originalResponseBody;
    const bool noBody = s.head || s.res.status < 200 || s.res.status == 204 || s.res.status == 304;
    in.responseHasBody = answered && !noBody;
    in.responseBodySize = in.responseHasBody ? (proxied ? proxied->sentBytes : s.sent) : 0;
    in.requestBodySize = s.capBodySize;
    in.error = s.dispatched && s.res.fate == http::Response::Fate::Drop
                   ? std::string_view("stream reset (fault injection)")
               : s.dispatched && s.res.fate == http::Response::Fate::Silent
                   ? std::string_view("connection closed without an answer (rule fail: close)")
               : s.dispatched && s.res.fate == http::Response::Fate::Hold
                   ? std::string_view("no answer, held until the client gave up (rule fail: timeout)")
               : !error.empty() ? error
               : (!proxied && in.responseHasBody && s.sent < s.res.bodyLength())
                   ? std::string_view("stream closed before the whole body was sent")
                   : std::string_view();
    in.labels = s.capLabels;
    in.requestStartNs = s.capHeadNs;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestHeaders)] = s.capHeadNs;
    in.phases[static_cast<std::size_t>(capture::Phase::RequestBodyDone)] = s.capBodyNs;
    in.phases[static_cast<std::size_t>(capture::Phase::RouteMatched)] = s.capRouteNs;
    in.phases[static_cast<std::size_t>(capture::Phase::UpstreamConnected)] = s.capUpstreamNs;
    in.phases[static_cast<std::size_t>(capture::Phase::UpstreamFirstByte)] = s.capUpstreamByteNs;
    if (proxied) {
        in.phases[static_cast<std::size_t>(capture::Phase::UpstreamResolved)] = proxied->capResolvedNs;
        in.phases[static_cast<std::size_t>(capture::Phase::UpstreamTcpConnected)] = proxied->capTcpNs;
        in.phases[static_cast<std::size_t>(capture::Phase::UpstreamRequestSent)] = proxied->capSentNs;
        in.upstreamAddress = proxied->capAddress;
        in.upstreamTlsVersion = proxied->capTls;
        in.upstreamAlpn = proxied->capAlpn;
    }
    if (answered) {
        in.phases[static_cast<std::size_t>(capture::Phase::ResponseFirstByte)] = s.capFirstByteNs;
        if (error.empty())
            in.phases[static_cast<std::size_t>(capture::Phase::ResponseDone)] = capture::nowNs();
    }
    if (s.capGrpc) {
        in.protocol = capture::Protocol::Grpc;
        capture::writeGrpcRecord(*cap_, in, *s.capGrpc, proxied ? std::string_view(proxied->trailers) : "");
    } else if (capture::writeRecord(*cap_, 0, in)) {
        cap_->rec->publish(1);
    }
    s.capHeadNs = -1;
}

} // namespace portico::server

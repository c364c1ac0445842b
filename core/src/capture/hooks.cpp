// Filling ring slots from a connection's view of an exchange; HTTP/1.1 publish/complete batching.
#include "capture/hooks.h"

#include "capture/process_lookup.h"

#include "tls/alpn.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <arpa/inet.h>
#include <charconv>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::capture {

std::string_view phaseName(Phase p) {
    static constexpr std::string_view kNames[] = {
        "accepted",      "tls_done",           "request_headers",        "request_body_done",
        "route_matched", "upstream_connected", "upstream_first_byte",    "response_first_byte",
        "response_done", "upstream_resolved",  "upstream_tcp_connected", "upstream_request_sent"};
    static_assert(std::size(kNames) == kPhaseCount);
    auto i = static_cast<std::size_t>(p);
    return i < std::size(kNames) ? kNames[i] : std::string_view("?");
}

namespace {
constexpr std::string_view kSourceNames[] = {"server", "forward", "intercepted", "tunnel"};
}

std::string_view sourceName(Source s) {
    auto i = static_cast<std::size_t>(s);
    return i < std::size(kSourceNames) ? kSourceNames[i] : std::string_view("server");
}

bool sourceFromName(std::string_view name, Source& out) {
    for (std::size_t i = 0; i < std::size(kSourceNames); ++i)
        if (kSourceNames[i] == name) {
            out = static_cast<Source>(i);
            return true;
        }
    return false;
}

RouteLabels labelsFor(const config::Vhost& vhost, const routing::RouteResult& rr) {
    RouteLabels l;
    l.vhost = vhost.names.empty() ? std::string_view("*") : std::string_view(vhost.names.front());
    using Kind = routing::RouteResult::Kind;
    if (rr.kind == Kind::Matched)
        l.route = !rr.route                ? std::string_view("(route)")
                  : rr.route->name.empty() ? std::string_view(rr.route->spec)
                                           : std::string_view(rr.route->name);
    else
        l.route = rr.kind == Kind::Fallback           ? "(static)"
                  : rr.kind == Kind::NotFound         ? "(no route)"
                  : rr.kind == Kind::MethodNotAllowed ? "(method not allowed)"
                                                      : "(options)";
    return l;
}

std::unique_ptr<ConnCapture> beginConnection(Recorder& rec, const config::Config& cfg, std::string client) {
    if (!cfg.capture.enabled) return nullptr;
    rec.ensureRings(cfg.capture.ringRecordsPerWorker(cfg.workerCount()), cfg.capture.recordBytes);
    auto cc = std::make_unique<ConnCapture>();
    cc->rec = &rec;
    cc->cfg = {cfg.capture.bodyBytes, cfg.capture.recordBytes, cfg.capture.wsMessages};
    cc->serverTiming = cfg.capture.serverTiming;
    cc->connectionId = rec.newConnectionId();
    cc->client = std::move(client);
    cc->acceptedNs = nowNs();
    return cc;
}

void askClientProcess(ConnCapture& cc, int fd) {
    if (ProcessLookup* p = cc.rec->processLookup()) p->request(cc.connectionId, fd);
}

std::string peerName(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
    char host[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
    }
    if (ss.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
    }
    return {};
}

void recordStats(Recorder& rec, const RouteLabels& labels, std::uint64_t latencyNs, int status) {
    const bool error = status == 0 || status >= 500;
    const bool clientError = status >= 400 && status < 500;
    rec.stats.overall.record(latencyNs, error, clientError);
    std::string_view vhost = labels.vhost.empty() ? std::string_view("(none)") : labels.vhost;
    std::string_view route = labels.route.empty() ? std::string_view("(refused)") : labels.route;
    rec.stats.group(vhost, route)->hist.record(latencyNs, error, clientError);
}

using http::forEachFieldLine;

namespace {
void fillSlot(ConnCapture& cc, SlotHead* h, char* payload, std::size_t cap, const ExchangeInput& in) {
    h->connectionId = cc.connectionId;
    h->streamId = in.streamId;
    h->protocol = static_cast<std::uint8_t>(in.protocol);
    h->httpVersion = in.httpVersion;
    h->localPort = in.localPort;
    h->source = static_cast<std::uint8_t>(in.source != Source::Server ? in.source : cc.source);
    h->status = in.res ? in.res->status : 0;
    h->startedUnixNs = in.requestStartNs >= 0 ? unixNsAt(in.requestStartNs) : unixNowNs();
    for (std::size_t i = 0; i < kPhaseCount; ++i)
        h->phases[i] = in.phases[i];
    if (h->phases[0] < 0) h->phases[0] = cc.acceptedNs;
    if (h->phases[1] < 0) h->phases[1] = cc.tlsDoneNs;
    h->requestBodySize = in.requestBodySize;
    h->responseBodySize = in.responseBodySize;
    h->requestHeadersSize = in.requestHeadBytes;
    h->responseHeadersSize = in.responseHead.size();

    const http::Request* req = in.req;
    SlotWriter w(h, payload, cap);
    const char* tlsVersion = in.ssl ? SSL_get_version(in.ssl) : "";
    w.str(tlsVersion ? tlsVersion : "");
    w.str(in.ssl ? tls::alpnOf(in.ssl) : std::string_view());
    w.str(in.upstreamAddress);
    w.str(in.upstreamTlsVersion);
    w.str(in.upstreamAlpn);
    w.str(cc.client);
    w.str(in.labels.vhost);
    w.str(in.labels.route);
    w.str(!in.method.empty() ? in.method : req ? req->methodToken : std::string_view());
    w.str(!in.scheme.empty() ? in.scheme : in.ssl ? std::string_view("https") : std::string_view("http"));
    w.str(!in.authority.empty() ? in.authority : req ? req->host : std::string_view());
    w.str(!in.target.empty() ? in.target : req ? req->target : std::string_view(), 8192);
    w.str(in.error);
    std::size_t list = w.beginList();
    if (req)
        for (const auto& f : req->headers)
            w.pair(list, f.name, f.value);
    list = w.beginList();
    if (req)
        for (const auto& f : req->trailers)
            w.pair(list, f.name, f.value);
    list = w.beginList();
    if (!in.responseHead.empty()) {
        std::string_view head = in.responseHead;
        auto eol = head.find("\r\n");
        forEachFieldLine(eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2),
                         [&](std::string_view n, std::string_view v) { w.pair(list, n, v); });
    } else if (in.res) {
        // HTTP/2: what H2Connection::submit() sends, in its order: names lower-cased, the
        // connection-specific fields left out (RFC 9113 §8.2.2). The size is the HPACK-decoded
        // one: name and value bytes of every field.
        std::uint64_t size = 0;
        static thread_local std::string lowered; // keeps its capacity: no allocation per record
        auto add = [&](std::string_view n, std::string_view v) {
            lowered.assign(n);
            for (char& c : lowered)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            if (lowered == "connection" || lowered == "keep-alive" || lowered == "proxy-connection" ||
                lowered == "transfer-encoding" || lowered == "upgrade")
                return;
            size += lowered.size() + v.size();
            w.pair(list, lowered, v);
        };
        char status[4] = {};
        std::to_chars(status, status + 3, in.res->status);
        add(":status", std::string_view(status, 3));
        if (!in.h2Date.empty()) add("date", in.h2Date);
        if (in.res->serverHeader) add("server", "Portico/" PORTICO_VERSION);
        forEachFieldLine(in.res->fieldBlock(), add);
        if (in.responseHasBody) {
            char len[24];
            auto r = std::to_chars(len, len + sizeof len, in.res->bodyLength());
            add("content-length", std::string_view(len, static_cast<std::size_t>(r.ptr - len)));
        }
        h->responseHeadersSize = size;
    }
    // After the fields as sent, which matter more; an original block is kept whole or left out
    // (kHeadersTruncated), with room left for the two body lengths that follow.
    w.str(in.rules);
    for (std::string_view original : {in.originalRequestFields, in.originalResponseFields}) {
        if (original.size() + 8 > w.room()) {
            if (!original.empty()) h->flags |= kHeadersTruncated;
            original = {};
        }
        w.str(original);
    }
    const std::size_t bodyCap = cc.cfg.bodyBytes;
    // The bodies before a replace_body come last, after the bodies as sent, which matter more; only
    // a record that has one keeps room for their two lengths (8 bytes).
    const bool originals = !in.originalRequestBody.empty() || !in.originalResponseBody.empty();
    const std::size_t after = originals ? 8 : 0;
    // Request body prefix, then response body prefix; each leaves room for the other's length.
    const std::string_view reqBody = req ? req->body : std::string_view();
    w.str(reqBody, std::min<std::size_t>(bodyCap, w.room() > 8 + after ? w.room() - 8 - after : 0));
    std::size_t want = 0;
    if (in.res && in.responseHasBody)
        want = static_cast<std::size_t>(std::min<std::uint64_t>(bodyCap, in.res->bodyLength()));
    if (originals) want = std::min(want, w.room() > after ? w.room() - after : 0);
    if (char* dst = w.bodyInPlace(want)) {
        std::size_t got = 0;
        std::size_t room = std::min(want, w.room());
        if (room && in.res) {
            switch (in.res->bodyKind()) {
            case http::Response::BodyKind::Owned:
            case http::Response::BodyKind::Shared:
                got = std::min(room, in.res->bodyView().size());
                std::memcpy(dst, in.res->bodyView().data(), got);
                break;
            case http::Response::BodyKind::File: {
                ssize_t n = ::pread(in.res->file()->fd, dst, room, static_cast<off_t>(in.res->fileOffset()));
                got = n > 0 ? static_cast<std::size_t>(n) : 0;
                break;
            }
            case http::Response::BodyKind::None:
                break;
            }
        }
        w.commitBody(got);
    }
    if (originals) {
        // Each a prefix of at most capture.body_bytes, the first leaving room for the second's length.
        std::size_t reserve = 4;
        for (const std::string_view original : {in.originalRequestBody, in.originalResponseBody}) {
            const std::size_t keep =
                std::min({original.size(), bodyCap, w.room() > reserve ? w.room() - reserve : 0});
            if (keep < original.size()) h->flags |= kOriginalBodyTruncated;
            w.str(original, keep);
            reserve = 0;
        }
    }
    w.finish();
}
} // namespace

bool writeRecord(ConnCapture& cc, std::size_t k, const ExchangeInput& in) {
    Recorder& rec = *cc.rec;
    SlotHead* h = rec.reserve(k);
    if (!h) return false;
    Ring& ring = *rec.ring();
    fillSlot(cc, h, ring.payload(h), ring.payloadBytes(), in);
    return true;
}

// ---- WebSocket sessions ----

void WsCaptureDeleter::operator()(WsCapture* c) const { delete c; }

namespace {
// An exchange through the same slot encoding as the ring's records (one copy of the field rules),
// into a scratch slot instead of the ring: the start of a record built whole by its session.
Exchange encodedRecord(ConnCapture& cc, const ExchangeInput& in) {
    const std::size_t cap = std::max<std::size_t>(cc.cfg.recordBytes, 1024);
    auto buf = std::make_unique<char[]>(cap);
    SlotHead head{};
    for (auto& ph : head.phases)
        ph = -1;
    fillSlot(cc, &head, buf.get(), cap, in);
    return decodeSlot(head, buf.get());
}
} // namespace

WsCapturePtr wsBegin(ConnCapture& cc, const ExchangeInput& in) {
    // The upgrade exchange as any HTTP/1.1 exchange, then the whole session's record.
    Exchange record = encodedRecord(cc, in);
    WsCapturePtr wc(new WsCapture);
    wc->rec = cc.rec;
    wc->key = cc.rec->newFullKey();
    wc->bodyBytes = cc.cfg.bodyBytes;
    wc->maxMessages = cc.cfg.wsMessages;
    wc->record = std::move(record);
    wc->record.protocol = Protocol::WebSocket;
    wc->record.flags |= kIncomplete;
    return wc;
}

void wsOpened(WsCapture& wc) {
    wc.record.set(Phase::ResponseFirstByte, nowNs());
    auto copy = std::make_unique<Exchange>(wc.record);
    wc.openPublished = wc.rec->publishFull(wc.key, false, std::move(copy));
}

void wsMessage(WsCapture& wc, bool fromClient, std::uint8_t opcode, std::string_view payload,
               std::uint64_t size, bool compressed) {
    ++wc.record.messageCount;
    if (wc.record.messages.size() >= wc.maxMessages) {
        wc.record.flags |= kMessagesTruncated;
        return;
    }
    Message& m = wc.record.messages.emplace_back();
    m.timeNs = nowNs();
    m.fromClient = fromClient;
    m.opcode = opcode;
    m.size = size;
    m.compressed = compressed;
    m.data.assign(payload.substr(0, std::min<std::size_t>(wc.bodyBytes, payload.size())));
}

void wsClosed(WsCapture& wc, std::string_view error) {
    wc.record.set(Phase::ResponseDone, nowNs());
    wc.record.flags &= ~static_cast<std::uint32_t>(kIncomplete);
    if (!error.empty()) wc.record.error = error;
    auto rec = std::make_unique<Exchange>(std::move(wc.record));
    wc.rec->publishFull(wc.key, true, std::move(rec));
}

// ---- a forward proxy's CONNECT ----

WsCapturePtr connectRecord(ConnCapture& cc, std::uint16_t localPort, std::string_view authority,
                           Source source, std::string_view route, std::int64_t startNs) {
    http::Request req;
    req.methodToken = "CONNECT";
    req.target = authority;
    req.host = authority;
    http::Response res;
    res.status = 200;
    ExchangeInput in;
    in.protocol = Protocol::Http1;
    in.httpVersion = 11;
    in.streamId = ++cc.requests;
    in.localPort = localPort;
    in.req = &req;
    in.res = &res;
    in.responseHasBody = false;
    in.responseHead = "HTTP/1.1 200 Connection established\r\n"; // what the session wrote (no fields)
    in.scheme = "http";
    in.labels = {"(forward proxy)", route};
    in.source = source;
    in.requestStartNs = startNs;
    in.phases[static_cast<std::size_t>(Phase::RequestHeaders)] = startNs;
    WsCapturePtr wc = wsBegin(cc, in);
    wc->record.protocol = Protocol::Http1;
    return wc;
}

// ---- gRPC calls ----

namespace {
void grpcKeep(GrpcCapture& gc, bool fromClient, std::uint8_t flag, std::uint64_t size,
              std::string_view prefix, bool cut) {
    ++gc.count;
    if (gc.messages.size() >= gc.maxMessages) return;
    Message& m = gc.messages.emplace_back();
    m.timeNs = nowNs();
    m.fromClient = fromClient;
    m.opcode = flag;
    m.size = size;
    m.data.assign(prefix);
    m.cut = cut;
}
} // namespace

void grpcData(GrpcCapture& gc, bool fromClient, std::string_view bytes) {
    (fromClient ? gc.request : gc.response)
        .feed(bytes, [&](std::uint8_t flag, std::uint32_t length, std::string_view prefix) {
            grpcKeep(gc, fromClient, flag, length, prefix, false);
        });
}

bool writeGrpcRecord(ConnCapture& cc, const ExchangeInput& in, GrpcCapture& gc, std::string_view trailers) {
    auto rec = std::make_unique<Exchange>(encodedRecord(cc, in));
    rec->protocol = Protocol::Grpc;
    for (bool fromClient : {true, false}) {
        const GrpcMessageSplitter& sp = fromClient ? gc.request : gc.response;
        if (sp.midMessage())
            grpcKeep(gc, fromClient, sp.pendingFlag(), sp.pendingLength(), sp.pendingPrefix(), true);
    }
    if (gc.count > gc.messages.size()) rec->flags |= kMessagesTruncated;
    rec->messageCount = gc.count;
    rec->messages = std::move(gc.messages);
    forEachFieldLine(trailers, [&](std::string_view n, std::string_view v) {
        rec->responseTrailers.push_back({std::string(n), std::string(v)});
    });
    return cc.rec->publishFull(cc.rec->newFullKey(), true, std::move(rec));
}

void h1Serialized(ConnCapture& cc, const ExchangeInput& in) {
    if (writeRecord(cc, cc.pending, in)) ++cc.pending;
}

void h1Flushed(ConnCapture& cc) {
    const std::int64_t now = nowNs();
    const std::int64_t first = cc.firstByteNs >= 0 ? cc.firstByteNs : now;
    if (cc.awaitCount) {
        for (std::uint32_t i = 0; i < cc.awaitCount; ++i)
            cc.rec->complete(Completion{cc.awaitFirst + i, first, now, 0});
        cc.awaitCount = 0;
    }
    if (cc.pending) {
        Ring& ring = *cc.rec->ring();
        for (std::uint32_t i = 0; i < cc.pending; ++i) {
            SlotHead* h = ring.pending(i);
            h->phases[static_cast<std::size_t>(Phase::ResponseFirstByte)] = first;
            h->phases[static_cast<std::size_t>(Phase::ResponseDone)] = now;
        }
        cc.rec->publish(cc.pending);
        cc.pending = 0;
    }
    cc.firstByteNs = -1;
}

void h1Yield(ConnCapture& cc) {
    if (!cc.pending) return;
    Ring& ring = *cc.rec->ring();
    for (std::uint32_t i = 0; i < cc.pending; ++i) {
        SlotHead* h = ring.pending(i);
        h->flags |= kIncomplete;
        h->phases[static_cast<std::size_t>(Phase::ResponseFirstByte)] = cc.firstByteNs;
    }
    const std::uint64_t first = cc.rec->nextSeq();
    if (cc.awaitCount && cc.awaitFirst + cc.awaitCount == first) {
        cc.awaitCount += cc.pending;
    } else {
        for (std::uint32_t i = 0; i < cc.awaitCount; ++i)
            cc.rec->complete(Completion{cc.awaitFirst + i, cc.firstByteNs, nowNs(), 0});
        cc.awaitFirst = first;
        cc.awaitCount = cc.pending;
    }
    cc.rec->publish(cc.pending);
    cc.pending = 0;
}

void h1Closed(ConnCapture& cc) {
    // Records whose response never left: published with the error.
    if (cc.pending) {
        Ring& ring = *cc.rec->ring();
        for (std::uint32_t i = 0; i < cc.pending; ++i)
            ring.pending(i)->flags |= kIncomplete;
        cc.rec->publish(cc.pending);
        for (std::uint32_t i = 0; i < cc.pending; ++i)
            cc.rec->complete(Completion{cc.rec->nextSeq() - cc.pending + i, -1, -1, 1});
        cc.pending = 0;
    }
    for (std::uint32_t i = 0; i < cc.awaitCount; ++i)
        cc.rec->complete(Completion{cc.awaitFirst + i, cc.firstByteNs, -1, 1});
    cc.awaitCount = 0;
}

void serverTimingValue(std::int64_t startNs, std::int64_t headNs, std::int64_t routeNs, std::int64_t endNs,
                       std::string& out) {
    out.clear();
    auto add = [&](std::string_view name, std::int64_t from, std::int64_t to) {
        if (from < 0 || to < 0) return;
        if (!out.empty()) out += ", ";
        out += name;
        out += ";dur=";
        // milliseconds with 3 decimals
        const std::int64_t us = std::max<std::int64_t>(0, (to - from) / 1000);
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, us / 1000);
        out.append(buf, r.ptr);
        out += '.';
        const auto frac = static_cast<int>(us % 1000);
        out += static_cast<char>('0' + frac / 100);
        out += static_cast<char>('0' + frac / 10 % 10);
        out += static_cast<char>('0' + frac % 10);
    };
    add("recv", startNs, headNs);
    add("route", headNs, routeNs);
    add("app", routeNs >= 0 ? routeNs : headNs, endNs);
    add("total", startNs, endNs);
}

} // namespace portico::capture

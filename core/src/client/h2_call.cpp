// HTTP/2 client calls, one stream each, on nghttp2's client API (see h2_client.h); the connection
// is in h2_conn.cpp.
#include "client/h2_client_session.h"

#include "client/connect.h"
#include "io/tls_handshake.h"
#include "io/transport.h"
#include "tls/alpn.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <openssl/err.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace portico::client {
namespace h2up {

H2Pools& poolsOf(asio::io_context& io) { return PerContext<H2Pools>::of(io); }

// ---- the call ----

void H2Call::pick() {
    if (cancelled_) return;
    const auto now = Clock::now();
    const auto& ups = action_.upstreams;
    H2Pools& pools = poolsOf(io_);
    const config::Upstream* chosen = &pickUpstream(ups, pools.next[&action_], [&](const config::Upstream& u) {
        auto f = pools.failedUntil.find(key(u, options_));
        return f != pools.failedUntil.end() && f->second > now;
    });
    upstream_ = chosen;
    ++tries_;
    const std::string k = key(*chosen, options_);
    if (pools.http1.contains(k)) {
        toHttp1();
        return;
    }
    auto& conn = pools.conns[k];
    if (!conn || !conn->usable()) conn = std::make_shared<H2Conn>(io_, *chosen, action_, options_, hosts_);
    conn_ = conn;
    conn->attach(shared_from_this());
}

void H2Call::connected() {
    if (!sink_) return;
    if (conn_ && conn_->ssl()) tlsDone(conn_->ssl());
    if (sink_) sink_->onUpstreamConnected();
}

void H2Call::connectionOpened(const H2Conn& conn) {
    if (sink_ && !cancelled_ && conn.tcpConnectedNs() >= 0)
        sink_->onUpstreamConnection(conn.resolvedNs(), conn.tcpConnectedNs(), conn.connectedTo());
}

void H2Call::tlsDone(SSL* ssl) {
    if (sink_ && ssl && !cancelled_) sink_->onUpstreamTls(SSL_get_version(ssl), tls::alpnOf(ssl));
}

void H2Call::submitOn(H2Conn& conn) {
    std::vector<nghttp2_nv> nva(req_.head.size());
    for (std::size_t i = 0; i < req_.head.size(); ++i)
        nva[i] = http2::field({req_.arena.data() + req_.head[i].name, req_.head[i].nameLen},
                              {req_.arena.data() + req_.head[i].value, req_.head[i].valueLen});
    nghttp2_data_provider provider{};
    provider.source.ptr = this;
    provider.read_callback = H2Conn::readBodyCb;
    const bool withBody = req_.bodyFollows || !req_.body.empty() || !req_.trailers.empty();
    std::int32_t id = nghttp2_submit_request(conn.session(), nullptr, nva.data(), nva.size(),
                                             withBody ? &provider : nullptr, this);
    if (id < 0) {
        fail(502, std::string("cannot open a stream: ") + nghttp2_strerror(id));
        return;
    }
    id_ = id;
    conn_ = conn.shared_from_this();
    conn.registerStream(id, shared_from_this()); // kept alive while its stream is open
    armResponse();
    if (!withBody && sink_) sink_->onRequestSent();
    if (req_.grpcTimeout) {
        deadline_.expires_after(*req_.grpcTimeout);
        deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
            if (e || self->done_ || self->cancelled_) return;
            if (self->id_ > 0 && self->conn_ && !self->conn_->dead()) {
                nghttp2_submit_rst_stream(self->conn_->session(), NGHTTP2_FLAG_NONE, self->id_,
                                          NGHTTP2_CANCEL);
                self->conn_->postFlush();
            }
            Sink* sink = self->sink_;
            self->done_ = true;
            self->timer_.cancel();
            self->sink_ = nullptr;
            auto keep = std::move(self->owner_);
            if (!sink) return;
            if (!self->headSent_)
                sink->onUpstreamHeadersOnly(200, "content-type: application/grpc\r\ngrpc-status: 4\r\n"
                                                 "grpc-message: Deadline Exceeded\r\n");
            else
                sink->onUpstreamReset(NGHTTP2_CANCEL, true, self->where() + "grpc-timeout expired");
        });
    }
}

void H2Call::armResponse() {
    timer_.expires_after(action_.responseTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->done_ || self->cancelled_ || self->paused_) return;
        if (self->id_ > 0 && self->conn_ && !self->conn_->dead()) {
            nghttp2_submit_rst_stream(self->conn_->session(), NGHTTP2_FLAG_NONE, self->id_, NGHTTP2_CANCEL);
            self->conn_->postFlush();
        }
        self->fail(self->headSent_ ? 0 : 504, "timed out waiting for the response");
    });
}

void H2Call::connectFailed(int status, const std::string& why) {
    conn_.reset();
    if (cancelled_ || done_) return;
    if (tries_ < action_.upstreams.size() && status == 502) {
        pick();
        return;
    }
    fail(status, why);
}

void H2Call::connectionLost(const std::string& why) {
    if (cancelled_ || done_) return;
    if (retry(req_.idempotent)) return;
    fail(headSent_ ? 0 : 502, "connection lost: " + why);
}

// Once more on a new stream (and connection) when nothing came back and there is no body that
// left already: a connection the upstream closed as we used it (idempotent methods, RFC 9110
// §9.2.2), or a stream it refused unprocessed (any method, RFC 9113 §8.7).
bool H2Call::retry(bool allowed) {
    if (!allowed || headSent_ || req_.bodyFollows || !req_.bodyWasEmpty || tries_ > action_.upstreams.size())
        return false;
    timer_.cancel();
    deadline_.cancel();
    status_ = 0;
    fields_.clear();
    length_.reset();
    conn_.reset();
    id_ = -1;
    pick();
    return true;
}

void H2Call::toHttp1() {
    conn_.reset();
    if (cancelled_ || done_) return;
    if (options_ && options_->http2Only) {
        fail(502, "the TLS upstream did not select h2 with ALPN (HTTP/2 was asked for)");
        return;
    }
    if (req_.grpc || action_.grpc) {
        fail(502, "gRPC needs HTTP/2, and the TLS upstream selected http/1.1 or no protocol with ALPN");
        return;
    }
    Http1Request r;
    r.idempotent = req_.idempotent;
    r.headRequest = req_.headRequest;
    std::string_view method, path, authority, length;
    std::string fields;
    for (const H2Request::Span& sp : req_.head) {
        const std::string_view name(req_.arena.data() + sp.name, sp.nameLen);
        const std::string_view value(req_.arena.data() + sp.value, sp.valueLen);
        if (name == ":method")
            method = value;
        else if (name == ":path")
            path = value;
        else if (name == ":authority")
            authority = value;
        else if (name == "content-length")
            length = value;
        else if (name.front() != ':')
            fields.append(name).append(": ").append(value).append("\r\n");
    }
    r.head.reserve(64 + fields.size());
    r.head.append(method).append(" ").append(path).append(" HTTP/1.1\r\nhost: ").append(authority);
    r.head.append("\r\n").append(fields);
    if (options_ && options_->closeAfter) r.head.append("connection: close\r\n");
    r.streaming = req_.bodyFollows;
    r.chunked = req_.bodyFollows && length.empty(); // RFC 9112 §6.1: a length unknown up front
    if (r.chunked)
        r.head.append("transfer-encoding: chunked\r\n");
    else if (!length.empty())
        r.head.append("content-length: ").append(length).append("\r\n");
    r.head.append("\r\n");
    r.body = req_.body.substr(bodyOffset_);
    r.bodyEnded = bodyEnded_;
    if (r.chunked)
        for (const H2Request::Span& sp : req_.trailers)
            r.trailerBlock.append(req_.trailerArena, sp.name, sp.nameLen)
                .append(": ")
                .append(req_.trailerArena, sp.value, sp.valueLen)
                .append("\r\n");
    Sink* sink = sink_;
    sink_ = nullptr;
    inner_ = Http1Call::startPrepared(io_, std::move(owner_), std::move(snapshot_), action_, std::move(r),
                                      sink, options_, hosts_);
}

long H2Call::readBody(std::uint8_t* buf, std::size_t len, std::uint32_t* flags) {
    const std::size_t n = std::min(len, req_.body.size() - bodyOffset_);
    if (n == 0 && !bodyEnded_) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n) std::memcpy(buf, req_.body.data() + bodyOffset_, n);
    bodyOffset_ += n;
    if (bodyOffset_ == req_.body.size()) {
        req_.body.clear();
        bodyOffset_ = 0;
    }
    if (n && req_.bodyFollows && sink_) sink_->onRequestBodyConsumed(n);
    if (bodyEnded_ && req_.body.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (sink_) sink_->onRequestSent();
        if (!req_.trailers.empty() && conn_) {
            std::vector<nghttp2_nv> nva(req_.trailers.size());
            for (std::size_t i = 0; i < req_.trailers.size(); ++i)
                nva[i] = http2::field(
                    {req_.trailerArena.data() + req_.trailers[i].name, req_.trailers[i].nameLen},
                    {req_.trailerArena.data() + req_.trailers[i].value, req_.trailers[i].valueLen});
            if (nghttp2_submit_trailer(conn_->session(), id_, nva.data(), nva.size()) == 0)
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
    }
    return static_cast<long>(n);
}

void H2Call::requestBody(std::string_view data) {
    if (inner_) {
        inner_->requestBody(data);
        return;
    }
    if (cancelled_ || done_ || bodyEnded_) return;
    req_.body.append(data);
    if (id_ > 0 && deferred_ && conn_ && !conn_->dead()) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
        conn_->postFlush();
    }
}

void H2Call::requestEnd(std::span<const http::Header> trailers) {
    if (inner_) {
        inner_->requestEnd(trailers);
        return;
    }
    if (cancelled_ || done_ || bodyEnded_) return;
    for (const auto& t : trailers)
        if (!hopByHop(t.name) && !http::iequals(t.name, "content-length")) req_.addTrailer(t.name, t.value);
    bodyEnded_ = true;
    if (id_ > 0 && deferred_ && conn_ && !conn_->dead()) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
        conn_->postFlush();
    }
}

void H2Call::onHeader(std::string_view name, std::string_view value) {
    if (!headSent_ && name == ":status") {
        if (!firstByte_ && sink_) sink_->onUpstreamFirstByte();
        firstByte_ = true;
        int s = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
        status_ = (ec == std::errc{} && p == value.data() + value.size() && value.size() == 3) ? s : -1;
        return;
    }
    if (!name.empty() && name.front() == ':') return;
    std::string& out = headSent_ ? responseTrailers_ : fields_;
    if (!headSent_) {
        const bool all = options_ && options_->allFields;
        if (hopByHop(name) && !all) return;
        if (name == "content-length") {
            std::uint64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec == std::errc{} && p == value.data() + value.size()) length_ = v;
            if (!all) return;
        }
    }
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}

void H2Call::onHeaders(bool endStream) {
    if (done_ || cancelled_) return;
    if (!headSent_) {
        if (status_ >= 100 && status_ < 200) { // interim (RFC 9110 §15.2): not forwarded
            status_ = 0;
            fields_.clear();
            length_.reset();
            return;
        }
        if (status_ < 200 || status_ > 599) {
            if (id_ > 0 && conn_) {
                nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_PROTOCOL_ERROR);
                conn_->postFlush();
            }
            fail(502, "bad :status in the response");
            return;
        }
        headSent_ = true;
        timer_.cancel();
        if (endStream && req_.headRequest) {
            // A HEAD answer keeps its Content-Length (RFC 9110 §9.3.2): a head, then the end.
            ended_ = true;
            if (sink_) sink_->onUpstreamHead(status_, fields_, length_);
            finish();
            return;
        }
        if (endStream) {
            ended_ = true;
            Sink* sink = sink_;
            done_ = true;
            deadline_.cancel();
            sink_ = nullptr;
            auto keep = std::move(owner_);
            if (sink) sink->onUpstreamHeadersOnly(status_, fields_);
            return;
        }
        if (sink_ && conn_ && conn_->inRecv()) {
            // DATA read with this HEADERS comes in the same mem_recv: the head can leave with it
            // in one write; H2Conn releases it when the read is processed (releaseHead).
            headHeld_ = true;
            conn_->holdHead(id_);
            sink_->onUpstreamHeadBodyFollows(status_, fields_, length_);
        } else if (sink_) {
            sink_->onUpstreamHead(status_, fields_, length_);
        }
        if (!req_.grpc && !done_) armResponse();
        return;
    }
    // Trailers (RFC 9113 §8.1): always END_STREAM.
    ended_ = true;
    if (sink_) sink_->onUpstreamTrailers(responseTrailers_);
    finish();
}

void H2Call::releaseHead() {
    if (!headHeld_) return;
    headHeld_ = false;
    if (sink_ && !done_ && !cancelled_) sink_->onUpstreamHeadRelease();
}

void H2Call::onData(const std::uint8_t* data, std::size_t len) {
    nghttp2_session* session = conn_ ? conn_->session() : nullptr;
    if (!sink_ || done_) {
        if (session) nghttp2_session_consume(session, id_, len);
        return;
    }
    if (!req_.grpc) armResponse();
    headHeld_ = false; // leaves with these bytes
    const bool more = sink_->onUpstreamBody({reinterpret_cast<const char*>(data), len});
    if (cancelled_) { // the downstream went away in there
        if (session) nghttp2_session_consume(session, id_, len);
        return;
    }
    if (more && !paused_) {
        if (session) nghttp2_session_consume(session, id_, len);
    } else {
        held_ += len;
        if (!paused_) {
            paused_ = true;
            timer_.cancel(); // a slow client is not the upstream's fault
        }
    }
}

void H2Call::onDataEnd() {
    ended_ = true;
    finish();
}

void H2Call::onClose(std::uint32_t code) {
    if (done_ || cancelled_) return;
    if (ended_) {
        finish();
        return;
    }
    if (code == NGHTTP2_REFUSED_STREAM && retry(true)) return;
    std::string why = "reset the stream (" + std::string(nghttp2_http2_strerror(code)) + ")";
    if (code == NGHTTP2_NO_ERROR) why = "closed the stream without ending the response";
    deliverReset(code == NGHTTP2_NO_ERROR ? static_cast<std::uint32_t>(NGHTTP2_INTERNAL_ERROR) : code, why);
}

void H2Call::deliverReset(std::uint32_t code, const std::string& why) {
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    if (sink) sink->onUpstreamReset(code, headSent_, where() + why);
}

template <class Tell> void H2Call::tellSink(Tell&& tell) {
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    if (sink && !cancelled_) tell(*sink);
}

void H2Call::finish() {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    // The stream is over: what the sink still holds no longer needs to pace the upstream.
    if (held_ && conn_ && !conn_->dead()) {
        nghttp2_session_consume(conn_->session(), id_ > 0 ? id_ : 0, held_);
        held_ = 0;
    }
    tellSink([](Sink& sink) { sink.onUpstreamEnd(); });
}

void H2Call::fail(int status, const std::string& why) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    tellSink([&](Sink& sink) { sink.onUpstreamError(status, where() + why); });
}

void H2Call::resume() {
    if (inner_) {
        inner_->resume();
        return;
    }
    if (!paused_ || cancelled_ || done_) return;
    paused_ = false;
    if (held_ && id_ > 0 && conn_ && !conn_->dead()) {
        nghttp2_session_consume(conn_->session(), id_, held_);
        conn_->postFlush();
    }
    held_ = 0;
    if (!req_.grpc) armResponse();
}

void H2Call::cancel() {
    if (inner_) {
        inner_->cancel();
        return;
    }
    if (cancelled_) return;
    cancelled_ = true;
    sink_ = nullptr;
    timer_.cancel();
    deadline_.cancel();
    if (conn_ && !conn_->dead() && id_ > 0) {
        if (held_) nghttp2_session_consume_connection(conn_->session(), held_);
        held_ = 0;
        if (!done_) nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL);
        conn_->postFlush();
    }
    done_ = true;
    // Released after the caller's handler (it may hold the last reference to the caller).
    if (owner_) asio::post(timer_.get_executor(), [owner = std::move(owner_)] {});
}

} // namespace h2up

using h2up::H2Call;
using h2up::key;

bool speaksHttp1(asio::io_context& io, const config::Upstream& upstream, const CallOptions* options) {
    return h2up::poolsOf(io).http1.contains(key(upstream, options));
}

void H2Request::append(std::string& arena, std::vector<Span>& spans, std::string_view name,
                       std::string_view value) {
    Span sp{static_cast<std::uint32_t>(arena.size()), static_cast<std::uint32_t>(name.size()), 0,
            static_cast<std::uint32_t>(value.size())};
    for (char ch : name)
        arena.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
    sp.value = static_cast<std::uint32_t>(arena.size());
    arena.append(value);
    spans.push_back(sp);
}

std::shared_ptr<Call> startH2(asio::io_context& io, std::shared_ptr<void> owner,
                              std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                              H2Request&& req, Sink* sink, const CallOptions* options,
                              const config::HostOverrides* hosts) {
    auto call = std::make_shared<H2Call>(io, action);
    call->options_ = options;
    call->hosts_ = hosts;
    call->owner_ = std::move(owner);
    call->snapshot_ = std::move(snapshot);
    call->sink_ = sink;
    call->req_ = std::move(req);
    call->bodyEnded_ = !call->req_.bodyFollows;
    asio::post(io, [call] { call->pick(); });
    return call;
}

} // namespace portico::client

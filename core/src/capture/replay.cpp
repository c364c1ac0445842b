// Replay over a blocking, deadline-bounded client (HTTP/1.1 or HTTP/2 on nghttp2, cleartext or
// TLS through io/transport.h and the shared client TLS context); comparison; curl command lines.
#include <portico/capture/replay.h>
#include <portico/http/ascii.h>
#include <portico/http/json_text.h>
#include <portico/http/url.h>
#include <portico/http1/response_parser.h>
#include <portico/http2/session.h>

#include "capture/recorder.h"
#include "capture/replay_cancel.h"
#include "client/connect.h"
#include "io/transport.h"
#include "tls/alpn.h"
#include "tls/client_tls.h"

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::capture {

namespace {
using tcp = boost::asio::ip::tcp;
using http::lower;

// Replay's base URL (http/url.h's parser): `prefix` is its path without a trailing '/', put before
// each replayed target.
struct Url : http::Url {
    std::string prefix;
};
bool parseBase(std::string_view u, Url& out, std::string& error) {
    const auto p = u.find("://");
    if (p == std::string_view::npos) {
        error = "not a URL: " + std::string(u);
        return false;
    }
    if (const std::string scheme = lower(u.substr(0, p)); scheme != "http" && scheme != "https") {
        error = scheme + ": only http:// and https:// targets can be replayed";
        return false;
    }
    if (!http::parseUrl(u, out, error)) return false;
    // Each replayed target (path and query) goes after the prefix: a query or fragment here would
    // end up in the middle of it ("/base?x=1/api/users?id=2").
    if (const auto q = out.target.find_first_of("?#"); q != std::string::npos) {
        error = "a base URL takes no query or fragment, got '" + out.target.substr(q) +
                "' (each replayed request keeps its own query)";
        return false;
    }
    out.prefix = out.target;
    while (!out.prefix.empty() && out.prefix.back() == '/')
        out.prefix.pop_back();
    return true;
}

// The addresses of `url`'s host (resolved now), or none with `error` set: the name does not
// resolve, or an address is not loopback and remote targets were not allowed.
std::vector<tcp::endpoint> targetEndpoints(const Url& url, bool allowRemote, bool& allLoopback,
                                           std::string& error) {
    std::string resolveError;
    auto endpoints = client::resolve(url.host, url.port, resolveError);
    if (endpoints.empty()) {
        error = resolveError;
        return {};
    }
    allLoopback = std::all_of(endpoints.begin(), endpoints.end(),
                              [](const auto& ep) { return client::isLoopback(ep.address()); });
    if (!allowRemote && !allLoopback) {
        error = url.host + ": not a loopback address; replaying to other hosts needs --allow-remote";
        return {};
    }
    return endpoints;
}

// The time an exchange has left, and the caller's cancel descriptor (-1 for none; readable once
// cancelled) that every wait watches next to the socket.
class Deadline {
public:
    Deadline(std::chrono::milliseconds t, int cancelFd)
        : end_(std::chrono::steady_clock::now() + t), cancelFd_(cancelFd) {}
    int msLeft() const {
        auto d =
            std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now())
                .count();
        return d < 0 ? 0 : static_cast<int>(d);
    }
    int cancelFd() const { return cancelFd_; }

private:
    std::chrono::steady_clock::time_point end_;
    int cancelFd_;
};

bool readable(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 0) < 0)
        if (errno != EINTR) return false;
    return (p.revents & POLLIN) != 0;
}

// True when `fd` is ready for `events`; false on timeout, error or cancel.
bool waitFd(int fd, short events, const Deadline& dl) {
    pollfd p[2] = {{fd, events, 0}, {dl.cancelFd(), POLLIN, 0}};
    const nfds_t n = dl.cancelFd() >= 0 ? 2 : 1;
    for (;;) {
        int r = ::poll(p, n, dl.msLeft());
        if (r > 0) return n < 2 || !(p[1].revents & POLLIN);
        if (r == 0) return false;
        if (errno != EINTR) return false;
    }
}

// Blocking reads and writes with a deadline over a non-blocking socket, cleartext or TLS.
struct Stream {
    int fd = -1;
    SSL* ssl = nullptr;
    const Deadline* dl = nullptr;
    // Whole buffer written; false on error or timeout.
    bool writeAll(std::string_view data) {
        while (!data.empty()) {
            io::IoResult r = io::transportWrite(fd, ssl, data.data(), data.size());
            if (r.status == io::IoStatus::Ok) {
                data.remove_prefix(r.n);
                continue;
            }
            if (r.status == io::IoStatus::WantWrite && waitFd(fd, POLLOUT, *dl)) continue;
            if (r.status == io::IoStatus::WantRead && waitFd(fd, POLLIN, *dl)) continue;
            return false;
        }
        return true;
    }
    // > 0 bytes read, 0 end of stream, -1 error or timeout.
    long read(char* buf, std::size_t len) {
        for (;;) {
            io::IoResult r = io::transportRead(fd, ssl, buf, len);
            if (r.status == io::IoStatus::Ok) return static_cast<long>(r.n);
            if (r.status == io::IoStatus::Eof) return 0;
            if (r.status == io::IoStatus::WantRead && waitFd(fd, POLLIN, *dl)) continue;
            if (r.status == io::IoStatus::WantWrite && waitFd(fd, POLLOUT, *dl)) continue;
            return -1;
        }
    }
};

// One HTTP/2 request on a fresh client session (RFC 9113): the response's fields, body and end.
struct H2Exchange {
    Exchange* e = nullptr;
    std::int32_t stream = -1;
    std::string body;
    std::string_view requestBody;
    std::size_t sent = 0;
    bool closed = false;
    std::uint32_t resetCode = 0;
};

int h2OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
               const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    auto* x = static_cast<H2Exchange*>(user);
    if (frame->hd.stream_id != x->stream || frame->hd.type != NGHTTP2_HEADERS) return 0;
    std::string n(reinterpret_cast<const char*>(name), namelen);
    std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
        const int status = std::atoi(v.c_str());
        if (status >= 100 && status < 200) return 0; // interim (RFC 9113 §8.1)
        x->e->status = status;
    }
    if (x->e->status >= 200 || n != ":status") x->e->responseHeadersSize += namelen + valuelen;
    x->e->responseHeaders.push_back({std::move(n), std::move(v)});
    return 0;
}

int h2OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* x = static_cast<H2Exchange*>(user);
    if (frame->hd.stream_id == x->stream && x->e->at(Phase::ResponseFirstByte) < 0)
        x->e->set(Phase::ResponseFirstByte, nowNs());
    return 0;
}

int h2OnData(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
             void* user) {
    auto* x = static_cast<H2Exchange*>(user);
    if (id == x->stream) x->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
}

int h2OnClose(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
    auto* x = static_cast<H2Exchange*>(user);
    if (id == x->stream) {
        x->closed = true;
        x->resetCode = code;
    }
    return 0;
}

ssize_t h2ReadBody(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len, std::uint32_t* flags,
                   nghttp2_data_source*, void* user) {
    auto* x = static_cast<H2Exchange*>(user);
    const std::size_t n = std::min(len, x->requestBody.size() - x->sent);
    std::memcpy(buf, x->requestBody.data() + x->sent, n);
    x->sent += n;
    if (x->sent == x->requestBody.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

// Sends e's request over HTTP/2 and reads the response into e; "" or the error.
std::string exchangeH2(Stream& io, Exchange& e, const std::string& scheme) {
    http2::Callbacks callbacks;
    if (nghttp2_session_callbacks* cbs = callbacks.get()) {
        nghttp2_session_callbacks_set_on_header_callback(cbs, h2OnHeader);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, h2OnBeginHeaders);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2OnData);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2OnClose);
    }
    H2Exchange x;
    x.e = &e;
    x.requestBody = e.requestBody;
    std::string error;
    const http2::SessionPtr owned = http2::makeSession(callbacks, &x, {}, error);
    if (!owned) return error;
    nghttp2_session* session = owned.get();

    // Pseudo-header fields first, then the fields with lower-case names; Host becomes :authority
    // and connection-specific fields are dropped (RFC 9113 §8.2.2, §8.3.1).
    std::vector<std::pair<std::string, std::string>> fields{
        {":method", e.method}, {":scheme", scheme}, {":authority", e.authority}, {":path", e.target}};
    for (const auto& h : e.requestHeaders) {
        const std::string n = lower(h.name);
        if (n == "host" || http2::isConnectionSpecific(n, h.value)) continue;
        fields.emplace_back(n, h.value);
    }
    std::vector<nghttp2_nv> nva;
    e.requestHeadersSize = 0;
    for (const auto& [n, v] : fields) {
        nva.push_back(http2::field(n, v));
        e.requestHeadersSize += n.size() + v.size();
    }
    e.requestHeaders.clear();
    for (auto& [n, v] : fields)
        e.requestHeaders.push_back({n, v});
    nghttp2_data_provider provider{};
    provider.read_callback = h2ReadBody;
    const bool hasBody = !e.requestBody.empty();
    x.stream = nghttp2_submit_request(session, nullptr, nva.data(), nva.size(), hasBody ? &provider : nullptr,
                                      nullptr);
    if (x.stream < 0) return std::string("HTTP/2: ") + nghttp2_strerror(x.stream);
    e.streamId = static_cast<std::uint32_t>(x.stream);
    e.startedUnixNs = unixNowNs();
    e.set(Phase::RequestHeaders, nowNs());
    char buf[16384];
    for (;;) {
        // Everything nghttp2 wants to send (preface, SETTINGS, HEADERS, DATA, acks, WINDOW_UPDATE).
        for (;;) {
            const std::uint8_t* out = nullptr;
            const ssize_t n = nghttp2_session_mem_send(session, &out);
            if (n < 0) return std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n));
            if (n == 0) break;
            if (!io.writeAll(
                    std::string_view(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n))))
                return "send: the connection failed or timed out";
        }
        if (e.at(Phase::RequestBodyDone) < 0 && (!hasBody || x.sent == x.requestBody.size()))
            e.set(Phase::RequestBodyDone, nowNs());
        if (x.closed) break;
        const long n = io.read(buf, sizeof buf);
        if (n <= 0)
            return n == 0 ? "the server closed the connection before the response ended"
                          : "no response within the timeout";
        const ssize_t used = nghttp2_session_mem_recv(session, reinterpret_cast<const std::uint8_t*>(buf),
                                                      static_cast<std::size_t>(n));
        if (used < 0) return std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used));
    }
    if (x.resetCode != NGHTTP2_NO_ERROR && e.status == 0)
        return "HTTP/2: the stream was reset (" + std::string(nghttp2_http2_strerror(x.resetCode)) + ")";
    if (e.status == 0) return "HTTP/2: the stream ended without a response";
    e.set(Phase::ResponseDone, nowNs());
    e.responseBody = std::move(x.body);
    return {};
}
} // namespace

std::string checkReplayTarget(std::string_view baseUrl, bool allowRemote) {
    Url url;
    std::string error;
    bool allLoopback = false;
    if (parseBase(baseUrl, url, error)) targetEndpoints(url, allowRemote, allLoopback, error);
    return error;
}

namespace {

// Why `original` cannot be replayed ("" when it can): WebSocket sessions and gRPC calls (their
// messages are not resent), records without a request line, bodies the capture cut.
std::string refusal(const Exchange& original, const ReplayOptions& options) {
    if (original.protocol == Protocol::WebSocket || original.protocol == Protocol::Grpc)
        return std::string(original.protocol == Protocol::WebSocket ? "a WebSocket session" : "a gRPC call") +
               " cannot be replayed (its messages are not resent)";
    if (original.method.empty() || original.target.empty())
        // Refused before its request line was read (a 400 for a garbled line): nothing to resend.
        return "no request line was recorded (the exchange was refused before it was read); not replayed";
    if (!options.body &&
        (original.flags & kRequestBodyTruncated || original.requestBody.size() < original.requestBodySize))
        return "the captured request body was cut at " + std::to_string(original.requestBody.size()) +
               " of " + std::to_string(original.requestBodySize) +
               " bytes (capture.body_bytes); not replayed";
    return {};
}

// The client TLS context for an https replay (ALPN from options.protocol; verification off for
// loopback targets unless options.verifyTls). Null with `error` set on failure.
std::unique_ptr<tls::ClientTls> replayTls(const Url& url, const ReplayOptions& options, bool allLoopback,
                                          std::string& error) {
    tls::ClientTlsOptions to;
    to.host = url.host;
    switch (options.protocol) {
    case ReplayProtocol::Auto:
        to.alpn = {"h2", "http/1.1"};
        break;
    case ReplayProtocol::Http1:
        to.alpn = {"http/1.1"};
        break;
    case ReplayProtocol::H2:
        to.alpn = {"h2"};
        break;
    }
    to.insecure = !(options.verifyTls || !allLoopback);
    to.caFile = options.caFile;
    return tls::makeClientTls(to, error);
}

// The TLS handshake on `io.fd` within the deadline; records TlsDone, version and ALPN in `e`.
// "" on success, else the reason.
std::string handshake(Stream& io, SSL* ssl, const tls::ClientTls& clientTls, const std::string& address,
                      Exchange& e) {
    clientTls.prepare(ssl);
    for (;;) {
        const int rc = SSL_do_handshake(ssl);
        if (rc == 1) break;
        const int err = SSL_get_error(ssl, rc);
        if (err == SSL_ERROR_WANT_READ && waitFd(io.fd, POLLIN, *io.dl)) continue;
        if (err == SSL_ERROR_WANT_WRITE && waitFd(io.fd, POLLOUT, *io.dl)) continue;
        return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE
                   ? "TLS handshake with " + address + ": timed out"
                   : tls::handshakeError(ssl, clientTls, address);
    }
    e.set(Phase::TlsDone, nowNs());
    const char* version = SSL_get_version(ssl);
    e.tlsVersion = version ? version : "";
    e.alpn = tls::alpnOf(ssl);
    io.ssl = ssl;
    return {};
}

// The request to send: `original` with the options' method, target, headers and body applied.
// The fields the sender owns (Host, Content-Length, connection-specific ones) are recomputed; an
// edited Host (or :authority) is the one sent.
void buildRequest(const Exchange& original, const ReplayOptions& options, const Url& url, bool h2,
                  Exchange& e) {
    const bool https = url.scheme == "https";
    e.protocol = h2 ? Protocol::Http2 : Protocol::Http1;
    e.httpVersion = h2 ? 20 : 11;
    e.streamId = 1;
    e.scheme = url.scheme;
    const std::string port = std::to_string(url.port);
    e.authority =
        url.host.find(':') != std::string::npos ? "[" + url.host + "]:" + port : url.host + ":" + port;
    if (url.port == (https ? 443 : 80))
        e.authority = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
    e.method = options.method.value_or(original.method.empty() ? std::string("GET") : original.method);
    std::string target = options.target.value_or(original.target);
    if (auto p = target.find("://"); p != std::string::npos) {
        auto slash = target.find('/', p + 3);
        target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    if (target.empty()) target = "/";
    e.target = url.prefix + target;
    e.requestBody = options.body.value_or(original.requestBody);
    e.requestBodySize = e.requestBody.size();
    static constexpr std::string_view kSkip[] = {
        "host",           "connection", "keep-alive", "proxy-connection", "transfer-encoding",
        "content-length", "upgrade",    "te",         "http2-settings"};
    auto owned = [](const std::string& n) {
        return n.empty() || n[0] == ':' ||
               std::find(std::begin(kSkip), std::end(kSkip), n) != std::end(kSkip);
    };
    for (const auto& o : options.headers) {
        const std::string n = lower(o.name);
        if ((n == "host" || n == ":authority") && !o.value.empty()) e.authority = o.value;
    }
    e.requestHeaders.push_back({"Host", e.authority});
    for (const auto& h : original.requestHeaders) {
        const std::string n = lower(h.name);
        if (owned(n)) continue;
        bool overridden = false;
        for (const auto& o : options.headers)
            if (lower(o.name) == n) overridden = true;
        if (!overridden) e.requestHeaders.push_back(h);
    }
    for (const auto& o : options.headers)
        if (!o.value.empty() && !owned(lower(o.name))) e.requestHeaders.push_back(o);
    const bool hasBody =
        !e.requestBody.empty() || e.method == "POST" || e.method == "PUT" || e.method == "PATCH";
    if (hasBody) e.requestHeaders.push_back({"Content-Length", std::to_string(e.requestBody.size())});
}

// One HTTP/1.1 exchange on `io` (Connection: close): sends `e`'s request, reads the response
// through the one HTTP/1 response parser (interim 1xx skipped; a 101 ends it) into `e`, the whole
// body into `body`. "" on success, else the reason.
std::string exchangeH1(Stream& io, Exchange& e, std::string& body) {
    e.requestHeaders.push_back({"Connection", "close"});
    std::string wire = e.method + " " + e.target + " HTTP/1.1\r\n";
    for (const auto& h : e.requestHeaders)
        wire += h.name + ": " + h.value + "\r\n";
    wire += "\r\n";
    e.requestHeadersSize = wire.size();
    wire += e.requestBody;
    e.startedUnixNs = unixNowNs();
    e.set(Phase::RequestHeaders, nowNs());
    if (!io.writeAll(wire)) return "send: the connection failed or timed out";
    e.set(Phase::RequestBodyDone, nowNs());

    std::string in;
    char buf[16384];
    auto readMore = [&]() -> int { // 1 data, 0 eof, -1 error/timeout
        const long n = io.read(buf, sizeof buf);
        if (n <= 0) return n == 0 ? 0 : -1;
        if (e.at(Phase::ResponseFirstByte) < 0) e.set(Phase::ResponseFirstByte, nowNs());
        in.append(buf, static_cast<std::size_t>(n));
        return 1;
    };
    http1::ResponseParser parser;
    parser.begin(e.method == "HEAD", http1::ResponseParser::Deliver::Events);
    std::size_t at = 0; // parsed bytes of `in`
    bool eof = false;
    for (bool done = false; !done;) {
        std::size_t used = 0;
        const auto st = parser.parse(in.data() + at, in.size() - at, used);
        at += used;
        switch (st) {
        case http1::ResponseParser::Status::Head: {
            const auto& h = parser.head();
            if (h.interim()) break;
            e.status = h.status;
            e.responseHeadersSize = used;
            http1::forEachResponseField(h.fields, [&](std::string_view name, std::string_view value) {
                e.responseHeaders.push_back({std::string(name), std::string(value)});
            });
            if (h.status == 101) done = true; // nothing of the new protocol is replayed
            break;
        }
        case http1::ResponseParser::Status::Body:
            body.append(parser.body());
            break;
        case http1::ResponseParser::Status::Complete:
            done = true;
            break;
        case http1::ResponseParser::Status::Error:
            return std::string("bad response: ") + parser.error();
        case http1::ResponseParser::Status::NeedMore: {
            if (eof) {
                if (parser.completesAtEof()) {
                    done = true;
                    break;
                }
                return e.status ? "truncated body" : "the server closed without a response";
            }
            in.erase(0, at);
            at = 0;
            const int rc = readMore();
            if (rc < 0)
                return e.status ? "the body did not arrive within the timeout"
                                : "no response within the timeout";
            eof = rc == 0;
            break;
        }
        }
    }
    e.set(Phase::ResponseDone, nowNs());
    return {};
}

ReplayResult replayOnce(const Exchange& original, const ReplayOptions& options, int cancelFd) {
    ReplayResult r;
    Exchange& e = r.exchange;
    if (r.error = refusal(original, options); !r.error.empty()) return r;
    const std::string base =
        options.baseUrl.empty()
            ? (original.scheme.empty() ? std::string("http") : original.scheme) + "://" + original.authority
            : options.baseUrl;
    Url url;
    if (!parseBase(base, url, r.error)) return r;
    bool allLoopback = false;
    const auto endpoints = targetEndpoints(url, options.allowRemote, allLoopback, r.error);
    if (endpoints.empty()) return r;
    const bool https = url.scheme == "https";
    std::unique_ptr<tls::ClientTls> clientTls;
    if (https && !(clientTls = replayTls(url, options, allLoopback, r.error))) return r;

    Deadline dl(options.timeout, cancelFd);
    e.set(Phase::Accepted, nowNs());
    std::string failures;
    tcp::endpoint reached;
    const int fd = client::connectFd(endpoints, std::chrono::milliseconds(dl.msLeft()), false, reached,
                                     failures, cancelFd);
    if (fd < 0) {
        r.error = client::cannotConnect(url.host, failures);
        return r;
    }
    struct Closer {
        int fd;
        SSL* ssl = nullptr;
        ~Closer() {
            if (ssl) SSL_free(ssl);
            ::close(fd);
        }
    } closer{fd};
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Stream io{fd, nullptr, &dl};
    const std::string address = url.host + ":" + std::to_string(url.port);
    bool h2 = options.protocol == ReplayProtocol::H2;
    if (https) {
        SSL* ssl = SSL_new(clientTls->ctx.get());
        if (!ssl || SSL_set_fd(ssl, fd) != 1) {
            r.error = "TLS: " + tls::sslErrorText();
            return r;
        }
        closer.ssl = ssl;
        if (r.error = handshake(io, ssl, *clientTls, address, e); !r.error.empty()) return r;
        if (options.protocol == ReplayProtocol::H2 && e.alpn != "h2") {
            r.error = "the server at " + address + " did not negotiate HTTP/2 (ALPN h2) over TLS";
            return r;
        }
        h2 = e.alpn == "h2";
    }

    buildRequest(original, options, url, h2, e);
    std::string body;
    r.error = h2 ? exchangeH2(io, e, url.scheme) : exchangeH1(io, e, body);
    if (!r.error.empty()) return r;
    if (h2) body = std::move(e.responseBody);
    e.responseBodySize = body.size();
    if (body.size() > options.bodyBytes) {
        body.resize(options.bodyBytes);
        e.flags |= kResponseBodyTruncated;
    }
    e.responseBody = std::move(body);
    r.differences = compare(original, e);
    return r;
}

} // namespace

ReplayResult replay(const Exchange& original, const ReplayOptions& options) {
    return replay(original, options, -1);
}

ReplayResult replay(const Exchange& original, const ReplayOptions& options, int cancelFd) {
    ReplayResult r;
    if (readable(cancelFd)) {
        r.error = "cancelled";
        return r;
    }
    r = replayOnce(original, options, cancelFd);
    // Every wait ends at once on a cancel, with its own error ("no response within the timeout");
    // what the caller asked for is the better reason. A response read in full before the cancel
    // was seen stays.
    if (!r.ok() && readable(cancelFd)) {
        r.error = "cancelled";
        r.differences.clear();
    }
    return r;
}

std::vector<Difference> compare(const Exchange& a, const Exchange& b) {
    std::vector<Difference> d;
    if (a.status != b.status) d.push_back({"status", std::to_string(a.status), std::to_string(b.status)});
    static constexpr std::string_view kIgnored[] = {"date",    "server-timing", "age",
                                                    "expires", "connection",    "keep-alive"};
    auto collect = [](const std::vector<Header>& hs) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& h : hs) {
            std::string n = lower(h.name);
            if (n.empty() || n[0] == ':' ||
                std::find(std::begin(kIgnored), std::end(kIgnored), n) != std::end(kIgnored))
                continue;
            out.emplace_back(n, h.value);
        }
        std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.first < y.first; });
        return out;
    };
    auto ha = collect(a.responseHeaders), hb = collect(b.responseHeaders);
    std::vector<std::string> names;
    for (auto& [n, v] : ha)
        names.push_back(n);
    for (auto& [n, v] : hb)
        names.push_back(n);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names) {
        std::string va, vb;
        for (auto& [k, v] : ha)
            if (k == n) va += (va.empty() ? "" : ", ") + v;
        for (auto& [k, v] : hb)
            if (k == n) vb += (vb.empty() ? "" : ", ") + v;
        if (va != vb) d.push_back({"header " + n, va, vb});
    }
    const std::size_t common = std::min(a.responseBody.size(), b.responseBody.size());
    std::size_t at = 0;
    while (at < common && a.responseBody[at] == b.responseBody[at])
        ++at;
    if (at < common || a.responseBodySize != b.responseBodySize) {
        auto excerpt = [&](const std::string& s) {
            std::string x = s.substr(at, 40);
            for (char& c : x)
                if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '.';
            return x;
        };
        d.push_back(
            {"body",
             std::to_string(a.responseBodySize) + " bytes" +
                 (at < common ? ", at byte " + std::to_string(at) + ": " + excerpt(a.responseBody) : ""),
             std::to_string(b.responseBodySize) + " bytes" +
                 (at < common ? ", at byte " + std::to_string(at) + ": " + excerpt(b.responseBody) : "")});
    }
    return d;
}

namespace {
// The request's URL for a copy: `baseUrl` (or the recorded scheme://authority) and the path.
std::string copyUrl(const Exchange& e, std::string_view baseUrl) {
    std::string target = e.target;
    if (auto p = target.find("://"); p != std::string::npos) {
        auto slash = target.find('/', p + 3);
        target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    std::string base = baseUrl.empty()
                           ? (e.scheme.empty() ? std::string("http") : e.scheme) + "://" + e.authority
                           : std::string(baseUrl);
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    return base + target;
}

// Fields a client library sets itself (or that only make sense on the original connection).
bool clientOwned(const std::string& lowerName) {
    return lowerName.empty() || lowerName[0] == ':' || lowerName == "content-length" ||
           lowerName == "connection" || lowerName == "host" || lowerName == "transfer-encoding" ||
           lowerName == "keep-alive" || lowerName == "upgrade";
}

// A Python string literal: '...' with backslash escapes; non-ASCII bytes as \xHH in bytes
// literals, as themselves (UTF-8) in str literals.
std::string pythonLiteral(std::string_view s, bool bytes) {
    std::string o = bytes ? "b'" : "'";
    for (unsigned char c : s) {
        if (http::appendBackslashEscape(o, c, "'")) continue;
        if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            o += b;
        } else {
            o += static_cast<char>(c);
        }
    }
    return o + "'";
}
} // namespace

std::string toPython(const Exchange& e, std::string_view baseUrl, std::string_view caFile) {
    const std::string url = copyUrl(e, baseUrl);
    std::string py = "import ssl\nimport urllib.error\nimport urllib.request\n\n";
    py += "request = urllib.request.Request(\n    " + pythonLiteral(url, false) +
          ",\n    method=" + pythonLiteral(e.method.empty() ? "GET" : e.method, false) + ",\n    headers={";
    bool first = true;
    for (const auto& h : e.requestHeaders) {
        if (clientOwned(lower(h.name))) continue;
        py += first ? "\n" : "";
        first = false;
        py += "        " + pythonLiteral(h.name, false) + ": " + pythonLiteral(h.value, false) + ",\n";
    }
    py += first ? "},\n" : "    },\n";
    if (!e.requestBody.empty()) py += "    data=" + pythonLiteral(e.requestBody, true) + ",\n";
    py += ")\n";
    const bool https = url.starts_with("https://");
    py += https && !caFile.empty()
              ? "context = ssl.create_default_context(cafile=" + pythonLiteral(caFile, false) + ")\n"
              : std::string("context = ssl.create_default_context()\n");
    py += "try:\n    response = urllib.request.urlopen(request, context=context, timeout=30)\n"
          "except urllib.error.HTTPError as error:  # 4xx and 5xx are answers too\n    response = error\n"
          "print(response.status, response.reason)\n"
          "print(response.read().decode(errors=\"replace\"))\n";
    return py;
}

namespace {
// POSIX sh single quotes: '...' with each ' as '\''.
std::string shellQuote(std::string_view s) {
    std::string o = "'";
    for (char c : s) {
        if (c == '\'')
            o += "'\\''";
        else
            o += c;
    }
    return o + "'";
}

// Whether a body can be given as text on a command line (else it goes through printf escapes).
bool printableBody(std::string_view body) {
    return std::all_of(body.begin(), body.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u >= 0x20 || c == '\n' || c == '\r' || c == '\t';
    });
}

// `printf 'ESCAPES' | ` that writes `body` byte for byte (octal escapes).
std::string printfPipe(std::string_view body) {
    std::string esc;
    char b[8];
    for (unsigned char c : body) {
        std::snprintf(b, sizeof b, "\\%03o", c);
        esc += b;
    }
    return "printf '" + esc + "' | ";
}

// Length of the UTF-8 sequence starting at s[i] (1 to 4), or 0 when it is not well-formed.
std::size_t utf8Length(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
    if (n == 2 && c < 0xc2) return 0; // overlong
    return n;
}

// A JavaScript string literal "..." (JSON-style escapes). `byteString`: every byte one code unit
// (bytes >= 0x80 as \xHH, what a Headers value is); else UTF-8 text kept as written, U+2028 and
// U+2029 escaped. Returns "" when !byteString and `s` is not UTF-8.
std::string jsLiteral(std::string_view s, bool byteString) {
    std::string o = "\"";
    char b[8];
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (http::appendBackslashEscape(o, c, "\"")) continue;
        if (c < 0x20 || c == 0x7f) {
            std::snprintf(b, sizeof b, "\\x%02x", c);
            o += b;
        } else if (c < 0x80) {
            o += static_cast<char>(c);
        } else if (byteString) {
            std::snprintf(b, sizeof b, "\\x%02x", c);
            o += b;
        } else {
            const std::size_t n = utf8Length(s, i);
            if (n == 0) return {};
            const std::string_view seq = s.substr(i, n);
            if (seq == "\xe2\x80\xa8")
                o += "\\u2028";
            else if (seq == "\xe2\x80\xa9")
                o += "\\u2029";
            else
                o += seq;
            i += n - 1;
        }
    }
    return o + "\"";
}
} // namespace

std::string toFetch(const Exchange& e, std::string_view baseUrl, std::string_view caFile) {
    const std::string url = copyUrl(e, baseUrl);
    const std::string method = e.method.empty() ? std::string("GET") : e.method;
    std::string js;
    if (!caFile.empty() && url.starts_with("https://"))
        js += "// Node does not trust Portico's local CA by default: run with\n"
              "// NODE_EXTRA_CA_CERTS=" +
              shellQuote(caFile) +
              " node FILE.js\n"
              "// (a browser trusts it after `portico cert install`).\n";
    std::string headers;
    for (const auto& h : e.requestHeaders) {
        if (clientOwned(lower(h.name))) continue;
        headers += "    " + jsLiteral(h.name, true) + ": " + jsLiteral(h.value, true) + ",\n";
    }
    std::string body;
    const std::string upper = http::upper(method);
    if (!e.requestBody.empty() && (upper == "GET" || upper == "HEAD")) {
        js += "// The captured request had a body of " + std::to_string(e.requestBody.size()) +
              " bytes; fetch() sends none with " + upper + ".\n";
    } else if (!e.requestBody.empty()) {
        body = printableBody(e.requestBody) ? jsLiteral(e.requestBody, false) : std::string();
        if (body.empty()) {
            body = "new Uint8Array([";
            for (std::size_t i = 0; i < e.requestBody.size(); ++i)
                body += (i ? "," : "") + std::to_string(static_cast<unsigned char>(e.requestBody[i]));
            body += "])";
        }
    }
    std::string urlLiteral = jsLiteral(url, false);
    if (urlLiteral.empty()) urlLiteral = jsLiteral(url, true);
    js += "fetch(" + urlLiteral + ", {\n  method: " + jsLiteral(method, true) + ",\n";
    js += headers.empty() ? "  headers: {},\n" : "  headers: {\n" + headers + "  },\n";
    if (!body.empty()) js += "  body: " + body + ",\n";
    js += "}).then(async (response) => {\n"
          "  console.log(response.status, response.statusText);\n"
          "  console.log(await response.text());\n"
          "});\n";
    return js;
}

std::string toHttpie(const Exchange& e, std::string_view baseUrl, std::string_view caFile) {
    const std::string url = copyUrl(e, baseUrl);
    std::string cmd = "http";
    if (!caFile.empty() && url.starts_with("https://")) cmd += " --verify=" + shellQuote(caFile);
    const bool raw = !e.requestBody.empty() && printableBody(e.requestBody);
    if (raw) cmd += " --raw " + shellQuote(e.requestBody);
    cmd += " " + shellQuote(e.method.empty() ? std::string("GET") : e.method) + " " + shellQuote(url);
    for (const auto& h : e.requestHeaders) {
        if (clientOwned(lower(h.name))) continue;
        // HTTPie's request items: `Name:value`; `Name;` sends an empty value (`Name:` would
        // remove the header); `:=` would make a JSON field, so a leading '=' is escaped.
        if (h.value.empty())
            cmd += " " + shellQuote(h.name + ";");
        else
            cmd += " " + shellQuote(h.name + ":" + (h.value.front() == '=' ? "\\" : "") + h.value);
    }
    if (!e.requestBody.empty() && !raw) cmd = printfPipe(e.requestBody) + cmd;
    return cmd;
}

std::string toCurl(const Exchange& e, std::string_view baseUrl, std::string_view caFile) {
    auto quote = shellQuote;
    const std::string url = copyUrl(e, baseUrl);
    std::string cmd = "curl";
    if (!caFile.empty() && url.starts_with("https://")) cmd += " --cacert " + quote(caFile);
    if (e.httpVersion == 20) cmd += url.starts_with("https://") ? " --http2" : " --http2-prior-knowledge";
    if (!e.method.empty() && e.method != "GET") cmd += " -X " + quote(e.method);
    cmd += " " + quote(url);
    for (const auto& h : e.requestHeaders) {
        const std::string n = lower(h.name);
        if (clientOwned(n)) continue;
        cmd += " -H " + quote(h.name + ": " + h.value);
    }
    if (!e.requestBody.empty()) {
        if (printableBody(e.requestBody))
            cmd += " --data-binary " + quote(e.requestBody);
        else
            cmd = printfPipe(e.requestBody) + cmd + " --data-binary @-";
    }
    return cmd;
}

} // namespace portico::capture

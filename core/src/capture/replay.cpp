// Replay through client/'s calls (HTTP/1.1 or HTTP/2, cleartext or TLS) on a private io_context
// run on the caller's thread, bounded by the timeout and the caller's cancel descriptor;
// comparison; curl command lines.
#include <portico/capture/replay.h>
#include <portico/http/ascii.h>
#include <portico/http/json_text.h>
#include <portico/http/url.h>
#include <portico/http2/session.h>

#include "capture/recorder.h"
#include "capture/replay_cancel.h"
#include "client/connect.h"
#include "client/h2_client.h"
#include "client/http1_call.h"
#include "tls/client_tls.h"

#include <nghttp2/nghttp2.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include <poll.h>
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

bool readable(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 0) < 0)
        if (errno != EINTR) return false;
    return (p.revents & POLLIN) != 0;
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

// The wire form of `e`'s request for HTTP/1.1 (RFC 9112 §3; Connection: close, so the server ends
// the one exchange) and the header size recorded.
client::Http1Request http1Request(Exchange& e) {
    e.requestHeaders.push_back({"Connection", "close"});
    client::Http1Request r;
    r.head = e.method + " " + e.target + " HTTP/1.1\r\n";
    for (const auto& h : e.requestHeaders)
        r.head += h.name + ": " + h.value + "\r\n";
    r.head += "\r\n";
    e.requestHeadersSize = r.head.size();
    r.body = e.requestBody;
    r.headRequest = e.method == "HEAD";
    return r;
}

// The HTTP/2 form (RFC 9113 §8.3): pseudo-header fields first, then the fields with lower-case
// names; Host becomes :authority and connection-specific fields are dropped (§8.2.2). `e`'s
// recorded request headers become what is sent.
client::H2Request h2Request(Exchange& e, const std::string& scheme) {
    std::vector<Header> fields{
        {":method", e.method}, {":scheme", scheme}, {":authority", e.authority}, {":path", e.target}};
    for (const auto& h : e.requestHeaders) {
        const std::string n = lower(h.name);
        if (n == "host" || http2::isConnectionSpecific(n, h.value)) continue;
        fields.push_back({n, h.value});
    }
    client::H2Request r;
    e.requestHeadersSize = 0;
    for (const auto& f : fields) {
        r.add(f.name, f.value);
        e.requestHeadersSize += f.name.size() + f.value.size();
    }
    e.requestHeaders = std::move(fields);
    r.body = e.requestBody;
    r.bodyWasEmpty = e.requestBody.empty();
    r.headRequest = e.method == "HEAD";
    return r;
}

// Records what the client reports of the one call into the new exchange: phases, TLS, the
// response's head (every field as received) and body (the first `keep` bytes; all are counted).
class ReplaySink final : public client::Sink {
public:
    ReplaySink(Exchange& e, std::size_t keep, boost::asio::io_context& io, const config::Upstream& target,
               const std::vector<boost::asio::ip::tcp::endpoint>& endpoints)
        : e_(e), keep_(keep), io_(io), host_(target.host), authority_(target.authority),
          endpoints_(endpoints) {}

    void onUpstreamTls(std::string_view version, std::string_view alpn) override {
        e_.set(Phase::TlsDone, nowNs());
        e_.tlsVersion = std::string(version);
        e_.alpn = std::string(alpn);
    }
    void onUpstreamConnected() override {
        e_.startedUnixNs = unixNowNs();
        e_.set(Phase::RequestHeaders, nowNs());
    }
    void onRequestSent() override {
        if (e_.at(Phase::RequestBodyDone) < 0) e_.set(Phase::RequestBodyDone, nowNs());
    }
    void onUpstreamFirstByte() override {
        if (e_.at(Phase::ResponseFirstByte) < 0) e_.set(Phase::ResponseFirstByte, nowNs());
    }
    void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t>) override {
        e_.status = status;
        e_.responseHeaders.clear();
        e_.responseHeadersSize = 0;
        http::forEachFieldLine(fields, [&](std::string_view name, std::string_view value) {
            e_.responseHeaders.push_back({std::string(name), std::string(value)});
            e_.responseHeadersSize += name.size() + value.size() + 4; // "Name: value\r\n"
        });
    }
    bool onUpstreamBody(std::string_view data) override {
        size_ += data.size();
        if (body_.size() < keep_) body_.append(data.substr(0, keep_ - body_.size()));
        return true;
    }
    void onUpstreamEnd() override {
        e_.set(Phase::ResponseDone, nowNs());
        end();
    }
    void onUpstreamError(int status, const std::string& message) override {
        // The call names its upstream ("upstream HOST:PORT: ..."); replay names the target as
        // `portico bench` does: "cannot connect to HOST: ADDRESS: reason; ...".
        std::string why = message;
        if (const std::string prefix = "upstream " + authority_ + ": "; why.starts_with(prefix))
            why.erase(0, prefix.size());
        if (why.starts_with("cannot connect: ")) {
            why.erase(0, std::string_view("cannot connect: ").size());
            why = client::cannotConnect(
                host_, endpoints_.size() == 1 ? client::endpointText(endpoints_.front()) + ": " + why : why);
        }
        error_ = status == 0 ? "the response was cut: " + why : why;
        end();
    }
    void onUpstreamReset(std::uint32_t code, bool, const std::string&) override {
        error_ = "HTTP/2: the stream was reset (" + std::string(nghttp2_http2_strerror(code)) + ")";
        end();
    }

    bool ended() const { return ended_; }
    const std::string& error() const { return error_; }
    std::string takeBody() { return std::move(body_); }
    std::uint64_t bodySize() const { return size_; }

private:
    void end() {
        ended_ = true;
        io_.stop(); // an HTTP/2 connection would otherwise wait out its idle timeout
    }

    Exchange& e_;
    std::size_t keep_;
    boost::asio::io_context& io_;
    std::string host_, authority_;
    const std::vector<boost::asio::ip::tcp::endpoint>& endpoints_;
    std::string body_;
    std::uint64_t size_ = 0;
    std::string error_;
    bool ended_ = false;
};

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
    client::CallOptions call;
    call.endpoints = targetEndpoints(url, options.allowRemote, allLoopback, r.error);
    if (call.endpoints.empty()) return r;
    const bool https = url.scheme == "https";
    std::unique_ptr<tls::ClientTls> clientTls;
    if (https && !(clientTls = replayTls(url, options, allLoopback, r.error))) return r;
    call.tls = clientTls.get();
    call.http2Only = options.protocol == ReplayProtocol::H2;
    call.allFields = true;
    call.closeAfter = true;

    // One upstream, the target; the connection is this call's alone (no keep-alive pool).
    config::ProxyAction action;
    config::Upstream target;
    target.host = url.host;
    target.port = url.port;
    target.authority = (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" +
                       std::to_string(url.port);
    const bool h2 =
        options.protocol == ReplayProtocol::H2 || (https && options.protocol == ReplayProtocol::Auto);
    target.protocol = https ? config::Upstream::Protocol::H2
                            : (h2 ? config::Upstream::Protocol::H2c : config::Upstream::Protocol::Http1);
    action.upstreams.push_back(target);
    action.connectTimeout = options.timeout;
    action.responseTimeout = options.timeout;
    action.keepalive = 0;
    action.failTimeout = {};

    // The request in both forms when the server picks (https, auto): ALPN decides which was sent.
    Exchange asHttp1;
    buildRequest(original, options, url, false, asHttp1);
    buildRequest(original, options, url, h2, e);

    boost::asio::io_context io;
    ReplaySink sink(e, options.bodyBytes, io, target, call.endpoints);
    e.set(Phase::Accepted, nowNs());
    std::shared_ptr<client::Call> c;
    if (h2) {
        c = client::startH2(io, nullptr, nullptr, action, h2Request(e, url.scheme), &sink, &call);
    } else {
        auto h1 = client::Http1Call::create(io, action);
        h1->request() = http1Request(e);
        h1->start(nullptr, nullptr, &sink, &call);
        c = std::move(h1);
    }
    // The whole exchange within options.timeout, and the caller's cancel descriptor watched.
    std::string stopped;
    boost::asio::steady_timer deadline(io, options.timeout);
    deadline.async_wait([&](const boost::system::error_code& ec) {
        if (ec || sink.ended()) return;
        stopped = "no response within the timeout";
        io.stop();
    });
    std::optional<boost::asio::posix::stream_descriptor> cancelWatch;
    if (cancelFd >= 0) {
        cancelWatch.emplace(io, ::dup(cancelFd));
        cancelWatch->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                                [&](const boost::system::error_code& ec) {
                                    if (ec || sink.ended()) return;
                                    stopped = "cancelled";
                                    io.stop();
                                });
    }
    io.run();
    c->cancel();
    if (!sink.ended()) {
        r.error = stopped.empty() ? "no response within the timeout" : stopped;
        return r;
    }
    if (!sink.error().empty()) {
        r.error = sink.error();
        return r;
    }
    if (https && h2 && e.alpn != "h2") {
        // The server chose HTTP/1.1: the call went on as HTTP/1.1, with Connection: close.
        e.requestHeaders = std::move(asHttp1.requestHeaders);
        e.requestHeaders.push_back({"Connection", "close"});
        e.requestHeadersSize = 0;
    }
    const bool spokeH2 = h2 && (!https || e.alpn == "h2");
    e.protocol = spokeH2 ? Protocol::Http2 : Protocol::Http1;
    e.httpVersion = spokeH2 ? 20 : 11;
    e.responseBodySize = sink.bodySize();
    if (sink.bodySize() > options.bodyBytes) e.flags |= kResponseBodyTruncated;
    e.responseBody = sink.takeBody();
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

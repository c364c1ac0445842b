// FastCGI responder client (FastCGI 1.0 specification) for `fastcgi:` routes (see fastcgi.h).
#include "proxy/fastcgi.h"

#include "client/connect.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <charconv>

namespace portico::proxy {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
constexpr std::uint8_t kBeginRequest = 1, kEndRequest = 3, kParams = 4, kStdin = 5, kStdout = 6, kStderr = 7;
constexpr std::size_t kMaxHead = 64 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;

void record(std::string& out, std::uint8_t type, std::string_view content) {
    const std::size_t n = content.size();
    const unsigned char pad = static_cast<unsigned char>((8 - n % 8) % 8);
    const char head[8] = {1,
                          static_cast<char>(type),
                          0,
                          1,
                          static_cast<char>(n >> 8),
                          static_cast<char>(n & 255),
                          static_cast<char>(pad),
                          0};
    out.append(head, 8);
    out.append(content);
    out.append(pad, '\0');
}

void length(std::string& out, std::size_t n) {
    if (n < 128) {
        out.push_back(static_cast<char>(n));
        return;
    }
    out.push_back(static_cast<char>(((n >> 24) & 0x7f) | 0x80));
    out.push_back(static_cast<char>((n >> 16) & 255));
    out.push_back(static_cast<char>((n >> 8) & 255));
    out.push_back(static_cast<char>(n & 255));
}

void param(std::string& params, std::string_view name, std::string_view value) {
    length(params, name.size());
    length(params, value.size());
    params.append(name);
    params.append(value);
}

class FastCgiCall final : public client::Call, public std::enable_shared_from_this<FastCgiCall> {
public:
    using Socket = asio::basic_stream_socket<asio::generic::stream_protocol, asio::io_context::executor_type>;
    FastCgiCall(asio::io_context& io, const config::ProxyAction& action)
        : io_(io), action_(action), socket_(io.get_executor()), timer_(io) {}

    void build(const http::Request& req, bool tls);
    void connect();
    void resume() override;
    void cancel() override;

    std::shared_ptr<void> owner_;
    std::shared_ptr<const void> snapshot_;
    const config::HostOverrides* hosts_ = nullptr; // `hosts:` (snapshot_ keeps it); null: none
    Sink* sink_ = nullptr;

private:
    void read();
    void onRead(std::size_t n);
    bool parseHead();
    void fail(int status, const std::string& why);
    void finish();
    /// Stops the timer, closes the socket and detaches the sink, then (unless cancelled) calls
    /// tell(sink) with this call kept alive until it returns.
    template <class Tell> void end(Tell&& tell);
    void arm();
    void connected(const boost::system::error_code& e, const std::string& why);

    asio::io_context& io_;
    const config::ProxyAction& action_;
    Socket socket_;
    asio::steady_timer timer_;
    std::string request_;
    std::string in_;      // bytes read, records not yet parsed
    std::string head_;    // CGI response head so far
    std::string fields_;  // for the sink
    std::string pending_; // STDOUT body bytes held while the sink is paused
    std::size_t offset_ = 0;
    bool headSent_ = false;
    bool paused_ = false;
    bool done_ = false;
    bool cancelled_ = false;
    bool headRequest_ = false;
};

void FastCgiCall::build(const http::Request& req, bool tls) {
    headRequest_ = req.method == http::Method::Head;
    const config::FastCgi& f = action_.fastcgi;
    // SCRIPT_NAME: the request path up to and including the first segment ending in `.php`
    // (action_.fastcgi.extension); PATH_INFO: the rest. A path ending in '/' gets the index.
    std::string path(req.path);
    std::string script = path, pathInfo;
    for (std::size_t at = 0; (at = path.find(f.extension, at)) != std::string::npos; ++at) {
        const std::size_t end = at + f.extension.size();
        if (end == path.size() || path[end] == '/') {
            script = path.substr(0, end);
            pathInfo = path.substr(end);
            break;
        }
    }
    if (script.ends_with('/')) script += f.index;
    std::string params;
    const std::string root = f.root;
    param(params, "GATEWAY_INTERFACE", "CGI/1.1");
    param(params, "SERVER_SOFTWARE", "Portico/" PORTICO_VERSION);
    param(params, "SERVER_PROTOCOL",
          req.versionMajor == 2   ? "HTTP/2"
          : req.versionMinor == 0 ? "HTTP/1.0"
                                  : "HTTP/1.1");
    param(params, "REQUEST_METHOD", req.methodToken);
    param(params, "REQUEST_URI", req.target);
    param(params, "DOCUMENT_URI", script);
    param(params, "DOCUMENT_ROOT", root);
    param(params, "SCRIPT_NAME", script);
    param(params, "SCRIPT_FILENAME", root + script);
    param(params, "PATH_INFO", pathInfo);
    if (!pathInfo.empty()) param(params, "PATH_TRANSLATED", root + pathInfo);
    param(params, "QUERY_STRING", req.query);
    param(params, "REMOTE_ADDR", req.clientAddress);
    std::string_view host = req.host;
    std::string_view serverName = host.substr(
        0, host.rfind(':') == std::string_view::npos || host.ends_with(']') ? host.size() : host.rfind(':'));
    param(params, "SERVER_NAME", serverName);
    param(params, "REDIRECT_STATUS", "200"); // php-cgi's force-cgi-redirect
    if (tls) param(params, "HTTPS", "on");
    param(params, "REQUEST_SCHEME", tls ? "https" : "http");
    std::string_view contentType;
    for (const auto& h : req.headers)
        if (http::iequals(h.name, "content-type")) contentType = h.value;
    param(params, "CONTENT_TYPE", contentType);
    param(params, "CONTENT_LENGTH", req.body.empty() ? std::string() : std::to_string(req.body.size()));
    std::string name;
    for (const auto& h : req.headers) {
        if (http::iequals(h.name, "content-type") || http::iequals(h.name, "content-length") ||
            http::iequals(h.name, "proxy") || (!h.name.empty() && h.name.front() == ':'))
            continue; // HTTP_PROXY would be httpoxy (CVE-2016-5385)
        name = "HTTP_";
        for (char c : h.name)
            name.push_back(c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c);
        param(params, name, h.value);
    }
    if (!req.host.empty() && req.versionMajor == 2) param(params, "HTTP_HOST", req.host);
    static const char begin[8] = {0, 1, 0, 0, 0, 0, 0, 0}; // role RESPONDER, close after the request
    record(request_, kBeginRequest, std::string_view(begin, 8));
    for (std::size_t at = 0; at < params.size(); at += 65535)
        record(request_, kParams, std::string_view(params).substr(at, 65535));
    record(request_, kParams, {});
    for (std::size_t at = 0; at < req.body.size(); at += 65535)
        record(request_, kStdin, req.body.substr(at, 65535));
    record(request_, kStdin, {});
}

void FastCgiCall::arm() {
    timer_.expires_after(action_.responseTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->done_ || self->cancelled_ || self->paused_) return;
        self->fail(self->headSent_ ? 0 : 504, "timed out waiting for the response");
    });
}

void FastCgiCall::connect() {
    if (cancelled_) return;
    const config::FastCgi& f = action_.fastcgi;
    std::vector<tcp::endpoint> endpoints;
    if (f.socketPath.empty()) {
        std::string error;
        endpoints = client::resolve(f.host, f.port, error, hosts_);
        if (endpoints.empty()) {
            fail(502, error);
            return;
        }
    }
    timer_.expires_after(action_.connectTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->done_ || self->cancelled_) return;
        self->fail(504, "timed out connecting (connect_timeout)");
    });
    if (!f.socketPath.empty()) {
        socket_.async_connect(asio::local::stream_protocol::endpoint(f.socketPath),
                              [self = shared_from_this()](const boost::system::error_code& e) {
                                  self->connected(e, "cannot connect: " + e.message());
                              });
        return;
    }
    const bool several = endpoints.size() > 1;
    client::asyncConnect(socket_, std::move(endpoints),
                         [self = shared_from_this(), several](const boost::system::error_code& e,
                                                              const tcp::endpoint&,
                                                              const std::string& failures) {
                             self->connected(e, "cannot connect: " + (several ? failures : e.message()));
                         });
}

void FastCgiCall::connected(const boost::system::error_code& e, const std::string& why) {
    if (done_ || cancelled_) return;
    if (e) {
        fail(502, why);
        return;
    }
    if (sink_) sink_->onUpstreamConnected();
    arm();
    asio::async_write(socket_, asio::buffer(request_),
                      [self = shared_from_this()](const boost::system::error_code& we, std::size_t) {
                          if (self->done_ || self->cancelled_) return;
                          if (we) {
                              self->fail(502, "connection lost while sending the request: " + we.message());
                              return;
                          }
                          std::string().swap(self->request_);
                      });
    read();
}

void FastCgiCall::read() {
    if (done_ || cancelled_ || paused_) return;
    const std::size_t at = in_.size();
    in_.resize(at + kReadChunk);
    socket_.async_read_some(
        asio::buffer(in_.data() + at, kReadChunk),
        [self = shared_from_this(), at](const boost::system::error_code& e, std::size_t n) {
            self->in_.resize(at + (e ? 0 : n));
            if (self->done_ || self->cancelled_) return;
            if (e) {
                self->fail(self->headSent_ ? 0 : 502,
                           e == asio::error::eof ? "closed the connection before the end of the response"
                                                 : "connection lost: " + e.message());
                return;
            }
            self->onRead(n);
        });
}

// Parses whole records from in_ and hands STDOUT on; reads again unless paused or done.
void FastCgiCall::onRead(std::size_t) {
    std::size_t at = 0;
    while (!done_ && !cancelled_ && in_.size() - at >= 8) {
        const auto* h = reinterpret_cast<const unsigned char*>(in_.data() + at);
        const std::size_t len = (std::size_t(h[4]) << 8) | h[5];
        const std::size_t total = 8 + len + h[6];
        if (h[0] != 1) {
            fail(headSent_ ? 0 : 502, "not a FastCGI record (version " + std::to_string(h[0]) + ")");
            return;
        }
        if (in_.size() - at < total) break;
        std::string_view content(in_.data() + at + 8, len);
        at += total;
        if (h[1] == kStdout && !content.empty()) {
            if (!headSent_) {
                head_.append(content);
                if (!parseHead()) {
                    if (done_) return;
                    continue;
                }
            } else if (!headRequest_) {
                pending_.append(content);
            }
        } else if (h[1] == kStderr) {
            continue; // the application's log; php-fpm writes it to its own log too
        } else if (h[1] == kEndRequest) {
            in_.erase(0, at);
            if (!headSent_) {
                fail(502, "ended the request without a response head");
                return;
            }
            done_ = true; // the end follows once pending_ is delivered
        }
    }
    in_.erase(0, at);
    resume(); // deliver pending_, then read on
}

// The CGI response head (RFC 3875 §6): "Status: 404 Not Found", Location, other fields. True when
// it is complete and went to the sink; body bytes after it move to pending_.
bool FastCgiCall::parseHead() {
    std::size_t end = head_.find("\r\n\r\n");
    std::size_t skip = 4;
    if (auto lf = head_.find("\n\n"); lf != std::string::npos && (end == std::string::npos || lf < end)) {
        end = lf;
        skip = 2;
    }
    if (end == std::string::npos) {
        if (head_.size() > kMaxHead) fail(502, "response head larger than 64 KiB");
        return false;
    }
    int status = 200;
    bool location = false, haveStatus = false;
    std::optional<std::uint64_t> length;
    fields_.clear();
    std::string_view block(head_.data(), end);
    while (!block.empty()) {
        auto eol = block.find('\n');
        std::string_view line = block.substr(0, eol);
        block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            fail(502, "malformed field in the CGI response head");
            return false;
        }
        std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        if (http::iequals(name, "status")) {
            auto [p, ec] =
                std::from_chars(value.data(), value.data() + std::min<std::size_t>(3, value.size()), status);
            if (ec != std::errc{} || status < 100 || status > 599) {
                fail(502, "bad Status in the CGI response head");
                return false;
            }
            haveStatus = true;
            continue;
        }
        if (http::iequals(name, "location")) location = true;
        if (http::iequals(name, "content-length")) {
            std::uint64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec == std::errc{} && p == value.data() + value.size()) length = v;
            continue;
        }
        if (http::iequals(name, "connection") || http::iequals(name, "transfer-encoding") ||
            http::iequals(name, "keep-alive"))
            continue;
        fields_.append(name);
        fields_.append(": ");
        fields_.append(value);
        fields_.append("\r\n");
    }
    if (location && !haveStatus) status = 302; // RFC 3875 §6.2.3 (client redirect)
    pending_.assign(head_, end + skip);
    head_.clear();
    headSent_ = true;
    timer_.cancel();
    if (headRequest_) pending_.clear(); // a script may write a body anyway
    if (sink_) sink_->onUpstreamHead(status, fields_, length);
    return !cancelled_;
}

void FastCgiCall::resume() {
    if (cancelled_) return;
    paused_ = false;
    while (offset_ < pending_.size() && sink_) {
        std::string_view data = std::string_view(pending_).substr(offset_);
        offset_ = pending_.size();
        if (!sink_->onUpstreamBody(data)) {
            paused_ = true;
            timer_.cancel();
        }
        if (cancelled_) return;
        if (paused_) break;
    }
    if (offset_ == pending_.size()) {
        pending_.clear();
        offset_ = 0;
    }
    if (paused_) return;
    if (done_) {
        finish();
        return;
    }
    if (headSent_) arm();
    read();
}

template <class Tell> void FastCgiCall::end(Tell&& tell) {
    timer_.cancel();
    boost::system::error_code ec;
    socket_.close(ec);
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    if (sink && !cancelled_) tell(*sink);
}

void FastCgiCall::finish() {
    end([](Sink& sink) { sink.onUpstreamEnd(); });
}

void FastCgiCall::fail(int status, const std::string& why) {
    done_ = true;
    end([&](Sink& sink) { sink.onUpstreamError(status, "fastcgi " + action_.fastcgi.address + ": " + why); });
}

void FastCgiCall::cancel() {
    cancelled_ = true;
    sink_ = nullptr;
    timer_.cancel();
    boost::system::error_code ec;
    socket_.close(ec);
    // Released after the caller's handler (it may hold the last reference to the caller).
    if (owner_) asio::post(timer_.get_executor(), [owner = std::move(owner_)] {});
}
} // namespace

std::shared_ptr<client::Call> startFastCgi(asio::io_context& io, std::shared_ptr<void> owner,
                                           std::shared_ptr<const void> snapshot,
                                           const config::ProxyAction& action, const http::Request& req,
                                           bool tls, Sink* sink, const config::HostOverrides* hosts) {
    auto call = std::make_shared<FastCgiCall>(io, action);
    call->owner_ = std::move(owner);
    call->snapshot_ = std::move(snapshot);
    call->hosts_ = hosts;
    call->sink_ = sink;
    call->build(req, tls);
    asio::post(io, [call] { call->connect(); });
    return call;
}

} // namespace portico::proxy

// One proxied exchange (RFC 9110 §7.6): the request forwarded to an HTTP/1.1 upstream of a
// `proxy:` route, and its response streamed back to the downstream connection with backpressure.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/http1/parser.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace portico::proxy {

/// What the downstream side (an HTTP/1.1 connection or an HTTP/2 stream) does with the upstream's
/// answer. Called on the worker thread, never after Exchange::cancel().
class Sink {
public:
    virtual ~Sink() = default;
    /// The response head. `fields` is "Name: value\r\n" lines without hop-by-hop fields and
    /// without Content-Length; `length` is the body length when the upstream gave one (also for a
    /// HEAD response), nullopt when the body runs until its end (chunked or close-delimited).
    virtual void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> length) = 0;
    /// Body bytes (de-chunked). Return false when the downstream buffer is full: no more calls
    /// until Exchange::resume().
    virtual bool onUpstreamBody(std::string_view data) = 0;
    /// The whole response was delivered.
    virtual void onUpstreamEnd() = 0;
    /// Failure. Before the head: `status` is 502 (connect/reset/bad response) or 504 (timeout)
    /// and `message` says which upstream and why. After the head: `status` is 0 and the downstream
    /// must abort its response (the promised length cannot be kept).
    virtual void onUpstreamError(int status, const std::string& message) = 0;
};

namespace detail {
// Calls fn(name, value) for each "Name: value\r\n" line of `block` (value without leading OWS).
template <class Fn> void forEachField(std::string_view block, Fn&& fn) {
    while (!block.empty()) {
        auto eol = block.find("\r\n");
        std::string_view line = block.substr(0, eol);
        block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 2);
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        fn(line.substr(0, colon), value);
    }
}
} // namespace detail

/// The fields a proxied response carries downstream, as fn(name, value) calls: the upstream's
/// (`upstream`, as given to Sink::onUpstreamHead) without Date and Server (the downstream writes
/// its own) and without any name `overrides` (the vhost's and route's `headers`) sets, then
/// `overrides`. Names compare case-insensitively (RFC 9110 §5.1).
template <class Fn> void mergeResponseFields(std::string_view upstream, std::string_view overrides, Fn&& fn) {
    detail::forEachField(upstream, [&](std::string_view name, std::string_view value) {
        if (http::iequals(name, "date") || http::iequals(name, "server")) return;
        bool overridden = false;
        detail::forEachField(overrides, [&](std::string_view mine, std::string_view) {
            overridden = overridden || http::iequals(mine, name);
        });
        if (!overridden) fn(name, value);
    });
    detail::forEachField(overrides, fn);
}

/// A request forwarded upstream. Start with start(); the sink then gets head, body and end (or an
/// error). Upstream connections are kept alive per worker thread and reused (at most 32 idle per
/// upstream). Upstreams are tried round-robin; one that refused a connection is skipped for
/// `fail_timeout`, and the next one is tried at once (nothing was sent). A request that fails on
/// a reused keep-alive connection before any response byte is retried once on a new connection if
/// its method is idempotent (RFC 9110 §9.2.2).
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
    using Socket =
        boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

    /// Copies what it needs from `req` (the request views may die when this returns). `owner`
    /// is kept alive until the exchange ends or is cancelled (the downstream connection, and the
    /// config snapshot `action` lives in). `tls`: the downstream scheme for X-Forwarded-Proto.
    static std::shared_ptr<Exchange> start(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                           std::shared_ptr<const void> snapshot,
                                           const config::ProxyAction& action, const http::Request& req,
                                           bool tls, Sink* sink);

    /// The downstream drained: deliver more body.
    void resume();
    /// The downstream went away: no more callbacks; the upstream connection is closed.
    void cancel();

    Exchange(boost::asio::io_context& io, const config::ProxyAction& action);
    ~Exchange();

private:
    enum class Stage : std::uint8_t { Connecting, Sending, Head, Body, Done };
    void buildRequest(const http::Request& req, bool tls);
    void pick();
    void connect();
    void send();
    void read();
    void onRead(std::size_t n);
    bool parseHead();
    bool deliver(std::string_view data);
    void finish(bool reusable);
    void fail(int status, const std::string& why, bool retryable);
    void arm(std::chrono::nanoseconds timeout);

    boost::asio::io_context& io_;
    const config::ProxyAction& action_;
    std::shared_ptr<void> owner_;
    std::shared_ptr<const void> snapshot_;
    Sink* sink_ = nullptr;
    Socket socket_;
    boost::asio::steady_timer timer_;
    const config::Upstream* upstream_ = nullptr;
    std::size_t tries_ = 0;
    std::string request_; // serialised head + body
    std::string buffer_;  // read buffer
    std::size_t buffered_ = 0;
    std::string head_;   // response head so far
    std::string fields_; // filtered fields for the sink
    std::string chunkOut_;
    std::string carry_; // chunked bytes not decoded yet
    http1::ChunkedDecoder chunked_;
    enum class Framing : std::uint8_t { None, Length, Chunked, UntilClose } framing_ = Framing::None;
    std::uint64_t remaining_ = 0;
    int status_ = 0;
    Stage stage_ = Stage::Connecting;
    bool reused_ = false; // the upstream connection came from the pool
    bool idempotent_ = false;
    bool headRequest_ = false;
    bool keepAlive_ = true; // the upstream allows reuse
    bool paused_ = false;
    bool cancelled_ = false;
    bool gotBytes_ = false; // any response byte arrived
};

} // namespace portico::proxy

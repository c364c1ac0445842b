// CONNECT's upstream connection (connect.h).
#include "proxy/connect.h"

#include "client/connect.h"
#include "proxy/origin.h"

#include <portico/config/network.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace portico::proxy {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class ConnectCall final : public client::Call, public std::enable_shared_from_this<ConnectCall> {
public:
    ConnectCall(asio::io_context& io, std::shared_ptr<void> owner, std::string host, std::uint16_t port,
                client::Sink* sink, std::string mapped)
        : socket_(io), timer_(io), owner_(std::move(owner)), host_(std::move(host)), port_(port), sink_(sink),
          mapped_(std::move(mapped)) {}

    void start(std::chrono::nanoseconds timeout) {
        // Posted: the sink is never called before startConnect() returns.
        asio::post(socket_.get_executor(), [self = shared_from_this(), timeout] { self->connect(timeout); });
    }
    void resume() override {}
    void cancel() override {
        if (done_) return;
        done_ = true;
        boost::system::error_code ec;
        timer_.cancel();
        socket_.close(ec);
        owner_.reset();
    }

private:
    std::string where() const { return authorityText(host_, port_); }

    void connect(std::chrono::nanoseconds timeout) {
        if (done_) return;
        std::string error;
        auto endpoints = client::resolve(mapped_.empty() ? host_ : mapped_, port_, error);
        if (endpoints.empty()) {
            fail(502, error);
            return;
        }
        resolvedNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
        timer_.expires_after(timeout);
        timer_.async_wait([self = shared_from_this(), timeout](const boost::system::error_code& ec) {
            if (ec || self->done_) return;
            self->fail(504, "timed out connecting to " + self->where() + " after " +
                                std::to_string(
                                    std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                                " ms");
        });
        client::asyncConnect(socket_, std::move(endpoints),
                             [self = shared_from_this()](const boost::system::error_code& ec,
                                                         const tcp::endpoint& endpoint,
                                                         const std::string& failures) {
                                 if (self->done_) return;
                                 if (ec) {
                                     self->fail(502, "cannot connect to " + self->where() + ": " + failures);
                                     return;
                                 }
                                 self->connected(endpoint);
                             });
    }

    void connected(const tcp::endpoint& endpoint) {
        done_ = true;
        timer_.cancel();
        boost::system::error_code ec;
        socket_.set_option(tcp::no_delay(true), ec);
        client::Sink* sink = sink_;
        auto keep = std::move(owner_); // the session outlives its own callbacks
        sink->onUpstreamConnection(resolvedNs_, std::chrono::steady_clock::now().time_since_epoch().count(),
                                   client::endpointText(endpoint));
        sink->onUpstreamConnected();
        sink->onUpstreamUpgrade({}, std::move(socket_), nullptr, {});
    }

    void fail(int status, const std::string& message) {
        done_ = true;
        timer_.cancel();
        boost::system::error_code ec;
        socket_.close(ec);
        auto keep = std::move(owner_);
        sink_->onUpstreamError(status, message);
    }

    client::UpstreamSocket socket_;
    asio::steady_timer timer_;
    std::shared_ptr<void> owner_;
    std::string host_;
    std::uint16_t port_;
    client::Sink* sink_;
    std::string mapped_; // the address `hosts:` gives host_ ("": none): the call may outlive the config
    std::int64_t resolvedNs_ = -1; // steady ns: the addresses were at hand
    bool done_ = false;
};

} // namespace

std::shared_ptr<client::Call> startConnect(asio::io_context& io, std::shared_ptr<void> owner,
                                           std::string host, std::uint16_t port,
                                           std::chrono::nanoseconds timeout, client::Sink* sink,
                                           const config::HostOverrides* hosts) {
    const config::HostOverride* mapped = hosts ? config::findHostOverride(*hosts, host) : nullptr;
    auto call = std::make_shared<ConnectCall>(io, std::move(owner), std::move(host), port, sink,
                                              mapped ? mapped->address : std::string());
    call->start(timeout);
    return call;
}

} // namespace portico::proxy

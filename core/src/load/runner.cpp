// The load engine: worker threads with their own io_context drive HTTP/1.1 keep-alive or HTTP/2
// connections, in cleartext or over TLS (closed or open model), time every request and merge their
// counters when the run ends. TLS runs on the socket itself (SSL_set_fd, like the server's
// transport); HTTP/2 is an nghttp2 client session fed with mem_recv and drained with mem_send.
#include <portico/load/runner.h>

#include <portico/http1/response_parser.h>

#include "client/connect.h"
#include "io/drained.h"
#include "io/transport.h"
#include "load/plan.h"
#include "tls/alpn.h"
#include "tls/client_tls.h"

#include <portico/http/message.h>
#include <portico/http2/session.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <latch>
#include <limits>
#include <optional>
#include <random>
#include <thread>

#include <csignal>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace portico::load {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using http1::ResponseParser;

using namespace detail;
using tls::sslErrorText;

namespace {

// `absolute`: to a forward proxy, the request-target in absolute-form (RFC 9112 §3.2.2).
std::string serialise(const RequestSpec& spec, const Url& url, bool absolute) {
    std::string s;
    s.reserve(128 + spec.body.size());
    s += spec.method;
    s += ' ';
    if (absolute) {
        s += url.scheme;
        s += "://";
        s += url.authority;
    }
    s += url.target;
    s += " HTTP/1.1\r\n";
    bool host = false;
    for (const auto& [name, value] : spec.headers)
        if (http::iequals(name, "host")) host = true;
    if (!host) {
        s += "Host: ";
        s += url.authority;
        s += "\r\n";
    }
    for (const auto& [name, value] : spec.headers) {
        s += name;
        s += ": ";
        s += value;
        s += "\r\n";
    }
    if (!spec.body.empty()) {
        s += "Content-Length: ";
        s += std::to_string(spec.body.size());
        s += "\r\n";
    }
    s += "\r\n";
    s += spec.body;
    return s;
}

// The HTTP/2 form of a request: pseudo-header fields, then the given fields with lower-case names
// (Host becomes :authority; connection-specific fields, RFC 9113 §8.2.2, are dropped), prepared
// for HPACK with the run's other kinds in `table` (indexed after each connection's first use).
void prepareH2(Prepared& p, const RequestSpec& spec, const Url& url, client::H2RequestFields& table) {
    std::string authority = url.authority;
    for (const auto& [name, value] : spec.headers)
        if (http::iequals(name, "host")) authority = value;
    std::vector<std::string> lowered; // the names the fields point into: reserved, never moved
    lowered.reserve(spec.headers.size());
    const std::string length = std::to_string(spec.body.size());
    std::vector<client::HeaderField> fields{
        {":method", spec.method}, {":scheme", url.scheme}, {":authority", authority}, {":path", url.target}};
    for (const auto& [name, value] : spec.headers) {
        lowered.push_back(http::lower(name));
        if (lowered.back() == "host" || http2::isConnectionSpecific(lowered.back(), value)) continue;
        fields.emplace_back(lowered.back(), value);
    }
    if (!spec.body.empty()) fields.emplace_back("content-length", length);
    p.h2Fields = table.prepare(fields);
    p.body = spec.body;
}

// The authority-form of CONNECT's target: host and port, an IPv6 literal in brackets (RFC 9110
// §9.3.6).
std::string authorityWithPort(const Url& url) {
    const bool v6 = url.host.find(':') != std::string::npos;
    return (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
}

// Through a forward proxy: CONNECT on the connected socket (blocking; SO_RCVTIMEO bounds it) and
// the status line of its answer. Empty when the tunnel is open (2xx, nothing after the head).
std::string probeTunnel(tcp::socket& sock, const std::string& request, const std::string& proxy,
                        const std::string& authority) {
    const int fd = sock.native_handle();
    const std::string who = "the proxy at " + proxy;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
        return who + " closed the connection before CONNECT " + authority;
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
        if (head.size() > 16 * 1024) return who + " answered CONNECT with a head over 16 KiB";
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            return who + " did not answer CONNECT " + authority +
                   (n < 0 ? std::string(": ") + std::strerror(errno)
                          : std::string(": it closed the connection"));
        head.append(buf, static_cast<std::size_t>(n));
    }
    const std::string line = head.substr(0, head.find("\r\n"));
    if (!(line.size() >= 12 && line.starts_with("HTTP/1.") && line[9] == '2'))
        return who + " refused CONNECT " + authority + ": " + line;
    if (head.size() != head.find("\r\n\r\n") + 4)
        return who + " sent bytes after its answer to CONNECT " + authority +
               ", before the server behind it spoke";
    return {};
}

// A blocking TLS handshake on a connected socket, so certificate and ALPN problems are reported as
// one clear error before the run. Empty on success.
std::string probeTls(const Plan& plan, tcp::socket& sock, const std::string& address) {
    SSL* ssl = SSL_new(plan.connection.ssl);
    if (!ssl) return "TLS: " + sslErrorText();
    std::unique_ptr<SSL, void (*)(SSL*)> guard(ssl, SSL_free);
    SSL_set_fd(ssl, sock.native_handle());
    plan.connection.tls->prepare(ssl);
    if (SSL_connect(ssl) != 1) {
        const bool certificate =
            !plan.connection.tls->verifyHost.empty() && SSL_get_verify_result(ssl) != X509_V_OK;
        return tls::handshakeError(ssl, *plan.connection.tls, address) +
               (certificate
                    ? "; trust its CA with --cacert FILE (portico cert export FILE writes Portico's) or "
                      "pass --insecure"
                    : "");
    }
    if (plan.connection.h2 && tls::alpnOf(ssl) != "h2")
        return "the server at " + address + " did not negotiate HTTP/2 (ALPN h2) over TLS";
    SSL_shutdown(ssl);
    ERR_clear_error();
    return {};
}

// h2c with prior knowledge: the connection preface and an empty SETTINGS must be answered by a
// SETTINGS frame. Empty on success.
std::string probeH2c(tcp::socket& sock, const std::string& address) {
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
    const int fd = sock.native_handle();
    bool ok =
        ::send(fd, preface, sizeof preface - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof preface - 1);
    unsigned char head[9];
    std::size_t got = 0;
    while (ok && got < sizeof head) {
        const ssize_t n = ::recv(fd, head + got, sizeof head - got, 0); // SO_RCVTIMEO bounds it
        if (n <= 0)
            ok = false;
        else
            got += static_cast<std::size_t>(n);
    }
    if (!ok || head[3] != 4)
        return "the server at " + address +
               " did not answer the HTTP/2 connection preface (h2c prior knowledge); is it an HTTP/2 server?";
    return {};
}

} // namespace

Result run(const Options& options, const std::atomic<bool>* abort, Live* live) {
    Result result;
    result.options = options;
    // Request ids replace any x-request-id given (-H) or recorded (--from): one field, ours. The
    // result's requests say what was sent.
    if (options.requestId)
        for (auto& spec : result.options.requests)
            std::erase_if(spec.headers,
                          [](const auto& h) { return http::iequals(h.first, kRequestIdField); });
    auto refuse = [&](std::string message) {
        result.error = std::move(message);
        return std::move(result);
    };
    std::string error;
    if (!validate(options, error)) return refuse(error);

    Plan plan;
    plan.options = &result.options;
    plan.abort = abort;
    plan.live = live;
    plan.connection.h2 = options.protocol == Protocol::Http2;
    plan.connection.keepResponseHeads = options.samples; // the samples' responseHeaders
    if (options.requestId) { // 48 random bits: runs on several generators do not collide
        std::random_device random;
        const std::uint64_t bits = (std::uint64_t{random()} << 16 ^ random()) & 0xffff'ffff'ffffu;
        char run[13];
        std::snprintf(run, sizeof run, "%012llx", static_cast<unsigned long long>(bits));
        plan.requestIdRun = run;
    }
    plan.specs.reserve(options.requests.size());
    Url first;
    std::uint32_t cumulative = 0;
    client::H2RequestFields h2Table; // the kinds' fields share dynamic-table entries
    for (const auto& spec : result.options.requests) {
        Url url;
        if (!parseUrl(spec.url, url, error)) return refuse(error);
        if (plan.specs.empty())
            first = url;
        else if (url.origin() != first.origin())
            return refuse("all URLs of a run must have the same scheme, host and port: '" + url.origin() +
                          "' differs from '" + first.origin() + "'");
        Prepared p;
        p.head = spec.method == "HEAD";
        if (plan.connection.h2) {
            prepareH2(p, spec, url, h2Table);
        } else {
            p.http1 = serialise(spec, url, !options.proxy.empty() && url.scheme == "http");
            p.http1FieldsEnd = static_cast<std::uint32_t>(p.http1.size() - spec.body.size() - 2);
        }
        plan.specs.push_back(std::move(p));
        cumulative += spec.weight;
        plan.cumulativeWeights.push_back(cumulative);
    }

    // Resolve, and keep to loopback unless allowed otherwise. Every address is a candidate; the
    // pre-flight below picks the first that accepts ("localhost" is [::1] then 127.0.0.1).
    std::string resolveError;
    const auto candidates = client::resolve(first.host, first.port, resolveError);
    if (candidates.empty()) return refuse(resolveError);
    for (const auto& e : candidates)
        if (!client::isLoopback(e.address()) && !options.allowRemote)
            return refuse("refusing to load '" + first.host + "' (" + e.address().to_string() +
                          "): not a loopback address; pass --allow-remote to load another machine");
    // Through a forward proxy: connections go to it; https and h2c through a CONNECT tunnel.
    auto connectTo = candidates;
    std::string connectName = first.host;
    if (!options.proxy.empty()) {
        Url proxy;
        if (!parseUrl(options.proxy, proxy, error)) return refuse("proxy: " + error);
        connectTo = client::resolve(proxy.host, proxy.port, resolveError);
        if (connectTo.empty()) return refuse("proxy: " + resolveError);
        for (const auto& e : connectTo)
            if (!client::isLoopback(e.address()) && !options.allowRemote)
                return refuse("refusing the proxy '" + proxy.host + "' (" + e.address().to_string() +
                              "): not a loopback address; pass --allow-remote to use another machine");
        connectName = "the proxy"; // cannotConnect adds its address
        if (first.scheme == "https" || plan.connection.h2) {
            const std::string authority = authorityWithPort(first);
            plan.connection.tunnel = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
        }
    }
    asio::io_context setup;

    // TLS: one client context for every connection.
    std::unique_ptr<tls::ClientTls> clientTls;
    if (first.scheme == "https") {
        tls::ClientTlsOptions to;
        to.host = first.host;
        to.alpn = {plan.connection.h2 ? "h2" : "http/1.1"};
        to.insecure = options.insecure;
        to.caFile = options.caFile;
        std::string tlsError;
        clientTls = tls::makeClientTls(to, tlsError);
        if (!clientTls) return refuse(tlsError);
        plan.connection.tls = clientTls.get();
        plan.connection.ssl = clientTls->ctx.get();
    }

    // Pre-flight: one connection, so "nothing listens there", a certificate that does not verify or a
    // server without HTTP/2 is one error, not a run of failures.
    {
        std::string failures;
        const int fd =
            client::connectFd(connectTo, std::chrono::seconds(5), true, plan.connection.endpoint, failures);
        if (fd < 0) return refuse(client::cannotConnect(connectName, failures));
        result.address = client::endpointText(plan.connection.endpoint);
        if (!options.proxy.empty()) result.address = "proxy " + result.address;
        tcp::socket probe(setup);
        boost::system::error_code ec;
        probe.assign(plan.connection.endpoint.protocol(), fd, ec);
        if (ec) {
            ::close(fd);
            return refuse("cannot use the connection to " + result.address + ": " + ec.message());
        }
        const timeval tv{5, 0}; // a silent server must not hang the probe
        ::setsockopt(probe.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(probe.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        // Who answers the TLS and HTTP/2 probes: the target, through the proxy's tunnel if any.
        const std::string serverName =
            options.proxy.empty() ? result.address
                                  : authorityWithPort(first) + " (through the " + result.address + ")";
        std::string problem;
        if (!plan.connection.tunnel.empty())
            problem = probeTunnel(probe, plan.connection.tunnel,
                                  client::endpointText(plan.connection.endpoint), authorityWithPort(first));
        if (problem.empty() && plan.connection.ssl) {
            // The probe runs on the caller's thread: SIGPIPE blocked for it, and one it raised consumed.
            sigset_t pipe, old;
            sigemptyset(&pipe);
            sigaddset(&pipe, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe, &old);
            problem = probeTls(plan, probe, serverName);
            const timespec zero{0, 0};
            while (sigtimedwait(&pipe, nullptr, &zero) == SIGPIPE) {
            }
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
        } else if (problem.empty() && plan.connection.h2) {
            problem = probeH2c(probe, serverName);
        }
        if (!problem.empty()) return refuse(problem);
        probe.close(ec);
    }

    // Start barrier (Options::startAt): wait before the run's connections open, so that generators
    // started with the same time measure the same interval. An abort during the wait ends the
    // command before any load is sent.
    if (options.startAt != std::chrono::system_clock::time_point{}) {
        while (std::chrono::system_clock::now() < options.startAt) {
            if (abort && abort->load(std::memory_order_relaxed))
                return refuse("stopped while waiting for the start time (" + isoTime(options.startAt) +
                              "): no request was sent");
            std::this_thread::sleep_for(std::min<std::chrono::system_clock::duration>(
                options.startAt - std::chrono::system_clock::now(), std::chrono::milliseconds(10)));
        }
    }
    detail::drive(plan, result);
    return result;
}

} // namespace portico::load

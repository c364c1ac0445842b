// A forward proxy's origins as actions (origin.h).
#include "proxy/origin.h"

#include "client/connect.h"
#include "tls/client_tls.h"

#include <openssl/ssl.h>

#include <portico/http/message.h>

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <map>
#include <mutex>
#include <unordered_map>

namespace portico::proxy {

bool splitAuthority(std::string_view authority, std::string& host, std::uint16_t& port) {
    port = 0;
    std::string_view h = authority, p;
    if (authority.starts_with('[')) {
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) return false;
        h = authority.substr(1, close - 1);
        std::string_view rest = authority.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return false;
            p = rest.substr(1);
            if (p.empty()) return false;
        }
    } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
        h = authority.substr(0, colon);
        p = authority.substr(colon + 1);
        if (p.empty() || h.find(':') != std::string_view::npos) return false;
    }
    if (h.empty()) return false;
    if (!p.empty()) {
        unsigned v = 0;
        auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
        if (ec != std::errc{} || end != p.data() + p.size() || v == 0 || v > 65535) return false;
        port = static_cast<std::uint16_t>(v);
    }
    host.assign(h);
    return true;
}

std::string authorityText(std::string_view host, std::uint16_t port) {
    const bool v6 = host.find(':') != std::string_view::npos;
    return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::shared_ptr<const config::ProxyAction> originAction(std::string_view scheme, std::string_view authority,
                                                        std::string& error) {
    const bool https = http::iequals(scheme, "https");
    if (!https && !http::iequals(scheme, "http")) {
        error = "unsupported scheme '" + std::string(scheme) + "'";
        return nullptr;
    }
    std::string key(https ? "https://" : "http://");
    for (char c : authority)
        key.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    thread_local std::unordered_map<std::string, std::shared_ptr<const config::ProxyAction>> cache;
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    config::Upstream u;
    if (!splitAuthority(authority, u.host, u.port)) {
        error = "invalid authority '" + std::string(authority) + "'";
        return nullptr;
    }
    if (u.port == 0) u.port = https ? 443 : 80;
    u.authority = authorityText(u.host, u.port);
    u.protocol = https ? config::Upstream::Protocol::H2 : config::Upstream::Protocol::Http1;
    auto action = std::make_shared<config::ProxyAction>();
    action->upstreams.push_back(std::move(u));
    action->transparent = true;
    action->ws = !https;
    if (cache.size() >= kMaxCachedOrigins)
        std::erase_if(cache, [](const auto& entry) { return entry.second.use_count() == 1; });
    if (cache.size() < kMaxCachedOrigins) cache.emplace(std::move(key), action);
    return action;
}

namespace {
// The client contexts (trust store, ALPN) for origins, built once per process and settings (loading
// the system store takes tens of milliseconds); each origin gets its own SNI and name check on
// them (tls::clientTlsFor). Kept for the process's life.
const tls::ClientTls* originTlsBase(const config::ForwardProxy& options, bool h2, std::string& error) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<tls::ClientTls>> bases;
    const std::string key =
        (h2 ? "h2|" : "h1|") + options.upstreamCaFile + (options.upstreamInsecure ? "|insecure" : "");
    std::lock_guard lock(mutex);
    auto& base = bases[key];
    if (!base) {
        tls::ClientTlsOptions t;
        t.host = "origin.invalid"; // a name: verification on unless insecure (clientTlsFor sets the host)
        t.alpn = h2 ? std::vector<std::string>{"h2", "http/1.1"} : std::vector<std::string>{"http/1.1"};
        t.insecure = options.upstreamInsecure;
        t.caFile = options.upstreamCaFile;
        base = tls::makeClientTls(t, error);
        if (!base) {
            bases.erase(key);
            return nullptr;
        }
        // Origins that close without close_notify (many dev servers) end a close-delimited body.
        SSL_CTX_set_options(base->ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
    }
    return base.get();
}
} // namespace

bool prepareInterception(const config::ForwardProxy& options, std::string& error) {
    return originTlsBase(options, true, error) && originTlsBase(options, false, error);
}

std::shared_ptr<const InterceptedOrigin> interceptedOrigin(const std::string& host, std::uint16_t port,
                                                           const config::ForwardProxy& options,
                                                           std::string& error) {
    std::string key = host + "|" + std::to_string(port) + "|" + options.upstreamCaFile +
                      (options.upstreamInsecure ? "|insecure" : "");
    for (char& c : key)
        c = c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
    thread_local std::unordered_map<std::string, std::shared_ptr<const InterceptedOrigin>> cache;
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    auto o = std::make_shared<InterceptedOrigin>();
    o->host = host;
    o->port = port;
    o->authority = authorityText(host, port);
    config::Upstream u;
    u.host = host;
    u.port = port;
    u.authority = o->authority;
    u.protocol = config::Upstream::Protocol::H2;
    auto action = std::make_shared<config::ProxyAction>();
    action->upstreams.push_back(u);
    action->transparent = true;
    auto ws = std::make_shared<config::ProxyAction>(*action);
    ws->ws = true;
    o->action = std::move(action);
    o->wsAction = std::move(ws);
    for (bool h2 : {true, false}) {
        const tls::ClientTls* base = originTlsBase(options, h2, error);
        if (!base) return nullptr;
        std::shared_ptr<const tls::ClientTls> ctx = tls::clientTlsFor(*base, host);
        (h2 ? o->h2Tls : o->h1Tls) = ctx;
        (h2 ? o->h2Options : o->h1Options).tls = ctx.get();
    }
    if (cache.size() >= kMaxCachedOrigins)
        std::erase_if(cache, [](const auto& entry) { return entry.second.use_count() == 1; });
    if (cache.size() < kMaxCachedOrigins) cache.emplace(std::move(key), o);
    return o;
}

bool matchesHostGlob(std::string_view host, const std::vector<std::string>& globs) {
    // Iterative wildcard match with one backtrack point (the last '*').
    auto match = [](std::string_view glob, std::string_view text) {
        std::size_t g = 0, t = 0, star = std::string_view::npos, mark = 0;
        auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
        while (t < text.size()) {
            if (g < glob.size() && glob[g] == '*') {
                star = g++;
                mark = t;
            } else if (g < glob.size() && lower(glob[g]) == lower(text[t])) {
                ++g;
                ++t;
            } else if (star != std::string_view::npos) {
                g = star + 1;
                t = ++mark;
            } else {
                return false;
            }
        }
        while (g < glob.size() && glob[g] == '*')
            ++g;
        return g == glob.size();
    };
    for (const auto& glob : globs)
        if (match(glob, host)) return true;
    return false;
}

bool isOwnListener(std::string_view host, std::uint16_t port, std::uint16_t localPort) {
    if (port != localPort) return false;
    if (http::iequals(host, "localhost")) return true;
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(std::string(host), ec);
    return !ec && (client::isLoopback(address) || address.is_unspecified());
}

} // namespace portico::proxy

// Opening handshake checks and negotiation (RFC 6455 §4.2.1-§4.2.2, §9.1; RFC 7692 §5, §7.1).
#include "ws/upgrade.h"

#include "handlers/live_reload.h"
#include "ws/hub.h"

#include <portico/http/ascii.h>
#include <portico/ws/websocket.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace portico::ws {
namespace {

const config::WebSocketAction& liveReloadAction() {
    static const config::WebSocketAction a = [] {
        config::WebSocketAction x;
        x.maxMessageBytes = 4096;
        x.compression = false;
        x.pingInterval = std::chrono::seconds(20);
        x.idleTimeout = std::chrono::seconds(60);
        return x;
    }();
    return a;
}

constexpr auto trim = http::trimOws;

// Calls fn(element) for every element of the comma-separated lists in all fields named `name`.
template <class Fn> void forEachListItem(const http::Request& req, std::string_view name, Fn fn) {
    for (const http::Header& h : req.headers) {
        if (!http::iequals(h.name, name)) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            std::size_t comma = v.find(',');
            std::string_view item = trim(v.substr(0, comma));
            if (!item.empty()) fn(item);
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
}

bool listHasToken(const http::Request& req, std::string_view name, std::string_view token) {
    bool found = false;
    forEachListItem(req, name, [&](std::string_view item) { found = found || http::iequals(item, token); });
    return found;
}

struct HostPort {
    std::string host; // lower case, no brackets, no trailing dot
    std::string port; // "" when absent
};

// "Example.TEST:8080" → {"example.test", "8080"}; "[::1]:80" → {"::1", "80"}.
HostPort splitHost(std::string_view h) {
    HostPort out;
    if (h.starts_with("[")) {
        std::size_t close = h.find(']');
        if (close == std::string_view::npos) return {http::lower(h), ""};
        out.host = http::lower(h.substr(1, close - 1));
        if (close + 1 < h.size() && h[close + 1] == ':') out.port = std::string(h.substr(close + 2));
        return out;
    }
    std::size_t colon = h.rfind(':');
    if (colon != std::string_view::npos && h.find(':') == colon) {
        out.host = http::lower(h.substr(0, colon));
        out.port = std::string(h.substr(colon + 1));
    } else {
        out.host = http::lower(h);
    }
    if (!out.host.empty() && out.host.back() == '.') out.host.pop_back();
    return out;
}

bool isIpLiteral(const std::string& h) {
    in_addr a4{};
    in6_addr a6{};
    return inet_pton(AF_INET, h.c_str(), &a4) == 1 || inet_pton(AF_INET6, h.c_str(), &a6) == 1;
}

// "https://Example.test:443" → "https://example.test" (default port dropped); "" if not an origin.
std::string normaliseOrigin(std::string_view origin) {
    std::string o = http::lower(trim(origin));
    std::size_t sep = o.find("://");
    if (sep == std::string::npos) return {};
    std::string scheme = o.substr(0, sep);
    if (scheme != "http" && scheme != "https") return {};
    HostPort hp = splitHost(std::string_view(o).substr(sep + 3));
    if (hp.host.empty() || hp.host.find('/') != std::string::npos) return {};
    bool v6 = hp.host.find(':') != std::string::npos;
    std::string out = scheme + "://" + (v6 ? "[" + hp.host + "]" : hp.host);
    if (!hp.port.empty() && !(scheme == "http" && hp.port == "80") &&
        !(scheme == "https" && hp.port == "443"))
        out += ":" + hp.port;
    return out;
}

// True if the IP literal `ip` is an address of this server: loopback, a listen address, or, when a
// listener takes every address (0.0.0.0, ::), an address of one of this machine's interfaces.
bool ownAddress(const config::Config& cfg, const std::string& ip) {
    in_addr a4{};
    in6_addr a6{};
    const bool v4 = inet_pton(AF_INET, ip.c_str(), &a4) == 1;
    if (!v4 && inet_pton(AF_INET6, ip.c_str(), &a6) != 1) return false;
    if (v4 ? (ntohl(a4.s_addr) >> 24) == 127 : IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    bool wildcard = false;
    for (const config::Listen& l : cfg.listen) {
        if (l.host == "0.0.0.0" || l.host == "::") wildcard = true;
        in_addr l4{};
        in6_addr l6{};
        if (v4 ? inet_pton(AF_INET, l.host.c_str(), &l4) == 1 && l4.s_addr == a4.s_addr
               : inet_pton(AF_INET6, l.host.c_str(), &l6) == 1 && std::memcmp(&l6, &a6, sizeof l6) == 0)
            return true;
    }
    if (!wildcard) return false;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return false;
    bool found = false;
    for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        if (v4 && i->ifa_addr->sa_family == AF_INET)
            found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == a4.s_addr;
        else if (!v4 && i->ifa_addr->sa_family == AF_INET6)
            found = std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, &a6,
                                sizeof a6) == 0;
    }
    freeifaddrs(list);
    return found;
}

// True if `origin` is a page of this server: the request's scheme and port, and a host that is
// ours: a loopback name, one of this server's addresses (ownAddress) or a configured vhost name.
// Unlike a Host field, an IP literal in an Origin is not ours just for being an address: a page
// at http://203.0.113.7:8080 (another machine, the same port) is a foreign page.
bool servedOrigin(const config::Config& cfg, std::string_view origin, std::string_view host, bool tls) {
    std::string o = normaliseOrigin(origin);
    std::string scheme = tls ? "https://" : "http://";
    if (!o.starts_with(scheme)) return false;
    HostPort from = splitHost(std::string_view(o).substr(scheme.size()));
    HostPort to = splitHost(host);
    std::string defaultPort = tls ? "443" : "80";
    if ((from.port.empty() ? defaultPort : from.port) != (to.port.empty() ? defaultPort : to.port))
        return false;
    if (isIpLiteral(from.host)) return ownAddress(cfg, from.host);
    return servedHost(cfg, from.host);
}

// permessage-deflate offers (RFC 7692 §5, §7.1): the first one we can honour is accepted.
bool negotiateDeflate(const http::Request& req, Accepted& a, std::string& response) {
    bool accepted = false;
    forEachListItem(req, "Sec-WebSocket-Extensions", [&](std::string_view offer) {
        if (accepted) return;
        std::size_t semi = offer.find(';');
        if (!http::iequals(trim(offer.substr(0, semi)), "permessage-deflate")) return;
        bool serverNoCtx = false, clientNoCtx = false, clientBits = false;
        int serverBits = 0;
        std::string_view params =
            semi == std::string_view::npos ? std::string_view{} : offer.substr(semi + 1);
        while (!params.empty()) {
            std::size_t next = params.find(';');
            std::string_view p = trim(params.substr(0, next));
            params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
            std::size_t eq = p.find('=');
            std::string_view key = trim(p.substr(0, eq));
            std::string_view value =
                eq == std::string_view::npos ? std::string_view{} : trim(p.substr(eq + 1));
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
                value = value.substr(1, value.size() - 2);
            int bits = 0;
            bool hasBits = !value.empty();
            if (hasBits) {
                auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bits);
                if (ec != std::errc{} || end != value.data() + value.size() || bits < 8 || bits > 15) return;
            }
            if (http::iequals(key, "server_no_context_takeover") && !hasBits &&
                eq == std::string_view::npos) {
                if (serverNoCtx) return;
                serverNoCtx = true;
            } else if (http::iequals(key, "client_no_context_takeover") && eq == std::string_view::npos) {
                if (clientNoCtx) return;
                clientNoCtx = true;
            } else if (http::iequals(key, "server_max_window_bits") && hasBits) {
                // zlib cannot produce raw deflate with a 256-byte window; decline such offers.
                if (serverBits || bits < 9) return;
                serverBits = bits;
            } else if (http::iequals(key, "client_max_window_bits")) {
                if (clientBits) return; // we inflate with a 32 KiB window: any client value works
                clientBits = true;
            } else {
                return; // unknown parameter: decline this offer (§5)
            }
        }
        accepted = true;
        a.deflate = true;
        a.clientNoContext = clientNoCtx;
        // We never keep compression context between messages (§7.1.1.1 lets the server say so
        // unasked): one compressor per worker serves every session.
        response = "permessage-deflate; server_no_context_takeover";
        if (clientNoCtx) response += "; client_no_context_takeover";
        if (serverBits) response += "; server_max_window_bits=" + std::to_string(serverBits);
        a.serverWindowBits = serverBits ? serverBits : 15;
    });
    return accepted;
}

void refuse(http::Response& res, int status, std::string_view why) {
    res.status = status;
    res.setHeader("Content-Type", "text/plain; charset=utf-8");
    std::string& body = res.ownedBody();
    body.append(std::to_string(status));
    body.push_back(' ');
    body.append(http::reasonPhrase(status));
    body.append(": ");
    body.append(why);
    body.push_back('\n');
}

} // namespace

bool servedHost(const config::Config& config, std::string_view host) {
    HostPort hp = splitHost(host);
    const std::string& h = hp.host;
    if (h.empty()) return false;
    if (h == "localhost" || h.ends_with(".localhost")) return true; // RFC 6761 §6.3
    // An address typed as such cannot be a rebound DNS name.
    if (isIpLiteral(h)) return true;
    for (const config::Vhost& vh : config.vhosts) {
        for (const std::string& n : vh.names) {
            if (n == "*") continue; // a catch-all is no statement about which names are ours
            if (n.starts_with("*.")) {
                std::string_view suffix = std::string_view(n).substr(1); // ".example.test"
                if (h.size() > suffix.size() && h.ends_with(suffix)) return true;
            } else if (n == h) {
                return true;
            }
        }
    }
    return false;
}

std::unique_ptr<Accepted> acceptUpgrade(UpgradeContext context, std::size_t vhostIndex,
                                        const routing::RouteResult& route, const http::Request& req, bool tls,
                                        http::Response& res) {
    const config::Config& cfg = *context.config;
    const config::Vhost& vhost = cfg.vhosts[vhostIndex];
    auto a = std::make_unique<Accepted>();
    a->liveReload = vhost.liveReload && req.path == handlers::kLiveReloadPath;
    if (a->liveReload) {
        a->action = &liveReloadAction();
        a->route = Hub::kLiveReloadRoute;
    } else {
        a->action = &std::get<config::WebSocketAction>(route.route->action);
    }
    const config::WebSocketAction& action = *a->action;

    if (req.method != http::Method::Get) {
        refuse(res, 405, "a WebSocket handshake is a GET request");
        res.addHeader("Allow", "GET");
        return nullptr;
    }
    // The reserved endpoint answers only pages this server served (DNS rebinding, cross-site
    // WebSocket hijacking: cases HST-01, HST-02), whatever else the request says.
    if (a->liveReload && !servedHost(cfg, req.host)) {
        refuse(res, 403, "this Host is not served here");
        return nullptr;
    }
    if (!listHasToken(req, "Upgrade", "websocket") || !listHasToken(req, "Connection", "upgrade") ||
        req.versionMinor < 1) {
        refuse(res, 426, "this is a WebSocket endpoint");
        res.addHeader("Upgrade", "websocket");
        return nullptr;
    }
    if (trim(req.header("Sec-WebSocket-Version")) != "13") {
        refuse(res, 426, "only WebSocket version 13 is supported");
        res.addHeader("Sec-WebSocket-Version", "13");
        return nullptr;
    }
    int keys = 0;
    for (const http::Header& h : req.headers)
        if (http::iequals(h.name, "Sec-WebSocket-Key")) ++keys;
    std::string_view key = trim(req.header("Sec-WebSocket-Key"));
    if (keys != 1 || !validKey(key)) {
        refuse(res, 400, "Sec-WebSocket-Key must be one base64-encoded 16-byte value");
        return nullptr;
    }
    if (req.hasHeader("Origin")) {
        std::string origin = normaliseOrigin(req.header("Origin"));
        bool ok = servedOrigin(cfg, req.header("Origin"), req.host, tls);
        if (!ok && !a->liveReload)
            ok = std::any_of(action.origins.begin(), action.origins.end(), [&](const std::string& o) {
                return o == "*" || (!origin.empty() && normaliseOrigin(o) == origin);
            });
        if (!ok) {
            refuse(res, 403, "Origin not allowed");
            return nullptr;
        }
    }
    if (context.draining) {
        refuse(res, 503, "the server is stopping");
        return nullptr;
    }
    if (!context.hub) {
        refuse(res, 503, "WebSocket sessions are not available");
        return nullptr;
    }
    if (!a->liveReload && action.mode == config::WebSocketAction::Mode::Room) {
        a->route = route.route->path;
        std::string_view name = route.param(action.roomParam);
        a->room = name.empty() ? route.route->path : std::string(name);
    }

    // Subprotocol: our first preference the client offered (§4.2.2 item 5.4).
    for (const std::string& p : action.subprotocols) {
        if (listHasToken(req, "Sec-WebSocket-Protocol", p)) {
            a->subprotocol = p;
            break;
        }
    }
    std::string extensions;
    if (action.compression) negotiateDeflate(req, *a, extensions);

    res.status = 101;
    res.addHeader("Upgrade", "websocket");
    res.addHeader("Connection", "Upgrade");
    res.addHeader("Sec-WebSocket-Accept", acceptKey(key));
    if (!a->subprotocol.empty()) res.addHeader("Sec-WebSocket-Protocol", a->subprotocol);
    if (!extensions.empty()) res.addHeader("Sec-WebSocket-Extensions", extensions);
    a->snapshot = std::move(context.keepAlive);
    a->config = context.config;
    a->hub = std::move(context.hub);
    a->target = std::string(req.target);
    a->host = std::string(req.host);
    return a;
}

} // namespace portico::ws

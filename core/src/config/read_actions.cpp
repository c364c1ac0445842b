// Reads the route actions: one reader per action kind, listed in Reader::kActions (name → reader),
// the way nginx modules declare their directives in one table.
#include "reader_impl.h"

#include <algorithm>
#include <charconv>

namespace portico::config::detail {

namespace {

constexpr std::string_view kFastCgiKeys[] = {
    "address", "root", "index", "extension", "connect_timeout", "response_timeout"};
constexpr std::string_view kProxyKeys[] = {
    "upstream",     "strip_prefix", "change_origin",    "forwarded", "connect_timeout", "response_timeout",
    "fail_timeout", "idle_timeout", "grpc_timeout_max", "ws",        "descriptor_set",  "keepalive"};
constexpr std::string_view kStaticKeys[] = {"root", "index", "listing", "spa_fallback", "follow_symlinks"};
constexpr std::string_view kRespondKeys[] = {
    "status", "headers", "body", "file", "latency", "latency_max", "drop_rate", "error_rate", "error_status"};
constexpr std::string_view kRedirectKeys[] = {"to", "status"};
constexpr std::string_view kWebSocketKeys[] = {"mode",          "room_param",        "origins",
                                               "subprotocols",  "max_message_bytes", "compression",
                                               "ping_interval", "idle_timeout"};

} // namespace

const Reader::ActionKind Reader::kActions[] = {
    {"static", &Reader::readStatic, [] { return Action(StaticAction{}); }},
    {"respond", &Reader::readRespond, [] { return Action(RespondAction{}); }},
    {"redirect", &Reader::readRedirect, [] { return Action(RedirectAction{}); }},
    {"proxy", &Reader::readProxy, [] { return Action(ProxyAction{}); }},
    {"grpc", &Reader::readProxy,
     [] {
         ProxyAction p;
         p.grpc = true;
         return Action(p);
     }},
    {"fastcgi", &Reader::readFastCgi,
     [] {
         ProxyAction p;
         p.fastcgi.address = "127.0.0.1:9000"; // php-fpm's default listen address (marks the kind)
         return Action(p);
     }},
    {"websocket", &Reader::readWebSocket, [] { return Action(WebSocketAction{}); }},
};

const Reader::ActionKind* Reader::actionKind(std::string_view key) {
    for (const ActionKind& a : kActions)
        if (a.key == key) return &a;
    return nullptr;
}

bool Reader::readStaticKey(const Entry& e, StaticAction& st) {
    const Value& val = e.value;
    if (e.key == "root") {
        if (auto p = absolute(val)) st.root = *p;
    } else if (e.key == "index") {
        if (auto names = strings(val)) {
            st.index.clear();
            for (std::size_t i = 0; i < names->size(); ++i) {
                const std::string& n = (*names)[i];
                if (n.empty() || n.find('/') != std::string::npos || n == "." || n == "..")
                    error(val.node.IsSequence() ? Value{val.node[i], item(val.path, i), val.node[i].Mark()}
                                                : val,
                          "index entries are file names without '/', got '" + n + "'");
                else
                    st.index.push_back(n);
            }
        }
    } else if (e.key == "listing") {
        if (auto b = boolean(val)) st.listing = *b;
    } else if (e.key == "spa_fallback") {
        if (auto s = string(val)) st.spaFallback = *s;
    } else if (e.key == "follow_symlinks") {
        if (auto b = boolean(val)) st.followSymlinks = *b;
    } else {
        return false;
    }
    return true;
}

std::optional<Action> Reader::readStatic(const Entry& e, const RouteShape&) {
    const std::size_t before = errors_.size();
    StaticAction st;
    bool sawRoot = false;
    if (!e.value.node.IsMap()) {
        error(e.value, "expected a map such as {root: ./site}, got " + describe(e.value.node));
        return std::nullopt;
    }
    readMap(e.value, kStaticKeys, [&](const Entry& k) {
        if (k.key == "root") sawRoot = true;
        return readStaticKey(k, st);
    });
    if (!sawRoot) {
        error(e.value, "static needs a `root:` directory");
        return std::nullopt;
    }
    if (errors_.size() != before || st.root.empty()) return std::nullopt;
    return st;
}

std::optional<Action> Reader::readRespond(const Entry& e, const RouteShape& shape) {
    RespondAction rs;
    std::optional<Value> latency, latencyMax, body, file;
    readMap(e.value, kRespondKeys, [&](const Entry& k) {
        const Value& val = k.value;
        if (k.key == "status") {
            if (auto s = status(val, 200, 599)) rs.status = *s;
        } else if (k.key == "headers") {
            if (auto h = headers(val, &shape)) rs.headers = std::move(*h);
        } else if (k.key == "body") {
            body = val;
            if (auto s = string(val)) {
                rs.body = *s;
                checkTemplates(val, rs.body, shape);
            }
        } else if (k.key == "file") {
            file = val;
            if (auto p = absolute(val)) rs.bodyFile = *p;
        } else if (k.key == "latency") {
            latency = val;
            if (auto d = duration(val, true)) rs.latency = *d;
        } else if (k.key == "latency_max") {
            latencyMax = val;
            if (auto d = duration(val, true)) rs.latencyMax = *d;
        } else if (k.key == "drop_rate") {
            if (auto d = number(val, 0, 1)) rs.dropRate = *d;
        } else if (k.key == "error_rate") {
            if (auto d = number(val, 0, 1)) rs.errorRate = *d;
        } else if (k.key == "error_status") {
            if (auto s = status(val, 400, 599)) rs.errorStatus = *s;
        } else {
            return false;
        }
        return true;
    });
    if (body && file) error(*file, "use either `body` or `file`, not both");
    if (latencyMax && rs.latencyMax < rs.latency) error(*latencyMax, "latency_max must be at least latency");
    // With errors: the action as far as it read (the config is refused; the GUI's form shows it).
    return rs;
}

/// `address:` of a fastcgi action: HOST:PORT ("[::1]:9000" too) or unix:PATH.
void Reader::fastCgiAddress(const Value& val, FastCgi& f) {
    auto s = string(val);
    if (!s) return;
    f.address = *s;
    if (s->starts_with("unix:")) {
        fs::path p(s->substr(5));
        if (p.empty()) {
            error(val, "unix: needs a socket path, got '" + *s + "'");
            return;
        }
        if (p.is_relative()) p = baseDir_ / p;
        f.socketPath = normalise(p);
        return;
    }
    auto colon = s->rfind(':');
    std::string host = colon == std::string::npos ? std::string() : s->substr(0, colon);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int port = 0;
    const char* b = s->data() + (colon == std::string::npos ? 0 : colon + 1);
    auto [end, ec] = std::from_chars(b, s->data() + s->size(), port);
    if (host.empty() || ec != std::errc{} || end != s->data() + s->size() || port < 1 || port > 65535) {
        error(val, "expected HOST:PORT or unix:PATH, got '" + *s + "'");
        return;
    }
    f.host = host;
    f.port = static_cast<std::uint16_t>(port);
}

std::optional<Action> Reader::readFastCgi(const Entry& e, const RouteShape&) {
    const std::size_t before = errors_.size();
    ProxyAction px;
    FastCgi& f = px.fastcgi;
    if (!e.value.node.IsMap()) {
        error(e.value, "fastcgi needs a map: {address: 127.0.0.1:9000, root: ./php}");
        return std::nullopt;
    }
    readMap(e.value, kFastCgiKeys, [&](const Entry& k) {
        const Value& val = k.value;
        if (k.key == "address") {
            fastCgiAddress(val, f);
        } else if (k.key == "root") {
            if (auto d = absolute(val)) f.root = *d;
        } else if (k.key == "index") {
            if (auto s = string(val)) f.index = *s;
        } else if (k.key == "extension") {
            if (auto s = string(val)) {
                if (s->empty() || s->find('/') != std::string::npos)
                    error(val, "extension must be a non-empty suffix like .php, got '" + *s + "'");
                else
                    f.extension = *s;
            }
        } else if (k.key == "connect_timeout") {
            if (auto d = duration(val, false)) px.connectTimeout = *d;
        } else if (k.key == "response_timeout") {
            if (auto d = duration(val, false)) px.responseTimeout = *d;
        } else {
            return false;
        }
        return true;
    });
    if (!e.value.node["address"]) error(e.value, "fastcgi needs `address:` (HOST:PORT or unix:PATH)");
    if (!e.value.node["root"]) error(e.value, "fastcgi needs `root:` (the document root the server sees)");
    if (errors_.size() != before) return std::nullopt;
    return px;
}

/// One upstream URL of a proxy or grpc action, appended to `px.upstreams` when it reads.
void Reader::upstreamUrl(const Value& val, ProxyAction& px) {
    auto s = string(val);
    if (!s) return;
    std::string url = *s;
    Upstream::Protocol protocol = Upstream::Protocol::Http1;
    std::size_t schemeEnd = url.find("://");
    if (url.starts_with("http://")) {
        protocol = Upstream::Protocol::Http1;
    } else if (url.starts_with("h2c://")) {
        protocol = Upstream::Protocol::H2c;
    } else if (url.starts_with("https://")) {
        protocol = Upstream::Protocol::H2;
    } else if (px.grpc && schemeEnd == std::string::npos) {
        protocol = Upstream::Protocol::H2c; // `grpc: 127.0.0.1:50051`
        schemeEnd = 0;
    } else {
        error(val, std::string("expected an upstream URL ") +
                       (px.grpc ? "h2c://HOST:PORT or https://HOST:PORT"
                                : "http://HOST:PORT, h2c://HOST:PORT or https://HOST:PORT") +
                       ", got '" + url + "'");
        return;
    }
    if (px.grpc && protocol == Upstream::Protocol::Http1) {
        error(val, "gRPC needs HTTP/2: use h2c://HOST:PORT or https://HOST:PORT, got '" + url + "'");
        return;
    }
    if (!px.upstreams.empty() && px.upstreams.front().protocol != protocol) {
        error(val, "all upstreams of a route must use the same scheme, got '" + url + "'");
        return;
    }
    std::string rest = schemeEnd == 0 ? url : url.substr(schemeEnd + 3);
    while (!rest.empty() && rest.back() == '/')
        rest.pop_back();
    if (rest.find('/') != std::string::npos || rest.find('?') != std::string::npos || rest.empty()) {
        error(val, "an upstream is SCHEME://HOST[:PORT] without a path (use strip_prefix to rewrite paths), "
                   "got '" +
                       url + "'");
        return;
    }
    Upstream u;
    u.protocol = protocol;
    if (protocol == Upstream::Protocol::H2) u.port = 443;
    u.authority = rest;
    std::string host = rest, port;
    if (rest.front() == '[') {
        auto close = rest.find(']');
        if (close == std::string::npos) {
            error(val, "unclosed '[' in '" + url + "'");
            return;
        }
        host = rest.substr(1, close - 1);
        if (close + 1 < rest.size()) {
            if (rest[close + 1] != ':') {
                error(val, "expected ':' after ']' in '" + url + "'");
                return;
            }
            port = rest.substr(close + 2);
        }
    } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
    }
    if (!port.empty()) {
        int n = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
        if (ec != std::errc{} || end != port.data() + port.size() || n < 1 || n > 65535) {
            error(val, "upstream port must be 1..65535, got '" + port + "'");
            return;
        }
        u.port = static_cast<std::uint16_t>(n);
    }
    if (host.empty()) {
        error(val, "upstream needs a host, got '" + url + "'");
        return;
    }
    u.host = host;
    px.upstreams.push_back(std::move(u));
}

/// One key of a proxy or grpc map; false for an unknown key.
bool Reader::readProxyKey(const Entry& k, ProxyAction& px) {
    const Value& val = k.value;
    if (k.key == "upstream") {
        if (val.node.IsSequence()) {
            if (val.node.size() == 0) error(val, "at least one upstream is required");
            for (std::size_t i = 0; i < val.node.size(); ++i)
                upstreamUrl(Value{val.node[i], item(val.path, i), val.node[i].Mark()}, px);
        } else {
            upstreamUrl(val, px);
        }
    } else if (k.key == "strip_prefix") {
        if (auto s = string(val)) {
            if (s->empty() || s->front() != '/')
                error(val, "strip_prefix must start with '/', got '" + *s + "'");
            else
                px.stripPrefix = *s;
        }
    } else if (k.key == "change_origin") {
        if (auto b = boolean(val)) px.changeOrigin = *b;
    } else if (k.key == "forwarded") {
        if (auto b = boolean(val)) px.forwarded = *b;
    } else if (k.key == "connect_timeout") {
        if (auto d = duration(val, false)) px.connectTimeout = *d;
    } else if (k.key == "response_timeout") {
        if (auto d = duration(val, false)) px.responseTimeout = *d;
    } else if (k.key == "fail_timeout") {
        if (auto d = duration(val, true)) px.failTimeout = *d;
    } else if (k.key == "idle_timeout") {
        if (auto d = duration(val, false)) px.idleTimeout = *d;
    } else if (k.key == "keepalive") {
        if (auto n = integer(val, 0, 100000)) px.keepalive = static_cast<std::uint32_t>(*n);
    } else if (k.key == "grpc_timeout_max") {
        if (auto d = duration(val, true)) px.grpcTimeoutMax = *d;
    } else if (k.key == "ws") {
        if (auto b = boolean(val)) px.ws = *b;
    } else if (k.key == "descriptor_set") {
        if (!px.grpc) {
            error(val, "descriptor_set belongs to grpc: routes");
        } else if (auto s = string(val)) {
            fs::path p(*s);
            if (p.is_relative()) p = baseDir_ / p;
            if (s->empty())
                error(val,
                      "descriptor_set needs a file (protoc --include_imports --descriptor_set_out=FILE)");
            else
                px.descriptorSet = p.lexically_normal().string(); // loaded by validate
        }
    } else {
        return false;
    }
    return true;
}

/// `proxy:` and `grpc:` (the same model; grpc needs HTTP/2 upstreams).
std::optional<Action> Reader::readProxy(const Entry& e, const RouteShape&) {
    const std::size_t before = errors_.size();
    ProxyAction px;
    px.grpc = e.key == "grpc";
    if (e.value.node.IsScalar()) {
        upstreamUrl(e.value, px);
    } else {
        readMap(e.value, kProxyKeys, [&](const Entry& k) { return readProxyKey(k, px); });
        if (!e.value.node["upstream"] && e.value.node.IsMap()) error(e.value, e.key + " needs `upstream:`");
        if (px.ws && !px.upstreams.empty() && px.upstreams.front().protocol == Upstream::Protocol::H2c)
            error(e.value, "ws: true needs http:// or https:// upstreams (WebSocket upgrades are HTTP/1.1)");
    }
    if (errors_.size() != before) return std::nullopt;
    return px;
}

std::optional<Action> Reader::readRedirect(const Entry& e, const RouteShape& shape) {
    RedirectAction rd;
    bool sawTo = false;
    if (!e.value.node.IsMap()) {
        error(e.value, "expected a map such as {to: /new, status: 301}, got " + describe(e.value.node));
        return std::nullopt;
    }
    readMap(e.value, kRedirectKeys, [&](const Entry& k) {
        if (k.key == "to") {
            sawTo = true;
            auto s = string(k.value);
            if (!s) return true;
            if (s->empty() || hasControlChars(*s) ||
                std::any_of(s->begin(), s->end(), [](char c) { return c == ' ' || c == '\t'; }))
                error(k.value,
                      "redirect target must be a non-empty URL or path without spaces or line breaks");
            else {
                rd.to = *s;
                checkTemplates(k.value, rd.to, shape);
            }
        } else if (k.key == "status") {
            auto s = status(k.value, 100, 599);
            if (s && *s != 301 && *s != 302 && *s != 303 && *s != 307 && *s != 308)
                error(k.value,
                      "redirect status must be 301, 302, 303, 307 or 308, got " + std::to_string(*s));
            else if (s)
                rd.status = *s;
        } else {
            return false;
        }
        return true;
    });
    if (!sawTo) error(e.value, "redirect needs `to:`");
    // With errors: the action as far as it read (the config is refused; the GUI's form shows it).
    return rd;
}

std::optional<Action> Reader::readWebSocket(const Entry& e, const RouteShape& shape) {
    const Value& v = e.value;
    WebSocketAction ws;
    auto mode = [&](const Value& m) {
        auto s = string(m);
        if (!s) return;
        if (*s == "echo")
            ws.mode = WebSocketAction::Mode::Echo;
        else if (*s == "room")
            ws.mode = WebSocketAction::Mode::Room;
        else
            error(m, "websocket mode must be echo or room, got '" + *s + "'");
    };
    if (v.node.IsScalar()) {
        mode(v);
    } else if (!v.node.IsMap()) {
        error(v, "expected echo, room or a map such as {mode: room}, got " + describe(v.node));
        return std::nullopt;
    } else {
        std::optional<Value> roomParam;
        readMap(v, kWebSocketKeys, [&](const Entry& k) {
            const Value& val = k.value;
            if (k.key == "mode") {
                mode(val);
            } else if (k.key == "room_param") {
                roomParam = val;
                if (auto s = string(val)) ws.roomParam = *s;
            } else if (k.key == "origins") {
                if (auto list = strings(val)) {
                    for (const std::string& o : *list) {
                        bool ok = o == "*" || ((o.starts_with("http://") || o.starts_with("https://")) &&
                                               o.find('/', o.find("//") + 2) == std::string::npos &&
                                               o.size() > o.find("//") + 2 && !hasControlChars(o));
                        if (!ok)
                            error(val, "an origin is \"*\" or scheme://host[:port] without a path, got '" +
                                           o + "'");
                        else
                            ws.origins.push_back(lower(o));
                    }
                }
            } else if (k.key == "subprotocols") {
                if (auto list = strings(val)) {
                    for (const std::string& p : *list) {
                        if (!isToken(p))
                            error(val, "a subprotocol is a token (RFC 6455 §4.1), got '" + p + "'");
                        else
                            ws.subprotocols.push_back(p);
                    }
                }
            } else if (k.key == "max_message_bytes") {
                if (auto n = size(val, 1)) ws.maxMessageBytes = *n;
            } else if (k.key == "compression") {
                if (auto b = boolean(val)) ws.compression = *b;
            } else if (k.key == "ping_interval") {
                if (auto d = duration(val, true)) ws.pingInterval = *d;
            } else if (k.key == "idle_timeout") {
                if (auto d = duration(val, false)) ws.idleTimeout = *d;
            } else {
                return false;
            }
            return true;
        });
        if (roomParam && !shape.unknown &&
            std::find(shape.params.begin(), shape.params.end(), ws.roomParam) == shape.params.end())
            error(*roomParam, "the route has no parameter ':" + ws.roomParam + "' to name the room");
    }
    // With errors: the action as far as it read (the config is refused; the GUI's form shows it).
    return ws;
}

} // namespace portico::config::detail

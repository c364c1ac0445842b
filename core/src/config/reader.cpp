// Reads a YAML config file into the Config model and a SourceMap, collecting every located reading
// error. What needs other modules or the disk is checked by validate/ (portico/validate/validate.h).
#include "reader_impl.h"

#include <portico/config/network.h>
#include <portico/config/reader.h>

#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <span>

namespace portico::config {

namespace fs = std::filesystem;

std::string ConfigError::toString() const {
    std::string out = where.file;
    if (where.line > 0) out += ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
    out += ": ";
    if (!path.empty()) out += path + ": ";
    out += message;
    return out;
}

Location SourceMap::at(std::string_view path) const {
    auto it = values.find(path);
    if (it == values.end()) return Location{file, 0, 0};
    return it->second;
}

std::string SourceMap::routePath(std::size_t vhost, std::size_t route) const {
    if (vhost < routes.size() && route < routes[vhost].size()) return routes[vhost][route].path;
    return "vhosts[" + std::to_string(vhost) + "].routes[" + std::to_string(route) + "]";
}

std::string SourceMap::matchPath(std::size_t vhost, std::size_t route) const {
    if (vhost < routes.size() && route < routes[vhost].size())
        return routes[vhost][route].path + "." + routes[vhost][route].matchKey;
    return routePath(vhost, route) + ".path";
}

namespace detail {

namespace {

// The keys each map of the schema takes. Keeping them in one place makes the schema easy to read
// next to docs/configuration.md.
constexpr std::string_view kTopKeys[] = {"workers",     "listen",        "limits", "access_log",
                                         "compression", "server_header", "vhosts", "http2",
                                         "capture",     "hosts",         "rules"};
constexpr std::string_view kTopNotYet[] = {"live_reload"};
constexpr std::string_view kCaptureKeys[] = {
    "enabled",    "max_records",   "max_bytes", "ring_records", "record_bytes",
    "body_bytes", "server_timing", "store",     "ws_messages",  "store_max_bytes"};
constexpr std::string_view kListenKeys[] = {"address", "tls", "forward_proxy"};
constexpr std::string_view kTlsKeys[] = {"cert", "key"};
constexpr std::string_view kHttp2Keys[] = {
    "enabled",    "max_concurrent_streams", "initial_window_bytes", "connection_window_bytes", "reset_burst",
    "reset_rate", "max_continuations",      "max_control_frames"};
constexpr std::string_view kLimitKeys[] = {"max_request_line_bytes",
                                           "max_header_bytes",
                                           "max_header_count",
                                           "max_body_bytes",
                                           "max_rewrite_body",
                                           "max_ranges",
                                           "max_connections_per_worker",
                                           "header_timeout",
                                           "body_timeout",
                                           "idle_timeout",
                                           "write_timeout",
                                           "drain_timeout"};
constexpr std::string_view kAccessLogKeys[] = {"format", "path"};
constexpr std::string_view kCompressionKeys[] = {"enabled", "min_bytes", "gzip_level", "brotli_quality"};
constexpr std::string_view kAccessLogFormats[] = {"combined", "json", "dev", "off"};

/// A hint for the two syntax errors people make most in this file: tabs, and unquoted IPv6
/// addresses ("- [::1]:8080" starts a YAML flow list). Looks at the error's line and the one before
/// it, since yaml-cpp often reports the position where the next token starts.
std::string syntaxHint(std::string_view text, const YAML::Mark& mark) {
    static const std::regex kUnquotedIpv6(R"((^|[\s,:\-])\[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]:[0-9])");
    std::vector<std::string_view> lines;
    for (std::size_t start = 0; start <= text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    for (int i = mark.line; i >= 0 && i >= mark.line - 1; --i) {
        if (i >= static_cast<int>(lines.size())) continue;
        std::string_view l = lines[i];
        std::size_t indent = l.find_first_not_of(" \t");
        if (indent != std::string_view::npos && l.substr(0, indent).find('\t') != std::string_view::npos)
            return " (indent YAML with spaces, not tabs)";
        if (std::regex_search(std::string(l), kUnquotedIpv6))
            return " (quote IPv6 addresses: \"[::1]:8080\")";
    }
    return {};
}

} // namespace

void Reader::readTop(const Value& v, Config& c) {
    bool sawListen = false, sawVhosts = false;
    bool isMap = readMap(
        v, kTopKeys,
        [&](const Entry& e) {
            const Value& val = e.value;
            if (e.key == "workers") {
                if (val.node.IsScalar() && val.node.Scalar() == "auto") {
                    c.workers = 0;
                } else if (val.node.IsScalar() && !val.node.Scalar().empty() &&
                           !std::isdigit(static_cast<unsigned char>(val.node.Scalar()[0])) &&
                           val.node.Scalar()[0] != '-') {
                    error(val, "expected 'auto' or a number of workers (1..256), got " + describe(val.node));
                } else if (auto n = integer(val, 1, 256)) {
                    c.workers = static_cast<unsigned>(*n);
                }
            } else if (e.key == "listen") {
                sawListen = true;
                readListen(val, c.listen);
            } else if (e.key == "limits") {
                readLimits(val, c.limits);
            } else if (e.key == "access_log") {
                readAccessLog(val, c.accessLog);
            } else if (e.key == "compression") {
                readCompression(val, c.compression);
            } else if (e.key == "http2") {
                readHttp2(val, c.http2);
            } else if (e.key == "capture") {
                readCapture(val, c.capture);
            } else if (e.key == "server_header") {
                if (auto b = boolean(val)) c.serverHeader = *b;
            } else if (e.key == "hosts") {
                readHosts(val, c.hosts);
            } else if (e.key == "rules") {
                readRules(val, c.rules);
            } else if (e.key == "vhosts") {
                sawVhosts = true;
                auto items = list(val, false);
                if (!items) return true;
                if (items->empty()) error(val, "at least one vhost is required");
                for (const Value& item : *items) {
                    Vhost vh;
                    map_.routes.emplace_back();
                    readVhost(item, vh, map_.routes.back());
                    c.vhosts.push_back(std::move(vh));
                }
            } else {
                return false;
            }
            return true;
        },
        kTopNotYet);
    if (!isMap) return;
    if (!sawListen) {
        c.listen.push_back(Listen{});
        map_.listen.push_back("listen");
    }
    if (!sawVhosts) error(v, "no vhosts: add at least one under `vhosts:` (e.g. `vhosts: [{root: ./site}]`)");
}

void Reader::readListen(const Value& v, std::vector<Listen>& out) {
    auto items = list(v, true);
    if (!items) return;
    if (items->empty()) error(v, "at least one listener is required");
    for (const Value& item : *items) {
        std::optional<Listen> l;
        if (item.node.IsScalar()) {
            l = parseAddress(item);
        } else if (item.node.IsMap()) {
            bool sawAddress = false, tlsOk = true, forwardProxy = false;
            ForwardProxy proxy;
            std::optional<ListenTls> tls;
            readMap(item, kListenKeys, [&](const Entry& e) {
                if (e.key == "address") {
                    sawAddress = true;
                    l = parseAddress(e.value);
                } else if (e.key == "tls") {
                    if (e.value.node.IsScalar() && e.value.node.Scalar() == "auto") {
                        tls = ListenTls{true, {}};
                    } else if (e.value.node.IsMap()) {
                        auto files = readTlsFiles(e.value);
                        if (files)
                            tls = ListenTls{false, std::move(*files)};
                        else
                            tlsOk = false;
                    } else {
                        error(e.value,
                              "expected `auto` (the local development CA) or {cert: FILE, key: FILE}, got " +
                                  describe(e.value.node));
                        tlsOk = false;
                    }
                } else if (e.key == "forward_proxy") {
                    if (e.value.node.IsMap()) {
                        if (auto p = readForwardProxy(e.value)) {
                            forwardProxy = true;
                            proxy = std::move(*p);
                        }
                    } else if (auto b = boolean(e.value)) {
                        forwardProxy = *b;
                    }
                } else {
                    return false;
                }
                return true;
            });
            if (!sawAddress) error(item, "listener needs an `address:` (HOST:PORT)");
            if (l && tlsOk) {
                l->tls = std::move(tls);
                l->forwardProxy = forwardProxy;
                l->proxy = std::move(proxy);
            } else {
                l.reset();
            }
        } else if (item.node.IsSequence()) {
            error(item, "expected \"HOST:PORT\" or {address: HOST:PORT}, got a list; quote IPv6 addresses: "
                        "\"[::1]:8080\"");
        } else {
            error(item, "expected \"HOST:PORT\" or {address: HOST:PORT}, got " + describe(item.node));
        }
        if (!l) continue;
        l->where = locate(item.mark);
        out.push_back(*l);
        map_.listen.push_back(item.path);
    }
}

std::optional<ForwardProxy> Reader::readForwardProxy(const Value& v) {
    static constexpr std::string_view kKeys[] = {"intercept", "tls_passthrough", "upstream_cacert",
                                                 "upstream_insecure", "allow"};
    ForwardProxy p;
    bool ok = true;
    readMap(v, kKeys, [&](const Entry& e) {
        if (e.key == "intercept") {
            auto b = boolean(e.value);
            ok = ok && b;
            if (b) p.intercept = *b;
        } else if (e.key == "tls_passthrough") {
            auto list = strings(e.value);
            ok = ok && list;
            if (list) p.tlsPassthrough = std::move(*list);
        } else if (e.key == "upstream_cacert") {
            auto file = absolute(e.value);
            ok = ok && file;
            if (file) p.upstreamCaFile = std::move(*file);
        } else if (e.key == "upstream_insecure") {
            auto b = boolean(e.value);
            ok = ok && b;
            if (b) p.upstreamInsecure = *b;
        } else if (e.key == "allow") {
            // Client networks: each checked here, where its position is known; the listener's
            // address against the list is validate's (a cross-field rule).
            auto items = list(e.value, true);
            ok = ok && items;
            if (!items) return true;
            for (const Value& item : *items) {
                auto text = string(item);
                std::string why;
                if (!text) {
                    ok = false;
                } else if (!parseNetwork(*text, why)) {
                    error(item, why);
                    ok = false;
                } else {
                    p.allow.push_back(*text);
                }
            }
        } else {
            return false;
        }
        return true;
    });
    if (!ok) return std::nullopt;
    return p;
}

void Reader::readHosts(const Value& v, HostOverrides& out) {
    readMap(v, {}, [&](const Entry& e) {
        std::string name = lower(e.key);
        if (!name.empty() && name.back() == '.') name.pop_back();
        if (std::string why = hostOverrideNameProblem(name); !why.empty()) {
            errorAtKey(e, why);
            return true;
        }
        auto address = string(e.value);
        if (!address) return true;
        std::string literal = *address;
        if (literal.size() > 2 && literal.front() == '[' && literal.back() == ']')
            literal = literal.substr(1, literal.size() - 2); // "[::1]" as in a URL
        if (!isIpLiteral(literal)) {
            error(e.value, "expected an IPv4 or IPv6 address (127.0.0.1, \"::1\"), got '" + *address +
                               "' (a name is not resolved here)");
            return true;
        }
        auto same =
            std::find_if(out.begin(), out.end(), [&](const HostOverride& h) { return h.name == name; });
        if (same != out.end()) {
            errorAtKey(e, "duplicate host '" + name + "' (already on line " +
                              std::to_string(same->where.line) + ")");
            return true;
        }
        out.push_back(HostOverride{name, literal, locate(e.keyMark)});
        return true;
    });
}

std::optional<Listen> Reader::parseAddress(const Value& v) {
    auto s = string(v);
    if (!s) return std::nullopt;
    std::string text = *s;
    Listen l;
    std::string host, port;
    if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        host = "localhost";
        port = text;
    } else if (text.starts_with("[")) {
        std::size_t close = text.find("]:");
        if (close == std::string::npos) {
            error(v, "expected \"[IPv6]:PORT\", e.g. \"[::1]:8080\", got '" + text + "'");
            return std::nullopt;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        in6_addr a6{};
        if (inet_pton(AF_INET6, host.c_str(), &a6) != 1) {
            error(v, "'" + host + "' is not an IPv6 address");
            return std::nullopt;
        }
    } else {
        std::size_t colon = text.rfind(':');
        if (colon == std::string::npos) {
            error(v, "expected HOST:PORT (e.g. 127.0.0.1:8080) or a port, got '" + text + "'");
            return std::nullopt;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string::npos) {
            error(v, "IPv6 addresses need brackets: \"[" + host + "]:" + port + "\"");
            return std::nullopt;
        }
        in_addr a4{};
        if (lower(host) == "localhost") {
            host = "localhost"; // 127.0.0.1 and [::1] on one port
        } else if (inet_pton(AF_INET, host.c_str(), &a4) != 1) {
            error(v, "listen host must be an IP address (127.0.0.1, 0.0.0.0, \"[::1]\") or localhost, got '" +
                         host + "'");
            return std::nullopt;
        }
    }
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc{} || end != port.data() + port.size() || port.empty() || p > 65535) {
        error(v, "port must be a number between 0 and 65535, got '" + port + "'");
        return std::nullopt;
    }
    l.host = host;
    l.port = static_cast<std::uint16_t>(p);
    return l;
}

void Reader::readLimits(const Value& v, Limits& l) {
    readMap(v, kLimitKeys, [&](const Entry& e) {
        const Value& val = e.value;
        auto setSize = [&](std::uint64_t& field, std::uint64_t min) {
            if (auto n = size(val, min)) field = *n;
        };
        auto setCount = [&](std::uint64_t& field, std::int64_t min,
                            std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
            if (auto n = integer(val, min, max)) field = *n;
        };
        auto setDuration = [&](Duration& field, bool zeroAllowed) {
            if (auto d = duration(val, zeroAllowed)) field = *d;
        };
        if (e.key == "max_request_line_bytes")
            setSize(l.maxRequestLineBytes, 64);
        else if (e.key == "max_header_bytes")
            setSize(l.maxHeaderBytes, 64);
        else if (e.key == "max_header_count")
            setCount(l.maxHeaderCount, 1, static_cast<std::int64_t>(kMaxHeaderCount));
        else if (e.key == "max_body_bytes")
            setSize(l.maxBodyBytes, 0);
        else if (e.key == "max_rewrite_body")
            setSize(l.maxRewriteBody, 0);
        else if (e.key == "max_ranges")
            setCount(l.maxRanges, 0);
        else if (e.key == "max_connections_per_worker")
            setCount(l.maxConnectionsPerWorker, 1);
        else if (e.key == "header_timeout")
            setDuration(l.headerTimeout, false);
        else if (e.key == "body_timeout")
            setDuration(l.bodyTimeout, false);
        else if (e.key == "idle_timeout")
            setDuration(l.idleTimeout, false);
        else if (e.key == "write_timeout")
            setDuration(l.writeTimeout, false);
        else if (e.key == "drain_timeout")
            setDuration(l.drainTimeout, true);
        else
            return false;
        return true;
    });
}

void Reader::readAccessLog(const Value& v, AccessLog& a) {
    // Writing an access_log section means "log": combined to stdout unless said otherwise.
    a.format = AccessLog::Format::Combined;
    a.path = "-";
    readMap(v, kAccessLogKeys, [&](const Entry& e) {
        if (e.key == "format") {
            auto s = string(e.value);
            if (!s) return true;
            if (*s == "combined")
                a.format = AccessLog::Format::Combined;
            else if (*s == "json")
                a.format = AccessLog::Format::Json;
            else if (*s == "dev")
                a.format = AccessLog::Format::Dev;
            else if (*s == "off" || *s == "false")
                a.format = AccessLog::Format::Off; // `off` is YAML 1.1 false
            else
                error(e.value, "format must be combined, json, dev or off, got '" + *s + "'" +
                                   suggestion(*s, kAccessLogFormats));
        } else if (e.key == "path") {
            auto s = string(e.value);
            if (!s) return true;
            if (*s == "-") {
                a.path = "-";
                return true;
            }
            if (s->empty()) {
                error(e.value, "empty path (use - for standard output)");
                return true;
            }
            fs::path p(*s);
            if (p.is_relative()) p = baseDir_ / p;
            a.path = normalise(p); // its folder is checked by validate
        } else {
            return false;
        }
        return true;
    });
}

void Reader::readCompression(const Value& v, Compression& c) {
    readMap(v, kCompressionKeys, [&](const Entry& e) {
        if (e.key == "enabled") {
            if (auto b = boolean(e.value)) c.enabled = *b;
        } else if (e.key == "min_bytes") {
            if (auto n = size(e.value, 0)) c.minBytes = *n;
        } else if (e.key == "gzip_level") {
            if (auto n = integer(e.value, 1, 9)) c.gzipLevel = static_cast<int>(*n);
        } else if (e.key == "brotli_quality") {
            if (auto n = integer(e.value, 0, 11)) c.brotliQuality = static_cast<int>(*n);
        } else {
            return false;
        }
        return true;
    });
}

void Reader::readCapture(const Value& v, Capture& c) {
    // `capture: true` / `capture: false` is short for `{enabled: ...}`.
    if (v.node.IsScalar()) {
        if (auto b = boolean(v)) c.enabled = *b;
        return;
    }
    c.enabled = true; // writing a capture section means "capture"
    readMap(v, kCaptureKeys, [&](const Entry& e) {
        if (e.key == "enabled") {
            if (auto b = boolean(e.value)) c.enabled = *b;
        } else if (e.key == "max_records") {
            if (auto n = integer(e.value, 1, 100000000)) c.maxRecords = static_cast<std::uint64_t>(*n);
        } else if (e.key == "max_bytes") {
            if (auto n = size(e.value, 64 * 1024)) c.maxBytes = *n;
        } else if (e.key == "ring_records") {
            const std::string text = e.value.node.IsScalar() ? e.value.node.Scalar() : std::string();
            std::uint64_t n = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
            if (text == "auto")
                c.ringRecords = 0;
            else if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
                error(e.value, "expected auto or an integer, got " + describe(e.value.node));
            else if (n < 16 || n > 1048576)
                error(e.value, "must be auto or between 16 and 1048576, got " + text);
            else
                c.ringRecords = n;
        } else if (e.key == "record_bytes") {
            if (auto n = size(e.value, 1024)) {
                if (*n > (1u << 20))
                    error(e.value, "at most 1 MiB");
                else
                    c.recordBytes = *n;
            }
        } else if (e.key == "body_bytes") {
            if (auto n = size(e.value, 0)) c.bodyBytes = *n;
        } else if (e.key == "ws_messages") {
            if (auto n = integer(e.value, 0, 1000000)) c.wsMessages = static_cast<std::uint64_t>(*n);
        } else if (e.key == "server_timing") {
            if (auto b = boolean(e.value)) c.serverTiming = *b;
        } else if (e.key == "store_max_bytes") {
            if (auto n = size(e.value, 0)) {
                if (*n != 0 && *n < (1u << 20))
                    error(e.value, "at least 1 MiB (or 0 for no cap)");
                else
                    c.storeMaxBytes = *n;
            }
        } else if (e.key == "store") {
            if (e.value.node.IsScalar() && !e.value.node.Scalar().empty()) {
                fs::path p(e.value.node.Scalar());
                if (p.is_relative()) p = baseDir_ / p;
                c.store = normalise(p); // its folder is checked by validate
            } else {
                error(e.value, "expected a file name");
            }
        } else {
            return false;
        }
        return true;
    });
    if (c.bodyBytes > c.recordBytes) c.bodyBytes = c.recordBytes;
}

void Reader::readHttp2(const Value& v, Http2& h) {
    constexpr std::int64_t kMaxWindow = 0x7fffffff; // RFC 9113 §6.9.1
    readMap(v, kHttp2Keys, [&](const Entry& e) {
        if (e.key == "enabled") {
            if (auto b = boolean(e.value)) h.enabled = *b;
        } else if (e.key == "max_concurrent_streams") {
            if (auto n = integer(e.value, 1, 100000)) h.maxConcurrentStreams = static_cast<std::uint32_t>(*n);
        } else if (e.key == "initial_window_bytes") {
            if (auto n = size(e.value, 65535)) {
                if (*n > static_cast<std::uint64_t>(kMaxWindow))
                    error(e.value, "at most 2147483647 bytes (2^31-1)");
                else
                    h.initialWindowBytes = static_cast<std::uint32_t>(*n);
            }
        } else if (e.key == "connection_window_bytes") {
            if (auto n = size(e.value, 65535)) {
                if (*n > static_cast<std::uint64_t>(kMaxWindow))
                    error(e.value, "at most 2147483647 bytes (2^31-1)");
                else
                    h.connectionWindowBytes = static_cast<std::uint32_t>(*n);
            }
        } else if (e.key == "reset_burst") {
            if (auto n = integer(e.value, 1, 1000000)) h.resetBurst = static_cast<std::uint64_t>(*n);
        } else if (e.key == "reset_rate") {
            if (auto n = integer(e.value, 1, 1000000)) h.resetRate = static_cast<std::uint64_t>(*n);
        } else if (e.key == "max_continuations") {
            if (auto n = integer(e.value, 0, 1000)) h.maxContinuations = static_cast<std::uint32_t>(*n);
        } else if (e.key == "max_control_frames") {
            if (auto n = integer(e.value, 1, 1000000)) h.maxControlFrames = static_cast<std::uint64_t>(*n);
        } else {
            return false;
        }
        return true;
    });
}

std::optional<TlsFiles> Reader::readTlsFiles(const Value& v) {
    TlsFiles f;
    f.where = locate(v.mark);
    bool ok = true;
    readMap(v, kTlsKeys, [&](const Entry& e) {
        if (e.key != "cert" && e.key != "key") return false;
        auto p = absolute(e.value);
        if (!p)
            ok = false;
        else
            (e.key == "cert" ? f.cert : f.key) = *p;
        return true;
    });
    if (!ok) return std::nullopt;
    // Validate checks that both are given, exist and pair (a missing file is the one error then).
    return f;
}

ReadResult Reader::run(std::string_view text, std::string sourcePath) {
    auto config = std::make_shared<Config>();
    config->sourcePath = std::move(sourcePath);
    try {
        // Not YAML::LoadAll: in yaml-cpp 0.7 it loops for ever, allocating, when a token cannot
        // start a node (",": jbeder/yaml-cpp#1040, fixed upstream by #1319). Count the documents
        // with a bounded event pass instead, then load the first.
        const yaml::DocumentScan scan = yaml::scanDocuments(text);
        if (scan.stuck) {
            error(scan.stuckAt, "",
                  std::string("YAML syntax error: unexpected '") +
                      text[static_cast<std::size_t>(scan.stuckAt.pos)] + "'" +
                      syntaxHint(text, scan.stuckAt));
        } else {
            if (scan.documents > 1) error(scan.second, "", "expected one YAML document, found more than one");
            YAML::Node top = YAML::Load(std::string(text));
            readTop(root(top), *config);
        }
    } catch (const YAML::ParserException& e) {
        error(e.mark, "", "YAML syntax error: " + e.msg + syntaxHint(text, e.mark));
    } catch (const YAML::Exception& e) {
        error(e.mark, "", "YAML error: " + e.msg);
    }
    std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
        return std::tie(a.where.line, a.where.column) < std::tie(b.where.line, b.where.column);
    });
    return ReadResult{std::move(config), std::move(map_), std::move(errors_)};
}

} // namespace detail

namespace {

fs::path absoluteDir(const std::string& dir) {
    std::error_code ec;
    fs::path p = dir.empty() ? fs::current_path(ec) : fs::absolute(dir, ec);
    return detail::normalise(p);
}

} // namespace

ReadResult readConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir,
                          const std::string& sourcePath) {
    return detail::Reader(fileName, absoluteDir(baseDir)).run(text, sourcePath);
}

std::shared_ptr<const Config> configForDirectory(const std::string& dir, const std::string& host,
                                                 std::uint16_t port) {
    auto c = std::make_shared<Config>();
    Listen l;
    l.host = host;
    l.port = port;
    c->listen.push_back(l);
    Vhost vh;
    vh.isDefault = true;
    StaticAction st;
    st.root = absoluteDir(dir).string();
    st.listing = true;
    vh.root = st;
    vh.liveReload = true;
    c->vhosts.push_back(std::move(vh));
    return c;
}

} // namespace portico::config

// Writes the Config model back to YAML: only what differs from the defaults, paths relative to the file.
#include <portico/config/writer.h>
#include <portico/http/message.h>

#include "config/throttle_presets.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

namespace portico::config {

namespace {

namespace fs = std::filesystem;

std::string relativePath(const std::string& path, const fs::path& base) {
    if (path.empty() || path == "-" || base.empty()) return path;
    fs::path p(path);
    if (!p.is_absolute()) return path;
    std::error_code ec;
    fs::path rel = p.lexically_relative(base);
    if (rel.empty() || *rel.begin() == "..") return path;
    std::string s = rel.generic_string();
    return s == "." ? std::string(".") : "./" + s;
}

void emitHeaders(YAML::Emitter& out, const HeaderList& headers) {
    out << YAML::BeginMap;
    std::vector<bool> done(headers.size());
    for (std::size_t i = 0; i < headers.size(); ++i) {
        if (done[i]) continue;
        std::vector<std::string> values{headers[i].second};
        for (std::size_t j = i + 1; j < headers.size(); ++j)
            if (!done[j] && http::iequals(headers[j].first, headers[i].first)) {
                values.push_back(headers[j].second);
                done[j] = true;
            }
        out << YAML::Key << headers[i].first << YAML::Value;
        if (values.size() == 1)
            out << YAML::DoubleQuoted << values.front();
        else {
            out << YAML::Flow << YAML::BeginSeq;
            for (const auto& v : values)
                out << YAML::DoubleQuoted << v;
            out << YAML::EndSeq;
        }
    }
    out << YAML::EndMap;
}

std::string addressText(const std::string& host, std::uint16_t port) {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

void emitTlsFiles(YAML::Emitter& out, const TlsFiles& files, const fs::path& base) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "cert" << YAML::Value << relativePath(files.cert, base);
    out << YAML::Key << "key" << YAML::Value << relativePath(files.key, base);
    out << YAML::EndMap;
}

// The keys of a StaticAction (shared by the `static:` action and a vhost's own root).
void emitStaticKeys(YAML::Emitter& out, const StaticAction& st, const fs::path& base) {
    out << YAML::Key << "root" << YAML::Value << relativePath(st.root, base);
    if (st.index != std::vector<std::string>{"index.html"}) {
        out << YAML::Key << "index" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& i : st.index)
            out << i;
        out << YAML::EndSeq;
    }
    if (st.listing) out << YAML::Key << "listing" << YAML::Value << true;
    if (!st.spaFallback.empty()) out << YAML::Key << "spa_fallback" << YAML::Value << st.spaFallback;
    if (st.followSymlinks) out << YAML::Key << "follow_symlinks" << YAML::Value << true;
}

std::string methodsText(std::uint32_t mask, std::vector<std::string>& out) {
    using http::Method;
    for (unsigned m = 0; m < static_cast<unsigned>(Method::Other); ++m)
        if (mask & http::methodBit(static_cast<Method>(m)))
            out.emplace_back(http::methodToken(static_cast<Method>(m)));
    return {};
}

// The route's `path:` or `location:` key, with its nginx modifier.
void emitMatch(YAML::Emitter& out, const Route& r) {
    const bool path = r.kind == MatchKind::Pattern || r.kind == MatchKind::Exact;
    out << YAML::Key << (path ? "path" : "location") << YAML::Value << matchSpec(r.kind, r.path);
}

void emitRespond(YAML::Emitter& out, const RespondAction& rs, const fs::path& base) {
    const RespondAction defaults;
    out << YAML::Key << "respond" << YAML::Value << YAML::BeginMap;
    if (rs.status != defaults.status) out << YAML::Key << "status" << YAML::Value << rs.status;
    if (!rs.headers.empty()) {
        out << YAML::Key << "headers" << YAML::Value;
        emitHeaders(out, rs.headers);
    }
    if (!rs.bodyFile.empty())
        out << YAML::Key << "file" << YAML::Value << relativePath(rs.bodyFile, base);
    else if (!rs.body.empty())
        out << YAML::Key << "body" << YAML::Value
            << (rs.body.find('\n') != std::string::npos ? YAML::DoubleQuoted : YAML::SingleQuoted) << rs.body;
    if (rs.latency.count()) out << YAML::Key << "latency" << YAML::Value << formatDuration(rs.latency);
    if (rs.latencyMax > rs.latency)
        out << YAML::Key << "latency_max" << YAML::Value << formatDuration(rs.latencyMax);
    if (rs.dropRate > 0) out << YAML::Key << "drop_rate" << YAML::Value << rs.dropRate;
    if (rs.errorRate > 0) out << YAML::Key << "error_rate" << YAML::Value << rs.errorRate;
    if (rs.errorStatus != defaults.errorStatus)
        out << YAML::Key << "error_status" << YAML::Value << rs.errorStatus;
    out << YAML::EndMap;
}

void emitRedirect(YAML::Emitter& out, const RedirectAction& rd) {
    out << YAML::Key << "redirect" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "to" << YAML::Value << rd.to;
    if (rd.status != RedirectAction{}.status) out << YAML::Key << "status" << YAML::Value << rd.status;
    out << YAML::EndMap;
}

void emitWebSocket(YAML::Emitter& out, const WebSocketAction& ws) {
    const WebSocketAction defaults;
    out << YAML::Key << "websocket" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "mode" << YAML::Value << (ws.mode == WebSocketAction::Mode::Room ? "room" : "echo");
    if (ws.roomParam != defaults.roomParam) out << YAML::Key << "room_param" << YAML::Value << ws.roomParam;
    if (!ws.origins.empty()) out << YAML::Key << "origins" << YAML::Value << YAML::Flow << ws.origins;
    if (!ws.subprotocols.empty())
        out << YAML::Key << "subprotocols" << YAML::Value << YAML::Flow << ws.subprotocols;
    if (ws.maxMessageBytes != defaults.maxMessageBytes)
        out << YAML::Key << "max_message_bytes" << YAML::Value << formatSize(ws.maxMessageBytes);
    if (ws.compression != defaults.compression)
        out << YAML::Key << "compression" << YAML::Value << ws.compression;
    if (ws.pingInterval != defaults.pingInterval)
        out << YAML::Key << "ping_interval" << YAML::Value << formatDuration(ws.pingInterval);
    if (ws.idleTimeout != defaults.idleTimeout)
        out << YAML::Key << "idle_timeout" << YAML::Value << formatDuration(ws.idleTimeout);
    out << YAML::EndMap;
}

// A ProxyAction with a FastCGI address: the `fastcgi:` action.
void emitFastCgi(YAML::Emitter& out, const ProxyAction& fc, const fs::path& base) {
    const ProxyAction defaults;
    const FastCgi& f = fc.fastcgi;
    out << YAML::Key << "fastcgi" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "address" << YAML::Value
        << (f.socketPath.empty() ? f.address : "unix:" + relativePath(f.socketPath, base));
    out << YAML::Key << "root" << YAML::Value << relativePath(f.root, base);
    if (f.index != FastCgi{}.index) out << YAML::Key << "index" << YAML::Value << f.index;
    if (f.extension != FastCgi{}.extension) out << YAML::Key << "extension" << YAML::Value << f.extension;
    if (fc.connectTimeout != defaults.connectTimeout)
        out << YAML::Key << "connect_timeout" << YAML::Value << formatDuration(fc.connectTimeout);
    if (fc.responseTimeout != defaults.responseTimeout)
        out << YAML::Key << "response_timeout" << YAML::Value << formatDuration(fc.responseTimeout);
    out << YAML::EndMap;
}

std::string upstreamUrl(const Upstream& u) {
    return (u.protocol == Upstream::Protocol::H2c  ? "h2c://"
            : u.protocol == Upstream::Protocol::H2 ? "https://"
                                                   : "http://") +
           u.authority;
}

void emitProxy(YAML::Emitter& out, const ProxyAction& px, const fs::path& base) {
    const ProxyAction defaults;
    out << YAML::Key << (px.grpc ? "grpc" : "proxy") << YAML::Value << YAML::Flow << YAML::BeginMap;
    std::vector<std::string> urls;
    for (const auto& u : px.upstreams)
        urls.push_back(upstreamUrl(u));
    out << YAML::Key << "upstream" << YAML::Value;
    if (urls.size() == 1)
        out << urls.front();
    else
        out << YAML::Flow << urls;
    if (!px.stripPrefix.empty()) out << YAML::Key << "strip_prefix" << YAML::Value << px.stripPrefix;
    if (px.changeOrigin) out << YAML::Key << "change_origin" << YAML::Value << true;
    if (px.forwarded) out << YAML::Key << "forwarded" << YAML::Value << true;
    if (px.connectTimeout != defaults.connectTimeout)
        out << YAML::Key << "connect_timeout" << YAML::Value << formatDuration(px.connectTimeout);
    if (px.responseTimeout != defaults.responseTimeout)
        out << YAML::Key << "response_timeout" << YAML::Value << formatDuration(px.responseTimeout);
    if (px.failTimeout != defaults.failTimeout)
        out << YAML::Key << "fail_timeout" << YAML::Value << formatDuration(px.failTimeout);
    if (px.idleTimeout != defaults.idleTimeout)
        out << YAML::Key << "idle_timeout" << YAML::Value << formatDuration(px.idleTimeout);
    if (px.keepalive != defaults.keepalive) out << YAML::Key << "keepalive" << YAML::Value << px.keepalive;
    if (px.grpcTimeoutMax != defaults.grpcTimeoutMax)
        out << YAML::Key << "grpc_timeout_max" << YAML::Value << formatDuration(px.grpcTimeoutMax);
    if (px.ws) out << YAML::Key << "ws" << YAML::Value << true;
    if (!px.descriptorSet.empty())
        out << YAML::Key << "descriptor_set" << YAML::Value << relativePath(px.descriptorSet, base);
    out << YAML::EndMap;
}

void emitAction(YAML::Emitter& out, const Action& action, const fs::path& base) {
    if (const auto* st = std::get_if<StaticAction>(&action)) {
        out << YAML::Key << "static" << YAML::Value << YAML::BeginMap;
        emitStaticKeys(out, *st, base);
        out << YAML::EndMap;
    } else if (const auto* rs = std::get_if<RespondAction>(&action)) {
        emitRespond(out, *rs, base);
    } else if (const auto* rd = std::get_if<RedirectAction>(&action)) {
        emitRedirect(out, *rd);
    } else if (const auto* ws = std::get_if<WebSocketAction>(&action)) {
        emitWebSocket(out, *ws);
    } else if (const auto* fc = std::get_if<ProxyAction>(&action); fc && !fc->fastcgi.address.empty()) {
        emitFastCgi(out, *fc, base);
    } else if (const auto* px = std::get_if<ProxyAction>(&action)) {
        emitProxy(out, *px, base);
    }
}

void emitRoute(YAML::Emitter& out, const Route& r, const fs::path& base) {
    out << YAML::BeginMap;
    emitMatch(out, r);
    if (!r.name.empty()) out << YAML::Key << "name" << YAML::Value << r.name;
    if (r.methods) {
        std::vector<std::string> methods;
        methodsText(r.methods, methods);
        out << YAML::Key << "methods" << YAML::Value << YAML::Flow << methods;
    }
    if (!r.headers.empty()) {
        out << YAML::Key << "headers" << YAML::Value;
        emitHeaders(out, r.headers);
    }
    if (r.serverHeader) out << YAML::Key << "server_header" << YAML::Value << *r.serverHeader;
    emitAction(out, r.action, base);
    out << YAML::EndMap;
}

void emitVhost(YAML::Emitter& out, const Vhost& vh, const fs::path& base) {
    out << YAML::BeginMap;
    if (!vh.names.empty()) out << YAML::Key << "names" << YAML::Value << YAML::Flow << vh.names;
    if (vh.port) out << YAML::Key << "port" << YAML::Value << *vh.port;
    if (vh.isDefault) out << YAML::Key << "default" << YAML::Value << true;
    if (vh.root) emitStaticKeys(out, *vh.root, base);
    if (!vh.headers.empty()) {
        out << YAML::Key << "headers" << YAML::Value;
        emitHeaders(out, vh.headers);
    }
    if (!vh.errorPages.empty()) {
        out << YAML::Key << "error_pages" << YAML::Value << YAML::BeginMap;
        for (const auto& [status, file] : vh.errorPages)
            out << YAML::Key << status << YAML::Value << relativePath(file, base);
        out << YAML::EndMap;
    }
    if (vh.serverHeader) out << YAML::Key << "server_header" << YAML::Value << *vh.serverHeader;
    if (vh.liveReload) out << YAML::Key << "live_reload" << YAML::Value << true;
    if (vh.crossSiteSubresources) out << YAML::Key << "cross_site_subresources" << YAML::Value << true;
    if (vh.tls) {
        out << YAML::Key << "tls" << YAML::Value;
        emitTlsFiles(out, *vh.tls, base);
    }
    if (!vh.routes.empty()) {
        out << YAML::Key << "routes" << YAML::Value << YAML::BeginSeq;
        for (const Route& r : vh.routes)
            emitRoute(out, r, base);
        out << YAML::EndSeq;
    }
    out << YAML::EndMap;
}

// "0.2" for 0.2: the shortest text that reads back as the same double (the emitter's default
// precision would write 0.20000000000000001).
std::string shortestNumber(double d) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
    return ec == std::errc{} ? std::string(buf, end) : std::to_string(d);
}

// A rate in bytes per second as the reader reads it back exactly: in whole gbit, mbit or kbit
// when the bits divide (50000 B/s is "400kbit"), else in bytes ("7B").
std::string formatRate(std::uint64_t bytesPerSecond) {
    if (bytesPerSecond <= std::numeric_limits<std::uint64_t>::max() / 8) {
        const std::uint64_t bits = bytesPerSecond * 8;
        static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
            {1000ull * 1000 * 1000, "gbit"}, {1000ull * 1000, "mbit"}, {1000ull, "kbit"}};
        for (const auto& [unit, name] : kUnits)
            if (bits % unit == 0) return std::to_string(bits / unit) + name;
    }
    return std::to_string(bytesPerSecond) + "B";
}

// A regex or replacement: single-quoted (no escapes to read through), double-quoted when it holds
// a control character (a newline cannot be single-quoted).
void emitText(YAML::Emitter& out, const std::string& text) {
    const bool control = std::any_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
    out << (control ? YAML::DoubleQuoted : YAML::SingleQuoted) << text;
}

void emitRuleAction(YAML::Emitter& out, const RuleAction& a, const fs::path& base) {
    out << YAML::BeginMap;
    switch (a.kind) {
    case RuleAction::Kind::SetHeader:
        out << YAML::Key << "set_header" << YAML::Value << YAML::Flow;
        emitHeaders(out, a.set);
        break;
    case RuleAction::Kind::RemoveHeader:
        out << YAML::Key << "remove_header" << YAML::Value;
        if (a.remove.size() == 1)
            out << a.remove.front();
        else
            out << YAML::Flow << a.remove;
        break;
    case RuleAction::Kind::Fail:
        out << YAML::Key << "fail" << YAML::Value << YAML::Flow << YAML::BeginMap;
        if (a.rate != 1.0) out << YAML::Key << "rate" << YAML::Value << shortestNumber(a.rate);
        out << YAML::Key << "with" << YAML::Value;
        switch (a.failure) {
        case RuleAction::Failure::Reset:
            out << "reset";
            break;
        case RuleAction::Failure::Close:
            out << "close";
            break;
        case RuleAction::Failure::Timeout:
            out << "timeout";
            break;
        case RuleAction::Failure::Status:
            out << a.failStatus;
            break;
        }
        out << YAML::EndMap;
        break;
    case RuleAction::Kind::MapLocal:
        out << YAML::Key << "map_local" << YAML::Value << relativePath(a.mapLocal, base);
        break;
    case RuleAction::Kind::MapRemote:
        out << YAML::Key << "map_remote" << YAML::Value;
        for (const auto& u : a.mapRemote.upstreams)
            out << upstreamUrl(u);
        break;
    case RuleAction::Kind::Throttle: {
        out << YAML::Key << "throttle" << YAML::Value;
        const auto preset = std::find_if(
            std::begin(kThrottlePresets), std::end(kThrottlePresets), [&](const ThrottlePreset& p) {
                return p.name == a.throttlePreset && p.latency == a.throttleLatency &&
                       p.down == a.throttleDown && p.up == a.throttleUp;
            });
        if (preset != std::end(kThrottlePresets)) {
            out << a.throttlePreset;
            break;
        }
        // Custom values: the keys that limit something (at least one, so that it reads back).
        out << YAML::Flow << YAML::BeginMap;
        if (a.throttleLatency.count() || (!a.throttleDown && !a.throttleUp))
            out << YAML::Key << "latency" << YAML::Value << formatDuration(a.throttleLatency);
        if (a.throttleDown) out << YAML::Key << "down" << YAML::Value << formatRate(a.throttleDown);
        if (a.throttleUp) out << YAML::Key << "up" << YAML::Value << formatRate(a.throttleUp);
        out << YAML::EndMap;
        break;
    }
    case RuleAction::Kind::ReplaceBody:
        out << YAML::Key << "replace_body" << YAML::Value << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "regex" << YAML::Value;
        emitText(out, a.regex);
        out << YAML::Key << "with" << YAML::Value;
        emitText(out, a.replaceWith);
        out << YAML::EndMap;
        break;
    case RuleAction::Kind::Breakpoint:
        // Always with its timeout (the default too), so that the file says how long it waits.
        out << YAML::Key << "breakpoint" << YAML::Value << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "timeout" << YAML::Value << formatDuration(a.breakpointTimeout);
        out << YAML::EndMap;
        break;
    }
    out << YAML::EndMap;
}

void emitRule(YAML::Emitter& out, const Rule& r, const fs::path& base) {
    out << YAML::BeginMap;
    if (!r.name.empty()) out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << r.name;
    if (!r.enabled) out << YAML::Key << "enabled" << YAML::Value << false;
    if (r.stage == Rule::Stage::Response) out << YAML::Key << "stage" << YAML::Value << "response";
    if (!r.match.empty()) out << YAML::Key << "match" << YAML::Value << YAML::DoubleQuoted << r.match;
    out << YAML::Key << "actions" << YAML::Value << YAML::BeginSeq;
    for (const RuleAction& a : r.actions)
        emitRuleAction(out, a, base);
    out << YAML::EndSeq;
    out << YAML::EndMap;
}

void emitLimits(YAML::Emitter& out, const Limits& l) {
    const Limits d;
    if (l.maxRequestLineBytes == d.maxRequestLineBytes && l.maxHeaderBytes == d.maxHeaderBytes &&
        l.maxHeaderCount == d.maxHeaderCount && l.maxBodyBytes == d.maxBodyBytes &&
        l.maxRewriteBody == d.maxRewriteBody && l.maxRanges == d.maxRanges &&
        l.maxConnectionsPerWorker == d.maxConnectionsPerWorker && l.headerTimeout == d.headerTimeout &&
        l.bodyTimeout == d.bodyTimeout && l.idleTimeout == d.idleTimeout &&
        l.writeTimeout == d.writeTimeout && l.drainTimeout == d.drainTimeout)
        return;
    out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
    auto size = [&](const char* key, std::uint64_t v, std::uint64_t def) {
        if (v != def) out << YAML::Key << key << YAML::Value << formatSize(v);
    };
    auto count = [&](const char* key, std::uint64_t v, std::uint64_t def) {
        if (v != def) out << YAML::Key << key << YAML::Value << v;
    };
    auto duration = [&](const char* key, Duration v, Duration def) {
        if (v != def) out << YAML::Key << key << YAML::Value << formatDuration(v);
    };
    size("max_request_line_bytes", l.maxRequestLineBytes, d.maxRequestLineBytes);
    size("max_header_bytes", l.maxHeaderBytes, d.maxHeaderBytes);
    count("max_header_count", l.maxHeaderCount, d.maxHeaderCount);
    size("max_body_bytes", l.maxBodyBytes, d.maxBodyBytes);
    size("max_rewrite_body", l.maxRewriteBody, d.maxRewriteBody);
    count("max_ranges", l.maxRanges, d.maxRanges);
    count("max_connections_per_worker", l.maxConnectionsPerWorker, d.maxConnectionsPerWorker);
    duration("header_timeout", l.headerTimeout, d.headerTimeout);
    duration("body_timeout", l.bodyTimeout, d.bodyTimeout);
    duration("idle_timeout", l.idleTimeout, d.idleTimeout);
    duration("write_timeout", l.writeTimeout, d.writeTimeout);
    duration("drain_timeout", l.drainTimeout, d.drainTimeout);
    out << YAML::EndMap;
}

void emitHttp2(YAML::Emitter& out, const Http2& h) {
    const Http2 d;
    std::vector<std::pair<const char*, std::string>> keys;
    if (h.enabled != d.enabled) keys.emplace_back("enabled", h.enabled ? "true" : "false");
    if (h.maxConcurrentStreams != d.maxConcurrentStreams)
        keys.emplace_back("max_concurrent_streams", std::to_string(h.maxConcurrentStreams));
    if (h.initialWindowBytes != d.initialWindowBytes)
        keys.emplace_back("initial_window_bytes", formatSize(h.initialWindowBytes));
    if (h.connectionWindowBytes != d.connectionWindowBytes)
        keys.emplace_back("connection_window_bytes", formatSize(h.connectionWindowBytes));
    if (h.resetBurst != d.resetBurst) keys.emplace_back("reset_burst", std::to_string(h.resetBurst));
    if (h.resetRate != d.resetRate) keys.emplace_back("reset_rate", std::to_string(h.resetRate));
    if (h.maxContinuations != d.maxContinuations)
        keys.emplace_back("max_continuations", std::to_string(h.maxContinuations));
    if (h.maxControlFrames != d.maxControlFrames)
        keys.emplace_back("max_control_frames", std::to_string(h.maxControlFrames));
    if (keys.empty()) return;
    out << YAML::Key << "http2" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : keys)
        out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap;
}

// `capture:` — `capture: true` when only `enabled` differs from the defaults, else the keys that do.
// An enabled capture is written even with every other key at its default; a disabled one only
// when something else was set (so that turning it back on keeps the settings).
void emitCapture(YAML::Emitter& out, const Capture& c, const std::string& base) {
    const Capture d;
    std::vector<std::pair<const char*, std::string>> keys;
    if (c.maxRecords != d.maxRecords) keys.emplace_back("max_records", std::to_string(c.maxRecords));
    if (c.maxBytes != d.maxBytes) keys.emplace_back("max_bytes", formatSize(c.maxBytes));
    if (c.ringRecords != d.ringRecords)
        keys.emplace_back("ring_records",
                          c.ringRecords ? std::to_string(c.ringRecords) : std::string("auto"));
    if (c.recordBytes != d.recordBytes) keys.emplace_back("record_bytes", formatSize(c.recordBytes));
    if (c.bodyBytes != d.bodyBytes) keys.emplace_back("body_bytes", formatSize(c.bodyBytes));
    if (c.wsMessages != d.wsMessages) keys.emplace_back("ws_messages", std::to_string(c.wsMessages));
    if (c.serverTiming != d.serverTiming)
        keys.emplace_back("server_timing", c.serverTiming ? "true" : "false");
    if (!c.store.empty()) keys.emplace_back("store", relativePath(c.store, base));
    if (c.storeMaxBytes != d.storeMaxBytes) keys.emplace_back("store_max_bytes", formatSize(c.storeMaxBytes));
    if (keys.empty()) {
        if (c.enabled) out << YAML::Key << "capture" << YAML::Value << true;
        return;
    }
    out << YAML::Key << "capture" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "enabled" << YAML::Value << c.enabled;
    for (const auto& [k, v] : keys)
        out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap;
}

} // namespace

std::string formatSize(std::uint64_t bytes) {
    static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
        {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
    if (bytes)
        for (const auto& [unit, name] : kUnits)
            if (bytes % unit == 0) return std::to_string(bytes / unit) + name;
    return std::to_string(bytes);
}

std::string formatDuration(Duration d) {
    using namespace std::chrono;
    const auto ns = d.count();
    static constexpr std::pair<std::int64_t, const char*> kUnits[] = {{3'600'000'000'000, "h"},
                                                                      {60'000'000'000, "m"},
                                                                      {1'000'000'000, "s"},
                                                                      {1'000'000, "ms"},
                                                                      {1'000, "us"}};
    if (ns)
        for (const auto& [unit, name] : kUnits)
            if (ns % unit == 0) return std::to_string(ns / unit) + name;
    return std::to_string(ns) + "ns";
}

std::string matchSpec(MatchKind kind, const std::string& path) {
    switch (kind) {
    case MatchKind::Exact:
        return "= " + path;
    case MatchKind::PrefixNoRegex:
        return "^~ " + path;
    case MatchKind::Regex:
        return "~ " + path;
    case MatchKind::RegexCaseless:
        return "~* " + path;
    case MatchKind::Pattern:
    case MatchKind::Prefix:
        break;
    }
    return path;
}

std::string configToYaml(const Config& c, const std::string& baseDir) {
    const fs::path base = baseDir.empty() ? fs::path() : fs::path(baseDir).lexically_normal();
    YAML::Emitter out;
    out.SetIndent(2);
    out << YAML::BeginMap;
    if (c.workers) out << YAML::Key << "workers" << YAML::Value << c.workers;
    out << YAML::Key << "listen" << YAML::Value << YAML::BeginSeq;
    for (const Listen& l : c.listen) {
        if (!l.tls && !l.forwardProxy) {
            out << YAML::DoubleQuoted << addressText(l.host, l.port);
            continue;
        }
        out << YAML::BeginMap;
        out << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << addressText(l.host, l.port);
        if (l.tls) {
            out << YAML::Key << "tls" << YAML::Value;
            if (l.tls->autoCa)
                out << "auto";
            else
                emitTlsFiles(out, l.tls->files, base);
        }
        if (l.forwardProxy && l.proxy == ForwardProxy{}) {
            out << YAML::Key << "forward_proxy" << YAML::Value << true;
        } else if (l.forwardProxy) {
            out << YAML::Key << "forward_proxy" << YAML::Value << YAML::BeginMap;
            if (l.proxy.intercept) out << YAML::Key << "intercept" << YAML::Value << true;
            if (!l.proxy.tlsPassthrough.empty()) {
                out << YAML::Key << "tls_passthrough" << YAML::Value << YAML::Flow << YAML::BeginSeq;
                for (const auto& glob : l.proxy.tlsPassthrough)
                    out << YAML::DoubleQuoted << glob;
                out << YAML::EndSeq;
            }
            if (!l.proxy.upstreamCaFile.empty())
                out << YAML::Key << "upstream_cacert" << YAML::Value
                    << relativePath(l.proxy.upstreamCaFile, base);
            if (l.proxy.upstreamInsecure) out << YAML::Key << "upstream_insecure" << YAML::Value << true;
            if (!l.proxy.allow.empty()) {
                out << YAML::Key << "allow" << YAML::Value << YAML::Flow << YAML::BeginSeq;
                for (const auto& network : l.proxy.allow)
                    out << YAML::DoubleQuoted << network;
                out << YAML::EndSeq;
            }
            out << YAML::EndMap;
        }
        out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    emitLimits(out, c.limits);
    if (c.accessLog.format != AccessLog::Format::Off) {
        out << YAML::Key << "access_log" << YAML::Value << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "format" << YAML::Value
            << (c.accessLog.format == AccessLog::Format::Json  ? "json"
                : c.accessLog.format == AccessLog::Format::Dev ? "dev"
                                                               : "combined");
        out << YAML::Key << "path" << YAML::Value << relativePath(c.accessLog.path, base);
        out << YAML::EndMap;
    }
    const Compression dc;
    if (c.compression.enabled != dc.enabled || c.compression.minBytes != dc.minBytes ||
        c.compression.gzipLevel != dc.gzipLevel || c.compression.brotliQuality != dc.brotliQuality) {
        out << YAML::Key << "compression" << YAML::Value << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "enabled" << YAML::Value << c.compression.enabled;
        out << YAML::Key << "min_bytes" << YAML::Value << formatSize(c.compression.minBytes);
        out << YAML::Key << "gzip_level" << YAML::Value << c.compression.gzipLevel;
        out << YAML::Key << "brotli_quality" << YAML::Value << c.compression.brotliQuality;
        out << YAML::EndMap;
    }
    emitHttp2(out, c.http2);
    emitCapture(out, c.capture, base);
    if (!c.serverHeader) out << YAML::Key << "server_header" << YAML::Value << false;
    if (!c.hosts.empty()) {
        out << YAML::Key << "hosts" << YAML::Value << YAML::BeginMap;
        for (const HostOverride& h : c.hosts)
            out << YAML::Key << YAML::DoubleQuoted << h.name << YAML::Value << YAML::DoubleQuoted
                << h.address;
        out << YAML::EndMap;
    }
    out << YAML::Key << "vhosts" << YAML::Value << YAML::BeginSeq;
    for (const Vhost& vh : c.vhosts)
        emitVhost(out, vh, base);
    out << YAML::EndSeq;
    if (!c.rules.empty()) {
        out << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
        for (const Rule& r : c.rules)
            emitRule(out, r, base);
        out << YAML::EndSeq;
    }
    out << YAML::EndMap;
    std::string text = out.c_str();
    text += "\n";
    return text;
}

bool saveConfigFile(const Config& config, const std::string& path, std::string& error) {
    std::error_code ec;
    fs::path target = fs::absolute(path, ec);
    const std::string text = configToYaml(config, target.parent_path().string());
    fs::path temp = target;
    temp += ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream f(temp, std::ios::binary | std::ios::trunc);
        if (!f) {
            error = path + ": " + std::strerror(errno);
            return false;
        }
        f << text;
        f.flush();
        if (!f) {
            error = path + ": write failed";
            fs::remove(temp, ec);
            return false;
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        error = path + ": " + ec.message();
        fs::remove(temp, ec);
        return false;
    }
    return true;
}

} // namespace portico::config

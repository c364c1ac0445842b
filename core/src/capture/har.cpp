// HAR 1.2 export and tolerant import (har.h), on nlohmann::json.
#include <portico/capture/har.h>
#include <portico/http/message.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>

namespace portico::capture {

using json = nlohmann::ordered_json;

// ---- helpers ----

bool isUtf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t n = 0;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3;
        else
            return false;
        if (s.size() - i <= n) return false;
        for (std::size_t k = 1; k <= n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
            (c == 0xF4 && c1 > 0x8F))
            return false;
        i += n + 1;
    }
    return true;
}

std::string base64Encode(std::string_view in) {
    static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t(std::uint8_t(in[i])) << 16) |
                                (std::uint32_t(std::uint8_t(in[i + 1])) << 8) | std::uint8_t(in[i + 2]);
        out += kTable[v >> 18];
        out += kTable[(v >> 12) & 63];
        out += kTable[(v >> 6) & 63];
        out += kTable[v & 63];
    }
    if (i < in.size()) {
        std::uint32_t v = std::uint32_t(std::uint8_t(in[i])) << 16;
        if (i + 1 < in.size()) v |= std::uint32_t(std::uint8_t(in[i + 1])) << 8;
        out += kTable[v >> 18];
        out += kTable[(v >> 12) & 63];
        out += i + 1 < in.size() ? kTable[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// RFC 4648 §4 (or §5's URL alphabet), whitespace ignored. Strict about the end, so that text that
// only happens to use the alphabet ("hello") is not decoded into garbage: the length is a multiple
// of 4 with padding (or leaves 2 or 3 characters without), '=' only at the end, and the bits the
// last character leaves over are zero.
bool base64Decode(std::string_view in, std::string& out) {
    out.clear();
    std::uint32_t acc = 0;
    int bits = 0;
    std::size_t chars = 0, pad = 0;
    for (char c : in) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            ++pad;
            continue;
        }
        if (pad) return false; // data after padding
        ++chars;
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+' || c == '-')
            v = 62;
        else if (c == '/' || c == '_')
            v = 63;
        else
            return false;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    if (chars % 4 == 1 || pad > 2) return false;
    if (pad && (chars + pad) % 4 != 0) return false;
    return (acc & ((1u << bits) - 1)) == 0; // no stray bits in the last character
}

namespace {
// Text for HAR: valid UTF-8 without control characters other than tab, CR, LF.
bool isText(std::string_view s) {
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f) return false;
    }
    return isUtf8(s);
}
} // namespace

double HarTimings::total() const {
    double t = 0;
    for (double v : {blocked, dns, connect, send, wait, receive})
        if (v > 0) t += v;
    return t;
}

namespace {
double ms(std::int64_t ns) { return ns < 0 ? -1.0 : std::round(static_cast<double>(ns) / 1000.0) / 1000.0; }

std::string isoTime(std::int64_t unixNs) {
    std::time_t secs = static_cast<std::time_t>(unixNs / 1'000'000'000);
    int millis = static_cast<int>((unixNs / 1'000'000) % 1000);
    if (unixNs < 0) secs = 0, millis = 0;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, millis);
    return out;
}

// Parses ISO 8601 "YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]"; false if malformed.
bool parseIso(std::string_view s, std::int64_t& unixNs) {
    std::tm tm{};
    int y, mo, d, h, mi, sec;
    if (s.size() < 19 || std::sscanf(std::string(s.substr(0, 19)).c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo,
                                     &d, &h, &mi, &sec) != 6)
        return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    // Nanoseconds since 1970 in 64 bits reach the years 1678..2262; with room for the fraction and
    // the offset, dates between 1684-10-19 and 2255-03-14 (±9×10⁹ s) are read, the rest is malformed.
    const std::int64_t seconds = static_cast<std::int64_t>(timegm(&tm));
    if (seconds < -9'000'000'000 || seconds > 9'000'000'000) return false;
    std::int64_t ns = seconds * 1'000'000'000;
    std::size_t i = 19;
    if (i < s.size() && s[i] == '.') {
        std::int64_t scale = 100'000'000;
        for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, scale /= 10)
            ns += (s[i] - '0') * scale;
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        int oh = 0, om = 0;
        std::sscanf(std::string(s.substr(i + 1)).c_str(), "%2d:%2d", &oh, &om);
        const std::int64_t off = (oh * 3600 + om * 60) * 1'000'000'000LL;
        ns += s[i] == '+' ? -off : off;
    }
    unixNs = ns;
    return true;
}

json headerList(const std::vector<Header>& hs) {
    json a = json::array();
    for (const auto& h : hs)
        a.push_back({{"name", h.name}, {"value", h.value}});
    return a;
}

std::string percentDecode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '+')
            out += ' ';
        else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else
            out += s[i];
    }
    return out;
}

std::string trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ')
        s.remove_suffix(1);
    return std::string(s);
}

// Chrome writes WebSocket entries with their ws:// / wss:// URL.
std::string wsUrl(const Exchange& e) {
    std::string url = e.url();
    if (url.starts_with("http://"))
        url.replace(0, 4, "ws");
    else if (url.starts_with("https://"))
        url.replace(0, 5, "wss");
    return url;
}

// a + b and a - b nanoseconds, saturated at the int64 range: an imported file's times can be
// anything, and a signed overflow is undefined behaviour (found by fuzzing har_import with UBSan).
std::int64_t addNs(std::int64_t a, std::int64_t b) {
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    return r;
}
std::int64_t subNs(std::int64_t a, std::int64_t b) {
    std::int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    return r;
}

// A message's wall-clock time: the record's wall clock at RequestHeaders plus the steady offset.
std::int64_t messageUnixNs(const Exchange& e, const Message& m) {
    const std::int64_t base = e.at(Phase::RequestHeaders);
    return base >= 0 ? addNs(e.startedUnixNs, subNs(m.timeNs, base)) : m.timeNs;
}

std::string versionText(const Exchange& e) {
    return e.httpVersion == 20 ? "HTTP/2.0" : e.httpVersion == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

// HAR statusText: the standard phrase, "" for codes without one (HAR 1.2 allows an empty text).
std::string_view reason(int status) {
    std::string_view phrase = http::reasonPhrase(status);
    return phrase == "Unknown" ? std::string_view() : phrase;
}

const char* protocolName(Protocol p) {
    switch (p) {
    case Protocol::Http1:
        return "h1";
    case Protocol::Http2:
        return "h2";
    case Protocol::WebSocket:
        return "ws";
    case Protocol::Grpc:
        return "grpc";
    }
    return "h1";
}
} // namespace

HarTimings harTimings(const Exchange& e) {
    HarTimings t;
    const bool firstOnConnection = e.streamId <= 1;
    if (!(e.flags & kImported) && firstOnConnection && e.at(Phase::TlsDone) >= 0 &&
        e.at(Phase::Accepted) >= 0) {
        t.ssl = ms(e.between(Phase::Accepted, Phase::TlsDone));
        t.connect = t.ssl; // the TCP handshake happened before accept; ssl is part of connect
    }
    const std::int64_t headers = e.at(Phase::RequestHeaders);
    std::int64_t body = e.at(Phase::RequestBodyDone) >= 0 ? e.at(Phase::RequestBodyDone) : headers;
    std::int64_t first = e.at(Phase::ResponseFirstByte) >= 0 ? e.at(Phase::ResponseFirstByte) : -1;
    std::int64_t done = e.at(Phase::ResponseDone);
    if (first < 0) first = done >= 0 ? done : body;
    // Each boundary is rounded to the microsecond once, from the request's first byte, so the parts
    // add up to the exchange's rounded total (Exchange::durationNs): one number everywhere, not a
    // sum of separately rounded parts that is off by a microsecond.
    auto at = [headers](std::int64_t ns) { return ms(ns - headers); };
    t.send = headers >= 0 && body >= headers ? at(body) : 0;
    t.wait = body >= 0 && first >= body ? at(first) - at(body) : 0;
    t.receive = first >= 0 && done >= first ? at(done) - at(first) : 0;
    // Subtracting rounded values leaves binary noise (0.1 - 0.03); back to whole microseconds.
    for (double* v : {&t.send, &t.wait, &t.receive})
        *v = std::round(*v * 1000.0) / 1000.0;
    return t;
}

namespace {

// HAR 1.2 `request` object of `e` (cookies and query string parsed from what was sent).
json harRequest(const Exchange& e) {
    json req;
    req["method"] = e.method.empty() ? "GET" : e.method;
    req["url"] = e.protocol == Protocol::WebSocket ? wsUrl(e) : e.url();
    req["httpVersion"] = versionText(e);
    json cookies = json::array();
    for (const auto& h : e.requestHeaders) {
        if (h.name.size() != 6 || (h.name[0] != 'C' && h.name[0] != 'c') ||
            std::strncmp(h.name.c_str() + 1, "ookie", 5))
            continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            auto semi = v.find(';');
            std::string_view pair = v.substr(0, semi);
            v.remove_prefix(semi == std::string_view::npos ? v.size() : semi + 1);
            auto eq = pair.find('=');
            if (eq == std::string_view::npos) continue;
            cookies.push_back({{"name", trim(pair.substr(0, eq))}, {"value", trim(pair.substr(eq + 1))}});
        }
    }
    req["cookies"] = cookies;
    req["headers"] = headerList(e.requestHeaders);
    json query = json::array();
    if (auto q = e.target.find('?'); q != std::string::npos) {
        std::string_view qs = std::string_view(e.target).substr(q + 1);
        qs = qs.substr(0, qs.find('#'));
        while (!qs.empty()) {
            auto amp = qs.find('&');
            std::string_view kv = qs.substr(0, amp);
            qs.remove_prefix(amp == std::string_view::npos ? qs.size() : amp + 1);
            if (kv.empty()) continue;
            auto eq = kv.find('=');
            query.push_back(
                {{"name", percentDecode(kv.substr(0, eq))},
                 {"value", eq == std::string_view::npos ? std::string() : percentDecode(kv.substr(eq + 1))}});
        }
    }
    req["queryString"] = query;
    if (e.requestBodySize > 0 || !e.requestBody.empty()) {
        json pd;
        std::string_view ct = e.requestHeader("content-type");
        pd["mimeType"] = std::string(ct);
        pd["params"] = json::array();
        if (isText(e.requestBody)) {
            pd["text"] = e.requestBody;
        } else {
            pd["text"] = base64Encode(e.requestBody);
            pd["_encoding"] = "base64";
        }
        req["postData"] = pd;
    }
    req["headersSize"] = e.requestHeadersSize ? static_cast<std::int64_t>(e.requestHeadersSize) : -1;
    req["bodySize"] = static_cast<std::int64_t>(e.requestBodySize);
    return req;
}

// HAR 1.2 `response` object of `e` (Set-Cookie attributes, the body as text or base64).
json harResponse(const Exchange& e) {
    json res;
    res["status"] = e.status;
    res["statusText"] = std::string(reason(e.status));
    res["httpVersion"] = versionText(e);
    json setCookies = json::array();
    for (const auto& h : e.responseHeaders) {
        if (!http::iequals(h.name, "set-cookie")) continue;
        std::string_view v = h.value;
        auto semi = v.find(';');
        std::string_view pair = v.substr(0, semi);
        auto eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        json c{{"name", trim(pair.substr(0, eq))}, {"value", trim(pair.substr(eq + 1))}};
        std::string_view attrs = semi == std::string_view::npos ? std::string_view() : v.substr(semi + 1);
        while (!attrs.empty()) {
            auto s2 = attrs.find(';');
            std::string a = trim(attrs.substr(0, s2));
            attrs.remove_prefix(s2 == std::string_view::npos ? attrs.size() : s2 + 1);
            auto e2 = a.find('=');
            const std::string key = http::lower(a.substr(0, e2));
            if (key == "path" && e2 != std::string::npos)
                c["path"] = a.substr(e2 + 1);
            else if (key == "domain" && e2 != std::string::npos)
                c["domain"] = a.substr(e2 + 1);
            else if (key == "httponly")
                c["httpOnly"] = true;
            else if (key == "secure")
                c["secure"] = true;
        }
        setCookies.push_back(c);
    }
    res["cookies"] = setCookies;
    res["headers"] = headerList(e.responseHeaders);
    json content;
    content["size"] = static_cast<std::int64_t>(e.responseBodySize);
    std::string_view ct = e.responseHeader("content-type");
    content["mimeType"] = ct.empty() ? std::string("x-unknown") : std::string(ct);
    if (!e.responseBody.empty() || e.responseBodySize == 0) {
        if (isText(e.responseBody)) {
            content["text"] = e.responseBody;
        } else {
            content["text"] = base64Encode(e.responseBody);
            content["encoding"] = "base64";
        }
    }
    if (e.responseBody.size() < e.responseBodySize)
        content["comment"] = "first " + std::to_string(e.responseBody.size()) + " of " +
                             std::to_string(e.responseBodySize) + " bytes (capture.body_bytes)";
    res["content"] = content;
    res["redirectURL"] = std::string(e.responseHeader("location"));
    res["headersSize"] = e.responseHeadersSize ? static_cast<std::int64_t>(e.responseHeadersSize + 2) : -1;
    res["bodySize"] = e.status == 0 ? -1 : static_cast<std::int64_t>(e.responseBodySize);
    if (!e.error.empty()) res["_error"] = e.error;
    return res;
}

// Portico's own `_portico` object: ids, protocol, TLS, labels, sizes and the phase timestamps.
json harPortico(const Exchange& e) {
    json p;
    p["id"] = e.id;
    p["connectionId"] = e.connectionId;
    p["streamId"] = e.streamId;
    p["protocol"] = protocolName(e.protocol);
    if (!e.tlsVersion.empty()) p["tlsVersion"] = e.tlsVersion;
    if (!e.alpn.empty()) p["alpn"] = e.alpn;
    if (!e.client.empty()) p["client"] = e.client;
    if (!e.clientProcess.empty()) p["clientProcess"] = e.clientProcess;
    if (e.source != Source::Server) p["source"] = sourceName(e.source);
    if (!e.upstreamAddress.empty()) p["upstreamAddress"] = e.upstreamAddress;
    if (!e.upstreamTlsVersion.empty()) p["upstreamTlsVersion"] = e.upstreamTlsVersion;
    if (!e.upstreamAlpn.empty()) p["upstreamAlpn"] = e.upstreamAlpn;
    if (e.localPort) p["localPort"] = e.localPort;
    if (!e.vhost.empty()) p["vhost"] = e.vhost;
    if (!e.route.empty()) p["route"] = e.route;
    if (!e.error.empty()) p["error"] = e.error;
    p["flags"] = e.flags;
    p["startedUnixNs"] = e.startedUnixNs;
    p["scheme"] = e.scheme;
    p["authority"] = e.authority;
    p["target"] = e.target;
    p["requestBodySize"] = e.requestBodySize;
    p["responseBodySize"] = e.responseBodySize;
    p["requestHeadersSize"] = e.requestHeadersSize;
    p["responseHeadersSize"] = e.responseHeadersSize;
    if (!e.requestTrailers.empty()) p["requestTrailers"] = headerList(e.requestTrailers);
    if (!e.rules.empty()) p["rules"] = e.rules;
    // The fields before rules changed them, as HAR header objects (request.headers and
    // response.headers are the fields as sent).
    json original = json::object();
    auto fieldList = [](std::string_view block) {
        json a = json::array();
        http::forEachFieldLine(block, [&](std::string_view n, std::string_view v) {
            a.push_back({{"name", std::string(n)}, {"value", std::string(v)}});
        });
        return a;
    };
    if (!e.originalRequestFields.empty()) original["requestHeaders"] = fieldList(e.originalRequestFields);
    if (!e.originalResponseFields.empty()) original["responseHeaders"] = fieldList(e.originalResponseFields);
    // The bodies before a replace_body, as content.text is written: text, else base64 with
    // `requestBodyEncoding` / `responseBodyEncoding: "base64"`.
    auto body = [&](const std::string& bytes, const char* key, const char* encodingKey) {
        if (bytes.empty()) return;
        if (isText(bytes)) {
            original[key] = bytes;
        } else {
            original[key] = base64Encode(bytes);
            original[encodingKey] = "base64";
        }
    };
    body(e.originalRequestBody, "requestBody", "requestBodyEncoding");
    body(e.originalResponseBody, "responseBody", "responseBodyEncoding");
    if (!original.empty()) p["original"] = std::move(original);
    json phases = json::object();
    for (std::size_t i = 0; i < kPhaseCount; ++i)
        if (e.phases[i] >= 0) phases[std::string(phaseName(static_cast<Phase>(i)))] = e.phases[i];
    p["phasesNs"] = phases;
    return p;
}

// A WebSocket session's messages.
json harWebSocketMessages(const Exchange& e) {
    // Chrome's shape (DevTools HARWriter, CDP WebSocketFrame): type, time (Unix seconds),
    // opcode, data; opcode 1 is text, any other opcode's data is base64. Ours adds the exact
    // steady-clock time and the whole size (data may be a prefix).
    json msgs = json::array();
    for (const auto& m : e.messages) {
        json j;
        j["type"] = m.fromClient ? "send" : "receive";
        j["time"] = static_cast<double>(messageUnixNs(e, m)) / 1e9;
        j["opcode"] = m.opcode;
        const bool text = m.opcode == 1 && isUtf8(m.data);
        j["data"] = text ? m.data : base64Encode(m.data);
        if (m.opcode == 1 && !text) j["_encoding"] = "base64"; // a prefix cut inside a character
        j["_timeNs"] = m.timeNs;
        j["_size"] = m.size;
        if (m.compressed) j["_compressed"] = true; // permessage-deflate; data and size inflated
        msgs.push_back(std::move(j));
    }
    return msgs;
}

// A gRPC call's messages, decoded when `options.decodeGrpc`.
json harGrpcMessages(const Exchange& e, const HarOptions& options) {
    // One object per Length-Prefixed-Message, in the WebSocket entries' shape: type, time
    // (Unix seconds), data (always base64: protobuf is binary), and ours: the exact steady
    // time, Compressed-Flag, Message-Length, and how the message reads.
    json msgs = json::array();
    for (const auto& m : e.messages) {
        json j;
        j["type"] = m.fromClient ? "send" : "receive";
        j["time"] = static_cast<double>(messageUnixNs(e, m)) / 1e9;
        j["data"] = base64Encode(m.data);
        j["_timeNs"] = m.timeNs;
        j["_compressedFlag"] = m.opcode;
        j["_size"] = m.size;
        if (m.cut) j["_cut"] = true;
        if (options.decodeGrpc) {
            const GrpcSchema* schema = options.grpcSchema ? options.grpcSchema(e) : nullptr;
            const GrpcMessageText t = describeGrpcMessage(e, m, schema);
            static constexpr const char* kKinds[] = {"json", "raw", "compressed", "malformed"};
            json d;
            d["kind"] = kKinds[static_cast<int>(t.kind)];
            if (!t.type.empty()) d["type"] = t.type;
            if (!t.text.empty()) d["text"] = t.text;
            if (!t.note.empty()) d["note"] = t.note;
            j["_decoded"] = std::move(d);
        }
        msgs.push_back(std::move(j));
    }
    return msgs;
}

} // namespace

std::string toHar(const std::vector<Exchange>& exchanges, const HarOptions& options) {
    json entries = json::array();
    for (const Exchange& e : exchanges) {
        const HarTimings t = harTimings(e);
        json timings{{"blocked", t.blocked}, {"dns", t.dns},         {"connect", t.connect}, {"send", t.send},
                     {"wait", t.wait},       {"receive", t.receive}, {"ssl", t.ssl}};
        json entry;
        entry["startedDateTime"] = isoTime(e.startedUnixNs);
        entry["time"] = std::round(t.total() * 1000.0) / 1000.0;
        entry["request"] = harRequest(e);
        entry["response"] = harResponse(e);
        entry["cache"] = json::object();
        entry["timings"] = timings;
        if (e.connectionId) entry["connection"] = std::to_string(e.connectionId);
        entry["_portico"] = harPortico(e);
        if (e.protocol == Protocol::WebSocket) {
            entry["_portico"]["messageCount"] = e.messageCount;
            entry["_resourceType"] = "websocket";
            entry["_webSocketMessages"] = harWebSocketMessages(e);
        }
        if (e.protocol == Protocol::Grpc) {
            entry["_portico"]["messageCount"] = e.messageCount;
            if (!e.responseTrailers.empty())
                entry["_portico"]["responseTrailers"] = headerList(e.responseTrailers);
            entry["_grpcMessages"] = harGrpcMessages(e, options);
        }
        entries.push_back(std::move(entry));
    }
    json har;
    har["log"]["version"] = "1.2";
    har["log"]["creator"] = {
        {"name", options.creatorName},
        {"version", options.creatorVersion.empty() ? std::string(PORTICO_VERSION) : options.creatorVersion}};
    har["log"]["pages"] = json::array();
    har["log"]["entries"] = std::move(entries);
    // Header bytes that are not UTF-8 are replaced (U+FFFD); bodies were base64-encoded above.
    return har.dump(options.pretty ? 2 : -1, ' ', false, json::error_handler_t::replace) + "\n";
}

// ---- import ----

namespace {
struct ShapeError {
    std::string where;
    std::string what;
};

const json* member(const json& o, const char* key) {
    if (!o.is_object()) return nullptr;
    auto it = o.find(key);
    return it == o.end() || it->is_null() ? nullptr : &*it;
}
std::string str(const json& o, const char* key, std::string def = {}) {
    const json* v = member(o, key);
    if (!v) return def;
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number() || v->is_boolean()) return v->dump();
    return def;
}
double num(const json& o, const char* key, double def) {
    const json* v = member(o, key);
    if (!v) return def;
    if (v->is_number()) return v->get<double>();
    if (v->is_string()) {
        try {
            return std::stod(v->get<std::string>());
        } catch (...) {
            return def;
        }
    }
    return def;
}
std::vector<Header> headers(const json& o, const char* key, const std::string& where) {
    std::vector<Header> out;
    const json* v = member(o, key);
    if (!v) return out;
    if (!v->is_array()) throw ShapeError{where + "." + key, "expected an array"};
    for (const auto& h : *v) {
        if (!h.is_object()) continue;
        out.push_back({str(h, "name"), str(h, "value")});
    }
    return out;
}

std::pair<int, int> lineColumn(std::string_view text, std::size_t byte) {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return {line, col};
}

// A file's numbers can be anything: a double converted to an integer type it does not fit is
// undefined behaviour, and so is a signed sum that overflows. Found by fuzzing (har_import, UBSan).

// `key` as a whole number of type T: `def` when absent, negative, not finite or out of T's range
// (at most 2^63, so that the export's signed sizes stay positive).
template <class T> T count(const json& o, const char* key, T def) {
    const double v = num(o, key, -1);
    if (!(v >= 0) || v >= std::ldexp(1.0, std::min(std::numeric_limits<T>::digits, 63))) return def;
    return static_cast<T>(v);
}
// Milliseconds (HAR's unit) to nanoseconds, saturated; NaN is 0.
std::int64_t nsOf(double msValue) {
    const double ns = msValue * 1e6;
    if (std::isnan(ns)) return 0;
    if (ns >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (ns <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(std::llround(ns));
}

// `_webSocketMessages` (Chrome, Portico) → messages; ws:// URLs and `_resourceType: "websocket"`
// A message's time in ns on the entry's clock: Portico's exact `_timeNs`, else HAR's `time` (Unix
// seconds) made relative to the entry's start (`base`: its request-headers time, < 0 if none).
std::int64_t messageTimeNs(const json& j, std::int64_t base, std::int64_t startedUnixNs) {
    if (const json* t = member(j, "_timeNs"); t && t->is_number_integer()) return t->get<std::int64_t>();
    // Whole seconds and the fraction apart: a double near 1.7e18 ns has 256 ns steps.
    const double secs = num(j, "time", 0);
    const bool ok = std::isfinite(secs) && std::fabs(secs) < 9e9;
    const double whole = ok ? std::floor(secs) : 0;
    const std::int64_t unixNs =
        static_cast<std::int64_t>(whole) * 1'000'000'000 + (ok ? std::llround((secs - whole) * 1e9) : 0);
    return base >= 0 ? addNs(base, subNs(unixNs, startedUnixNs)) : unixNs;
}

// make the entry a WebSocket session.
void readWebSocketMessages(const json& entry, const std::string& where, Exchange& e,
                           std::vector<std::string>& warnings) {
    const bool ws = str(entry, "_resourceType") == "websocket" || e.scheme == "ws" || e.scheme == "wss";
    if (e.scheme == "ws") e.scheme = "http";
    if (e.scheme == "wss") e.scheme = "https";
    const json* msgs = member(entry, "_webSocketMessages");
    if (!ws && !msgs) return;
    e.protocol = Protocol::WebSocket;
    if (!msgs) return;
    if (!msgs->is_array()) throw ShapeError{where + "._webSocketMessages", "expected an array"};
    const std::int64_t base = e.at(Phase::RequestHeaders);
    std::size_t i = 0;
    for (const auto& j : *msgs) {
        const std::string at = where + "._webSocketMessages[" + std::to_string(i++) + "]";
        if (!j.is_object()) throw ShapeError{at, "expected an object"};
        Message m;
        const std::string type = str(j, "type", "receive");
        m.fromClient = type == "send";
        const double op = num(j, "opcode", 1);
        m.opcode = op >= 0 && op <= 15 ? static_cast<std::uint8_t>(op) : 1;
        const std::string data = str(j, "data");
        if (m.opcode != 1 || str(j, "_encoding") == "base64") {
            if (!base64Decode(data, m.data)) {
                warnings.push_back(at + ".data: not base64, kept as text");
                m.data = data;
            }
        } else {
            m.data = data;
        }
        m.size = count<std::uint64_t>(j, "_size", m.data.size());
        if (const json* c = member(j, "_compressed"); c && c->is_boolean()) m.compressed = c->get<bool>();
        m.timeNs = messageTimeNs(j, base, e.startedUnixNs);
        e.messages.push_back(std::move(m));
    }
    e.messageCount = std::max<std::uint64_t>(e.messageCount, e.messages.size());
}

// `_grpcMessages` (Portico) → messages; the entry becomes a gRPC call. `_decoded` is only a view.
void readGrpcMessages(const json& entry, const std::string& where, Exchange& e,
                      std::vector<std::string>& warnings) {
    const json* msgs = member(entry, "_grpcMessages");
    if (!msgs) return;
    if (!msgs->is_array()) throw ShapeError{where + "._grpcMessages", "expected an array"};
    e.protocol = Protocol::Grpc;
    const std::int64_t base = e.at(Phase::RequestHeaders);
    std::size_t i = 0;
    for (const auto& j : *msgs) {
        const std::string at = where + "._grpcMessages[" + std::to_string(i++) + "]";
        if (!j.is_object()) throw ShapeError{at, "expected an object"};
        Message m;
        m.fromClient = str(j, "type", "receive") == "send";
        const double flag = num(j, "_compressedFlag", 0);
        m.opcode = flag >= 0 && flag <= 255 ? static_cast<std::uint8_t>(flag) : 0;
        const std::string data = str(j, "data");
        if (!base64Decode(data, m.data)) {
            warnings.push_back(at + ".data: not base64, kept as text");
            m.data = data;
        }
        m.size = count<std::uint64_t>(j, "_size", m.data.size());
        if (const json* c = member(j, "_cut"); c && c->is_boolean()) m.cut = c->get<bool>();
        m.timeNs = messageTimeNs(j, base, e.startedUnixNs);
        e.messages.push_back(std::move(m));
    }
    e.messageCount = std::max<std::uint64_t>(e.messageCount, e.messages.size());
}

// `request` → method, URL parts, version, headers, body and sizes.
void readRequest(const json& req, const std::string& where, Exchange& e, std::vector<std::string>& warnings) {
    e.method = str(req, "method");
    if (e.method.empty()) e.method = "GET"; // as when missing, and as the export writes it
    const std::string url = str(req, "url");
    if (url.empty()) throw ShapeError{where + ".request.url", "missing"};
    if (auto p = url.find("://"); p != std::string::npos) {
        e.scheme = url.substr(0, p);
        auto slash = url.find('/', p + 3);
        e.authority = url.substr(p + 3, slash == std::string::npos ? std::string::npos : slash - p - 3);
        e.target = slash == std::string::npos ? "/" : url.substr(slash);
    } else {
        e.target = url;
    }
    const std::string hv = http::upper(str(req, "httpVersion", "HTTP/1.1"));
    if (hv.find("2") != std::string::npos && hv.find("1.") == std::string::npos) {
        e.protocol = Protocol::Http2;
        e.httpVersion = 20;
    } else if (hv == "HTTP/1.0") {
        e.httpVersion = 10;
    }
    e.requestHeaders = headers(req, "headers", where + ".request");
    if (const json* pd = member(req, "postData"); pd && pd->is_object()) {
        std::string t = str(*pd, "text");
        std::string enc = str(*pd, "_encoding", str(*pd, "encoding"));
        if (enc == "base64") {
            if (!base64Decode(t, e.requestBody))
                warnings.push_back(where + ".request.postData: bad base64, kept as text");
            else
                t.clear();
        }
        if (enc != "base64" || !t.empty()) e.requestBody = t;
    }
    e.requestBodySize = count<std::uint64_t>(req, "bodySize", e.requestBody.size());
    e.requestHeadersSize = count<std::uint64_t>(req, "headersSize", 0);
}

// `response` → status, headers, body (content.mimeType kept as Content-Type) and sizes.
void readResponse(const json& res, const std::string& where, Exchange& e,
                  std::vector<std::string>& warnings) {
    e.status = count<int>(res, "status", 0);
    e.responseHeaders = headers(res, "headers", where + ".response");
    if (const json* c = member(res, "content"); c && c->is_object()) {
        // content.mimeType is the Content-Type's value (HAR 1.2): kept as that header
        // when the entry lists none, so an export gives it back instead of x-unknown.
        const std::string mime = str(*c, "mimeType");
        const bool typed = std::any_of(e.responseHeaders.begin(), e.responseHeaders.end(),
                                       [](const auto& h) { return http::iequals(h.name, "content-type"); });
        if (!mime.empty() && mime != "x-unknown" && !typed)
            e.responseHeaders.push_back({"Content-Type", mime});
        std::string t = str(*c, "text");
        if (str(*c, "encoding") == "base64") {
            if (!base64Decode(t, e.responseBody)) {
                warnings.push_back(where + ".response.content: bad base64, kept as text");
                e.responseBody = t;
            }
        } else {
            e.responseBody = t;
        }
        e.responseBodySize = count<std::uint64_t>(*c, "size", e.responseBody.size());
    }
    const auto headSize = count<std::uint64_t>(res, "headersSize", 0);
    e.responseHeadersSize = headSize > 2 ? headSize - 2 : 0;
    if (const std::string err = str(res, "_error"); !err.empty()) e.error = err;
}

// `startedDateTime`, `timings`, `time` and `connection` → a synthetic timeline on the wall clock.
void readTimeline(const json& entry, const std::string& where, Exchange& e,
                  std::vector<std::string>& warnings) {
    std::int64_t started = 0;
    if (!parseIso(str(entry, "startedDateTime"), started))
        warnings.push_back(where + ".startedDateTime: missing or not ISO 8601; shown as 1970-01-01");
    e.startedUnixNs = started;
    // Synthetic timeline on the wall clock: blocked+dns+connect, send, wait, receive.
    const json* t = member(entry, "timings");
    auto timing = [&](const char* k) { return t ? num(*t, k, -1) : -1.0; };
    std::int64_t at = started;
    for (const char* k : {"blocked", "dns", "connect"})
        if (timing(k) > 0) at = addNs(at, nsOf(timing(k)));
    if (timing("connect") >= 0 && timing("ssl") >= 0) {
        e.set(Phase::Accepted, addNs(addNs(started, nsOf(std::max(0.0, timing("blocked")))),
                                     nsOf(std::max(0.0, timing("dns")))));
        e.set(Phase::TlsDone, at);
    }
    e.set(Phase::RequestHeaders, at);
    const double send = timing("send"), wait = timing("wait"), receive = timing("receive");
    if (send >= 0 && wait >= 0 && receive >= 0) {
        e.set(Phase::RequestBodyDone, at = addNs(at, nsOf(send)));
        e.set(Phase::ResponseFirstByte, at = addNs(at, nsOf(wait)));
        e.set(Phase::ResponseDone, addNs(at, nsOf(receive)));
    } else {
        warnings.push_back(where + ".timings: send/wait/receive missing; shown as n/a");
        const double time = num(entry, "time", -1);
        if (time >= 0) e.set(Phase::ResponseDone, addNs(at, nsOf(time)));
    }
    if (const std::string c = str(entry, "connection"); !c.empty()) {
        try {
            e.connectionId = std::stoull(c);
        } catch (...) {
            e.connectionId = std::hash<std::string>{}(c)&0xffffffffffffull;
        }
    }
}

// Portico's own `_portico` object restores what HAR cannot carry, exactly.
void readPortico(const json& p, const std::string& where, Exchange& e) {
    e.flags = count<std::uint32_t>(p, "flags", 0);
    e.connectionId = count<std::uint64_t>(p, "connectionId", 0);
    e.streamId = count<std::uint32_t>(p, "streamId", 0);
    const std::string proto = str(p, "protocol", "h1");
    e.protocol = proto == "h2"     ? Protocol::Http2
                 : proto == "ws"   ? Protocol::WebSocket
                 : proto == "grpc" ? Protocol::Grpc
                                   : Protocol::Http1;
    e.tlsVersion = str(p, "tlsVersion");
    e.alpn = str(p, "alpn");
    e.client = str(p, "client");
    e.clientProcess = str(p, "clientProcess");
    if (!sourceFromName(str(p, "source", "server"), e.source)) e.source = Source::Server;
    e.upstreamAddress = str(p, "upstreamAddress");
    e.upstreamTlsVersion = str(p, "upstreamTlsVersion");
    e.upstreamAlpn = str(p, "upstreamAlpn");
    e.localPort = count<std::uint16_t>(p, "localPort", 0);
    e.vhost = str(p, "vhost");
    e.route = str(p, "route");
    e.error = str(p, "error");
    if (const json* v = member(p, "startedUnixNs"); v && v->is_number_integer())
        e.startedUnixNs = v->get<std::int64_t>();
    if (member(p, "scheme")) e.scheme = str(p, "scheme");
    if (member(p, "authority")) e.authority = str(p, "authority");
    if (member(p, "target")) e.target = str(p, "target");
    auto u64 = [&](const char* k, std::uint64_t& dst) {
        if (const json* v = member(p, k); v && v->is_number_unsigned()) dst = v->get<std::uint64_t>();
    };
    u64("requestBodySize", e.requestBodySize);
    u64("responseBodySize", e.responseBodySize);
    u64("requestHeadersSize", e.requestHeadersSize);
    u64("responseHeadersSize", e.responseHeadersSize);
    u64("messageCount", e.messageCount);
    if (const json* tr = member(p, "requestTrailers"); tr && tr->is_array())
        e.requestTrailers = headers(p, "requestTrailers", where + "._portico");
    if (const json* tr = member(p, "responseTrailers"); tr && tr->is_array())
        e.responseTrailers = headers(p, "responseTrailers", where + "._portico");
    if (const json* rules = member(p, "rules")) {
        if (!rules->is_array()) throw ShapeError{where + "._portico.rules", "expected an array"};
        std::size_t i = 0;
        for (const auto& r : *rules) {
            if (!r.is_string())
                throw ShapeError{where + "._portico.rules[" + std::to_string(i) + "]", "expected a string"};
            ++i;
            if (!r.get_ref<const std::string&>().empty()) e.rules.push_back(r.get<std::string>());
        }
    }
    if (const json* original = member(p, "original")) {
        if (!original->is_object()) throw ShapeError{where + "._portico.original", "expected an object"};
        auto block = [&](const char* key) {
            std::string out;
            for (const auto& h : headers(*original, key, where + "._portico.original"))
                out += h.name + ": " + h.value + "\r\n";
            return out;
        };
        e.originalRequestFields = block("requestHeaders");
        e.originalResponseFields = block("responseHeaders");
        auto body = [&](const char* key, const char* encodingKey) {
            std::string out;
            const json* v = member(*original, key);
            if (!v) return out;
            const std::string at = where + "._portico.original." + key;
            if (!v->is_string()) throw ShapeError{at, "expected a string"};
            const json* enc = member(*original, encodingKey);
            if (!enc) return v->get<std::string>();
            if (!enc->is_string() || enc->get_ref<const std::string&>() != "base64")
                throw ShapeError{where + "._portico.original." + encodingKey, "expected \"base64\""};
            if (!base64Decode(v->get_ref<const std::string&>(), out)) throw ShapeError{at, "not base64"};
            return out;
        };
        e.originalRequestBody = body("requestBody", "requestBodyEncoding");
        e.originalResponseBody = body("responseBody", "responseBodyEncoding");
    }
    if (const json* ph = member(p, "phasesNs"); ph && ph->is_object()) {
        e.phases.fill(-1);
        for (std::size_t i = 0; i < kPhaseCount; ++i)
            if (const json* v = member(*ph, std::string(phaseName(static_cast<Phase>(i))).c_str());
                v && v->is_number_integer()) // Portico writes integers; a double could overflow
                e.phases[i] = v->get<std::int64_t>();
    }
}

// One `log.entries[i]` (`where`) → an exchange; throws ShapeError when its shape is wrong.
Exchange readEntry(const json& entry, const std::string& where, std::vector<std::string>& warnings) {
    Exchange e;
    e.flags |= kImported;
    const json* req = member(entry, "request");
    const json* res = member(entry, "response");
    if (!req || !req->is_object()) throw ShapeError{where + ".request", "missing or not an object"};
    readRequest(*req, where, e, warnings);
    if (res && res->is_object())
        readResponse(*res, where, e, warnings);
    else
        warnings.push_back(where + ": no response");
    readTimeline(entry, where, e, warnings);
    if (const json* p = member(entry, "_portico"); p && p->is_object()) readPortico(*p, where, e);
    readWebSocketMessages(entry, where, e, warnings);
    readGrpcMessages(entry, where, e, warnings);
    return e;
}
} // namespace

HarImport fromHar(std::string_view text) {
    HarImport out;
    json doc;
    try {
        doc = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
        // e.byte: 1-based position of the last byte read (the end of input when truncated).
        const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
        auto [line, col] = lineColumn(text, at);
        std::string msg = e.what();
        if (auto p = msg.find("syntax error"); p != std::string::npos) msg = msg.substr(p);
        out.error =
            std::to_string(line) + ":" + std::to_string(col) + " (byte " + std::to_string(at) + "): " + msg;
        return out;
    } catch (const std::exception& e) {
        out.error = std::string("not JSON: ") + e.what();
        return out;
    }
    try {
        const json* log = member(doc, "log");
        if (!log || !log->is_object()) throw ShapeError{"log", "missing: not a HAR file"};
        const std::string version = str(*log, "version", "");
        if (!version.empty() && version != "1.2" && version != "1.1")
            out.warnings.push_back("log.version: " + version + " (read as 1.2)");
        const json* entries = member(*log, "entries");
        if (!entries) throw ShapeError{"log.entries", "missing"};
        if (!entries->is_array()) throw ShapeError{"log.entries", "expected an array"};
        std::size_t index = 0;
        for (const auto& entry : *entries) {
            const std::string where = "log.entries[" + std::to_string(index++) + "]";
            if (!entry.is_object()) throw ShapeError{where, "expected an object"};
            out.exchanges.push_back(readEntry(entry, where, out.warnings));
        }
    } catch (const ShapeError& e) {
        out.exchanges.clear();
        out.error = e.where + ": " + e.what;
    } catch (const std::exception& e) {
        out.exchanges.clear();
        out.error = std::string("unexpected content: ") + e.what();
    }
    return out;
}

} // namespace portico::capture

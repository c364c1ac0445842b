// Reads a YAML config file into the Config model and a SourceMap, collecting every located reading
// error. What needs other modules or the disk is checked by validate/ (portico/validate/validate.h).
#include <portico/config/pattern.h>
#include <portico/config/reader.h>
#include <portico/http/message.h>

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
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
#include <sstream>

namespace portico::config {

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

namespace {

namespace fs = std::filesystem;
using Keys = std::span<const std::string_view>;

// The keys each map of the schema takes. Keeping them in one place makes the schema easy to read
// next to docs/configuration.md.
constexpr std::string_view kTopKeys[] = {"workers",       "listen", "limits", "access_log", "compression",
                                         "server_header", "vhosts", "http2",  "capture"};
constexpr std::string_view kTopNotYet[] = {"live_reload"};
constexpr std::string_view kCaptureKeys[] = {
    "enabled",    "max_records",   "max_bytes", "ring_records", "record_bytes",
    "body_bytes", "server_timing", "store",     "ws_messages",  "store_max_bytes"};
constexpr std::string_view kListenKeys[] = {"address", "tls"};
constexpr std::string_view kTlsKeys[] = {"cert", "key"};
constexpr std::string_view kHttp2Keys[] = {
    "enabled",    "max_concurrent_streams", "initial_window_bytes", "connection_window_bytes", "reset_burst",
    "reset_rate", "max_continuations",      "max_control_frames"};
constexpr std::string_view kLimitKeys[] = {
    "max_request_line_bytes", "max_header_bytes", "max_header_count",
    "max_body_bytes",         "max_ranges",       "max_connections_per_worker",
    "header_timeout",         "body_timeout",     "idle_timeout",
    "write_timeout",          "drain_timeout"};
constexpr std::string_view kAccessLogKeys[] = {"format", "path"};
constexpr std::string_view kCompressionKeys[] = {"enabled", "min_bytes", "gzip_level", "brotli_quality"};
constexpr std::string_view kVhostKeys[] = {"names",
                                           "port",
                                           "default",
                                           "root",
                                           "index",
                                           "listing",
                                           "spa_fallback",
                                           "follow_symlinks",
                                           "headers",
                                           "error_pages",
                                           "server_header",
                                           "routes",
                                           "tls",
                                           "live_reload",
                                           "cross_site_subresources"};
constexpr Keys kVhostNotYet{}; // every vhost key of the design is supported
constexpr std::string_view kRouteKeys[] = {"path",    "location",      "group",  "methods", "name",
                                           "headers", "server_header", "static", "respond", "redirect",
                                           "proxy",   "websocket",     "grpc",   "fastcgi"};
constexpr Keys kRouteNotYet{}; // every route action of the design is supported
constexpr std::string_view kFastCgiKeys[] = {
    "address", "root", "index", "extension", "connect_timeout", "response_timeout"};
constexpr std::string_view kProxyKeys[] = {
    "upstream",     "strip_prefix", "change_origin",    "forwarded", "connect_timeout", "response_timeout",
    "fail_timeout", "idle_timeout", "grpc_timeout_max", "ws",        "descriptor_set",  "keepalive"};
constexpr std::string_view kGroupKeys[] = {"prefix", "routes"};
constexpr std::string_view kStaticKeys[] = {"root", "index", "listing", "spa_fallback", "follow_symlinks"};
constexpr std::string_view kRespondKeys[] = {
    "status", "headers", "body", "file", "latency", "latency_max", "drop_rate", "error_rate", "error_status"};
constexpr std::string_view kRedirectKeys[] = {"to", "status"};
constexpr std::string_view kWebSocketKeys[] = {"mode",          "room_param",        "origins",
                                               "subprotocols",  "max_message_bytes", "compression",
                                               "ping_interval", "idle_timeout"};
constexpr std::string_view kAccessLogFormats[] = {"combined", "json", "dev", "off"};

// Fields the connection writes itself (http::Response says handlers must not set them).
constexpr std::string_view kReservedHeaders[] = {"content-length", "transfer-encoding", "connection", "date",
                                                 "server"};

constexpr int kMaxGroupDepth = 16;

std::size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// " (did you mean 'x'?)" when exactly one candidate is closest and within distance 2, else "".
std::string suggestion(std::string_view word, Keys candidates) {
    std::string best;
    std::size_t bestDistance = 3;
    bool tie = false;
    for (std::string_view c : candidates) {
        std::size_t d = editDistance(word, c);
        if (d < bestDistance) {
            bestDistance = d;
            best = c;
            tie = false;
        } else if (d == bestDistance) {
            tie = true;
        }
    }
    if (best.empty() || tie) return {};
    return " (did you mean '" + best + "'?)";
}

using http::lower;
using http::upper;

/// RFC 9110 §5.6.2 token.
bool isToken(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        if (!ok) return false;
    }
    return true;
}

bool hasControlChars(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
    case YAML::NodeType::Map:
        return "a map";
    case YAML::NodeType::Sequence:
        return "a list";
    case YAML::NodeType::Scalar: {
        std::string s = n.Scalar();
        if (s.size() > 40) s = s.substr(0, 37) + "...";
        return "'" + s + "'";
    }
    default:
        return "nothing";
    }
}

std::string child(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string item(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string normalise(const fs::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

/// A route's path parameters, for checking {{param.NAME}} templates.
struct RouteShape {
    bool pattern = false;
    bool unknown = false; ///< the path itself was invalid: do not check {{param.*}} against it
    std::vector<std::string> params;
    bool wildcard = false;
};

struct GroupContext {
    std::string prefix; ///< joined prefixes of the enclosing groups, "" at the top
    bool prefixHasParams = false;
    int depth = 0;
};

/// Joins a group prefix and a route path: "/api" + "/users" → "/api/users"; "/api" + "/" → "/api"
/// for patterns and exact paths (which name one resource) and "/api/" for prefixes.
std::string joinPrefix(const std::string& prefix, const std::string& path, MatchKind kind) {
    if (prefix.empty()) return path;
    std::string base = prefix;
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    if (path == "/" && (kind == MatchKind::Pattern || kind == MatchKind::Exact))
        return base.empty() ? "/" : base;
    return base + path;
}

std::string_view kindModifier(MatchKind k) {
    switch (k) {
    case MatchKind::Exact:
        return "= ";
    case MatchKind::PrefixNoRegex:
        return "^~ ";
    case MatchKind::Regex:
        return "~ ";
    case MatchKind::RegexCaseless:
        return "~* ";
    default:
        return "";
    }
}

constexpr std::uint32_t kAllMethods = [] {
    std::uint32_t m = 0;
    for (unsigned i = 0; i < static_cast<unsigned>(http::Method::Other); ++i)
        m |= 1u << i;
    return m;
}();

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

class Reader {
public:
    Reader(std::string file, fs::path baseDir) : file_(std::move(file)), baseDir_(std::move(baseDir)) {
        map_.file = file_;
    }

    ReadResult run(std::string_view text, std::string sourcePath);

private:
    /// A node with its path in the document and the position errors about it point at.
    struct Value {
        YAML::Node node;
        std::string path;
        YAML::Mark mark;
    };
    /// One key/value pair of a map.
    struct Entry {
        std::string key;
        YAML::Mark keyMark;
        Value value;
    };

    void error(const YAML::Mark& mark, const std::string& path, std::string message);
    void error(const Value& v, std::string message) { error(v.mark, v.path, std::move(message)); }
    void errorAtKey(const Entry& e, std::string message) {
        error(e.keyMark, e.value.path, std::move(message));
    }
    Location locate(const YAML::Mark& mark) const;

    Value root(const YAML::Node& node) const { return {node, "", node.Mark()}; }
    bool readMap(const Value& v, Keys known, const std::function<bool(const Entry&)>& visit, Keys notYet = {},
                 std::string_view notYetHint = {});
    std::optional<std::vector<Value>> list(const Value& v, bool scalarAllowed);

    std::optional<std::string> string(const Value& v);
    std::optional<std::vector<std::string>> strings(const Value& v);
    std::optional<bool> boolean(const Value& v);
    std::optional<std::int64_t> integer(const Value& v, std::int64_t min, std::int64_t max);
    std::optional<double> number(const Value& v, double min, double max);
    std::optional<std::uint64_t> size(const Value& v, std::uint64_t min);
    std::optional<Duration> duration(const Value& v, bool zeroAllowed);
    std::optional<int> status(const Value& v, int min, int max);
    std::optional<std::string> absolute(const Value& v);
    std::optional<HeaderList> headers(const Value& v, const RouteShape* templates);
    void checkTemplates(const Value& v, std::string_view text, const RouteShape& shape);

    void readTop(const Value& v, Config& c);
    void readListen(const Value& v, std::vector<Listen>& out);
    std::optional<Listen> parseAddress(const Value& v);
    void readLimits(const Value& v, Limits& l);
    void readAccessLog(const Value& v, AccessLog& a);
    void readCompression(const Value& v, Compression& c);
    void readHttp2(const Value& v, Http2& h);
    void readCapture(const Value& v, Capture& c);
    std::optional<TlsFiles> readTlsFiles(const Value& v);
    void readVhost(const Value& v, Vhost& vh, std::vector<SourceMap::RouteSource>& sources);
    bool readStaticKey(const Entry& e, StaticAction& st);
    void readRoutes(const Value& v, const GroupContext& group, std::vector<Route>& out,
                    std::vector<SourceMap::RouteSource>& sources);
    void readRoute(const Value& v, const GroupContext& group, std::vector<Route>& out,
                   std::vector<SourceMap::RouteSource>& sources);
    void readGroup(const Value& v, const GroupContext& group, std::vector<Route>& out,
                   std::vector<SourceMap::RouteSource>& sources);
    bool parseMatch(const Entry& e, const GroupContext& group, Route& r, RouteShape& shape);
    std::optional<std::uint32_t> methods(const Value& v);
    // One reader per route action; kActions lists them by key.
    std::optional<Action> readStatic(const Entry& e, const RouteShape& shape);
    std::optional<Action> readRespond(const Entry& e, const RouteShape& shape);
    std::optional<Action> readRedirect(const Entry& e, const RouteShape& shape);
    std::optional<Action> readProxy(const Entry& e, const RouteShape& shape);
    std::optional<Action> readFastCgi(const Entry& e, const RouteShape& shape);
    std::optional<Action> readWebSocket(const Entry& e, const RouteShape& shape);
    void upstreamUrl(const Value& v, ProxyAction& px);
    bool readProxyKey(const Entry& k, ProxyAction& px);
    void fastCgiAddress(const Value& v, FastCgi& f);

    using ActionReader = std::optional<Action> (Reader::*)(const Entry&, const RouteShape&);
    struct ActionKind {
        std::string_view key;
        ActionReader read;
    };
    /// The route actions: key → reader (the keys are also in kRouteKeys).
    static constexpr ActionKind kActions[] = {
        {"static", &Reader::readStatic},       {"respond", &Reader::readRespond},
        {"redirect", &Reader::readRedirect},   {"proxy", &Reader::readProxy},
        {"grpc", &Reader::readProxy},          {"fastcgi", &Reader::readFastCgi},
        {"websocket", &Reader::readWebSocket},
    };
    static const ActionKind* actionKind(std::string_view key) {
        for (const ActionKind& a : kActions)
            if (a.key == key) return &a;
        return nullptr;
    }
    /// Notes where the value at `path` starts (the first time only: a duplicate key is an error).
    void note(const Value& v) { map_.values.emplace(v.path, locate(v.mark)); }

    std::string file_;
    fs::path baseDir_;
    std::vector<ConfigError> errors_;
    SourceMap map_;
};

void Reader::error(const YAML::Mark& mark, const std::string& path, std::string message) {
    errors_.push_back(ConfigError{locate(mark), path, std::move(message)});
}

Location Reader::locate(const YAML::Mark& mark) const {
    // yaml-cpp marks are 0-based; a node built without a position has -1.
    if (mark.line < 0) return Location{file_, 1, 1};
    return Location{file_, mark.line + 1, mark.column + 1};
}

bool Reader::readMap(const Value& v, Keys known, const std::function<bool(const Entry&)>& visit, Keys notYet,
                     std::string_view notYetHint) {
    if (v.node.IsNull()) return true; // "key:" with nothing is an empty map
    if (!v.node.IsMap()) {
        error(v, "expected a map, got " + describe(v.node));
        return false;
    }
    std::vector<std::string> seen;
    for (auto it = v.node.begin(); it != v.node.end(); ++it) {
        // By value: the iterator's operator-> yields a temporary, so a reference would dangle
        // (AddressSanitizer: stack-use-after-scope). Nodes are cheap handles.
        const YAML::Node k = it->first;
        if (!k.IsScalar()) {
            error(k.Mark(), v.path, "expected a plain key, got " + describe(k));
            continue;
        }
        std::string key = k.Scalar();
        // An empty value ("key:") gets the position of the next token; point at the key instead.
        YAML::Mark mark = it->second.Mark();
        if (it->second.IsNull() && (mark.line != k.Mark().line || mark.line < 0)) mark = k.Mark();
        Entry e{key, k.Mark(), Value{it->second, child(v.path, key), mark}};
        note(e.value);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
            errorAtKey(e, "duplicate key '" + key + "'");
            continue;
        }
        seen.push_back(key);
        if (std::find(notYet.begin(), notYet.end(), key) != notYet.end()) {
            errorAtKey(e, "'" + key + "' is not supported yet in this version" + std::string(notYetHint));
            continue;
        }
        if (!visit(e)) errorAtKey(e, "unknown key '" + key + "'" + suggestion(key, known));
    }
    return true;
}

std::optional<std::vector<Reader::Value>> Reader::list(const Value& v, bool scalarAllowed) {
    std::vector<Value> out;
    if (v.node.IsNull()) return out;
    if (v.node.IsScalar() && scalarAllowed) {
        out.push_back(v);
        return out;
    }
    if (!v.node.IsSequence()) {
        error(v, std::string(scalarAllowed ? "expected a string or a list" : "expected a list") + ", got " +
                     describe(v.node));
        return std::nullopt;
    }
    for (std::size_t i = 0; i < v.node.size(); ++i) {
        YAML::Node n = v.node[i];
        YAML::Mark mark = n.Mark().line >= 0 && !n.IsNull() ? n.Mark() : v.mark;
        out.push_back(Value{n, item(v.path, i), mark});
        note(out.back());
    }
    return out;
}

std::optional<std::string> Reader::string(const Value& v) {
    if (v.node.IsNull()) {
        error(v, "missing value");
        return std::nullopt;
    }
    if (!v.node.IsScalar()) {
        error(v, "expected a string, got " + describe(v.node));
        return std::nullopt;
    }
    return v.node.Scalar();
}

std::optional<std::vector<std::string>> Reader::strings(const Value& v) {
    auto items = list(v, true);
    if (!items) return std::nullopt;
    std::vector<std::string> out;
    bool ok = true;
    for (const Value& i : *items) {
        auto s = string(i);
        if (s)
            out.push_back(*s);
        else
            ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
}

std::optional<bool> Reader::boolean(const Value& v) {
    if (v.node.IsScalar()) {
        bool b = false;
        if (YAML::convert<bool>::decode(v.node, b)) return b;
    }
    error(v, "expected true or false, got " + describe(v.node));
    return std::nullopt;
}

std::optional<std::int64_t> Reader::integer(const Value& v, std::int64_t min, std::int64_t max) {
    auto s = string(v);
    if (!s) return std::nullopt;
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
    if (ec != std::errc{} || end != s->data() + s->size() || s->empty()) {
        error(v, "expected an integer, got " + describe(v.node));
        return std::nullopt;
    }
    if (n < min || n > max) {
        error(v, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *s);
        return std::nullopt;
    }
    return n;
}

std::optional<double> Reader::number(const Value& v, double min, double max) {
    auto s = string(v);
    if (!s) return std::nullopt;
    double d = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), d);
    if (ec != std::errc{} || end != s->data() + s->size() || s->empty()) {
        error(v, "expected a number, got " + describe(v.node));
        return std::nullopt;
    }
    if (!(d >= min && d <= max)) {
        std::ostringstream range;
        range << "must be between " << min << " and " << max << ", got " << *s;
        error(v, range.str());
        return std::nullopt;
    }
    return d;
}

std::optional<std::uint64_t> Reader::size(const Value& v, std::uint64_t min) {
    auto s = string(v);
    if (!s) return std::nullopt;
    std::uint64_t bytes = 0;
    if (!parseSize(*s, bytes)) {
        error(v, "invalid size '" + *s + "' (write e.g. 512, 16KiB, 10MiB, 1GiB or 100KB)");
        return std::nullopt;
    }
    if (bytes < min) {
        error(v, "must be at least " + std::to_string(min) + " bytes, got " + *s);
        return std::nullopt;
    }
    return bytes;
}

std::optional<Duration> Reader::duration(const Value& v, bool zeroAllowed) {
    auto s = string(v);
    if (!s) return std::nullopt;
    Duration d{};
    if (!parseDuration(*s, d)) {
        bool bare =
            !s->empty() && std::all_of(s->begin(), s->end(), [](char c) { return c >= '0' && c <= '9'; });
        if (bare)
            error(v,
                  "duration '" + *s + "' needs a unit: us, ms, s, m or h (e.g. " + *s + "s or " + *s + "ms)");
        else
            error(v, "invalid duration '" + *s + "' (write e.g. 500us, 250ms, 10s, 2m or 1h)");
        return std::nullopt;
    }
    if (!zeroAllowed && d.count() == 0) {
        error(v, "must be greater than 0");
        return std::nullopt;
    }
    return d;
}

std::optional<int> Reader::status(const Value& v, int min, int max) {
    auto s = string(v);
    if (!s) return std::nullopt;
    int n = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
    if (ec != std::errc{} || end != s->data() + s->size() || s->empty()) {
        error(v, "expected an HTTP status code, got " + describe(v.node));
        return std::nullopt;
    }
    if (n < 100 || n > 599) {
        error(v, "status must be between 100 and 599, got " + *s);
        return std::nullopt;
    }
    if (n < min || n > max) {
        if (n < 200 && min >= 200)
            error(v, "status " + *s + " is an interim (1xx) status and cannot be a final response");
        else
            error(v, "status must be between " + std::to_string(min) + " and " + std::to_string(max) +
                         ", got " + *s);
        return std::nullopt;
    }
    return n;
}

std::optional<std::string> Reader::absolute(const Value& v) {
    auto s = string(v);
    if (!s) return std::nullopt;
    if (s->empty()) {
        error(v, "empty path");
        return std::nullopt;
    }
    fs::path p(*s);
    if (p.is_relative()) p = baseDir_ / p;
    return normalise(p);
}

std::optional<HeaderList> Reader::headers(const Value& v, const RouteShape* templates) {
    HeaderList out;
    bool ok = true;
    readMap(v, {}, [&](const Entry& e) {
        if (!isToken(e.key)) {
            errorAtKey(e, "'" + e.key + "' is not a valid header field name");
            ok = false;
            return true;
        }
        std::string name = lower(e.key);
        if (std::find(std::begin(kReservedHeaders), std::end(kReservedHeaders), name) !=
            std::end(kReservedHeaders)) {
            errorAtKey(e, "'" + e.key + "' is set by the server and cannot be configured" +
                              (name == "server" ? " (use server_header: false to leave it out)" : ""));
            ok = false;
            return true;
        }
        // A list gives the field several times (Set-Cookie).
        auto values = list(e.value, true);
        if (!values) {
            ok = false;
            return true;
        }
        for (const Value& item : *values) {
            auto s = string(item);
            if (!s) {
                ok = false;
                continue;
            }
            if (hasControlChars(*s)) {
                error(item, "header values cannot contain CR, LF or NUL");
                ok = false;
                continue;
            }
            if (templates) checkTemplates(item, *s, *templates);
            out.emplace_back(e.key, *s);
        }
        return true;
    });
    if (!v.node.IsNull() && !v.node.IsMap()) return std::nullopt;
    if (!ok) return std::nullopt;
    return out;
}

void Reader::checkTemplates(const Value& v, std::string_view text, const RouteShape& shape) {
    static constexpr std::string_view kKnown =
        "{{param.NAME}}, {{param.*}}, {{query.NAME}}, {{header.NAME}}, {{method}}, {{path}}, {{body}}";
    std::size_t pos = 0;
    while ((pos = text.find("{{", pos)) != std::string_view::npos) {
        std::size_t end = text.find("}}", pos + 2);
        if (end == std::string_view::npos) return; // an unterminated "{{" is literal text
        std::string_view t = text.substr(pos + 2, end - pos - 2);
        std::string shown = "{{" + std::string(t) + "}}";
        pos = end + 2;
        // The renderer allows spaces inside the braces: "{{ param.id }}".
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
            t.remove_prefix(1);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
            t.remove_suffix(1);
        // An escaping filter before the name: {{json header.user-agent}} (handlers/template.cpp).
        for (std::string_view filter : {"json ", "html ", "url ", "raw "})
            if (t.starts_with(filter)) {
                t.remove_prefix(filter.size());
                while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
                    t.remove_prefix(1);
                break;
            }
        if (t == "method" || t == "path" || t == "body") continue;
        if (t.starts_with("param.")) {
            std::string_view name = t.substr(6);
            if (shape.unknown) {
                // already reported: the route's path is invalid
            } else if (!shape.pattern) {
                error(v, shown + " needs a route with parameters; only `path:` patterns have them");
            } else if (name == "*") {
                if (!shape.wildcard) error(v, shown + " needs a '*' at the end of the route's path");
            } else if (std::find(shape.params.begin(), shape.params.end(), name) == shape.params.end()) {
                std::string known;
                for (const auto& p : shape.params)
                    known += (known.empty() ? ":" : ", :") + p;
                error(v, shown + ": the route's path has no parameter :" + std::string(name) +
                             (known.empty() ? std::string(" (it has none)") : " (it has " + known + ")"));
            }
            continue;
        }
        if ((t.starts_with("query.") && t.size() > 6) || (t.starts_with("header.") && isToken(t.substr(7))))
            continue;
        error(v, "unknown template " + shown + " (known: " + std::string(kKnown) + ")");
    }
}

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
            bool sawAddress = false, tlsOk = true;
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
                } else {
                    return false;
                }
                return true;
            });
            if (!sawAddress) error(item, "listener needs an `address:` (HOST:PORT)");
            if (l && tlsOk)
                l->tls = std::move(tls);
            else
                l.reset();
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
            if (auto n = integer(e.value, 16, 1048576)) c.ringRecords = static_cast<std::uint64_t>(*n);
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

void Reader::readVhost(const Value& v, Vhost& vh, std::vector<SourceMap::RouteSource>& sources) {
    vh.where = locate(v.mark);
    StaticAction st;
    std::optional<Value> rootValue;
    std::vector<Entry> needRoot;
    std::optional<Value> routesValue;
    bool isMap = readMap(
        v, kVhostKeys,
        [&](const Entry& e) {
            const Value& val = e.value;
            if (e.key == "root") {
                rootValue = val;
                readStaticKey(e, st);
            } else if (e.key == "index" || e.key == "listing" || e.key == "spa_fallback" ||
                       e.key == "follow_symlinks") {
                needRoot.push_back(e);
                readStaticKey(e, st);
            } else if (e.key == "names") {
                auto names = strings(val);
                if (!names) return true;
                for (std::size_t i = 0; i < names->size(); ++i) {
                    Value at = val.node.IsSequence()
                                   ? Value{val.node[i], item(val.path, i), val.node[i].Mark()}
                                   : val;
                    std::string n = lower((*names)[i]);
                    if (!n.empty() && n.back() == '.') n.pop_back();
                    std::string_view bare = n;
                    if (bare.starts_with("*.")) bare.remove_prefix(2);
                    in6_addr a6{};
                    std::string inner(bare.size() > 2 && bare.front() == '[' && bare.back() == ']'
                                          ? bare.substr(1, bare.size() - 2)
                                          : bare);
                    bool bracketed = inet_pton(AF_INET6, inner.c_str(), &a6) == 1; // an IPv6 literal
                    // Labels are non-empty (RFC 1034 §3.1): no leading dot, no '..', and at most the
                    // one trailing dot already removed ('..' would otherwise load as '.', which the
                    // writer saves and the loader then refuses).
                    bool labels = !bare.starts_with('.') && !bare.ends_with('.') &&
                                  bare.find("..") == std::string_view::npos;
                    bool ok = !bare.empty() &&
                              (bracketed || (labels && std::all_of(bare.begin(), bare.end(), [](char c) {
                                                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                                        c == '-' || c == '.' || c == '_';
                                             })));
                    if (n == "*")
                        vh.names.push_back(n); // the least specific wildcard (see routing/router.h)
                    else if (!bracketed && n.find(':') != std::string::npos)
                        error(at, "names do not carry a port; use `port:` for '" + n + "'");
                    else if (!ok)
                        error(at, "'" + (*names)[i] +
                                      "' is not a host name (labels of letters, digits, '-' and '_' "
                                      "joined by single dots, optionally starting with '*.')");
                    else
                        vh.names.push_back(n);
                }
            } else if (e.key == "port") {
                if (auto p = integer(val, 1, 65535)) vh.port = static_cast<std::uint16_t>(*p);
            } else if (e.key == "default") {
                if (auto b = boolean(val)) vh.isDefault = *b;
            } else if (e.key == "headers") {
                if (auto h = headers(val, nullptr)) vh.headers = std::move(*h);
            } else if (e.key == "error_pages") {
                readMap(val, {}, [&](const Entry& page) {
                    int code = 0;
                    auto [end, ec] =
                        std::from_chars(page.key.data(), page.key.data() + page.key.size(), code);
                    if (ec != std::errc{} || end != page.key.data() + page.key.size() || code < 400 ||
                        code > 599) {
                        errorAtKey(page,
                                   "error_pages keys are statuses from 400 to 599, got '" + page.key + "'");
                        return true;
                    }
                    if (auto file = absolute(page.value)) vh.errorPages[code] = *file;
                    return true;
                });
            } else if (e.key == "server_header") {
                if (auto b = boolean(val)) vh.serverHeader = *b;
            } else if (e.key == "routes") {
                routesValue = val;
            } else if (e.key == "live_reload") {
                if (auto b = boolean(val)) vh.liveReload = *b;
            } else if (e.key == "cross_site_subresources") {
                if (auto b = boolean(val)) vh.crossSiteSubresources = *b;
            } else if (e.key == "tls") {
                if (!val.node.IsMap())
                    error(val, "expected {cert: FILE, key: FILE}, got " + describe(val.node));
                else
                    vh.tls = readTlsFiles(val);
            } else {
                return false;
            }
            return true;
        },
        kVhostNotYet);
    if (!isMap) return;
    if (rootValue) {
        if (!st.root.empty()) vh.root = st;
    } else {
        for (const Entry& e : needRoot)
            errorAtKey(e, "'" + e.key + "' applies to the vhost's `root`, which is not set");
    }
    if (routesValue) readRoutes(*routesValue, GroupContext{}, vh.routes, sources);
}

void Reader::readRoutes(const Value& v, const GroupContext& group, std::vector<Route>& out,
                        std::vector<SourceMap::RouteSource>& sources) {
    auto items = list(v, false);
    if (!items) return;
    for (const Value& item : *items)
        readRoute(item, group, out, sources);
}

bool Reader::parseMatch(const Entry& e, const GroupContext& group, Route& r, RouteShape& shape) {
    auto spec = string(e.value);
    if (!spec) return false;
    bool location = e.key == "location";
    std::string rest = *spec;
    MatchKind kind = location ? MatchKind::Prefix : MatchKind::Pattern;
    struct Modifier {
        std::string_view text;
        MatchKind kind;
    };
    static constexpr Modifier kModifiers[] = {{"= ", MatchKind::Exact},
                                              {"^~ ", MatchKind::PrefixNoRegex},
                                              {"~* ", MatchKind::RegexCaseless},
                                              {"~ ", MatchKind::Regex}};
    for (const Modifier& m : kModifiers) {
        if (rest.starts_with(m.text)) {
            kind = m.kind;
            rest = rest.substr(m.text.size());
            rest.erase(0, rest.find_first_not_of(' '));
            break;
        }
    }
    if (rest.empty()) {
        error(e.value, "empty " + e.key);
        return false;
    }
    if (group.depth > 0 && (kind == MatchKind::Regex || kind == MatchKind::RegexCaseless)) {
        error(e.value,
              "regex routes cannot be inside a group (a prefix cannot be prepended to a regex); move it "
              "out of the group and write the prefix into the regex");
        return false;
    }
    if (group.prefixHasParams && kind != MatchKind::Pattern) {
        error(e.value, "only `path:` patterns can be inside a group whose prefix has parameters");
        return false;
    }
    std::string path = joinPrefix(group.prefix, rest, kind);
    switch (kind) {
    case MatchKind::Pattern: {
        // Reported by validate; the reader only needs the parameters for {{param.NAME}}.
        PatternShape ps;
        shape.pattern = path.starts_with("/");
        shape.unknown = !checkPattern(path, ps).empty();
        shape.params = std::move(ps.params);
        shape.wildcard = ps.wildcard;
        break;
    }
    case MatchKind::Exact:
    case MatchKind::Prefix:
    case MatchKind::PrefixNoRegex:
        if (!path.starts_with("/")) {
            std::string hint;
            if (location && (path.starts_with("=") || path.starts_with("^~") || path.starts_with("~")))
                hint = " (put a space after the modifier)";
            else if (location && path.starts_with("@"))
                hint = " (named locations are not supported)";
            error(e.value, e.key + " must start with '/' (after any modifier), got '" + *spec + "'" + hint);
            return false;
        }
        break;
    case MatchKind::Regex:
    case MatchKind::RegexCaseless:
        break; // compiled by validate, as the router will compile it
    }
    r.kind = kind;
    r.path = path;
    r.spec = group.depth > 0 ? std::string(kindModifier(kind)) + path : *spec;
    return true;
}

std::optional<std::uint32_t> Reader::methods(const Value& v) {
    auto items = list(v, true);
    if (!items) return std::nullopt;
    if (items->empty()) {
        error(v, "empty methods list; leave `methods` out to allow every method");
        return std::nullopt;
    }
    std::uint32_t mask = 0;
    bool ok = true;
    for (const Value& item : *items) {
        auto s = string(item);
        if (!s) {
            ok = false;
            continue;
        }
        http::Method m = http::methodFromToken(*s);
        if (m == http::Method::Other) {
            std::string hint;
            if (http::methodFromToken(upper(*s)) != http::Method::Other)
                hint = " (did you mean '" + upper(*s) + "'? methods are case-sensitive)";
            error(item,
                  "unknown method '" + *s + "'" + hint + "; known: " + http::allowHeaderValue(kAllMethods));
            ok = false;
            continue;
        }
        mask |= http::methodBit(m);
    }
    if (!ok) return std::nullopt;
    return mask;
}

// Route actions: one reader per action kind, listed in Reader::kActions (name → reader), the way
// nginx modules declare their directives in one table.

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
    const std::size_t before = errors_.size();
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
    if (errors_.size() != before) return std::nullopt;
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
        if (px.ws && !px.upstreams.empty() && px.upstreams.front().protocol != Upstream::Protocol::Http1)
            error(e.value, "ws: true needs http:// upstreams (WebSocket upgrades are HTTP/1.1)");
    }
    if (errors_.size() != before) return std::nullopt;
    return px;
}

std::optional<Action> Reader::readRedirect(const Entry& e, const RouteShape& shape) {
    const std::size_t before = errors_.size();
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
    if (errors_.size() != before) return std::nullopt;
    return rd;
}

std::optional<Action> Reader::readWebSocket(const Entry& e, const RouteShape& shape) {
    const Value& v = e.value;
    const std::size_t before = errors_.size();
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
    if (errors_.size() != before) return std::nullopt;
    return ws;
}

void Reader::readRoute(const Value& v, const GroupContext& group, std::vector<Route>& out,
                       std::vector<SourceMap::RouteSource>& sources) {
    if (!v.node.IsMap()) {
        error(v, "expected a route (a map with path:, location: or group:), got " + describe(v.node));
        return;
    }
    Route r;
    r.where = locate(v.mark);
    std::optional<Entry> match, action;
    std::vector<Entry> others;
    std::optional<std::uint32_t> methodMask;
    bool methodsSeen = false;
    std::optional<Value> headersValue;
    readMap(
        v, kRouteKeys,
        [&](const Entry& e) {
            if (e.key == "path" || e.key == "location" || e.key == "group") {
                if (match)
                    errorAtKey(
                        e, "a route takes exactly one of path, location or group; this one already has '" +
                               match->key + "'");
                else
                    match = e;
                return true;
            }
            if (actionKind(e.key)) {
                if (action)
                    errorAtKey(e, "a route takes exactly one action; this one already has '" + action->key +
                                      "'");
                else
                    action = e;
                return true;
            }
            others.push_back(e);
            if (e.key == "methods") {
                methodsSeen = true;
                methodMask = methods(e.value);
            } else if (e.key == "name") {
                if (auto s = string(e.value)) r.name = *s;
            } else if (e.key == "headers") {
                headersValue = e.value;
            } else if (e.key == "server_header") {
                if (auto b = boolean(e.value)) r.serverHeader = *b;
            } else {
                others.pop_back();
                return false;
            }
            return true;
        },
        kRouteNotYet,
        " (this version supports static, respond, redirect, proxy, grpc, fastcgi and websocket)");
    bool unsupported = std::any_of(std::begin(kRouteNotYet), std::end(kRouteNotYet),
                                   [&](std::string_view k) { return bool(v.node[std::string(k)]); });
    if (!match) {
        error(v, "a route needs one of `path:` (router pattern), `location:` (nginx syntax) or `group:`");
        return;
    }
    if (match->key == "group") {
        if (action) others.push_back(*action);
        for (const Entry& o : others)
            errorAtKey(o, "a group entry takes only `group:`; put '" + o.key + "' on the routes inside it");
        readGroup(match->value, group, out, sources);
        return;
    }
    RouteShape shape;
    bool matchOk = parseMatch(*match, group, r, shape);
    if (!matchOk) shape.unknown = true;
    if (headersValue) {
        if (auto h = headers(*headersValue, nullptr)) r.headers = std::move(*h);
    }
    if (methodMask) r.methods = *methodMask;
    if (action) {
        if (auto a = (this->*actionKind(action->key)->read)(*action, shape)) r.action = std::move(*a);
    } else if (!unsupported) {
        error(v, "a route needs an action: static, respond, redirect, proxy, grpc, fastcgi or websocket");
    }
    // A route with a broken action still takes part in the duplicate check, so one run reports
    // both; any error refuses the whole config anyway.
    if (!matchOk || (methodsSeen && !methodMask)) return;
    out.push_back(std::move(r));
    sources.push_back(SourceMap::RouteSource{v.path, match->key});
}

void Reader::readGroup(const Value& v, const GroupContext& group, std::vector<Route>& out,
                       std::vector<SourceMap::RouteSource>& sources) {
    if (!v.node.IsMap()) {
        error(v, "expected {prefix: /api, routes: [...]}, got " + describe(v.node));
        return;
    }
    if (group.depth >= kMaxGroupDepth) {
        error(v, "groups are nested too deeply");
        return;
    }
    std::optional<GroupContext> inner;
    std::optional<Value> routes;
    readMap(v, kGroupKeys, [&](const Entry& e) {
        if (e.key == "prefix") {
            auto p = string(e.value);
            if (!p) return true;
            PatternShape shape;
            std::string problem;
            if (!p->starts_with("/")) {
                error(e.value, "group prefix must start with '/', got '" + *p + "'");
            } else if (p->find('*') != std::string::npos) {
                error(e.value, "group prefix cannot contain '*'");
            } else if (problem = checkPattern(joinPrefix(group.prefix, *p, MatchKind::Pattern), shape);
                       !problem.empty()) {
                error(e.value, problem); // the group's routes are not read: they would all repeat it
            } else {
                inner = GroupContext{joinPrefix(group.prefix, *p, MatchKind::Pattern),
                                     group.prefixHasParams || !shape.params.empty(), group.depth + 1};
            }
        } else if (e.key == "routes") {
            routes = e.value;
        } else {
            return false;
        }
        return true;
    });
    if (!v.node["prefix"]) error(v, "group needs a `prefix:` (e.g. /api)");
    if (!routes) error(v, "group needs `routes:`");
    if (inner && routes) readRoutes(*routes, *inner, out, sources);
}

// Documents in a YAML stream, counted from parser events (at most 3 are read). `stuck`: the parser
// began a document where the previous one began, i.e. it made no progress (see Reader::run).
struct DocumentScan {
    int documents = 0;
    YAML::Mark second; // where the second document starts
    bool stuck = false;
    YAML::Mark stuckAt;
};

DocumentScan scanDocuments(std::string_view text) {
    struct Counter final : YAML::EventHandler {
        std::vector<YAML::Mark> starts;
        void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
        void OnDocumentEnd() override {}
        void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
        void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
        void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
        void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                             YAML::EmitterStyle::value) override {}
        void OnSequenceEnd() override {}
        void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                        YAML::EmitterStyle::value) override {}
        void OnMapEnd() override {}
    } counter;
    std::stringstream in{std::string(text)};
    YAML::Parser parser(in);
    DocumentScan scan;
    while (counter.starts.size() < 3 && parser.HandleNextDocument(counter)) {
        const auto n = counter.starts.size();
        if (n >= 2 && counter.starts[n - 1].pos == counter.starts[n - 2].pos) {
            scan.stuck = true;
            scan.stuckAt = counter.starts[n - 1];
            break;
        }
    }
    scan.documents = static_cast<int>(counter.starts.size());
    if (scan.documents >= 2) scan.second = counter.starts[1];
    if (scan.stuck && (scan.stuckAt.pos < 0 || static_cast<std::size_t>(scan.stuckAt.pos) >= text.size()))
        scan.stuckAt.pos = 0;
    return scan;
}

ReadResult Reader::run(std::string_view text, std::string sourcePath) {
    auto config = std::make_shared<Config>();
    config->sourcePath = std::move(sourcePath);
    try {
        // Not YAML::LoadAll: in yaml-cpp 0.7 it loops for ever, allocating, when a token cannot
        // start a node (",": jbeder/yaml-cpp#1040, fixed upstream by #1319). Count the documents
        // with a bounded event pass instead, then load the first.
        const DocumentScan scan = scanDocuments(text);
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

fs::path absoluteDir(const std::string& dir) {
    std::error_code ec;
    fs::path p = dir.empty() ? fs::current_path(ec) : fs::absolute(dir, ec);
    return normalise(p);
}

} // namespace

ReadResult readConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir,
                          const std::string& sourcePath) {
    return Reader(fileName, absoluteDir(baseDir)).run(text, sourcePath);
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

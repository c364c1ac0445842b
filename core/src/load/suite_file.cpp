// Reads a user's benchmark suite file (suite_file.h): YAML into a SuiteFile with every error located,
// the command line's precedence over it, and the judging of each route by its thresholds.
#include <portico/load/suite_file.h>

#include <portico/http/ascii.h>
#include <portico/http/spelling.h>

#include "config/yaml_scan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <span>
#include <sstream>
#include <tuple>

namespace portico::load {

namespace {

using Keys = std::span<const std::string_view>;
using config::yaml::describe;

constexpr std::string_view kTopKeys[] = {"base",     "duration",   "connections", "threads",
                                         "pipeline", "thresholds", "routes"};
constexpr std::string_view kRouteKeys[] = {"name", "path",        "method",    "headers",
                                           "body", "description", "thresholds"};
constexpr std::uintmax_t kMaxFileBytes = 16u << 20;

/// The offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no
/// overlong forms, surrogates or code points above U+10FFFF), or npos.
std::size_t firstInvalidUtf8(std::string_view s) {
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t i = 0;
    while (i < s.size()) {
        const unsigned c = b[i];
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || (n == 2 && c < 0xC2) || i + n > s.size()) return i;
        for (std::size_t k = 1; k < n; ++k)
            if ((b[i + k] & 0xC0) != 0x80) return i;
        if (n == 3) {
            const unsigned cp = ((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F);
            if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        } else if (n == 4) {
            const unsigned cp =
                ((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F);
            if (cp < 0x10000 || cp > 0x10FFFF) return i;
        }
        i += n;
    }
    return std::string_view::npos;
}

// Fields the load generator writes itself (load::validate refuses them in a request's headers).
constexpr std::string_view kGeneratedFields[] = {"content-length", "transfer-encoding"};

bool hasControlChars(std::string_view s) {
    return std::any_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// " (indent YAML with spaces, not tabs)" when the line of `mark` or the one before it is indented
/// with a tab: yaml-cpp's message for that ("illegal block entry") does not say so.
std::string tabHint(std::string_view text, const YAML::Mark& mark) {
    std::size_t start = 0;
    for (int line = 0; start <= text.size(); ++line) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        if (line >= mark.line - 1 && line <= mark.line) {
            const std::string_view l = text.substr(start, end - start);
            const std::size_t indent = l.find_first_not_of(" \t");
            if (l.substr(0, indent).find('\t') != std::string_view::npos)
                return " (indent YAML with spaces, not tabs)";
        }
        if (line >= mark.line) break;
        start = end + 1;
    }
    return {};
}

/// The suite file's reader: one pass over the YAML tree, errors collected, never thrown.
class Reader {
public:
    Reader(const std::string& file, std::vector<config::ConfigError>& errors)
        : file_(file), errors_(errors) {}

    void run(std::string_view text, SuiteFile& out) {
        const std::size_t before = errors_.size();
        // YAML is UTF-8 here (YAML 1.2 §5.2): a name or value in another encoding would reach the
        // JSON result and the history as bytes no reader takes.
        if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string_view::npos) {
            const std::string_view head = text.substr(0, bad);
            const auto line = static_cast<int>(std::count(head.begin(), head.end(), '\n'));
            const std::size_t lineStart = head.rfind('\n');
            const auto column =
                static_cast<int>(lineStart == std::string_view::npos ? bad : bad - lineStart - 1);
            YAML::Mark mark;
            mark.line = line;
            mark.column = column;
            error(mark, "", "not UTF-8 text (save the file as UTF-8)");
            return;
        }
        try {
            const config::yaml::DocumentScan scan = config::yaml::scanDocuments(text);
            if (scan.stuck) {
                error(scan.stuckAt, "", "YAML syntax error: a token that cannot start a value");
            } else {
                if (scan.documents > 1)
                    error(scan.second, "", "expected one YAML document, found more than one");
                const YAML::Node top = YAML::Load(std::string(text));
                readTop(Value{top, "", top.Mark()}, out);
            }
        } catch (const YAML::ParserException& e) {
            error(e.mark, "", "YAML syntax error: " + e.msg + tabHint(text, e.mark));
        } catch (const YAML::Exception& e) {
            error(e.mark, "", "YAML error: " + e.msg);
        }
        std::stable_sort(errors_.begin() + static_cast<std::ptrdiff_t>(before), errors_.end(),
                         [](const config::ConfigError& a, const config::ConfigError& b) {
                             return std::tie(a.where.line, a.where.column) <
                                    std::tie(b.where.line, b.where.column);
                         });
    }

private:
    /// A node, its path in the document ("routes[2].path") and the position errors about it name.
    struct Value {
        YAML::Node node;
        std::string path;
        YAML::Mark mark;
    };

    void error(const YAML::Mark& mark, const std::string& path, std::string message) {
        // yaml-cpp's marks are 0-based; a node without a position (an empty document) has -1.
        config::Location where{file_, 1, 1};
        if (mark.line >= 0) where = {file_, mark.line + 1, mark.column + 1};
        errors_.push_back(config::ConfigError{std::move(where), path, std::move(message)});
    }
    void error(const Value& v, std::string message) { error(v.mark, v.path, std::move(message)); }

    /// Visits each key of the map `v` that is in `known` (a duplicate, an unknown key and a key
    /// that is not a scalar are errors at the key). False when `v` is not a map (an error said so).
    bool forEach(const Value& v, Keys known,
                 const std::function<void(const std::string&, const Value&)>& visit) {
        if (!v.node.IsMap()) {
            error(v, "expected a map, got " + describe(v.node));
            return false;
        }
        std::vector<std::string> seen;
        for (auto it = v.node.begin(); it != v.node.end(); ++it) {
            const YAML::Node k = it->first; // by value: the iterator's operator-> yields a temporary
            const YAML::Node val = it->second;
            if (!k.IsScalar()) {
                error(k.Mark(), v.path, "expected a plain key, got " + describe(k));
                continue;
            }
            const std::string key = k.Scalar();
            const std::string path = v.path.empty() ? key : v.path + "." + key;
            // An empty value ("key:") has the position of the next token: point at the key instead.
            YAML::Mark mark = val.Mark();
            if (val.IsNull() && (mark.line != k.Mark().line || mark.line < 0)) mark = k.Mark();
            if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
                error(k.Mark(), path, "duplicate key '" + key + "'");
                continue;
            }
            seen.push_back(key);
            if (std::find(known.begin(), known.end(), key) == known.end()) {
                std::string message = "unknown key '" + key + "'";
                const std::string_view close = http::closestWord(key, known);
                if (!close.empty()) message += " (did you mean '" + std::string(close) + "'?)";
                error(k.Mark(), path, std::move(message));
                continue;
            }
            visit(key, Value{val, path, mark});
        }
        return true;
    }

    std::optional<std::string> string(const Value& v) {
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

    std::optional<unsigned> whole(const Value& v, unsigned lo, unsigned hi) {
        auto s = string(v);
        if (!s) return std::nullopt;
        unsigned long long n = 0;
        const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
        if (s->empty() || ec == std::errc::invalid_argument || end != s->data() + s->size()) {
            error(v, "expected a whole number, got " + describe(v.node));
            return std::nullopt;
        }
        if (ec == std::errc::result_out_of_range || n < lo || n > hi) {
            error(v, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + *s);
            return std::nullopt;
        }
        return static_cast<unsigned>(n);
    }

    std::optional<std::chrono::nanoseconds> duration(const Value& v) {
        auto s = string(v);
        if (!s) return std::nullopt;
        config::Duration d{};
        if (!config::parseDuration(*s, d)) {
            const bool bare =
                !s->empty() && std::all_of(s->begin(), s->end(), [](char c) { return c >= '0' && c <= '9'; });
            if (bare)
                error(v, "duration '" + *s + "' needs a unit: us, ms, s, m or h (e.g. " + *s + "s)");
            else
                error(v, "invalid duration '" + *s + "' (write e.g. 500ms, 3s or 1m)");
            return std::nullopt;
        }
        if (d.count() == 0) {
            error(v, "must be greater than 0");
            return std::nullopt;
        }
        return d;
    }

    /// A list of threshold expressions, or one expression alone.
    void thresholds(const Value& v, std::vector<Threshold>& out) {
        std::vector<Value> items;
        if (v.node.IsScalar()) {
            items.push_back(v);
        } else if (v.node.IsSequence()) {
            for (std::size_t i = 0; i < v.node.size(); ++i) {
                const YAML::Node n = v.node[i];
                items.push_back(
                    Value{n, v.path + "[" + std::to_string(i) + "]", n.Mark().line >= 0 ? n.Mark() : v.mark});
            }
        } else if (!v.node.IsNull()) { // "thresholds:" with nothing: none
            error(v, "expected a list of threshold expressions, e.g. [p99<50ms, errors<1%], got " +
                         describe(v.node));
            return;
        }
        for (const Value& item : items) {
            auto s = string(item);
            if (!s) continue;
            std::string message;
            if (auto t = parseThreshold(*s, message))
                out.push_back(std::move(*t));
            else
                error(item, message);
        }
    }

    void readTop(const Value& v, SuiteFile& out) {
        if (v.node.IsNull()) {
            error(YAML::Mark{}, "",
                  "empty suite file: expected a map with `routes:` (a list of {name, path})");
            return;
        }
        bool sawRoutes = false;
        const bool isMap = forEach(v, kTopKeys, [&](const std::string& key, const Value& val) {
            if (key == "base") {
                auto s = string(val);
                if (!s) return;
                http::Url url;
                std::string message;
                if (!http::parseUrl(*s, url, message))
                    error(val, message);
                else if (url.target != "/")
                    error(val, "base '" + *s + "': give only the origin, e.g. " + kSuiteDefaultUrl);
                else
                    out.base = url.origin();
            } else if (key == "duration") {
                out.duration = duration(val);
            } else if (key == "connections") {
                out.connections = whole(val, 1, 100000);
            } else if (key == "threads") {
                out.threads = whole(val, 1, 256);
            } else if (key == "pipeline") {
                out.pipeline = whole(val, 1, 1024);
            } else if (key == "thresholds") {
                thresholds(val, out.thresholds);
            } else if (key == "routes") {
                sawRoutes = true;
                readRoutes(val, out);
            }
        });
        if (isMap && !sawRoutes)
            error(v, "no routes: add at least one under `routes:` (e.g. `routes: [{name: home, path: /}]`)");
    }

    void readRoutes(const Value& v, SuiteFile& out) {
        if (v.node.IsNull() || (v.node.IsSequence() && v.node.size() == 0)) {
            error(v, "at least one route is required (a list of {name, path})");
            return;
        }
        if (!v.node.IsSequence()) {
            error(v, "expected a list of routes, got " + describe(v.node));
            return;
        }
        for (std::size_t i = 0; i < v.node.size(); ++i) {
            const YAML::Node n = v.node[i];
            readRoute(
                Value{n, v.path + "[" + std::to_string(i) + "]", n.Mark().line >= 0 ? n.Mark() : v.mark},
                out);
        }
    }

    void readRoute(const Value& v, SuiteFile& out) {
        SuiteFileRoute r;
        r.line = v.mark.line + 1;
        bool sawName = false, sawPath = false;
        YAML::Mark nameMark = v.mark;
        if (!forEach(v, kRouteKeys, [&](const std::string& key, const Value& val) {
                if (key == "name") {
                    sawName = true;
                    nameMark = val.mark;
                    auto s = string(val);
                    if (!s) return;
                    if (s->empty())
                        error(val, "must not be empty");
                    else if (hasControlChars(*s))
                        error(val, "must not contain control characters");
                    else
                        r.route.name = *s;
                } else if (key == "path") {
                    sawPath = true;
                    auto s = string(val);
                    if (!s) return;
                    if (s->empty() || s->front() != '/')
                        error(val, "expected a path starting with '/' (e.g. /users/42?page=2), got " +
                                       describe(val.node));
                    else if (hasControlChars(*s) || s->find(' ') != std::string::npos ||
                             std::any_of(s->begin(), s->end(), [](char c) { return (c & 0x80) != 0; }))
                        error(val, "must not contain spaces, control or non-ASCII characters (percent-encode "
                                   "them: %20, %C3%A9)");
                    else if (s->find('#') != std::string::npos)
                        error(val, "a fragment ('#...') is not sent in a request: leave it out");
                    else
                        r.route.target = *s;
                } else if (key == "method") {
                    auto s = string(val);
                    if (!s) return;
                    if (!http::isToken(*s))
                        error(val, "expected a method name such as GET or POST, got " + describe(val.node));
                    else
                        r.route.method = *s;
                } else if (key == "headers") {
                    readHeaders(val, r.route.headers);
                } else if (key == "body") {
                    if (auto s = string(val)) r.route.body = *s;
                } else if (key == "description") {
                    if (auto s = string(val)) r.route.description = *s;
                } else if (key == "thresholds") {
                    thresholds(val, r.thresholds);
                }
            }))
            return;
        if (!sawName) error(v, "route needs a `name:` (unique, e.g. plaintext)");
        if (!sawPath) error(v, "route needs a `path:` (e.g. /plaintext)");
        if (!r.route.name.empty()) {
            const auto same =
                std::find_if(out.routes.begin(), out.routes.end(),
                             [&](const SuiteFileRoute& o) { return o.route.name == r.route.name; });
            if (same != out.routes.end()) {
                error(nameMark, v.path + ".name",
                      "duplicate route name '" + r.route.name + "' (first at line " +
                          std::to_string(same->line) + ")");
                return;
            }
        }
        out.routes.push_back(std::move(r));
    }

    void readHeaders(const Value& v, std::vector<std::pair<std::string, std::string>>& out) {
        if (v.node.IsNull()) return;
        if (!v.node.IsMap()) {
            error(v, "expected a map of field name to value (e.g. {Accept: text/plain}), got " +
                         describe(v.node));
            return;
        }
        for (auto it = v.node.begin(); it != v.node.end(); ++it) {
            const YAML::Node k = it->first;
            const YAML::Node val = it->second;
            if (!k.IsScalar() || !http::isToken(k.Scalar())) {
                error(k.Mark(), v.path, "expected a field name (an RFC 9110 token), got " + describe(k));
                continue;
            }
            const std::string name = http::lower(k.Scalar());
            if (std::find(std::begin(kGeneratedFields), std::end(kGeneratedFields), name) !=
                std::end(kGeneratedFields)) {
                error(k.Mark(), v.path,
                      "'" + k.Scalar() + "' is written by the load generator from the body: leave it out");
                continue;
            }
            // Field names are case-insensitive (RFC 9110 §5.1): X-A and x-a are the same field.
            if (std::any_of(out.begin(), out.end(),
                            [&](const auto& h) { return http::lower(h.first) == name; })) {
                error(k.Mark(), v.path, "duplicate field '" + k.Scalar() + "' (names are case-insensitive)");
                continue;
            }
            const Value value{val, v.path + "." + k.Scalar(), val.IsNull() ? k.Mark() : val.Mark()};
            if (val.IsNull()) { // "X-Empty:" is a field with an empty value
                out.emplace_back(k.Scalar(), std::string());
                continue;
            }
            auto s = string(value);
            if (!s) continue;
            if (s->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
                error(value, "a field value must not contain line breaks");
            else
                out.emplace_back(k.Scalar(), *s);
        }
    }

    std::string file_;
    std::vector<config::ConfigError>& errors_;
};

} // namespace

std::vector<SuiteRoute> SuiteFile::suiteRoutes() const {
    std::vector<SuiteRoute> out;
    out.reserve(routes.size());
    for (const auto& r : routes)
        out.push_back(r.route);
    return out;
}

bool parseSuiteFile(std::string_view text, const std::string& fileName, SuiteFile& out,
                    std::vector<config::ConfigError>& errors) {
    const std::size_t before = errors.size();
    out = SuiteFile{};
    out.file = fileName;
    Reader(fileName, errors).run(text, out);
    return errors.size() == before;
}

bool readSuiteFile(const std::filesystem::path& path, SuiteFile& out,
                   std::vector<config::ConfigError>& errors) {
    const std::string name = path.string();
    auto fail = [&](std::string why) {
        out = SuiteFile{};
        out.file = name;
        errors.push_back(config::ConfigError{config::Location{name, 0, 0}, "", std::move(why)});
        return false;
    };
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return fail("cannot read (a folder, not a file)");
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(std::string("cannot read (") + std::strerror(errno) + ")");
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxFileBytes) return fail("cannot read (larger than 16 MiB: not a suite file)");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return fail(std::string("cannot read (") + std::strerror(errno) + ")");
    return parseSuiteFile(text.str(), name, out, errors);
}

bool applySuiteFile(const SuiteFile& file, const SuiteFileOverrides& given, Options& options,
                    std::string& baseUrl, std::string& error) {
    baseUrl = !given.baseUrl.empty() ? given.baseUrl : !file.base.empty() ? file.base : kSuiteDefaultUrl;
    if (!given.bounds) {
        options.duration = file.duration.value_or(std::chrono::seconds(3));
        options.count = 0;
    }
    if (!given.connections && file.connections) options.connections = *file.connections;
    if (!given.threads && file.threads) options.threads = *file.threads;
    if (!given.pipeline && file.pipeline) {
        if (options.protocol == Protocol::Http2 && *file.pipeline > 1) {
            error = file.file + ": pipeline " + std::to_string(*file.pipeline) +
                    " is HTTP/1.1 only; with --h2 the command line's --streams applies (or give -p 1)";
            return false;
        }
        options.pipeline = *file.pipeline;
    }
    return true;
}

bool judgeSuiteFile(const SuiteFile& file, const std::vector<Threshold>& extra, SuiteResult& suite) {
    bool met = true;
    for (auto& run : suite.runs) {
        std::vector<Threshold> all;
        auto add = [&](const std::vector<Threshold>& some) {
            for (const auto& t : some)
                if (std::none_of(all.begin(), all.end(),
                                 [&](const Threshold& a) { return a.expr == t.expr; }))
                    all.push_back(t);
        };
        add(extra);
        add(file.thresholds);
        const auto route = std::find_if(file.routes.begin(), file.routes.end(), [&](const SuiteFileRoute& r) {
            return r.route.name == run.route.name;
        });
        if (route != file.routes.end()) add(route->thresholds);
        met = judgeAll(all, run.result) && met;
    }
    return met;
}

} // namespace portico::load

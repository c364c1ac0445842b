// The Reader's value readers (maps, lists, scalars, sizes, durations, headers, templates) and the
// helpers the other reader files share (reader_impl.h).
#include "reader_impl.h"

#include <portico/http/spelling.h>

#include <algorithm>
#include <charconv>
#include <sstream>

namespace portico::config::detail {

namespace {

// Fields the connection writes itself (http::Response says handlers must not set them).
constexpr std::string_view kReservedHeaders[] = {"content-length", "transfer-encoding", "connection", "date",
                                                 "server"};

std::string child(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

} // namespace

/// " (did you mean 'x'?)" when exactly one candidate is closest and within distance 2, else "".
std::string suggestion(std::string_view word, Keys candidates) {
    const std::string_view best = http::closestWord(word, candidates);
    if (best.empty()) return {};
    return " (did you mean '" + std::string(best) + "'?)";
}

// RFC 9110 §5.5: a field value is visible characters, spaces and tabs, without leading or
// trailing whitespace (an HTTP/2 peer resets a stream that breaks this, RFC 9113 §8.2.1).
bool hasControlChars(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && c != '\t') || u == 0x7f;
    });
}

bool hasOuterWhitespace(std::string_view s) {
    return !s.empty() && (s.front() == ' ' || s.front() == '\t' || s.back() == ' ' || s.back() == '\t');
}

std::string item(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string normalise(const fs::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

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
        error(v, "status must be between " + std::to_string(std::max(min, 100)) + " and " +
                     std::to_string(std::min(max, 599)) + ", got " + *s);
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
                error(item, "header values cannot contain control characters (CR, LF, NUL and the other "
                            "bytes below 0x20 but tab, or DEL)");
                ok = false;
                continue;
            }
            if (hasOuterWhitespace(*s)) {
                error(item, "header values cannot start or end with a space or tab (RFC 9110 §5.5)");
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

} // namespace portico::config::detail

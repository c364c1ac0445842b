// The capture filter language (filter.h).
#include <portico/capture/filter.h>
#include <portico/http/ascii.h>
#include <portico/http/spelling.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace portico::capture {

namespace {
constexpr std::string_view kKeys[] = {"status",   "method", "path",  "url",    "host",   "vhost",  "route",
                                      "protocol", "client", "error", "header", "source", "process"};

using http::lower;

bool contains(std::string_view hay, std::string_view needle) {
    return http::ifind(hay, needle) != std::string_view::npos;
}

} // namespace

std::optional<Filter> Filter::parse(std::string_view expr, std::string& error) {
    Filter f;
    std::size_t i = 0;
    auto fail = [&](std::size_t col, const std::string& msg) {
        error = "column " + std::to_string(col + 1) + ": " + msg;
        return std::nullopt;
    };
    while (i < expr.size()) {
        if (std::isspace(static_cast<unsigned char>(expr[i]))) {
            ++i;
            continue;
        }
        const std::size_t start = i;
        Term t;
        if (expr[i] == '-') {
            t.negate = true;
            ++i;
        }
        // key or word
        std::size_t j = i;
        while (j < expr.size() && !std::isspace(static_cast<unsigned char>(expr[j])) && expr[j] != ':' &&
               expr[j] != '"')
            ++j;
        std::string word(expr.substr(i, j - i));
        if (j < expr.size() && expr[j] == ':') {
            t.key = lower(word);
            if (std::find(std::begin(kKeys), std::end(kKeys), t.key) == std::end(kKeys)) {
                std::string hint;
                if (auto k = http::closestWord(t.key, kKeys); !k.empty())
                    hint = " (did you mean '" + std::string(k) + "'?)";
                return fail(i, "unknown key '" + word + "'" + hint);
            }
            i = j + 1;
        } else {
            t.key.clear();
        }
        // value
        if (i < expr.size() && expr[i] == '"') {
            auto close = expr.find('"', i + 1);
            if (close == std::string_view::npos) return fail(i, "unterminated quote");
            t.value = std::string(expr.substr(i + 1, close - i - 1));
            i = close + 1;
        } else {
            j = i;
            while (j < expr.size() && !std::isspace(static_cast<unsigned char>(expr[j])))
                ++j;
            t.value = std::string(expr.substr(i, j - i));
            i = j;
        }
        if (t.value.empty())
            return fail(start, t.key.empty() ? "empty term" : "missing value after '" + t.key + ":'");
        if (t.key == "status") {
            std::string_view v = t.value;
            if (v.size() == 3 && std::isdigit(static_cast<unsigned char>(v[0])) &&
                (v[1] == 'x' || v[1] == 'X') && (v[2] == 'x' || v[2] == 'X')) {
                t.op = Term::Op::Class;
                t.number = v[0] - '0';
            } else {
                if (v.starts_with(">="))
                    t.op = Term::Op::Ge, v.remove_prefix(2);
                else if (v.starts_with("<="))
                    t.op = Term::Op::Le, v.remove_prefix(2);
                else if (v.starts_with("!="))
                    t.op = Term::Op::Ne, v.remove_prefix(2);
                else if (v.starts_with(">"))
                    t.op = Term::Op::Gt, v.remove_prefix(1);
                else if (v.starts_with("<"))
                    t.op = Term::Op::Lt, v.remove_prefix(1);
                else if (v.starts_with("!"))
                    t.op = Term::Op::Ne, v.remove_prefix(1);
                else if (v.starts_with("="))
                    v.remove_prefix(1);
                auto r = std::from_chars(v.data(), v.data() + v.size(), t.number);
                if (r.ec != std::errc() || r.ptr != v.data() + v.size() || t.number < 0 || t.number > 999)
                    return fail(start,
                                "status: expected a number, a comparison (>=400) or a class (4xx), got '" +
                                    t.value + "'");
            }
        } else if (t.key == "protocol") {
            t.value = lower(t.value);
            if (t.value != "h1" && t.value != "h2" && t.value != "ws" && t.value != "grpc")
                return fail(start, "protocol: expected h1, h2, ws or grpc, got '" + t.value + "'");
        } else if (t.key == "error") {
            t.value = lower(t.value);
            if (t.value != "yes" && t.value != "no") return fail(start, "error: expected yes or no");
        } else if (t.key == "source") {
            t.value = lower(t.value);
            Source source{};
            if (!sourceFromName(t.value, source))
                return fail(start,
                            "source: expected server, forward, intercepted or tunnel, got '" + t.value + "'");
            t.number = static_cast<int>(source);
        }
        f.terms_.push_back(std::move(t));
    }
    return f;
}

bool Filter::matches(const Exchange& e) const {
    for (const Term& t : terms_) {
        bool m = false;
        if (t.key.empty()) {
            m = contains(e.url(), t.value);
        } else if (t.key == "status") {
            switch (t.op) {
            case Term::Op::Eq:
                m = e.status == t.number;
                break;
            case Term::Op::Ne:
                m = e.status != t.number;
                break;
            case Term::Op::Lt:
                m = e.status < t.number;
                break;
            case Term::Op::Le:
                m = e.status <= t.number;
                break;
            case Term::Op::Gt:
                m = e.status > t.number;
                break;
            case Term::Op::Ge:
                m = e.status >= t.number;
                break;
            case Term::Op::Class:
                m = e.status / 100 == t.number;
                break;
            }
        } else if (t.key == "method") {
            std::string_view list = t.value;
            while (!list.empty() && !m) {
                auto comma = list.find(',');
                m = lower(list.substr(0, comma)) == lower(e.method);
                list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
            }
        } else if (t.key == "path") {
            std::string_view target = e.target;
            if (auto p = target.find("://"); p != std::string_view::npos) {
                auto slash = target.find('/', p + 3);
                target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
            }
            m = target.substr(0, target.find('?')).starts_with(t.value);
        } else if (t.key == "url") {
            m = contains(e.url(), t.value);
        } else if (t.key == "host") {
            m = contains(e.authority, t.value);
        } else if (t.key == "vhost") {
            m = e.vhost == t.value;
        } else if (t.key == "route") {
            m = e.route == t.value;
        } else if (t.key == "protocol") {
            m = (t.value == "h1" && e.protocol == Protocol::Http1) ||
                (t.value == "h2" && e.protocol == Protocol::Http2) ||
                (t.value == "ws" && e.protocol == Protocol::WebSocket) ||
                (t.value == "grpc" && e.protocol == Protocol::Grpc);
        } else if (t.key == "client") {
            m = std::string_view(e.client).starts_with(t.value);
        } else if (t.key == "source") {
            m = static_cast<int>(e.source) == t.number;
        } else if (t.key == "process") {
            m = contains(e.clientProcess, t.value);
        } else if (t.key == "error") {
            const bool err = !e.error.empty() || e.isError();
            m = (t.value == "yes") == err;
        } else if (t.key == "header") {
            auto eq = t.value.find('=');
            std::string_view name = std::string_view(t.value).substr(0, eq);
            std::string_view value =
                eq == std::string::npos ? std::string_view() : std::string_view(t.value).substr(eq + 1);
            for (const auto* list : {&e.requestHeaders, &e.responseHeaders})
                for (const auto& h : *list)
                    if (lower(h.name) == lower(name) && (eq == std::string::npos || contains(h.value, value)))
                        m = true;
        }
        if (m == t.negate) return false;
    }
    return true;
}

} // namespace portico::capture

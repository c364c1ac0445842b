// The capture filter language (filter.h).
#include <portico/capture/filter.h>
#include <portico/http/ascii.h>
#include <portico/http/spelling.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace portico::capture {

namespace {
constexpr std::string_view kKeys[] = {"status",   "method", "path",  "url",    "host",   "vhost",   "route",
                                      "protocol", "client", "error", "header", "source", "process", "rule"};

using http::lower;

bool contains(std::string_view hay, std::string_view needle) {
    return http::ifind(hay, needle) != std::string_view::npos;
}

} // namespace

std::optional<Filter> Filter::parse(std::string_view expr, std::string& error) {
    auto terms = rules::parseTerms(expr, kKeys, error);
    if (!terms) return std::nullopt;
    for (Term& t : *terms) {
        if (t.key == "protocol") {
            t.value = lower(t.value);
            if (t.value != "h1" && t.value != "h2" && t.value != "ws" && t.value != "grpc") {
                error = rules::termError(t, "protocol: expected h1, h2, ws or grpc, got '" + t.value + "'");
                return std::nullopt;
            }
        } else if (t.key == "error") {
            t.value = lower(t.value);
            if (t.value != "yes" && t.value != "no") {
                error = rules::termError(t, "error: expected yes or no");
                return std::nullopt;
            }
        } else if (t.key == "source") {
            t.value = lower(t.value);
            Source source{};
            if (!sourceFromName(t.value, source)) {
                error = rules::termError(t, "source: expected server, forward, intercepted or tunnel, got '" +
                                                t.value + "'");
                return std::nullopt;
            }
            t.number = static_cast<int>(source);
        }
    }
    Filter f;
    f.terms_ = std::move(*terms);
    return f;
}

bool Filter::matches(const Exchange& e) const {
    for (const Term& t : terms_) {
        bool m = false;
        if (t.key.empty()) {
            m = contains(e.url(), t.value);
        } else if (t.key == "status") {
            m = rules::statusMatches(t, e.status);
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
        } else if (t.key == "rule") {
            m = std::any_of(e.rules.begin(), e.rules.end(),
                            [&](const std::string& name) { return contains(name, t.value); });
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

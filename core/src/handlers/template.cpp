// The {{…}} placeholders of respond bodies, respond header values and redirect targets.
#include "handlers/actions.h"
#include <portico/http/ascii.h>

#include "handlers/http_util.h"

#include <nlohmann/json.hpp>

namespace portico::handlers {
namespace {

using http::hexValue;

// application/x-www-form-urlencoded decoding: '+' is a space; a bad escape stays literal.
void formDecode(std::string_view in, std::string& out) {
    for (std::size_t i = 0; i < in.size(); ++i) {
        char c = in[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%' && i + 2 < in.size() && hexValue(in[i + 1]) >= 0 && hexValue(in[i + 2]) >= 0) {
            out += static_cast<char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2]));
            i += 2;
        } else {
            out += c;
        }
    }
}

// Appends the first value of query parameter `name` (decoded); false when it is absent.
bool queryValue(std::string_view query, std::string_view name, std::string& out) {
    std::string key;
    while (!query.empty()) {
        std::size_t amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        std::size_t eq = pair.find('=');
        key.clear();
        formDecode(pair.substr(0, eq), key);
        if (key != name) continue;
        if (eq != std::string_view::npos) formDecode(pair.substr(eq + 1), out);
        return true;
    }
    return false;
}

void appendEscaped(std::string_view value, TemplateTarget target, std::string& out) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    switch (target) {
    case TemplateTarget::Body:
        out.append(value);
        return;
    case TemplateTarget::JsonBody: {
        // nlohmann_json's string escaping (RFC 8259 §7), without the quotes; bytes that are not
        // UTF-8 become U+FFFD instead of an invalid document.
        const std::string quoted =
            nlohmann::json(std::string(value)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        out.append(quoted, 1, quoted.size() - 2);
        return;
    }
    case TemplateTarget::HtmlBody:
        appendHtmlEscaped(out, value);
        return;
    case TemplateTarget::HeaderValue:
        for (char c : value)
            out += (c == '\r' || c == '\n' || c == '\0') ? ' ' : c;
        return;
    case TemplateTarget::Url:
        for (unsigned char c : value) {
            bool keep =
                (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("-._~/:@!$'()*,;").find(static_cast<char>(c)) != std::string_view::npos;
            if (keep) {
                out += static_cast<char>(c);
            } else {
                out += '%';
                out += kHex[c >> 4];
                out += kHex[c & 15];
            }
        }
        return;
    }
}

void substitute(std::string_view name, const Exchange& ex, TemplateTarget target, std::string& out) {
    // An explicit filter before the name overrides the escaping the target chose:
    // {{json header.user-agent}}, {{html query.q}}, {{url param.id}}, {{raw body}}.
    if (const std::size_t space = name.find(' '); space != std::string_view::npos) {
        const std::string_view filter = name.substr(0, space);
        const std::string_view rest = trimOws(name.substr(space + 1));
        const bool known = filter == "json" || filter == "html" || filter == "url" || filter == "raw";
        TemplateTarget chosen = target;
        if (filter == "json")
            chosen = TemplateTarget::JsonBody;
        else if (filter == "html")
            chosen = TemplateTarget::HtmlBody;
        else if (filter == "url")
            chosen = TemplateTarget::Url;
        else if (filter == "raw")
            chosen = TemplateTarget::Body;
        if (known) {
            if (target == TemplateTarget::Body || target == TemplateTarget::JsonBody ||
                target == TemplateTarget::HtmlBody)
                return substitute(rest, ex, chosen, out);
            // In a header value or a Location the filter's output still loses CR, LF and NUL.
            std::string filtered;
            substitute(rest, ex, chosen, filtered);
            appendEscaped(filtered, TemplateTarget::HeaderValue, out);
            return;
        }
        // Not a filter: a name with a space in it ({{query.k k}}).
    }
    const http::Request& req = ex.request;
    if (name.starts_with("param.")) {
        appendEscaped(ex.route.param(name.substr(6)), target, out);
    } else if (name.starts_with("query.")) {
        std::string value;
        if (queryValue(req.query, name.substr(6), value)) appendEscaped(value, target, out);
    } else if (name.starts_with("header.")) {
        appendEscaped(req.header(name.substr(7)), target, out);
    } else if (name == "method") {
        appendEscaped(req.methodToken.empty() ? http::methodToken(req.method) : req.methodToken, target, out);
    } else if (name == "path") {
        appendEscaped(req.path, target, out);
    } else if (name == "body") {
        appendEscaped(req.body, target, out);
    }
    // Anything else renders as nothing, so a typo shows up as a gap instead of an error page.
}

} // namespace

void renderTemplate(std::string_view tpl, const Exchange& ex, TemplateTarget target, std::string& out) {
    // In a JSON body only placeholders inside a string literal are escaped ("agent": "{{header.x}}");
    // one standing for a whole value ({{body}} echoing JSON) goes in as it is.
    bool inString = false, escaped = false;
    auto scan = [&](std::string_view literal) {
        for (char c : literal) {
            if (escaped)
                escaped = false;
            else if (inString && c == '\\')
                escaped = true;
            else if (c == '"')
                inString = !inString;
        }
    };
    std::size_t pos = 0;
    while (pos < tpl.size()) {
        std::size_t open = tpl.find("{{", pos);
        if (open == std::string_view::npos) break;
        std::size_t close = tpl.find("}}", open + 2);
        if (close == std::string_view::npos) break;
        out.append(tpl.substr(pos, open - pos));
        TemplateTarget here = target;
        if (target == TemplateTarget::JsonBody) {
            scan(tpl.substr(pos, open - pos));
            if (!inString) here = TemplateTarget::Body;
        }
        substitute(trimOws(tpl.substr(open + 2, close - open - 2)), ex, here, out);
        pos = close + 2;
    }
    out.append(tpl.substr(pos));
}

} // namespace portico::handlers

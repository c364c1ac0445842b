// The route actions behind dispatch(): each fills a Response for one exchange.
#pragma once

#include <portico/handlers/dispatch.h>

#include <string>
#include <string_view>

namespace portico::handlers {

/// Whether `res` carries an error Portico generated itself (so the vhost's custom error page for
/// that status may replace it) or a response the action meant to send as it is.
enum class Produced : unsigned char { Response, GeneratedError };

/// errorResponse() and report it as generated.
inline Produced fail(int status, http::Response& res) {
    errorResponse(status, res);
    return Produced::GeneratedError;
}

/// Serves `path` (decoded, normalised, starting with '/') from `action.root`. See dispatch.h.
Produced serveStatic(const Exchange& ex, const config::StaticAction& action, std::string_view path,
                     http::Response& res);

/// Mock response with templates, latency and faults.
Produced respond(const Exchange& ex, const config::RespondAction& action, http::Response& res);

/// Redirect with a templated Location.
Produced redirect(const Exchange& ex, const config::RedirectAction& action, http::Response& res);

/// Where a template's output goes, which decides how substituted values are escaped.
enum class TemplateTarget : unsigned char {
    Body,        ///< as is (a body whose Content-Type is neither JSON nor HTML)
    JsonBody,    ///< JSON string escaping (RFC 8259 §7): for bodies with a JSON Content-Type
    HtmlBody,    ///< & < > " ' as character references: for text/html bodies
    HeaderValue, ///< CR, LF and NUL become spaces (no header injection through {{query.x}})
    Url,         ///< percent-encoded except unreserved, "/", ":", "@" and sub-delims other than "&=+"
};

/// True if `text` contains a "{{" that may start a placeholder.
inline bool hasTemplate(std::string_view text) { return text.find("{{") != std::string_view::npos; }

/// Appends `tpl` to `out` with {{param.NAME}}, {{param.*}}, {{query.NAME}} (first value,
/// percent-decoded, '+' as space), {{header.NAME}}, {{method}}, {{path}} and {{body}} replaced;
/// unknown placeholders become empty, an unterminated "{{" stays literal. Spaces inside the braces
/// are allowed ("{{ param.id }}").
void renderTemplate(std::string_view tpl, const Exchange& ex, TemplateTarget target, std::string& out);

} // namespace portico::handlers

// The `redirect:` action: 301/302/303/307/308 with a templated Location (RFC 9110 §15.4).
#include "handlers/actions.h"
#include "handlers/http_util.h"

namespace portico::handlers {
namespace {} // namespace

Produced redirect(const Exchange& ex, const config::RedirectAction& a, http::Response& res) {
    int status = a.status;
    if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308) status = 302;
    std::string rendered;
    std::string_view location = a.to;
    if (hasTemplate(a.to)) {
        renderTemplate(a.to, ex, TemplateTarget::Url, rendered);
        location = rendered;
    }
    // The loader should refuse such a target; never let one split the header block.
    if (location.find_first_of("\r\n") != std::string_view::npos ||
        location.find('\0') != std::string_view::npos)
        return fail(500, res);
    res.status = status;
    res.addHeader("Location", location);
    res.addHeader("Content-Type", "text/html; charset=utf-8");
    std::string& body = res.ownedBody();
    body += "<!doctype html>\n<title>";
    body += std::to_string(status);
    body += ' ';
    body += http::reasonPhrase(status);
    body += "</title>\n<p>Redirecting to <a href=\"";
    appendHtmlEscaped(body, location);
    body += "\">";
    appendHtmlEscaped(body, location);
    body += "</a></p>\n";
    return Produced::Response;
}

} // namespace portico::handlers

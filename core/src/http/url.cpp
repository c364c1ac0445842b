// parseUrl: the one URL parser of the clients.
#include <portico/http/ascii.h>
#include <portico/http/url.h>

namespace portico::http {

bool parseUrl(std::string_view text, Url& out, std::string& error) {
    auto bad = [&](const char* why) {
        error = "bad URL '" + std::string(text) + "': " + why;
        return false;
    };
    for (unsigned char c : text)
        if (c <= 32 || c == 127) return bad("contains whitespace or control characters");
    Url u;
    auto sep = text.find("://");
    if (sep == std::string_view::npos) return bad("expected http://HOST[:PORT]/PATH");
    const std::string scheme = lower(text.substr(0, sep));
    if (scheme != "http" && scheme != "https") return bad("scheme must be http or https");
    u.scheme = scheme;
    std::string_view rest = text.substr(sep + 3);
    if (rest.find('#') != std::string_view::npos) return bad("fragments (#...) are not sent to servers");
    auto authEnd = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, authEnd);
    std::string_view target = authEnd == std::string_view::npos ? std::string_view() : rest.substr(authEnd);
    if (authority.find('@') != std::string_view::npos) return bad("userinfo (user@) is not supported");
    std::string_view host, port;
    if (!authority.empty() && authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) return bad("unterminated IPv6 literal");
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') return bad("unexpected characters after the IPv6 literal");
            port = after.substr(1);
            if (port.empty()) return bad("empty port");
        }
    } else {
        auto colon = authority.rfind(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            if (port.empty()) return bad("empty port");
        }
    }
    if (host.empty()) return bad("no host");
    u.host = std::string(host);
    if (port.empty()) {
        u.port = u.scheme == "https" ? 443 : 80;
    } else {
        unsigned v = 0;
        for (char c : port) {
            if (c < '0' || c > '9' || v > 65535) return bad("port must be a number from 1 to 65535");
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v == 0 || v > 65535) return bad("port must be a number from 1 to 65535");
        u.port = static_cast<std::uint16_t>(v);
    }
    u.authority = std::string(authority);
    if (target.empty())
        u.target = "/";
    else if (target.front() == '?')
        u.target = "/" + std::string(target);
    else
        u.target = std::string(target);
    out = std::move(u);
    return true;
}

} // namespace portico::http

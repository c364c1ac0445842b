// Absolute http/https URLs as the clients take them (RFC 3986 §3; RFC 9110 §4.2): the load
// generator's targets, replay's base URL, suite and capture base URLs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace portico::http {

/// A target URL, `http[s]://HOST[:PORT][/PATH][?QUERY]` (userinfo and fragments refused).
struct Url {
    std::string scheme;     ///< "http" or "https", lower case
    std::string host;       ///< name or IP literal, IPv6 without brackets
    std::uint16_t port = 0; ///< explicit port or the scheme's default (80, 443)
    std::string target;     ///< origin-form request-target: path and query, "/" if the URL has no path
    std::string authority;  ///< Host field value: host as written (IPv6 in brackets) and ":PORT" if given

    /// "scheme://authority" — what requests of one run must share.
    std::string origin() const { return scheme + "://" + authority; }
    bool tls() const { return scheme == "https"; }
};

/// Parses `text` into `out`. False with a one-line `error` ("bad URL 'x': ...") when there is no
/// "://", the scheme is not http/https (case-insensitive), the host is empty, the port is not
/// 1..65535 ("port must be a number from 1 to 65535"), or it contains userinfo, a fragment,
/// whitespace or control characters. `out` is unchanged on failure.
bool parseUrl(std::string_view text, Url& out, std::string& error);

} // namespace portico::http

// Replaying captured requests (HTTP/1.1, cleartext) to their original or another base URL,
// comparing the answers, and "copy as curl".
#pragma once

#include <portico/capture/exchange.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::capture {

struct ReplayOptions {
    /// "http://127.0.0.1:8080" (a path prefix is allowed: "http://127.0.0.1:8080/base"); "" = the
    /// recorded scheme://authority.
    std::string baseUrl;
    /// Without it, only loopback targets (127.0.0.0/8, ::1, "localhost") are contacted.
    bool allowRemote = false;
    std::chrono::milliseconds timeout{10000}; ///< connect + whole exchange
    std::size_t bodyBytes = 1 << 20;          ///< response body prefix kept, bytes
    /// Edit and resend: method, header overrides (replace by name, case-insensitive; empty value
    /// removes) and a new body.
    std::optional<std::string> method;
    std::vector<Header> headers;
    std::optional<std::string> body;
};

/// One difference between two exchanges: what ("status", "header content-type", "body"), before, after.
struct Difference {
    std::string what;
    std::string before;
    std::string after;
};

struct ReplayResult {
    Exchange exchange; ///< the new exchange as the client saw it (client-side timeline, steady ns)
    std::string error; ///< "" when a response was read; else why not ("connect: Connection refused")
    std::vector<Difference> differences; ///< compare(original, exchange)
    bool ok() const { return error.empty(); }
};

/// Sends `original`'s request again (Host set to the target's authority; hop-by-hop fields and
/// Content-Length recomputed) and reads the response. A request whose captured body was cut
/// (kRequestBodyTruncated) is refused unless `options.body` replaces it.
ReplayResult replay(const Exchange& original, const ReplayOptions& options);

/// Status, response headers (Date, Server-Timing, Age and Expires ignored) and body. Bodies are
/// compared over the bytes both records hold; the first differing offset is reported.
std::vector<Difference> compare(const Exchange& before, const Exchange& after);

/// A shell command (POSIX sh quoting) that repeats the request: curl -X ... 'URL' -H ... --data-binary ...
/// `baseUrl` replaces scheme://authority when non-empty. Bodies that are not printable go through
/// `printf` escapes.
std::string toCurl(const Exchange& e, std::string_view baseUrl = {});

} // namespace portico::capture

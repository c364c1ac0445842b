// What a replay (resend) of a captured request is asked to do and what it gives back, and the
// comparison of two exchanges. Data only: the replay itself is capture::replay (replay.h) or, in the
// desktop app, engine::resend (engine/jobs.h).
#pragma once

#include <portico/capture/exchange.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace portico::capture {

/// Which HTTP version replay speaks.
enum class ReplayProtocol : std::uint8_t {
    Auto,  ///< https: ALPN offers h2 and http/1.1, the server chooses; http: HTTP/1.1
    Http1, ///< HTTP/1.1 (ALPN http/1.1 over TLS)
    H2,    ///< HTTP/2: ALPN h2 only over TLS (another answer is an error); h2c prior knowledge on http
};

struct ReplayOptions {
    /// "http://127.0.0.1:8080" (a path prefix is allowed: "http://127.0.0.1:8080/base"); "" = the
    /// recorded scheme://authority.
    std::string baseUrl;
    /// Without it, only loopback targets (127.0.0.0/8, ::1, "localhost") are contacted.
    bool allowRemote = false;
    std::chrono::milliseconds timeout{10000}; ///< connect + whole exchange
    std::size_t bodyBytes = 1 << 20;          ///< response body prefix kept, bytes
    ReplayProtocol protocol = ReplayProtocol::Auto;
    /// https targets. Loopback targets are dev servers (tls: auto leaves, self-signed files), so
    /// their certificates are not verified unless `verifyTls`; any other target (allowRemote) is
    /// always verified: chain against the system store plus `caFile` (PEM; e.g. what `portico
    /// cert export` writes), name or IP against the URL's host. A failure is the result's error
    /// ("TLS handshake with HOST:PORT failed: certificate verification: ...").
    bool verifyTls = false;
    std::string caFile;
    /// Edit and resend: method, request target (path and query, "/a?b=1"; appended to the base
    /// URL's path prefix), header overrides (replace by name, case-insensitive; empty value
    /// removes) and a new body. The fields the sender owns are not copied from `headers`:
    /// Content-Length is computed from the body, Transfer-Encoding, Connection, Keep-Alive,
    /// Upgrade, TE and pseudo-header fields are dropped, and a `Host` (or `:authority`) override
    /// becomes the request's one Host / :authority (a vhost can be tried on the same address).
    std::optional<std::string> method;
    std::optional<std::string> target;
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

/// Status, response headers (Date, Server-Timing, Age and Expires ignored) and body. Bodies are
/// compared over the bytes both records hold; the first differing offset is reported.
std::vector<Difference> compare(const Exchange& before, const Exchange& after);

} // namespace portico::capture

// Replaying captured requests to their original or another base URL over HTTP/1.1 (RFC 9112) or
// HTTP/2 (RFC 9113: ALPN "h2" over TLS, or h2c with prior knowledge, RFC 9113 §3.3), cleartext or
// TLS; comparing the answers; "copy as curl".
#pragma once

#include <portico/capture/exchange.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// Sends `original`'s request again (Host / :authority set to the target's authority; hop-by-hop
/// and connection-specific fields dropped, Content-Length recomputed) on a new connection and reads
/// the response (1xx skipped). Refused with an error, nothing sent: a request whose captured body
/// was cut (kRequestBodyTruncated) unless `options.body` replaces it; WebSocket and gRPC records;
/// a base URL that is not http:// or https://; a non-loopback target without allowRemote. Errors
/// on the way (connect, TLS, HTTP/2 stream reset, timeout) are in `error`; never throws.
ReplayResult replay(const Exchange& original, const ReplayOptions& options);

/// Checks a base URL before anything is sent to it: http:// or https://, a host, a port from 1 to
/// 65535, and (resolved now) only loopback addresses unless `allowRemote`. Returns "" or the reason
/// ("ftp: only http:// and https:// targets can be replayed", "example.com: not a loopback
/// address; replaying to other hosts needs --allow-remote", a resolver error).
std::string checkReplayTarget(std::string_view baseUrl, bool allowRemote);

/// Status, response headers (Date, Server-Timing, Age and Expires ignored) and body. Bodies are
/// compared over the bytes both records hold; the first differing offset is reported.
std::vector<Difference> compare(const Exchange& before, const Exchange& after);

/// A shell command (POSIX sh quoting) that repeats the request: curl -X ... 'URL' -H ... --data-binary ...
/// `baseUrl` replaces scheme://authority when non-empty. Bodies that are not printable go through
/// `printf` escapes. `caFile` (PEM), for an https URL, becomes `--cacert 'caFile'`: Portico's own
/// listeners with `tls: auto` have certificates curl does not trust until the CA is installed.
std::string toCurl(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as a Python 3 script using only the standard library (urllib.request, ssl):
/// method, URL, headers (Host, Content-Length and connection fields left to urllib), the body as
/// a bytes literal; prints the status and the body. `baseUrl` and `caFile` as for toCurl().
std::string toPython(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as JavaScript: `fetch(url, {method, headers, body})` then the status and the
/// body printed, for a browser console or Node 18+. Header values are byte strings (bytes ≥ 0x80 as
/// \xHH); a body that is not printable UTF-8 is a Uint8Array. Client-owned fields (Host,
/// Content-Length, connection fields, pseudo-headers) are left to fetch; a GET or HEAD body, which
/// fetch refuses, is left out with a comment. With `caFile` (https), a comment says Node needs
/// NODE_EXTRA_CA_CERTS=caFile (a browser needs the CA installed: `portico cert install`).
std::string toFetch(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as an HTTPie command (POSIX sh quoting): `http METHOD 'URL' 'Name:value' ...`,
/// an empty value as `Name;`, a value starting with `=` escaped (`Name:\=...`); a printable body
/// with `--raw` (HTTPie 3), any other through `printf` escapes on stdin. With `caFile` (https),
/// `--verify='caFile'`.
std::string toHttpie(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

} // namespace portico::capture

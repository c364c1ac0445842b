// Replaying captured requests to their original or another base URL over HTTP/1.1 (RFC 9112) or
// HTTP/2 (RFC 9113: ALPN "h2" over TLS, or h2c with prior knowledge, RFC 9113 §3.3), cleartext or
// TLS. These open sockets (and resolve names): the desktop app resends through engine::resend
// (engine/jobs.h). The options and results are in replay_types.h, "copy as curl" and friends in
// copy_as.h.
#pragma once

#include <portico/capture/copy_as.h>
#include <portico/capture/exchange.h>
#include <portico/capture/replay_types.h>

#include <string>
#include <string_view>

namespace portico::capture {

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

} // namespace portico::capture

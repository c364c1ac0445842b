// FastCGI upstreams of `fastcgi:` routes (FastCGI 1.0, responder role): php-fpm and friends over
// TCP or a unix socket.
#pragma once

#include "proxy/forward.h"

namespace portico::proxy {

/// Runs `req` as one FastCGI request on `action.fastcgi` (a new connection per request, no
/// FCGI_KEEP_CONN). Parameters: the CGI/1.1 meta-variables of RFC 3875 §4.1 (REQUEST_METHOD,
/// QUERY_STRING, CONTENT_TYPE, CONTENT_LENGTH, SERVER_NAME, SERVER_PROTOCOL, REMOTE_ADDR, ...),
/// SCRIPT_NAME / SCRIPT_FILENAME / PATH_INFO from the path (the script is the path up to the first
/// segment ending in `extension`; a path ending in '/' gets `index`), DOCUMENT_ROOT, REQUEST_URI,
/// HTTPS=on over TLS, REDIRECT_STATUS=200, and HTTP_* for every request field except Proxy
/// (httpoxy). The body goes as FCGI_STDIN records of at most 65535 bytes.
///
/// Response: the CGI head of FCGI_STDOUT (RFC 3875 §6.3: `Status:` gives the status, a `Location:`
/// without it 302, otherwise 200), then the body streamed to the sink with backpressure (no read
/// while the sink is paused); FCGI_STDERR is dropped; FCGI_END_REQUEST ends it.
///
/// Errors: connect failure → 502, connect_timeout or no head within response_timeout → 504, a
/// malformed record or head, or the end before a head → 502, a connection lost after the head →
/// abort (status 0). Messages name the FastCGI address. `hosts` (the config's `hosts:`; null: none)
/// may map a TCP address's name; `snapshot` keeps it.
std::shared_ptr<client::Call> startFastCgi(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                           std::shared_ptr<const void> snapshot,
                                           const config::ProxyAction& action, const http::Request& req,
                                           bool tls, Sink* sink,
                                           const config::HostOverrides* hosts = nullptr);

} // namespace portico::proxy

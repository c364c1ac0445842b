// What a forward proxy forwards an absolute-form request with ("GET http://host:port/path",
// RFC 9112 §3.2.2): a ProxyAction whose one upstream is the origin the target names.
#pragma once

#include "client/call.h"

#include <portico/config/config.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace portico::proxy {

/// Splits an authority "host", "host:port", "[v6]" or "[v6]:port" (RFC 3986 §3.2, no userinfo)
/// into `host` (brackets removed, as given otherwise) and `port` (0 when the authority has none).
/// False for an empty host, a bracket without its pair, or a port that is not 1..65535.
bool splitAuthority(std::string_view authority, std::string& host, std::uint16_t& port);

/// "host:port", an IPv6 host in brackets ("[::1]:443"): the authority-form of `host` (no
/// brackets) and `port`, as a CONNECT names it and as interception keys its origins.
std::string authorityText(std::string_view host, std::uint16_t port);

/// The action for origin `scheme`://`authority`: one upstream (http → HTTP/1.1, port 80 by
/// default, WebSocket upgrades passed; https → TLS, port 443, h2 or http/1.1 by ALPN), the
/// request passed on `transparent` (no X-Forwarded-*, Proxy-* dropped), the Host field as the
/// client sent it, the default timeouts. Cached per thread by scheme and authority (lower-cased),
/// at most kMaxCachedOrigins; past that, entries no call holds are dropped. Null with `error` for
/// a scheme other than http/https or an authority splitAuthority refuses.
std::shared_ptr<const config::ProxyAction> originAction(std::string_view scheme, std::string_view authority,
                                                        std::string& error);

inline constexpr std::size_t kMaxCachedOrigins = 256;

/// Where every request of an intercepted tunnel (a CONNECT whose TLS the proxy terminated) goes:
/// the CONNECT's host and port over TLS, verified as `options` says (system store plus
/// upstream_cacert, the host name or IP checked; nothing with upstream_insecure).
struct InterceptedOrigin {
    std::string host; ///< as in the CONNECT (no brackets)
    std::uint16_t port = 443;
    std::string authority; ///< "host:port" ("[v6]:port")
    /// HTTP/2 when the origin selects it by ALPN, else HTTP/1.1 (the call is handed over).
    std::shared_ptr<const config::ProxyAction> action;
    /// WebSocket upgrades: HTTP/1.1 only (RFC 6455 over RFC 8441 is not offered).
    std::shared_ptr<const config::ProxyAction> wsAction;
    std::shared_ptr<const tls::ClientTls> h2Tls, h1Tls; ///< ALPN h2+http/1.1, and http/1.1 only
    client::CallOptions h2Options, h1Options;           ///< `tls` set to the contexts above
};

/// The origin of an intercepted CONNECT to `host`:`port`. Cached per thread by host, port and
/// options (building a verifying TLS context reads the system store: milliseconds), at most
/// kMaxCachedOrigins; past that, entries no connection holds are dropped. Null with `error` when
/// the TLS context cannot be built (an unreadable upstream_cacert).
std::shared_ptr<const InterceptedOrigin> interceptedOrigin(const std::string& host, std::uint16_t port,
                                                           const config::ForwardProxy& options,
                                                           std::string& error);

/// Builds the client TLS contexts interceptedOrigin uses for `options` ahead of the first tunnel
/// (reading the system store and upstream_cacert takes tens of milliseconds). False with `error`
/// ("cannot load CA certificates from 'F': ...") when upstream_cacert does not load.
bool prepareInterception(const config::ForwardProxy& options, std::string& error);

/// Whether `host` matches one of `globs` (`*` any run of characters; case-insensitive), e.g. a
/// forward proxy's tls_passthrough list.
bool matchesHostGlob(std::string_view host, const std::vector<std::string>& globs);

/// Whether `host`:`port` is this listener itself (`localPort` on a loopback or wildcard address,
/// or "localhost"): a forward proxy refuses it rather than connect to itself (a loop).
bool isOwnListener(std::string_view host, std::uint16_t port, std::uint16_t localPort);

} // namespace portico::proxy

// The server name (SNI) of a TLS ClientHello read before any TLS library sees it: a forward proxy
// decides from it whether to intercept a CONNECT or pass its bytes through unread (tls_passthrough).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::tls {

/// What `clientHelloServerName` made of the bytes so far.
enum class HelloScan {
    NeedMore, ///< a TLS handshake record so far, cut before the ClientHello's extensions ended
    Done,     ///< a whole ClientHello: `serverName` is its host_name ("" when it has no SNI)
    NotTls,   ///< the bytes do not start a TLS handshake (first byte not 0x16, RFC 8446 §5.1)
    Malformed ///< a handshake record whose ClientHello is not well formed (a TLS library refuses it)
};

/// Reads the host_name of the server_name extension (RFC 6066 §3) from the start of a TLS
/// connection (`bytes`: what the client sent first, one or more TLSPlaintext records of type
/// handshake, RFC 8446 §5.1 and §4.1.2; a ClientHello may span records). The name is returned as
/// sent (ASCII, at most 255 bytes; RFC 6066 forbids a trailing dot); a ClientHello longer than
/// kMaxClientHelloBytes is Malformed. Never reads past `bytes`; no allocation but `serverName`.
HelloScan clientHelloServerName(std::string_view bytes, std::string& serverName);

/// Bytes of ClientHello this scan reads at most (the handshake message, not counting record headers).
inline constexpr std::size_t kMaxClientHelloBytes = 64 * 1024;

} // namespace portico::tls

// Addresses written in a config: the client networks of `forward_proxy.allow` (CIDR) and the
// upstream names of `hosts:`, parsed once at load and matched without allocating.
#pragma once

#include <portico/config/config.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::config {

/// An IPv4 or IPv6 network: the first `prefix` bits of `bytes` (an IPv4 one in bytes[0..3]); the
/// bits after the prefix are zero.
struct Network {
    std::array<std::uint8_t, 16> bytes{};
    std::uint8_t prefix = 0; ///< 0..32 for IPv4, 0..128 for IPv6
    bool v6 = false;
};

/// Parses a client network (RFC 4632 §3.1 notation, RFC 4291 §2.3 for IPv6): "192.168.1.0/24",
/// "fd00::/8", or one address ("10.1.2.3" is a /32, "::1" a /128). nullopt with `error` for
/// anything else: not an address, brackets, a prefix outside 0..32 (IPv4) or 0..128 (IPv6), bits
/// set after the prefix ("192.168.1.7/24" → "write 192.168.1.0/24": a typo there would widen or
/// narrow the list without a word).
std::optional<Network> parseNetwork(std::string_view text, std::string& error);

/// Whether `address` (4 bytes when !v6, else 16, network order) is inside `network`. An
/// IPv4-mapped IPv6 address (::ffff:a.b.c.d, RFC 4291 §2.5.5.2) is matched as the IPv4 one.
bool contains(const Network& network, const std::uint8_t* address, bool v6);

/// The clients a forward proxy listener admits without `allow:`: 127.0.0.0/8 and ::1.
std::vector<Network> loopbackNetworks();

/// Whether `text` is an IPv4 or IPv6 literal (no brackets, no zone).
bool isIpLiteral(std::string_view text);

/// Why `name` cannot be a `hosts:` name, or "" when it can: a host name of non-empty labels
/// (letters, digits, '-', '_') joined by single dots, optionally starting with "*." (any name
/// under the rest), and not an IP literal. `name` is lower-case without a trailing dot.
std::string hostOverrideNameProblem(std::string_view name);

/// The entry of `hosts` for `name` (ASCII case-insensitive, one trailing dot ignored): an exact
/// name first, else the wildcard with the longest suffix ("*.dev.test" matches "a.dev.test" and
/// "a.b.dev.test", not "dev.test"); null when none does. No allocation.
const HostOverride* findHostOverride(const HostOverrides& hosts, std::string_view name);

} // namespace portico::config

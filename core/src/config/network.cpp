// Client networks (CIDR) and `hosts:` names: parsing and matching (portico/config/network.h).
#include <portico/config/network.h>

#include <portico/http/ascii.h>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace portico::config {

namespace {

// The bytes of an IPv4 or IPv6 literal, or false. `text` may not hold a NUL (inet_pton reads a
// C string).
bool parseAddress(std::string_view text, Network& out) {
    if (text.empty() || text.size() > INET6_ADDRSTRLEN || text.find('\0') != std::string_view::npos)
        return false;
    char buf[INET6_ADDRSTRLEN + 1];
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    if (inet_pton(AF_INET, buf, out.bytes.data()) == 1) {
        out.v6 = false;
        return true;
    }
    if (inet_pton(AF_INET6, buf, out.bytes.data()) == 1) {
        out.v6 = true;
        return true;
    }
    return false;
}

// Whether the first `bits` bits of `a` and `b` are equal.
bool samePrefix(const std::uint8_t* a, const std::uint8_t* b, unsigned bits) {
    const unsigned whole = bits / 8;
    if (std::memcmp(a, b, whole) != 0) return false;
    const unsigned rest = bits % 8;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

} // namespace

std::optional<Network> parseNetwork(std::string_view text, std::string& error) {
    const std::size_t slash = text.find('/');
    const std::string_view address = text.substr(0, slash);
    Network n;
    if (!parseAddress(address, n)) {
        error = "'" + std::string(address) + "' is not an IPv4 or IPv6 address" +
                (address.starts_with("[") ? " (write IPv6 networks without brackets: \"fd00::/8\")" : "");
        return std::nullopt;
    }
    const unsigned width = n.v6 ? 128 : 32;
    unsigned prefix = width;
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
        if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || prefix > width) {
            error = "prefix length must be a number from 0 to " + std::to_string(width) + ", got '" +
                    std::string(digits) + "'";
            return std::nullopt;
        }
    }
    n.prefix = static_cast<std::uint8_t>(prefix);
    Network masked = n;
    for (unsigned bit = prefix; bit < width; ++bit)
        masked.bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
    if (masked.bytes != n.bytes) {
        char buf[INET6_ADDRSTRLEN];
        inet_ntop(n.v6 ? AF_INET6 : AF_INET, masked.bytes.data(), buf, sizeof buf);
        error = "'" + std::string(text) + "' has bits set after the /" + std::to_string(prefix) +
                " prefix: write " + buf + "/" + std::to_string(prefix);
        return std::nullopt;
    }
    return n;
}

bool contains(const Network& network, const std::uint8_t* address, bool v6) {
    static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (v6 && !network.v6 && std::memcmp(address, kMapped, sizeof kMapped) == 0) {
        address += sizeof kMapped; // ::ffff:a.b.c.d is a.b.c.d
        v6 = false;
    }
    if (v6 != network.v6) return false;
    return samePrefix(network.bytes.data(), address, network.prefix);
}

std::vector<Network> loopbackNetworks() {
    std::string ignored;
    return {*parseNetwork("127.0.0.0/8", ignored), *parseNetwork("::1", ignored)};
}

bool isIpLiteral(std::string_view text) {
    Network n;
    return parseAddress(text, n);
}

std::string hostOverrideNameProblem(std::string_view name) {
    std::string_view bare = name;
    if (bare.starts_with("*.")) bare.remove_prefix(2);
    const bool labels =
        !bare.empty() && !bare.starts_with('.') && !bare.ends_with('.') &&
        bare.find("..") == std::string_view::npos && std::all_of(bare.begin(), bare.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
        });
    if (isIpLiteral(bare) || (bare.size() > 2 && bare.front() == '[' && bare.back() == ']'))
        return "'" + std::string(name) + "' is an address: `hosts:` maps names to addresses";
    if (!labels)
        return "'" + std::string(name) +
               "' is not a host name (labels of letters, digits, '-' and '_' joined by single dots, "
               "optionally starting with '*.')";
    return {};
}

const HostOverride* findHostOverride(const HostOverrides& hosts, std::string_view name) {
    if (hosts.empty()) return nullptr;
    if (name.ends_with('.')) name.remove_suffix(1);
    const HostOverride* best = nullptr;
    for (const HostOverride& h : hosts) {
        std::string_view entry = h.name;
        if (!entry.starts_with("*.")) {
            if (http::iequals(entry, name)) return &h; // an exact name beats every wildcard
            continue;
        }
        entry.remove_prefix(1); // ".dev.test": a suffix after at least one label
        if (name.size() > entry.size() && http::iequals(name.substr(name.size() - entry.size()), entry) &&
            (!best || entry.size() > best->name.size() - 1))
            best = &h;
    }
    return best;
}

} // namespace portico::config

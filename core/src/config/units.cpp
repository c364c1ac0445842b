// Parsing of the size ("16KiB") and duration ("250ms") values used throughout the config file.
#include <portico/config/reader.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

namespace portico::config {

namespace {

/// Splits "123unit" into its leading decimal digits and the rest; false when there are no digits
/// or the number does not fit in 64 bits.
bool splitNumber(std::string_view text, std::uint64_t& number, std::string_view& unit) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
    if (digits == 0) return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
    if (ec != std::errc{} || end != text.data() + digits) return false;
    unit = text.substr(digits);
    return true;
}

bool multiply(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
    out = a * b;
    return true;
}

struct Unit {
    std::string_view name;
    std::uint64_t factor;
};

// Binary units are the ones people mean for buffers; decimal ones are accepted because they are
// what people type. Unit names are case-sensitive, except the common "kB" spelling.
constexpr Unit kSizeUnits[] = {
    {"", 1},
    {"B", 1},
    {"KiB", 1024ULL},
    {"MiB", 1024ULL * 1024},
    {"GiB", 1024ULL * 1024 * 1024},
    {"TiB", 1024ULL * 1024 * 1024 * 1024},
    {"KB", 1000ULL},
    {"kB", 1000ULL},
    {"MB", 1000ULL * 1000},
    {"GB", 1000ULL * 1000 * 1000},
    {"TB", 1000ULL * 1000 * 1000 * 1000},
};

constexpr Unit kDurationUnits[] = {
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"\xC2\xB5s", 1000ULL}, // "µs"
    {"ms", 1000ULL * 1000},
    {"s", 1000ULL * 1000 * 1000},
    {"m", 60ULL * 1000 * 1000 * 1000},
    {"h", 3600ULL * 1000 * 1000 * 1000},
};

} // namespace

bool parseSize(std::string_view text, std::uint64_t& bytes) {
    std::uint64_t number = 0;
    std::string_view unit;
    if (!splitNumber(text, number, unit)) return false;
    for (const Unit& u : kSizeUnits)
        if (u.name == unit) return multiply(number, u.factor, bytes);
    return false;
}

bool parseDuration(std::string_view text, Duration& out) {
    std::uint64_t number = 0;
    std::string_view unit;
    if (!splitNumber(text, number, unit) || unit.empty()) return false; // the unit is never implied
    for (const Unit& u : kDurationUnits) {
        if (u.name != unit) continue;
        std::uint64_t ns = 0;
        if (!multiply(number, u.factor, ns) || ns > static_cast<std::uint64_t>(Duration::max().count()))
            return false;
        out = Duration(static_cast<Duration::rep>(ns));
        return true;
    }
    return false;
}

} // namespace portico::config

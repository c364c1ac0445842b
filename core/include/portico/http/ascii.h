// ASCII case helpers for protocol text: field names, tokens, schemes, host names (RFC 9110 §5.1:
// field names are case-insensitive; RFC 3986 §3.1, §3.2.2: schemes and host names too). Bytes
// outside A-Z/a-z are compared and copied as they are, whatever the C locale says.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::http {

/// 'A'..'Z' → 'a'..'z'; every other byte unchanged.
constexpr char toLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
/// 'a'..'z' → 'A'..'Z'; every other byte unchanged.
constexpr char toUpper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

/// A lower-case copy of `s` (ASCII letters only).
inline std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = toLower(c);
    return out;
}

/// An upper-case copy of `s` (ASCII letters only).
inline std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = toUpper(c);
    return out;
}

/// Case-insensitive ASCII comparison, for field names (RFC 9110 §5.1). Inline: most calls compare
/// names of different lengths and end at the size test.
inline bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
        // Equal, or the same letter in either case: only letters have a lowercase in a..z.
        if (x != y && ((x | 0x20) != (y | 0x20) || static_cast<unsigned char>((x | 0x20) - 'a') > 'z' - 'a'))
            return false;
    }
    return true;
}

/// `s` begins with `prefix`, ignoring ASCII case.
inline bool istartsWith(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

/// Offset of the first occurrence of `needle` in `hay` ignoring ASCII case; npos if none (0 for an
/// empty needle).
inline std::size_t ifind(std::string_view hay, std::string_view needle) {
    if (needle.size() > hay.size()) return std::string_view::npos;
    for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (iequals(hay.substr(i, needle.size()), needle)) return i;
    return std::string_view::npos;
}

/// `s` without the optional whitespace (SP, HTAB; RFC 9110 §5.6.3) at either end.
constexpr std::string_view trimOws(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

namespace detail {
constexpr bool tcharSlow(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}
struct TcharTable {
    bool t[256]{};
    constexpr TcharTable() {
        for (int c = 0; c < 256; ++c)
            t[c] = tcharSlow(static_cast<unsigned char>(c));
    }
};
inline constexpr TcharTable kTchars{};
} // namespace detail

/// RFC 9110 §5.6.2 tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" /
/// "`" / "|" / "~" / DIGIT / ALPHA. One table lookup.
constexpr bool isTchar(char c) { return detail::kTchars.t[static_cast<unsigned char>(c)]; }

/// RFC 9110 §5.6.2 token = 1*tchar: method names, field names, transfer codings.
constexpr bool isToken(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!isTchar(c)) return false;
    return true;
}

/// The value of a hex digit (0-9, a-f, A-F), or -1 for any other byte.
constexpr int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace portico::http

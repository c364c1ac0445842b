// The syntax of the Traffic filter language, shared by capture::Filter (records) and the rule
// engine's matches (live exchanges). The grammar and the keys' meanings are in
// portico/capture/filter.h; this parses the text into terms and leaves the keys' meaning to the
// caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::rules {

/// One term: `[-]key:value` or `[-]word`.
struct Term {
    bool negate = false;
    std::string key;   ///< lower case; "" for a bare word
    std::string value; ///< as written (quotes removed); never empty
    /// `status` only: the comparison (Class: "4xx", `number` is the hundreds digit).
    enum class Op : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Class } op = Op::Eq;
    int number = 0;         ///< `status` operand, 0..999
    std::size_t column = 0; ///< where the term starts in the expression, 0-based
};

/// Splits `expr` into terms (whitespace separated, all must match). Keys must be among `keys` (lower
/// case; compared case-insensitively); a `status` value is parsed into op and number (200, >=400,
/// <300, !200, 5xx). Other values are left as written for the caller to check. The empty expression
/// gives no terms. nullopt with `error` = "column N: ..." (N 1-based) for an unknown key (with a
/// "did you mean" among `keys`), an unterminated quote, an empty term or value, or a bad status.
std::optional<std::vector<Term>> parseTerms(std::string_view expr, std::span<const std::string_view> keys,
                                            std::string& error);

/// Whether `status` satisfies a `status` term's comparison (its op and number; negation is the
/// caller's).
bool statusMatches(const Term& t, int status);

/// "column N: `message`" for the term `t` (the form parseTerms's errors take).
std::string termError(const Term& t, const std::string& message);

} // namespace portico::rules

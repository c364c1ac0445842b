// A rule's replace_body regex (rules/rules.h): PCRE2, compiled once per RuleSet, substituted over a
// whole body with bounded work per match. Private to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct pcre2_real_code_8;

namespace portico::rules {

/// PCRE2's match limit for one match attempt of a replace_body regex (internal match steps, as
/// routing::kRegexMatchLimit for routes, larger: a body is longer than a path). Applies to JIT and
/// the interpreter; a global substitution runs one attempt per match.
inline constexpr std::uint32_t kBodyMatchLimit = 1000000;
/// PCRE2's depth limit (nested backtracking) for the interpreter; JIT code has its own bounded stack.
inline constexpr std::uint32_t kBodyDepthLimit = 1000;

/// One compiled replace_body: a regex (8-bit, no UTF: a body is bytes; JIT when available) and its
/// replacement (PCRE2's substitution syntax: $1, ${name}, $$; an unset group is empty).
/// Immutable after compile(): substitute() may run on several threads at once.
class BodyRegex {
public:
    /// Compiles `pattern`; null with `error` ("missing closing parenthesis at offset 3") when it
    /// does not compile.
    static std::unique_ptr<BodyRegex> compile(std::string_view pattern, std::string replacement,
                                              std::string& error);
    ~BodyRegex();
    BodyRegex(const BodyRegex&) = delete;
    BodyRegex& operator=(const BodyRegex&) = delete;

    enum class Result : std::uint8_t {
        Unchanged, ///< no match: `out` untouched (nothing was copied)
        Changed,   ///< `out` holds the body with every match replaced
        Failed,    ///< the body stays as it was; `why` says why (match limit, result too large, ...)
    };
    /// Replaces every match of the regex in `body` (PCRE2_SUBSTITUTE_GLOBAL). A result longer than
    /// `maxOut` bytes fails ("rewritten body over N bytes"). Allocates the match data and `out`'s
    /// room; nothing is shared between calls.
    Result substitute(std::string_view body, std::size_t maxOut, std::string& out, std::string& why) const;

private:
    BodyRegex(pcre2_real_code_8* code, std::string replacement)
        : code_(code), replacement_(std::move(replacement)) {}
    pcre2_real_code_8* code_;
    std::string replacement_;
};

/// What BodyRegex::substitute would say of `replacement` for `regex` (which compiles; validate
/// checks that first): "" when it is fine or cannot be tried ahead (it is then checked when used),
/// else PCRE2's message with the offset in the replacement ("at offset 9: unknown substring").
/// Unknown groups ($9, ${nope}) and bad syntax (a lone $, ${1) are errors; a group that did not
/// take part in a match is empty.
std::string checkReplacement(const std::string& regex, std::string_view replacement);

} // namespace portico::rules

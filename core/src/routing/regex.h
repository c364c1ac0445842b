// PCRE2 regexes for `~` / `~*` routes: compiled once, matched with bounded work and no per-request
// allocation. Shared by the router and the config loader (which validates with the same flags).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct pcre2_real_code_8;

namespace portico::routing {

/// PCRE2's match limit for one route regex against one path: the number of internal match steps
/// (backtracking points) one pcre2_match call may use. Applies to JIT and the interpreter.
inline constexpr std::uint32_t kRegexMatchLimit = 100000;
/// PCRE2's depth limit (nested backtracking depth) for the interpreter. JIT code has its own
/// bounded stack (PCRE2's default 32 KiB) instead; exceeding it is treated the same way.
inline constexpr std::uint32_t kRegexDepthLimit = 1000;

/// One compiled route regex. 8-bit, no UTF (paths are bytes), PCRE2_CASELESS for `~*`, JIT when
/// the platform has it (the interpreter otherwise). Immutable after construction: `search` may be
/// called from several threads at once.
class Regex {
public:
    enum class Result { Match, NoMatch, LimitExceeded };

    struct CompileError {
        std::string message; ///< pcre2_get_error_message text
        std::size_t offset = 0;
    };

    /// Compiles `pattern`; on failure returns nothing and fills `error` (when not null).
    static std::optional<Regex> compile(std::string_view pattern, bool caseless,
                                        CompileError* error = nullptr);

    Regex(Regex&&) noexcept = default;
    Regex& operator=(Regex&&) noexcept = default;

    /// Unanchored search of `subject` (the pattern's own `^`/`$` anchor it). A search that exceeds
    /// the match or depth limit, or fails with any other PCRE2 error, yields LimitExceeded. Does
    /// not allocate after the calling thread's first search (per-thread match data is kept).
    Result search(std::string_view subject) const;

    bool jit() const { return jit_; }

private:
    struct CodeDeleter {
        void operator()(pcre2_real_code_8* code) const;
    };

    explicit Regex(pcre2_real_code_8* code, bool jit) : code_(code), jit_(jit) {}

    std::unique_ptr<pcre2_real_code_8, CodeDeleter> code_;
    bool jit_ = false;
};

} // namespace portico::routing

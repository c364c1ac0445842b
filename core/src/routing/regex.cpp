// PCRE2 route regexes: compile once (JIT when available), search with match and depth limits.
#include "routing/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

namespace portico::routing {

namespace {

struct MatchContextDeleter {
    void operator()(pcre2_match_context* c) const { pcre2_match_context_free(c); }
};

struct MatchDataDeleter {
    void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
};

// One process-wide match context carrying the limits. pcre2_match only reads it (its parameter is
// not const-qualified), so every thread may share it.
pcre2_match_context* matchContext() {
    static const std::unique_ptr<pcre2_match_context, MatchContextDeleter> context = [] {
        std::unique_ptr<pcre2_match_context, MatchContextDeleter> c(pcre2_match_context_create(nullptr));
        if (c) {
            pcre2_set_match_limit(c.get(), kRegexMatchLimit);
            pcre2_set_depth_limit(c.get(), kRegexDepthLimit);
        }
        return c;
    }();
    return context.get();
}

// Match data is written by pcre2_match, so each thread has its own. Only whether a route matched
// matters, so one ovector pair is enough for every pattern (pcre2_match then returns 0 rather than
// the capture count, still a match). The interpreter keeps its backtracking frames in the match
// data too, so after a thread's first search nothing is allocated per request.
pcre2_match_data* threadMatchData() {
    thread_local const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
        pcre2_match_data_create(1, nullptr));
    return data.get();
}

} // namespace

void Regex::CodeDeleter::operator()(pcre2_code* code) const { pcre2_code_free(code); }

std::optional<Regex> Regex::compile(std::string_view pattern, bool caseless, CompileError* error) {
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   caseless ? PCRE2_CASELESS : 0u, &code, &offset, nullptr);
    if (!re) {
        if (error) {
            PCRE2_UCHAR buffer[256];
            int n = pcre2_get_error_message(code, buffer, sizeof buffer);
            error->message =
                n > 0 ? std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n))
                      : "PCRE2 error " + std::to_string(code);
            error->offset = offset;
        }
        return std::nullopt;
    }
    // JIT is an optimisation only: without JIT support (or when it fails) pcre2_match interprets.
    bool jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    return Regex(re, jit);
}

Regex::Result Regex::search(std::string_view subject) const {
    pcre2_match_data* data = threadMatchData();
    pcre2_match_context* context = matchContext();
    if (!data || !context) return Result::LimitExceeded; // out of memory: never match, never crash
    int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                         data, context);
    if (rc >= 0) return Result::Match;
    if (rc == PCRE2_ERROR_NOMATCH) return Result::NoMatch;
    return Result::LimitExceeded; // PCRE2_ERROR_MATCHLIMIT, _DEPTHLIMIT, _JIT_STACKLIMIT, _HEAPLIMIT, ...
}

} // namespace portico::routing

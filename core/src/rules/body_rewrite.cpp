// replace_body's PCRE2 wrapper (body_rewrite.h).
#include "rules/body_rewrite.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

namespace portico::rules {

namespace {

struct MatchContextDeleter {
    void operator()(pcre2_match_context* c) const { pcre2_match_context_free(c); }
};
struct CodeDeleter {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
    void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
};

// One process-wide match context with the limits (pcre2_match and pcre2_substitute only read it).
pcre2_match_context* matchContext() {
    static const std::unique_ptr<pcre2_match_context, MatchContextDeleter> context = [] {
        std::unique_ptr<pcre2_match_context, MatchContextDeleter> c(pcre2_match_context_create(nullptr));
        if (c) {
            pcre2_set_match_limit(c.get(), kBodyMatchLimit);
            pcre2_set_depth_limit(c.get(), kBodyDepthLimit);
        }
        return c;
    }();
    return context.get();
}

std::string errorText(int code) {
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(code, buffer, sizeof buffer);
    return n > 0 ? std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n))
                 : "PCRE2 error " + std::to_string(code);
}

PCRE2_SPTR bytes(std::string_view s) {
    static const char kEmpty = 0; // PCRE2 wants a pointer even for an empty subject
    return reinterpret_cast<PCRE2_SPTR>(s.empty() ? &kEmpty : s.data());
}

constexpr std::uint32_t kSubstituteOptions =
    PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_UNSET_EMPTY | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH;

} // namespace

std::unique_ptr<BodyRegex> BodyRegex::compile(std::string_view pattern, std::string replacement,
                                              std::string& error) {
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re = pcre2_compile(bytes(pattern), pattern.size(), 0, &code, &offset, nullptr);
    if (!re) {
        error = errorText(code) + " at offset " + std::to_string(offset);
        return nullptr;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); // an optimisation only: the interpreter otherwise
    return std::unique_ptr<BodyRegex>(new BodyRegex(re, std::move(replacement)));
}

BodyRegex::~BodyRegex() { pcre2_code_free(code_); }

BodyRegex::Result BodyRegex::substitute(std::string_view body, std::size_t maxOut, std::string& out,
                                        std::string& why) const {
    pcre2_match_context* context = matchContext();
    const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
        pcre2_match_data_create_from_pattern(code_, nullptr));
    if (!context || !data) {
        why = "out of memory";
        return Result::Failed;
    }
    // The first match decides whether anything is copied at all.
    const int rc = pcre2_match(code_, bytes(body), body.size(), 0, 0, data.get(), context);
    if (rc == PCRE2_ERROR_NOMATCH) return Result::Unchanged;
    if (rc < 0) {
        why = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT
                  ? "regex match limit reached"
                  : errorText(rc);
        return Result::Failed;
    }
    // Room for the body and some growth; PCRE2 says how much it needs when that is not enough.
    PCRE2_SIZE room = std::min<std::size_t>(maxOut, body.size() + body.size() / 8 + 256) + 1;
    for (int attempt = 0; attempt < 2; ++attempt) {
        out.resize(room);
        PCRE2_SIZE length = room;
        const int n = pcre2_substitute(code_, bytes(body), body.size(), 0,
                                       kSubstituteOptions | PCRE2_SUBSTITUTE_MATCHED, data.get(), context,
                                       bytes(replacement_), replacement_.size(),
                                       reinterpret_cast<PCRE2_UCHAR*>(out.data()), &length);
        if (n >= 0) {
            out.resize(length);
            if (length > maxOut) break;
            return Result::Changed;
        }
        if (n != PCRE2_ERROR_NOMEMORY) {
            why =
                n == PCRE2_ERROR_MATCHLIMIT || n == PCRE2_ERROR_DEPTHLIMIT || n == PCRE2_ERROR_JIT_STACKLIMIT
                    ? "regex match limit reached"
                    : errorText(n);
            return Result::Failed;
        }
        if (length == PCRE2_UNSET || length > maxOut + 1) break; // `length` counts the trailing zero
        room = length;
    }
    why = "rewritten body over " + std::to_string(maxOut) + " bytes";
    return Result::Failed;
}

// The replacement is only read when something matches, so it is tried with a pattern that matches
// the empty subject and has the same groups: "|(?:REGEX\n\E)" (the newline ends an `(?x)` comment,
// `\E` a `\Q`), with the regex's leading `(*...)` options kept in front, and substitute()'s options.
std::string checkReplacement(const std::string& regex, std::string_view replacement) {
    std::size_t options = 0;
    while (regex.compare(options, 2, "(*") == 0) {
        const std::size_t close = regex.find(')', options);
        if (close == std::string::npos) break;
        const std::string_view name(regex.data() + options + 2, close - options - 2);
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
                return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '=';
            }))
            break;
        options = close + 1;
    }
    const std::string wrapped = regex.substr(0, options) + "|(?:" + regex.substr(options) + "\n\\E)";
    int code = 0;
    PCRE2_SIZE offset = 0;
    const std::unique_ptr<pcre2_code, CodeDeleter> re(pcre2_compile(
        reinterpret_cast<PCRE2_SPTR>(wrapped.data()), wrapped.size(), 0, &code, &offset, nullptr));
    if (!re) return {}; // not tried: checked when it is used
    PCRE2_UCHAR output[1];
    PCRE2_SIZE length = sizeof output;
    const int rc = pcre2_substitute(re.get(), reinterpret_cast<PCRE2_SPTR>(""), 0, 0, kSubstituteOptions,
                                    nullptr, nullptr, reinterpret_cast<PCRE2_SPTR>(replacement.data()),
                                    replacement.size(), output, &length);
    if (rc >= 0 || rc == PCRE2_ERROR_NOMEMORY) return {};
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(rc, buffer, sizeof buffer);
    std::string message =
        n > 0 ? std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n))
              : "PCRE2 error " + std::to_string(rc);
    if (length != PCRE2_UNSET) message = "at offset " + std::to_string(length) + ": " + message;
    return message;
}

} // namespace portico::rules

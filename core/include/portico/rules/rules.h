// The rule engine (config `rules:`): what changes the exchanges Portico sees — served,
// reverse-proxied, forwarded and intercepted alike. A RuleSet is compiled from a config with the
// snapshot it belongs to and is read-only after (shared by every worker).
//
// Each rule has a match (the Traffic filter language, rules/filter_syntax.h) and actions applied in
// order. Request-stage rules run in serve() before anything answers the request: a set_header or
// remove_header changes the request the route's action sees (and an upstream receives); a fail
// answers it (a status made here, or a reset). Rules run in list order; a fail ends the list.
//
// Keys a match may use at the request stage: method, path (prefix of the path, query excluded, as
// received), url (substring of scheme://host/target), host (substring of Host/:authority), header
// (NAME or NAME=VALUE substring), client (prefix of the client's address), protocol (h1 | h2), and
// bare words (substrings of the URL). `status` belongs to the response stage.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/rules/filter_syntax.h>

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace portico::rules {

/// The request as a match sees it.
struct RequestView {
    const http::Request& req; ///< method, methodToken, target, rawPath, host, headers, clientAddress
    int httpVersion = 1;      ///< 1 or 2 (the `protocol:` key)
};

/// A compiled match.
class Match {
public:
    /// Parses `expr` for a rule at `stage`; nullopt with `error` ("column 7: ...") when a key is
    /// unknown or not available at that stage, or a value is bad. "" matches every exchange.
    static std::optional<Match> parse(std::string_view expr, config::Rule::Stage stage, std::string& error);
    bool matches(const RequestView& r) const;
    /// The value of the first `path:` term that is not negated: every request this match takes has
    /// a path starting with it (RuleSet's index). Empty when there is none.
    std::string_view requiredPathPrefix() const;

private:
    std::vector<Term> terms_;
    bool needsUrl_ = false; ///< a term reads the URL (url: or a bare word)
};

/// What the request-stage rules decided.
struct RequestVerdict {
    /// The first rule that failed the exchange (its Fail action in `fail`), or null.
    const config::Rule* failedBy = nullptr;
    const config::RuleAction* fail = nullptr;
    /// How many rules matched and changed the request (set_header / remove_header).
    unsigned changed = 0;
};

/// The compiled `rules:` of one config.
class RuleSet {
public:
    RuleSet() = default;
    /// Compiles `config.rules` (already validated: a rule whose match does not parse is skipped).
    explicit RuleSet(const config::Config& config);
    bool empty() const { return request_.empty(); }

    /// Runs the request-stage rules on `req`. Header changes replace `req.headers` with a view of
    /// `scratch` (which must outlive every use of `req`; views into the config snapshot and into the
    /// original headers). A Fail action with a rate below 1 fails that share of matching exchanges
    /// (a per-thread generator). Cheap when no rule matches: nothing is allocated, and a rule whose
    /// match needs a path prefix of 3 bytes or more is tried only for paths with the same 2nd and
    /// 3rd bytes (one bit test decides most requests; tests/perf/ir_per_request.sh RULES=100).
    RequestVerdict applyRequest(http::Request& req, int httpVersion,
                                std::vector<http::Header>& scratch) const;

private:
    struct Compiled {
        const config::Rule* rule;
        Match match;
    };
    bool applyOne(const Compiled& c, const RequestView& view, http::Request& req,
                  std::vector<http::Header>& scratch, RequestVerdict& verdict) const;
    // The index, request_ positions ascending: the rules tried for every request (no required path
    // prefix, or one shorter than 3 bytes), and the others by their prefix's 2nd and 3rd bytes (the
    // 1st is '/' in nearly every rule).
    static constexpr std::size_t kKeyBytes = 2;
    static std::uint16_t keyOf(std::string_view path) {
        return static_cast<std::uint16_t>(static_cast<unsigned char>(path[1]) << 8 |
                                          static_cast<unsigned char>(path[2]));
    }
    std::vector<Compiled> request_;
    std::vector<std::uint32_t> always_;
    std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> byKey_;
    std::bitset<65536> keys_; ///< the keys byKey_ holds
};

/// Validates a rule's match as the loader does (Match::parse); "" when it is good.
std::string checkMatch(const config::Rule& rule);

} // namespace portico::rules

// The rule engine (config `rules:`): what changes the exchanges Portico sees — served,
// reverse-proxied, forwarded and intercepted alike. A RuleSet is compiled from a config with the
// snapshot it belongs to and is read-only after (shared by every worker).
//
// Each rule has a match (the Traffic filter language, rules/filter_syntax.h) and actions applied in
// order. Request-stage rules run in serve() before anything answers the request: a set_header or
// remove_header changes the request the route's action sees (and an upstream receives); a fail
// answers it (a status made here, or a reset). Rules run in list order; a fail ends the list.
//
// Response-stage rules change the response's header fields once its head is known, whoever made
// it (a local action or an upstream): serve() evaluates their request-side terms when the request
// arrives (RequestVerdict / http::Response::pendingRules) and the connection applies the rules whose
// remaining terms (`status:`, and `header:` on the response's fields) match when the head is
// written (applyResponse). Fields the connection writes itself (Date, Server, Content-Length,
// Transfer-Encoding, Connection) are not theirs to change (the loader refuses those names).
//
// A replace_body (a PCRE2 regex and its replacement, compiled here once) needs the whole body: at
// the request stage the body serve() was given (not one that streams to an upstream); at the
// response stage applyResponse reports the edits of the rules that applied to the head and the
// connection buffers the body (up to limits.max_rewrite_body), rewrites it (rewriteBody) and sends
// it with its new length. Compressed and gRPC bodies, streamed request bodies and bodies over the
// limit pass unchanged; the record's rule list says why ("NAME: replace_body skipped (...)").
//
// Keys a match may use: method, path (prefix of the path, query excluded, as received), url
// (substring of scheme://host/target), host (substring of Host/:authority), header (NAME or
// NAME=VALUE substring; at the response stage the request's or the response's fields, as the
// Traffic filter), client (prefix of the client's address), protocol (h1 | h2), bare words
// (substrings of the URL), and at the response stage `status` (200, >=400, 5xx, !304).
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/rules/breakpoints.h>
#include <portico/rules/filter_syntax.h>

#include <atomic>
#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
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
    /// At most this many terms in a response-stage match (the terms left for the response are a
    /// bit mask).
    static constexpr std::size_t kMaxResponseTerms = 32;
    /// Parses `expr` for a rule at `stage`; nullopt with `error` ("column 7: ...") when a key is
    /// unknown or not available at that stage, or a value is bad. "" matches every exchange.
    static std::optional<Match> parse(std::string_view expr, config::Rule::Stage stage, std::string& error);
    /// Request stage: does the request match every term?
    bool matches(const RequestView& r) const;
    /// Response stage, when the request arrives: false when a request-side term fails; otherwise
    /// true with `left` = the terms (bit i = term i) the response decides: `status:` terms, and
    /// `header:` terms the request's fields did not settle.
    bool matchesRequestSide(const RequestView& r, std::uint32_t& left) const;
    /// Response stage, at the head: do the terms in `left` match `status` and the response's
    /// field block `fields` ("Name: value\r\n" lines)?
    bool matchesResponseSide(std::uint32_t left, int status, std::string_view fields) const;
    /// The value of the first `path:` term that is not negated: every request this match takes has
    /// a path starting with it (RuleSet's index). Empty when there is none.
    std::string_view requiredPathPrefix() const;

private:
    bool termMatches(const Term& t, const RequestView& r, const std::string& url) const;
    std::vector<Term> terms_;
    bool needsUrl_ = false; ///< a term reads the URL (url: or a bare word)
};

/// How many exchanges each rule matched, kept across config reloads by the rule's name (an unnamed
/// rule by its position), shared by every snapshot of one engine. Counting is a relaxed atomic
/// increment per match, nothing when no rule matches.
class MatchCounts {
public:
    using Counter = std::shared_ptr<std::atomic<std::uint64_t>>;
    /// The counter of rule `index` of a config (created at 0 the first time).
    Counter counterFor(const config::Rule& rule, std::size_t index);
    /// The counts of `config.rules`, in its order (0 for a rule never compiled).
    std::vector<std::uint64_t> countsFor(const config::Config& config);

private:
    static std::string keyOf(const config::Rule& rule, std::size_t index);
    std::mutex mutex_;
    std::unordered_map<std::string, Counter> counters_;
};

class BodyRegex; // rules/body_rewrite.h (private to the library)

/// A replace_body action that applies to one body (RuleSet::applyResponse collects those of the
/// rules that applied to a head; RuleSet::rewriteBody runs them). Views into the RuleSet and its
/// config snapshot, which must outlive it.
struct BodyEdit {
    const BodyRegex* regex = nullptr;   ///< the action's regex and replacement, compiled
    const config::Rule* rule = nullptr; ///< the action's rule (its name goes into the record)
    std::uint32_t configIndex = 0;      ///< the rule's place in config.rules ("rules[N]" when unnamed)
};

/// The first rule whose `breakpoint` action applied to an exchange (RequestVerdict::breakpoint,
/// RuleSet::applyResponse): the exchange pauses (rules/breakpoints.h). Views into the config
/// snapshot.
struct BreakpointHit {
    const config::Rule* rule = nullptr;         ///< null: no breakpoint applied
    const config::RuleAction* action = nullptr; ///< its Breakpoint action (the timeout)
    std::uint32_t configIndex = 0;              ///< the rule's place in config.rules
    explicit operator bool() const { return rule != nullptr; }
    /// The rule's name, "rules[N]" when it has none (as records name rules).
    std::string ruleName() const;
};

/// What the request-stage rules decided.
struct RequestVerdict {
    /// The first rule that failed the exchange (its Fail action in `fail`), or null.
    const config::Rule* failedBy = nullptr;
    const config::RuleAction* fail = nullptr;
    /// How many rules matched and changed the request (set_header / remove_header).
    unsigned changed = 0;
    /// The first rule that sends the exchange elsewhere (its MapLocal or MapRemote action in `map`),
    /// or null. Like a fail it ends the list: the rule's own header actions apply first.
    const config::Rule* mappedBy = nullptr;
    const config::RuleAction* map = nullptr;
    /// The first matching rule with a breakpoint: the exchange pauses after the request-stage rules
    /// ran, before whatever they decided (a fail's answer, a map, the route) happens. The list does
    /// not end there.
    BreakpointHit breakpoint;
};

/// A map_local action ready to serve (RuleSet::mapLocal).
struct MapLocal {
    config::StaticAction root; ///< the folder (a file's parent folder)
    std::string file;          ///< "/NAME" for a file: every request gets it; "" for a folder
    std::string prefix;        ///< the rule's `path:` prefix, taken off the path under a folder
    /// The path to serve under `root` for a request's normalised `path`.
    std::string_view pathFor(std::string_view path) const;
};

/// The compiled `rules:` of one config.
class RuleSet {
public:
    RuleSet() = default;
    /// Compiles `config.rules` (already validated: a rule whose match does not parse is skipped).
    /// `counts`, when given, counts each rule's matches (Engine::ruleMatches); it must outlive this.
    /// `breakpoints`: the engine's Paused queue, where breakpoint actions send their exchanges (null:
    /// a breakpoint is noted in the record and the exchange goes on).
    explicit RuleSet(const config::Config& config, MatchCounts* counts = nullptr,
                     BreakpointQueue* breakpoints = nullptr);
    /// The queue given at construction, or null.
    BreakpointQueue* breakpoints() const { return breakpoints_; }
    bool empty() const { return request_.rules.empty() && response_.rules.empty(); }

    /// Runs the request-stage rules on `req` and selects the response-stage rules whose
    /// request-side terms match. Header changes replace `req.headers` with a view of
    /// `res.ruledRequestFields` (which must outlive every use of `req`; views into the config
    /// snapshot and into the original headers) and keep the fields as received in
    /// `res.originalRequestFields`; the names of the rules that changed or failed the request go to
    /// `res.ruleNames`; the selected response-stage rules to `res.pendingRules` (for
    /// applyResponse). A Fail action with a rate below 1 fails that share of matching exchanges (a
    /// per-thread generator). Cheap when no rule matches: nothing is allocated, and a rule whose
    /// match needs a path prefix of 3 bytes or more is tried only for paths with the same 2nd and
    /// 3rd bytes (one bit test decides most requests; tests/perf/ir_per_request.sh RULES=100).
    /// A replace_body rewrites `req.body` when it is there (rewriteBody; not a compressed or gRPC
    /// body, see bodySkipReason): the result goes to `res.ruledRequestBody`, which `req.body` then
    /// views, and the body as received to `res.originalRequestBody` (for the record). An empty body is left
    /// alone, and as it may be one streaming to an upstream the rule is noted in `res.streamedBodyNotes` for
    /// the session to record when the body does stream. `res`'s rule fields must be clear (serve() clears
    /// them).
    RequestVerdict applyRequest(http::Request& req, int httpVersion, http::Response& res) const;

    /// The response stage of one exchange: applies, in list order, the rules of `pending` (from
    /// applyRequest, with this RuleSet) whose remaining terms match `status` and `fields` (the
    /// response's field block as it would be sent). True when a rule changed the fields: `out`
    /// holds the new block ("Name: value\r\n" lines). The names of the rules that applied are
    /// appended to `names` ('\n'-separated).
    /// `bodyEdits` (optional): the replace_body actions of the rules that applied are appended, in
    /// order, for the caller to run on the body (rewriteBody) once it has it whole; untouched when
    /// no such rule applied.
    /// `breakpoint` (optional): set to the first rule that applied with a breakpoint action (the
    /// answer then pauses before it is returned, after every applying rule's changes); untouched
    /// when none did. Without it a breakpoint rule's other actions still apply.
    bool applyResponse(std::span<const std::uint64_t> pending, int status, std::string_view fields,
                       std::string& out, std::string& names, std::vector<BodyEdit>* bodyEdits = nullptr,
                       BreakpointHit* breakpoint = nullptr) const;

    /// True when a request-stage rule with a replace_body or a breakpoint may take a request for
    /// `rawPath` (its path index says so; the rest of its match is decided with the whole request).
    /// The sessions then read a body of a known length up to maxRewriteBody() whole instead of
    /// streaming it to an upstream, so the rule can rewrite it or the user edit it
    /// (serve::rulesReadBodyWhole). False at once when no such rule exists.
    bool mayNeedRequestBody(std::string_view rawPath) const;
    /// limits.max_rewrite_body of this set's config (bytes): replace_body leaves a larger body alone.
    std::uint64_t maxRewriteBody() const { return maxRewriteBody_; }
    /// Runs `edits` in order on `body` (each on the result of the one before): true when the body
    /// changed, `out` then holding the new one. Left alone, with a note in `names` ("NAME:
    /// replace_body skipped (WHY)", '\n'-separated as applyResponse's names), when `body` is
    /// larger than maxRewriteBody(), or an edit's regex reaches its match limit, or its result
    /// would be larger than maxRewriteBody() (the edits before it still apply). An empty body is
    /// left alone. Allocates only when an edit's regex matches (the new body).
    bool rewriteBody(std::span<const BodyEdit> edits, std::string_view body, std::string& out,
                     std::string& names) const;
    /// Appends "NAME: replace_body skipped (WHY)" to `names` for each rule of `edits` (once per
    /// rule): the body is not rewritten (compressed, gRPC, streamed, larger than max_rewrite_body).
    static void noteSkipped(std::span<const BodyEdit> edits, std::string_view why, std::string& names);
    /// Why a body with these fields ("Name: value\r\n" lines) is never rewritten, "" when it may be:
    /// a Content-Encoding other than identity ("compressed body (Content-Encoding: gzip)"), or a
    /// gRPC content type (application/grpc*, "gRPC message").
    static std::string bodySkipReason(std::string_view fields);

    /// The compiled form of a MapLocal action of this set's config (RequestVerdict::map).
    const MapLocal& mapLocal(const config::RuleAction* action) const { return mapLocal_.at(action); }

private:
    struct Compiled {
        const config::Rule* rule;
        Match match;
        std::uint32_t configIndex = 0;                  ///< its place in config.rules
        std::atomic<std::uint64_t>* hits = nullptr;     ///< MatchCounts' counter, or null
        std::uint32_t editsBegin = 0, editsEnd = 0;     ///< its replace_body actions in bodyEdits_
        const config::RuleAction* breakpoint = nullptr; ///< its first breakpoint action
    };
    // One stage's rules and their index, positions ascending: the rules tried for every request (no
    // required path prefix, or one shorter than 3 bytes), and the others by their prefix's 2nd and
    // 3rd bytes (the 1st is '/' in nearly every rule).
    struct StageRules {
        std::vector<Compiled> rules;
        std::vector<std::uint32_t> always;
        std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> byKey;
        std::bitset<65536> keys; ///< the keys byKey holds
        void index();
        /// Calls fn(position) for the candidates for `path`, in list order, until fn returns false.
        template <class Fn> void candidates(std::string_view path, Fn&& fn) const;
    };
    static constexpr std::size_t kKeyBytes = 2;
    static std::uint16_t keyOf(std::string_view path) {
        return static_cast<std::uint16_t>(static_cast<unsigned char>(path[1]) << 8 |
                                          static_cast<unsigned char>(path[2]));
    }
    bool applyOne(const Compiled& c, const RequestView& view, http::Request& req, http::Response& res,
                  RequestVerdict& verdict) const;
    StageRules request_;
    StageRules response_;
    std::vector<MatchCounts::Counter> counters_; ///< keeps the counters the rules point at
    std::unordered_map<const config::RuleAction*, MapLocal> mapLocal_;
    /// Every rule's replace_body actions, compiled (Compiled::editsBegin/End), and their regexes.
    std::vector<BodyEdit> bodyEdits_;
    std::vector<std::shared_ptr<const BodyRegex>> bodyRegexes_;
    std::uint64_t maxRewriteBody_ = 0;
    bool requestRewrites_ = false; ///< a request-stage rule has a replace_body or a breakpoint
    BreakpointQueue* breakpoints_ = nullptr;
    void rewriteRequestBody(const Compiled& c, http::Request& req, http::Response& res) const;
};

/// Validates a rule's match as the loader does (Match::parse); "" when it is good.
std::string checkMatch(const config::Rule& rule);

} // namespace portico::rules

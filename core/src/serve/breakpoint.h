// An exchange held at a rule's breakpoint (rules/breakpoints.h), between serve() and the session
// that carries it. serve() makes a Paused with an owned copy of the request (and, at the response
// stage, of the answer), the rule state of its Response and what the request-stage rules decided;
// the session keeps it (ResponseWriter::pause) and holds the exchange: HTTP/1.1 reads no further
// request on that connection, HTTP/2 holds only that stream. The decision (from the Paused queue,
// or the rule's timeout: resumed unchanged) comes back on the session's thread through `wake`; the
// session then calls serve::resume(), which carries it out through the session's ResponseWriter as
// serve() would have.
#pragma once

#include <portico/http/message.h>
#include <portico/rules/breakpoints.h>
#include <portico/rules/rules.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::serve {

struct Context;
struct Stamps;
class ResponseWriter;

class Paused : public std::enable_shared_from_this<Paused> {
public:
    Paused() = default;
    Paused(const Paused&) = delete;
    Paused& operator=(const Paused&) = delete;
    /// Leaves the queue (if still there) and stops the timer.
    ~Paused();

    // ---- set by the session in ResponseWriter::pause() ----
    /// The session's worker: the timer and the decision run there.
    boost::asio::io_context* io = nullptr;
    /// Called on `io`'s thread once `decision` is set; the session calls serve::resume().
    std::function<void()> wake;
    /// What keeps the session alive while it waits, when nothing else does (an HTTP/1.1 connection
    /// reads nothing meanwhile); the session drops its Paused when it closes, which ends the cycle.
    std::shared_ptr<void> owner;

    // ---- serve's ----
    /// Adds the exchange to `queue` and arms the rule's timeout (serve() calls it once the session
    /// holds the exchange).
    void start(rules::BreakpointQueue& queue);
    /// What the queue shows; `shown.id` once started.
    rules::PausedExchange shown;
    rules::BreakpointHit hit;
    /// Request stage: what the request-stage rules decided (carried on by resume()).
    rules::RequestVerdict verdict;
    /// The decision, set just before `wake`.
    std::optional<rules::BreakpointDecision> decision;

    /// The request's parts that PausedMessage does not carry.
    int versionMajor = 1, versionMinor = 1;
    bool keepAlive = true;
    std::string scheme = "http";
    /// The Response's rule state at the pause (the session's Response may serve other exchanges
    /// meanwhile), restored by resume().
    struct RuleState {
        std::vector<std::uint64_t> pendingRules;
        std::string ruleNames, originalRequestFields, originalResponseFields, originalRequestBody,
            originalResponseBody, streamedBodyNotes;
        http::Response::Throttle throttle;
    } ruleState;
    /// Response stage: the answer's parts that PausedMessage does not carry.
    bool serverHeader = true;
    http::Response::Fate fate = http::Response::Fate::Normal;
    std::chrono::nanoseconds delay{0};

    /// Views into `current` (the message as it goes on), for resume().
    std::vector<http::Header> headerViews;
    rules::PausedMessage current;

private:
    void onTimeout();
    rules::BreakpointQueue* queue_ = nullptr;
    std::optional<boost::asio::steady_timer> timer_;
};

/// Appends "NAME: breakpoint WHAT" to a record's rule list (`names`, '\n'-separated).
void noteBreakpoint(std::string& names, const rules::BreakpointHit& hit, std::string_view what);

/// A response-stage breakpoint on an upstream's answer, which the session gathered whole (as for a
/// replace_body, up to limits.max_rewrite_body): a Paused showing `request` and `answer` (status,
/// fields as they would go out, body), started in `set`'s queue on `io` with `wake` (the session's).
/// Null when the set has no enabled queue: then "NAME: breakpoint skipped (...)" goes to
/// `ruleNames` and the answer goes on.
std::shared_ptr<Paused> pauseUpstreamAnswer(const rules::RuleSet& set, const rules::BreakpointHit& hit,
                                            rules::PausedMessage request, rules::PausedMessage answer,
                                            int httpVersion, std::string_view scheme,
                                            std::string_view clientAddress, boost::asio::io_context& io,
                                            std::function<void()> wake, std::shared_ptr<void> owner,
                                            std::string& ruleNames);

/// The decision of a Paused made by pauseUpstreamAnswer (set; on the session's thread), for the
/// session to carry out: Resume and Respond give the answer to send in `answer` (true); Abort gives
/// false and `abort` says how. The record's rule list gets the note; an edited answer's fields and
/// body as the upstream sent them go to `originalFields` / `originalBody` when those are empty.
bool settleUpstreamAnswer(const Paused& paused, rules::PausedMessage& answer,
                          rules::BreakpointDecision::Abort& abort, std::string& ruleNames,
                          std::string& originalFields, std::string& originalBody);

/// Carries out `paused.decision` (set; on the session's thread) through `writer`, with the context
/// of the snapshot the exchange paused in (`ctx`; its RuleSet is the one `paused` points into):
/// Resume at the request stage runs what serve() would have run after the request-stage rules (the
/// request as edited: `req` is rebuilt to view `paused`, which must outlive the exchange's use of
/// it); Resume at the response stage writes the answer (as edited); Respond writes the user's
/// answer; Abort resets or closes (http::Response::Fate Drop / Silent). The record's rule list
/// says what happened ("NAME: breakpoint (resumed with changes)", "(resumed unchanged after the 5m
/// timeout)", "(answered here)", "(aborted: reset)").
void resume(const Context& ctx, Paused& paused, http::Request& req, std::string& pathScratch,
            http::Response& res, ResponseWriter& writer, const Stamps& stamps);

} // namespace portico::serve

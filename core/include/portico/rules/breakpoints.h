// Breakpoints (a rule's `breakpoint` action): exchanges held until the user decides, the desktop
// app's Paused queue. A paused exchange holds only itself: on HTTP/1.1 its connection (which reads
// no further request meanwhile), on HTTP/2 its stream; the connection's other streams and the
// worker go on. Each exchange is resumed (as it was, or as the user changed it), answered with a
// response the user wrote, or aborted (reset or close) — or, after its rule's timeout, resumed
// unchanged, and its record says so.
//
// BreakpointQueue is the engine's one list of paused exchanges; it is thread-safe. The workers
// add an exchange when it pauses (add()) and take it away when it ends for any reason (remove()),
// the GUI reads copies (list()) and decides (decide()); a decision reaches the exchange's worker
// thread through the `Deliver` function the worker gave, called under the queue's lock so that it
// never runs after remove().
#pragma once

#include <portico/config/config.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace portico::rules {

/// The editable part of a paused request or response: what the Paused queue's editor shows.
struct PausedMessage {
    /// Request: the method token ("GET", "PURGE"); "" in a response.
    std::string method;
    /// Request: the request-target as it goes on (origin-form "/path?query", or absolute-form
    /// "http://host/path" on a forward proxy). A URL "scheme://host/path" given to decide() sets
    /// both the target's path and the Host (HTTP/2: :authority). "" in a response.
    std::string target;
    /// Request: the Host (HTTP/2: :authority), with port when it has one.
    std::string host;
    /// Response: the status, 200..599 (a final answer); 0 in a request.
    int status = 0;
    /// The header fields in order: a request's as received after the request-stage rules (Host and
    /// Content-Length among them when the client sent them; on resume a changed `host` is written
    /// into the Host field, a changed Host field becomes `host`, and Content-Length follows a changed
    /// body); a response's without the ones the connection writes itself (Content-Length,
    /// Transfer-Encoding, Connection, Date).
    std::vector<std::pair<std::string, std::string>> headers;
    /// The whole body (bytes; a request's de-chunked). Content-Length follows it.
    std::string body;
    bool operator==(const PausedMessage&) const = default;
};

/// One exchange waiting at a breakpoint, as the queue shows it (a copy).
struct PausedExchange {
    std::uint64_t id = 0; ///< unique for the queue's life, from 1, in the order they paused
    config::Rule::Stage stage = config::Rule::Stage::Request; ///< Request: before it is sent on
    std::string rule;    ///< the breakpoint's rule by name ("rules[N]" when unnamed)
    int httpVersion = 1; ///< 1 or 2: how the client sent it
    std::string scheme;  ///< "http" or "https", as the client connected
    std::string clientAddress;
    PausedMessage request; ///< as it would go on now (after the request-stage rules)
    /// Response stage: the answer as it would be returned now (after the response-stage rules
    /// before the breakpoint's); nullopt at the request stage.
    std::optional<PausedMessage> response;
    std::chrono::system_clock::time_point pausedAt; ///< when it paused (wall clock)
    std::chrono::nanoseconds timeout{0};            ///< after this it resumes unchanged
    /// "scheme://host/target" (the target itself when it is absolute-form).
    std::string url() const;
};

/// What the user decided for a paused exchange.
struct BreakpointDecision {
    enum class Kind : std::uint8_t {
        Resume,  ///< goes on: `edited`, or as it was when that is nullopt
        Respond, ///< answered with `response` (status, headers, body) instead; nothing is sent on
        Abort,   ///< ended without an answer: `abort` says how
    };
    /// Reset: the connection is reset (HTTP/2: the stream, RST_STREAM CANCEL). Close: the connection
    /// is closed (FIN after the answers before it; HTTP/2: GOAWAY, and its other streams end too).
    enum class Abort : std::uint8_t { Reset, Close };
    Kind kind = Kind::Resume;
    /// Resume: the message of the exchange's stage as it should go on (the request at the request
    /// stage, the response at the response stage); nullopt or equal to the paused one: unchanged.
    std::optional<PausedMessage> edited;
    PausedMessage response; ///< Respond: the answer (status 100..599, headers, body)
    Abort abort = Abort::Reset;
    /// Set by the exchange's own timer (its rule's timeout): resumed unchanged, and the record says so.
    bool timedOut = false;
};

/// The engine's paused exchanges. Every member is thread-safe.
class BreakpointQueue {
public:
    /// Carries a decision to the paused exchange's worker (posts it to the worker's io_context).
    /// Called with the queue's lock held: it must not call back into the queue, and must not block.
    using Deliver = std::function<void(BreakpointDecision)>;

    /// Whether an app is there to decide (the desktop app sets it). While false, a config with a
    /// breakpoint rule is refused at load (Engine::start / publish): nothing would ever resume it.
    void setEnabled(bool on);
    bool enabled() const;

    /// Called (on whichever thread changed it, without the queue's lock) after each change of the
    /// list; an empty function removes it. Keep it short: e.g. queue a Qt signal.
    void setListener(std::function<void()> listener);

    /// The paused exchanges, oldest first.
    std::vector<PausedExchange> list() const;
    std::size_t size() const;
    /// Changes whenever the list changes (an exchange added, decided or gone).
    std::uint64_t generation() const;

    /// Decides exchange `id`: it leaves the list and `d` goes to its worker. False when there is no
    /// such exchange (decided already, timed out, or its client went away); `error` then says so.
    /// A Respond (or a Resume at the response stage) with a status outside 200..599 or a field the
    /// server writes itself (Content-Length, Transfer-Encoding, Connection and the other hop-by-hop
    /// fields), a Resume at the request stage whose edit has an empty method or a target not
    /// starting with '/' (nor absolute-form http:// or https://), a header name that is not an RFC
    /// 9110 token or a value with CR, LF or NUL, is refused the same way and the exchange stays
    /// paused.
    bool decide(std::uint64_t id, BreakpointDecision d, std::string* error = nullptr);
    /// Decides every paused exchange the same way (`d.edited` is ignored: each resumes as it was);
    /// returns how many.
    std::size_t decideAll(const BreakpointDecision& d);

    // ---- the workers' side ----
    /// Adds `paused` (its id is assigned: the return value) with the function that carries a
    /// decision to it.
    std::uint64_t add(PausedExchange paused, Deliver deliver);
    /// Takes exchange `id` away without a decision (it ended, timed out, or its client went away):
    /// true when it was there (false: it was decided already, and its decision is on its way). Once
    /// this returns its Deliver is never called.
    bool remove(std::uint64_t id);
    /// Checks `d` as decide() does; "" when it is good.
    static std::string check(const BreakpointDecision& d, config::Rule::Stage stage);

private:
    void changed();
    struct Entry {
        PausedExchange paused;
        Deliver deliver;
    };
    mutable std::mutex mutex_;
    std::vector<Entry> entries_;
    std::function<void()> listener_;
    std::uint64_t nextId_ = 1;
    std::uint64_t generation_ = 0;
    bool enabled_ = false;
};

} // namespace portico::rules

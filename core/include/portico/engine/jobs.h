// The client jobs of the desktop app: load runs, benchmark suites and resends of captured requests,
// each with progress and a cancel. The GUI opens no socket itself: it calls these (on a worker
// thread of its own, as they block) and includes only the data headers they take and return.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/replay_types.h>
#include <portico/load/live.h>
#include <portico/load/options.h>
#include <portico/load/result.h>
#include <portico/load/suite.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

namespace portico::engine {

/// Ends one job early, from any thread. One per job, not reusable (a cancel stays cancelled); it
/// must outlive the job (share it with the worker thread, e.g. through a shared_ptr).
class Cancel {
public:
    Cancel(); ///< opens an eventfd (one descriptor, close-on-exec) that resend() polls
    ~Cancel();
    Cancel(const Cancel&) = delete;
    Cancel& operator=(const Cancel&) = delete;

    /// Asks the job to end; returns at once, idempotent. A load run ends as if its bound had been
    /// reached (seen within 10 ms; in-flight requests get options.stopGrace); a suite also skips
    /// its remaining routes; a resend stops waiting at once and closes its socket.
    void cancel();
    bool cancelled() const;

    // For the jobs (jobs.cpp).
    const std::atomic<bool>* flag() const { return &flag_; }
    int fd() const { return fd_; } ///< readable once cancelled; -1 if no eventfd could be made

private:
    std::atomic<bool> flag_{false};
    int fd_ = -1;
};

/// A load run's outcome.
struct LoadRun {
    load::Result result; ///< as load::run returns it: errors in result.error, never thrown
    /// The cancel ended the run before its bound: cancelled, the run started (result.ok()), and
    /// neither the count (requests started >= options.count) nor the duration (measured time >=
    /// options.duration) was reached. A cancel that came as the run ended anyway is not a stop.
    bool stopped = false;
};

/// Runs `options` (load::run: every error, bound and thread of that function applies) and blocks
/// the calling thread for about warm-up + duration (+ at most stopGrace), so call it on a worker
/// thread. `cancel` (may be null) ends it early; `live` (may be null) is fed about 4 times a second
/// while it goes: read its totals() from any thread for progress.
LoadRun runLoad(const load::Options& options, const Cancel* cancel = nullptr, load::Live* live = nullptr);

/// Runs the benchmark suite against `baseUrl` (load::runSuite: `http[s]://HOST[:PORT]`; `base`'s
/// connections, threads, bounds, protocol and TLS options). Blocks for about routes × (warm-up +
/// duration). `progress` (may be empty), on the calling thread after each route with its index
/// (0-based) and run. `cancel` (may be null) ends the current route early and skips the rest.
load::SuiteResult runLoadSuite(const std::string& baseUrl, const load::Options& base,
                               const Cancel* cancel = nullptr,
                               const std::function<void(std::size_t, const load::SuiteRun&)>& progress = {});

/// Sends `original`'s request again with `options` (capture::replay: a new connection, one
/// exchange, bounded by options.timeout; the same refusals, errors in the result's `error`, never
/// throws) and compares the answer with the original's. Blocks, so call it on a worker thread;
/// being one exchange, its only progress is its end. `cancel` (may be null) ends it at once: the
/// connect, TLS handshake, send or wait for the response stops, the socket is closed and `error` is
/// "cancelled" (a response already read in full is kept). Name resolution is not interrupted. (A
/// Cancel whose eventfd could not be opened is seen only before the start.)
capture::ReplayResult resend(const capture::Exchange& original, const capture::ReplayOptions& options,
                             const Cancel* cancel = nullptr);

} // namespace portico::engine

// The desktop app's client jobs over the load generator and replay, with a cancel both understand:
// the flag load::run polls and an eventfd replay's waits poll.
#include <portico/engine/jobs.h>

#include <portico/load/runner.h>

#include "capture/replay_cancel.h"

#include <cerrno>
#include <cstdint>

#include <sys/eventfd.h>
#include <unistd.h>

namespace portico::engine {

Cancel::Cancel() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Cancel::~Cancel() {
    if (fd_ >= 0) ::close(fd_);
}

void Cancel::cancel() {
    if (flag_.exchange(true)) return;
    if (fd_ < 0) return;
    const std::uint64_t one = 1;
    while (::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

bool Cancel::cancelled() const { return flag_.load(); }

LoadRun runLoad(const load::Options& options, const Cancel* cancel, load::Live* live) {
    LoadRun run;
    run.result = load::run(options, cancel ? cancel->flag() : nullptr, live);
    if (run.result.ok() && cancel && cancel->cancelled()) {
        const bool countReached = options.count && run.result.requests.started >= options.count;
        const bool durationReached = options.duration.count() > 0 && run.result.measured >= options.duration;
        run.stopped = !countReached && !durationReached;
    }
    return run;
}

load::SuiteResult runLoadSuite(const std::string& baseUrl, const load::Options& base, const Cancel* cancel,
                               const std::function<void(std::size_t, const load::SuiteRun&)>& progress) {
    return load::runSuite(baseUrl, base, cancel ? cancel->flag() : nullptr, progress);
}

capture::ReplayResult resend(const capture::Exchange& original, const capture::ReplayOptions& options,
                             const Cancel* cancel) {
    if (!cancel) return capture::replay(original, options);
    if (cancel->fd() >= 0) return capture::replay(original, options, cancel->fd());
    // No eventfd (descriptors exhausted): the cancel is only seen before the start.
    if (cancel->cancelled()) {
        capture::ReplayResult r;
        r.error = "cancelled";
        return r;
    }
    return capture::replay(original, options);
}

} // namespace portico::engine

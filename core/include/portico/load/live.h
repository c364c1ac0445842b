// What a load run shows while it goes: the totals its worker threads publish (`portico bench`'s live
// line, the Load test tab's live figures). Data only: the run itself is load::run (runner.h) or, in
// the desktop app, engine::runLoad (engine/jobs.h).
#pragma once

#include <portico/stats/histogram.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace portico::load {

/// What a load test shows while it runs (`portico bench`'s live line): each worker thread publishes
/// its measured counts and latency histogram about 4 times a second; any thread may read totals().
class Live {
public:
    struct Totals {
        bool started = false;                ///< the run began (the address answered); false until then
        std::string address;                 ///< the endpoint used, as in Result::address
        std::chrono::nanoseconds elapsed{0}; ///< since the start (warm-up included)
        std::uint64_t completed = 0;         ///< measured requests answered so far
        std::uint64_t failed = 0;            ///< measured requests lost to errors so far
        std::uint64_t p50Ns = 0, p99Ns = 0;  ///< latency so far (corrected in the open model), ns
    };
    /// Merges the threads' latest publications; costs a histogram merge per thread (~264 KiB each).
    /// When `latency` is given, the merged latency histogram of the measured requests so far is also
    /// written there (reset first; left empty before the run started), e.g. for a live plot.
    Totals totals(stats::Histogram* latency = nullptr) const;

    // For the runner.
    void begin(std::size_t threads, std::string address, std::chrono::steady_clock::time_point start);
    void publish(std::size_t thread, const stats::Histogram& latency, std::uint64_t completed,
                 std::uint64_t failed);

private:
    mutable std::mutex mutex_;
    bool started_ = false;
    std::string address_;
    std::chrono::steady_clock::time_point start_;
    std::vector<std::unique_ptr<stats::Histogram>> latency_;
    std::vector<std::uint64_t> completed_, failed_;
};

} // namespace portico::load

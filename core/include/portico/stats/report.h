// Latency statistics as the engine reports them: overall, per vhost and per route, merged over
// workers, plus a moving time series of 1-second slots. Plain data for the GUI and the CLI.
#pragma once

#include <portico/stats/histogram.h>

#include <cstdint>
#include <string>
#include <vector>

namespace portico::stats {

/// One second of traffic of a group, computed from the difference of the group's merged histograms
/// at two collector ticks one second apart. Latencies in ns; all 0 when count is 0.
struct SeriesPoint {
    std::int64_t unixSecond = 0; ///< wall-clock second (start of the slot)
    std::uint64_t count = 0;
    std::uint64_t errors = 0;
    std::uint64_t p50 = 0;
    std::uint64_t p90 = 0;
    std::uint64_t p99 = 0;
    std::uint64_t max = 0; ///< highest equivalent value of the slowest bucket seen in the slot
};

/// Latency of one group of exchanges. Latency: from the request's first byte to the response
/// being ready to write, mock latency included (the access log's duration), ns.
struct GroupStats {
    std::string vhost; ///< "" for the overall group
    std::string route; ///< "" for the overall and per-vhost groups
    std::uint64_t count = 0;
    std::uint64_t errors = 0;       ///< 5xx or no response
    std::uint64_t clientErrors = 0; ///< 4xx
    Histogram histogram;            ///< within Histogram::kRelativePrecision of the exact values
    /// One point per second, oldest first, at most the last 300 seconds. The overall group's
    /// series starts when the engine starts; a vhost's or route's with the first tick after its
    /// first exchange, and from then on has a point every second (count 0 when idle), so every
    /// series ends on the same second.
    std::vector<SeriesPoint> series;
};

struct Report {
    GroupStats overall;
    std::vector<GroupStats> vhosts; ///< sorted by vhost label
    std::vector<GroupStats> routes; ///< sorted by vhost, then route label
};

} // namespace portico::stats

// The load engine's plan, shared by the run's set-up (runner.cpp: validation, wire forms,
// pre-flight) and its worker threads (connections.cpp: connections, timing, merge). Private to
// core/src/load.
#pragma once

#include <portico/load/runner.h>

#include "client/connection.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace portico::load::detail {

using Ns = std::int64_t; // steady_clock time since its epoch, nanoseconds
constexpr Ns kNever = std::numeric_limits<Ns>::max();

inline Ns nowNs() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

/// A request spec serialised once into its wire form.
using Prepared = client::PreparedRequest;

/// Everything the workers share, read-only once they run (except `start`, set before the latch).
struct Plan {
    const Options* options = nullptr;
    std::vector<Prepared> specs;
    std::vector<std::uint32_t> cumulativeWeights;
    client::ConnectionSettings connection; // endpoint, TLS and protocol of every connection
    const std::atomic<bool>* abort = nullptr;
    Live* live = nullptr; // fed about 4 times a second when given
    Ns start = 0;         // run start (warm-up begins)
    Ns warmupEnd = 0;     // measurement begins
    Ns deadline = kNever; // no request starts at or after this (duration bound)
    std::uint64_t openLimit = std::numeric_limits<std::uint64_t>::max(); // open model: k < openLimit
    double periodNs = 0;      // open model: ns between two arrivals over all connections
    std::string requestIdRun; // Options::requestId: the run's 12 hex digits; empty: no id field
};

/// Runs the measured part of a planned run: one thread per worker (min(threads, connections)),
/// connections spread round-robin, the clock started once every first connect finished, then the
/// workers' counters, histograms and 100 ms slots merged into `result` (requests, errors,
/// statuses, bytes, latency, serviceTime, perSlot, measured, CPU seconds, and with
/// Options::samples the drill-down sample Result::samples). Returns when every
/// worker stopped (count, duration or abort bound).
void drive(Plan& plan, Result& result);

} // namespace portico::load::detail

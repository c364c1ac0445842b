// The load engine's plan, shared by the run's set-up (runner.cpp: validation, wire forms,
// pre-flight) and its worker threads (connections.cpp: connections, timing, merge). Private to
// core/src/load.
#pragma once

#include <portico/load/runner.h>

#include "tls/client_tls.h"

#include <portico/http2/session.h>

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>

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

/// A request spec serialised once into its wire form: HTTP/1.1 bytes, or HTTP/2 header fields
/// (pointing into `h2Strings`, sent with NO_COPY) and the body.
struct Prepared {
    std::string bytes;
    bool head = false;
    std::vector<std::string> h2Strings;
    std::vector<nghttp2_nv> nva;
    std::string body;
};

/// Everything the workers share, read-only once they run (except `start`, set before the latch).
struct Plan {
    const Options* options = nullptr;
    std::vector<Prepared> specs;
    std::vector<std::uint32_t> cumulativeWeights;
    boost::asio::ip::tcp::endpoint endpoint;
    bool h2 = false;
    SSL_CTX* ssl = nullptr;              // https: shared by every connection (SSL_new is thread-safe)
    const tls::ClientTls* tls = nullptr; // https: SNI and the certificate check per connection
    const http2::Callbacks* h2Callbacks = nullptr; // set when h2
    const std::atomic<bool>* abort = nullptr;
    Live* live = nullptr; // fed about 4 times a second when given
    Ns start = 0;         // run start (warm-up begins)
    Ns warmupEnd = 0;     // measurement begins
    Ns deadline = kNever; // no request starts at or after this (duration bound)
    std::uint64_t openLimit = std::numeric_limits<std::uint64_t>::max(); // open model: k < openLimit
    double periodNs = 0; // open model: ns between two arrivals over all connections
};

/// Sets the HTTP/2 client callbacks of the load connections on `cbs` (header, frame, stream close).
void setH2Callbacks(nghttp2_session_callbacks* cbs);

/// Runs the measured part of a planned run: one thread per worker (min(threads, connections)),
/// connections spread round-robin, the clock started once every first connect finished, then the
/// workers' counters, histograms and 100 ms slots merged into `result` (requests, errors,
/// statuses, bytes, latency, serviceTime, perSlot, measured, CPU seconds). Returns when every
/// worker stopped (count, duration or abort bound).
void drive(Plan& plan, Result& result);

} // namespace portico::load::detail

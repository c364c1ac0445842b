// A recorded set of requests as a load test ("replay as load"): the captured exchanges of a
// session file or HAR become the run's weighted RequestSpecs, so a run repeats the real mix of a
// recorded session (method, path and query, headers, body) at load.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/load/options.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

/// What became of the recorded exchanges.
struct CaptureRequests {
    std::vector<RequestSpec> requests; ///< one per distinct request; weight = how often it was recorded
    std::size_t used = 0;              ///< exchanges turned into requests (sum of the weights)
    /// Exchanges left out, each with why: WebSocket sessions and gRPC calls (not plain
    /// request/response), request bodies captured only in part (kRequestBodyTruncated), and
    /// records without a method or target.
    std::size_t skipped = 0;
    std::vector<std::string> skippedReasons; ///< "#12 GET /ws: WebSocket session", at most 20 kept
    std::string error;                       ///< "" on success; else why nothing can be run
    bool ok() const { return error.empty(); }
};

/// Turns `exchanges` into RequestSpecs aimed at `baseUrl` ("http[s]://HOST[:PORT][/PREFIX]", the
/// prefix is put before each recorded target). With an empty `baseUrl` the recorded
/// scheme://authority is used, which must then be the same for every exchange used (a run has one
/// origin). Recorded fields that describe the old connection or are recomputed by the client are
/// dropped: Host, Content-Length, Transfer-Encoding, Connection and the fields it names,
/// Keep-Alive, TE, Upgrade, Proxy-*, Expect, HTTP/2 pseudo-header fields (":path"...), and
/// HTTP/2's Cookie crumbs are joined into one Cookie field (RFC 9113 §8.2.3). Identical requests
/// (method, target, fields, body) share one spec whose weight counts them, so the run's mix
/// matches the recording's. Errors: nothing usable, several origins without `baseUrl`, a bad
/// `baseUrl`, or more than 100,000 distinct requests.
CaptureRequests requestsFromCapture(const std::vector<capture::Exchange>& exchanges,
                                    std::string_view baseUrl);

} // namespace portico::load

// Route actions: turn a routed request into a response (static files, mock responses, redirects).
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <memory>

namespace portico::handlers {

class FileCache;

/// Per-worker state the handlers keep between requests (the small-file cache with its compressed
/// variants, a random generator for mock latency and faults). Not thread-safe: one per worker.
class WorkerState {
public:
    WorkerState();
    ~WorkerState();
    WorkerState(const WorkerState&) = delete;
    WorkerState& operator=(const WorkerState&) = delete;

    FileCache& files() { return *files_; }
    /// Uniform double in [0, 1).
    double random();

private:
    std::unique_ptr<FileCache> files_;
    std::uint64_t rng_;
};

/// Everything a handler may look at for one exchange.
struct Exchange {
    const config::Config& config;
    const config::Vhost& vhost;
    const routing::RouteResult& route;
    const http::Request& request;
    WorkerState& worker;
};

/// Produces the response for `ex` into `res` (which arrives reset):
///  - Matched: runs the route's action (static / respond / redirect);
///  - Fallback: serves the path from the vhost's static root;
///  - NotFound → 404, MethodNotAllowed → 405 with Allow, Options → 204 with Allow;
/// then adds the vhost's and the route's extra headers, swaps in a custom error page for error
/// statuses the vhost maps, and sets `res.serverHeader` from route → vhost → global switches.
/// HEAD is answered like GET; the connection drops the body. Never throws.
void dispatch(const Exchange& ex, http::Response& res);

/// Fills `res` with a small plain-text error page for `status` ("404 Not Found\n").
void errorResponse(int status, http::Response& res);

}  // namespace portico::handlers

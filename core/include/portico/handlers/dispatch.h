// Route actions: turn a routed request into a response (static files, mock responses, redirects).
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <memory>

#include <sys/stat.h>

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

    /// stat(2) of the NUL-terminated `path` (`len` bytes), remembered for the current turn: the
    /// requests the worker reads in one turn of its event loop (every connection's pipelined
    /// bursts and HTTP/2 streams) share one stat per file, and every request read in a later turn
    /// sees an edit made before it. Outside any turn (no newTurn() yet, e.g. handlers called
    /// directly) it always calls stat(2).
    /// Returns 0, or -1 with errno as stat(2) does.
    int statFile(const char* path, std::size_t len, struct ::stat& st);
    /// Starts a turn (the network worker does, once per turn of its event loop: Worker::beginTurn).
    void newTurn() { ++turn_; }

private:
    struct StatMemo;
    std::unique_ptr<FileCache> files_;
    std::unique_ptr<StatMemo[]> stats_;
    std::uint64_t rng_;
    std::uint64_t turn_ = 0;
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
///  - NotFound → 404, MethodNotAllowed → 405 with Allow, Options → 204 with Allow (both Allow
///    values include OPTIONS, which is always answered);
/// then swaps in a custom error page for error statuses the vhost maps (only for errors Portico
/// generated: a mock that deliberately answers 404 keeps its body; an unreadable page leaves the
/// plain one), adds the vhost's and then the route's extra headers (each replaces a field of the
/// same name produced before it; repeats within one list are all kept), and sets
/// `res.serverHeader` from route → vhost → global switches. HEAD is answered like GET; the
/// connection drops the body. Never throws.
///
/// Static files (`StaticAction`, RFC 9110 §8.8, §13, §14):
///  - file path: a route with a trailing wildcard serves its capture under `root` ("/assets/*"
///    maps /assets/app.js to root/app.js, like Express's static mount); otherwise the whole
///    request path (like nginx's `root`);
///  - only GET and HEAD (OPTIONS → 204, others → 405, both with "Allow: GET, HEAD, OPTIONS");
///  - any path segment starting with '.' → 404 (.env, .git: a dev server must not leak them),
///    except RFC 8615's /.well-known/; listings leave such names out;
///  - never outside `root`: files are opened with openat2(RESOLVE_BENEATH) from the root, or
///    checked by their real path, so symlinks leaving the root give 404 unless `followSymlinks`
///    (symlinks staying inside keep working); a NUL in the path → 400;
///  - a directory without a trailing slash → 301 to the normalised path, percent-encoded, + "/"
///    (query kept; never a "//host" target); with one: the first existing `index` file, else the
///    HTML listing if `listing` (only entries that would be served: no symlinks leaving the root
///    unless `followSymlinks`, no dangling links, FIFOs or devices), else as missing;
///  - missing (GET/HEAD) → the `spaFallback` file with 200 if it exists, else 404;
///  - ETag "<hex size>-<hex mtime ns>" (strong; "-br"/"-gz" appended inside the quotes for
///    compressed variants), Last-Modified, Accept-Ranges: bytes; If-Match / If-Unmodified-Since →
///    412, If-None-Match (which overrides If-Modified-Since) → 304, in §13.2.2 order;
///  - Range (identity only: a request with Range is never compressed): one range → 206 with
///    Content-Range; several → multipart/byteranges; none satisfiable → 416 with
///    "Content-Range: bytes */LEN"; syntax errors, invalid specs, unknown units, more specs than
///    limits.max_ranges (at most 64), or parts adding up to more than the file → 200 whole;
///    If-Range must match the ETag strongly or equal Last-Modified, else 200 whole;
///  - coding: for compressible types, a `.br`/`.gz` sibling if present, else on-the-fly Brotli or
///    gzip when `compression.enabled` and the file has at least `compression.min_bytes` and at
///    most 1 MiB (it runs on the event loop; Brotli quality capped at 9 above 256 KiB; cached per
///    worker), chosen by Accept-Encoding q-values (ties prefer br). Compressible responses always
///    carry "Vary: Accept-Encoding", also when sent identity;
///  - files up to 256 KiB are cached in memory per worker and sent as shared bodies; larger ones
///    as file bodies (sendfile). Every request stats the file, so edits show up at once.
/// Respond: see config::RespondAction; faults are rolled drop first, then error; latency applies
/// to every outcome; Content-Type defaults to "text/plain; charset=utf-8" when there is a body.
/// Templated header values have CR/LF/NUL replaced by spaces; templated redirect targets have
/// substituted values percent-encoded (except unreserved, "/:@" and sub-delims other than "&=+").
void dispatch(const Exchange& ex, http::Response& res);

/// Fills `res` with a small plain-text error page for `status` ("404 Not Found\n").
void errorResponse(int status, http::Response& res);

} // namespace portico::handlers

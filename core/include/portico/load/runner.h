// Runs a bounded load test (HTTP/1.1 keep-alive with pipelining or HTTP/2 with streams, cleartext or
// TLS) and returns its result; runs the benchmark suite. These open sockets: the desktop app goes
// through engine/jobs.h instead (the data types are in options.h, result.h, live.h and suite.h).
#pragma once

#include <portico/load/live.h>
#include <portico/load/options.h>
#include <portico/load/result.h>
#include <portico/load/suite.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace portico::load {

/// Runs `options` to the end and returns the result; blocks the calling thread for about
/// warm-up + duration (+ at most stopGrace). Errors are returned in `Result::error`, never thrown:
/// invalid options, a bad URL, several origins, a CA file that does not load, a name that does not
/// resolve, a target that is not loopback without `allowRemote`, or no connection succeeding at
/// start ("cannot connect to 127.0.0.1:9: Connection refused"), and, checked by one probe connection
/// before the run: a TLS handshake that fails (certificate verification, with the reason and the
/// hint to use `caFile` or `insecure`), an https server that does not select ALPN h2 for HTTP/2, or
/// a cleartext server that does not answer the h2c preface within 5 s. Failures during the run are
/// counted, not fatal.
///
/// Setting `*abort` (from any thread) ends the run early as if its bound had been reached: no new
/// requests, in-flight ones get the stop grace. Checked every 10 ms.
///
/// Threads: `options.threads` worker threads, each with its own io_context and connections; each
/// keeps its own histograms and counters, merged at the end. Requests are pre-serialised; the read
/// buffer (64 KiB per connection) and the write buffer are allocated once, so HTTP/1.1 in cleartext
/// does not allocate per request in steady state (nghttp2's HPACK decoder and OpenSSL allocate per
/// field/record). SIGPIPE is blocked on the worker threads (OpenSSL writes with write()).
///
/// `live`, when given, is fed while the run goes (see Live).
Result run(const Options& options, const std::atomic<bool>* abort = nullptr, Live* live = nullptr);

/// Runs every route of `suiteRoutes()` against `baseUrl` (`http[s]://HOST[:PORT]`, a path other
/// than "/" is refused) with `base`'s connections, threads, bounds, model, protocol and TLS options
/// (its `requests` are ignored). Blocks for about routes × (warm-up + duration). `progress`, if
/// set, is called on the calling thread after each route with its index (0-based) and run. Setting
/// `*abort` ends the current route early and skips the rest.
SuiteResult runSuite(const std::string& baseUrl, const Options& base,
                     const std::atomic<bool>* abort = nullptr,
                     const std::function<void(std::size_t, const SuiteRun&)>& progress = {});

/// The same for `routes` in their order (a user's suite file, suite_file.h): each route's `target`
/// is appended to the origin, sent with its method, headers and body. An empty list is an error
/// ("no routes to run"), as is a bad base URL; the first route that cannot start ends the suite.
SuiteResult runSuite(const std::string& baseUrl, const std::vector<SuiteRoute>& routes, const Options& base,
                     const std::atomic<bool>* abort = nullptr,
                     const std::function<void(std::size_t, const SuiteRun&)>& progress = {});

} // namespace portico::load

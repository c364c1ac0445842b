// The one facade over the server core: start, publish config snapshots, stop. CLI and GUI use only this.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/config/config.h>
#include <portico/rules/breakpoints.h>
#include <portico/stats/report.h>
#include <portico/ws/websocket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace portico::engine {

/// A bound listening address (the real port when the config asked for port 0).
struct Endpoint {
    std::string host; ///< as configured ("127.0.0.1", "::1", or "localhost": both of those, one port)
    std::uint16_t port = 0;
    bool tls = false; ///< HTTPS (h2 and http/1.1 by ALPN); else cleartext HTTP/1.1 and h2c
    /// Said once to the user when set: "localhost:8080 listens on 127.0.0.1 only: IPv6 loopback
    /// [::1] is unavailable (...)".
    std::string note;
    std::string url() const; ///< "http://localhost:8080/" ("https://[::1]:8443/" for IPv6 with TLS)
    /// True for 127.0.0.0/8 and ::1 (also ::ffff:127.x.y.z); false for 0.0.0.0, ::, and any other
    /// address, i.e. when machines other than this one may connect (the CLI and GUI then warn).
    bool loopback() const;
};

/// Totals since start, summed over workers (relaxed counters; exact once the engine is stopped).
struct Counters {
    std::uint64_t connectionsAccepted = 0;
    std::uint64_t connectionsOpen = 0;
    std::uint64_t requests = 0;
    std::uint64_t parseErrors = 0; ///< requests answered 4xx/5xx by the parser (400, 413, 414, 431, 501, 505)
    std::uint64_t timeouts = 0;    ///< connections closed by a header/body/idle/write timeout
    std::uint64_t connectionsRefused = 0;   ///< over limits.max_connections_per_worker
    std::uint64_t connectionsDenied = 0;    ///< forward proxy clients outside forward_proxy.allow (403)
    std::uint64_t tlsHandshakeFailures = 0; ///< TLS handshakes that failed before completing
    std::uint64_t h2Abuse =
        0; ///< HTTP/2 connections closed with GOAWAY(ENHANCE_YOUR_CALM): floods, rapid reset
};

class Engine {
public:
    Engine();
    ~Engine(); ///< stops (graceful, bounded by limits.drain_timeout) if still running
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Opens every listener on every worker (SO_REUSEPORT, one socket per worker), builds the TLS
    /// contexts of TLS listeners (creating the local development CA under tls::defaultDataDir()
    /// on first use of `tls: auto`) and starts the worker threads. Returns false with `error` set
    /// ("127.0.0.1:80: Permission denied", "cert.pem: cannot load ...") and nothing running if any
    /// listener cannot be opened.
    bool start(std::shared_ptr<const config::Config> config, std::string& error);

    /// Publishes a new snapshot atomically: each request uses the snapshot current when its head was
    /// parsed, so no exchange is torn and no connection is dropped. Listener changes are applied
    /// by opening the new listeners before closing the removed ones; if a new listener cannot be
    /// opened, nothing changes and false is returned with `error`.
    bool publish(std::shared_ptr<const config::Config> config, std::string& error);

    /// The snapshot in force.
    std::shared_ptr<const config::Config> config() const;

    /// Graceful stop: stop accepting, close idle connections, let in-flight exchanges finish for at
    /// most limits.drain_timeout, then close the rest and join the workers. Idempotent.
    void stop();

    bool running() const;
    std::vector<Endpoint> endpoints() const;
    unsigned workerCount() const;
    Counters counters() const;

    /// WebSocket sessions of this engine: open sessions, message totals, live-reload clients and
    /// every room with members (members, messages, delivered, messages/s). Callable from any
    /// thread, also before start and after stop (then the last totals).
    ws::Stats webSocketStats() const;
    /// For each entry of config()->rules (same order and size): how many exchanges it matched
    /// (a request-stage rule: its whole match; a response-stage one: its match including `status:`),
    /// counted since the engine started; kept across reloads for a rule of the same name (an unnamed
    /// rule: of the same position). Empty when nothing is served. Takes the engine's mutex briefly.
    std::vector<std::uint64_t> ruleMatches() const;

    /// Installs the hook called for every WebSocket event (open, each message in and out with a
    /// bounded payload prefix, join/leave, close) on the worker thread of the session; an empty
    /// function removes it. Without a hook the sessions pay one relaxed atomic load per message.
    void setWebSocketHook(ws::MessageHook hook);

    /// Debounced file-change batches the live-reload watcher has reported (vhosts with
    /// `live_reload: true`; their static roots are watched while the engine runs).
    std::uint64_t liveReloadBatches() const;

    /// Called once per live-reload batch, after the pages were told: the changed paths (relative
    /// to their root, at most 20), whether they are all stylesheets (swapped in place) and how
    /// many pages were connected. On the watcher's thread; set it before start().
    using LiveReloadObserver =
        std::function<void(const std::vector<std::string>& paths, bool stylesheetsOnly, std::size_t pages)>;
    void setLiveReloadObserver(LiveReloadObserver observer);

    /// Watches `path` (polling its size and mtime every `interval`); on change loads it and
    /// publishes it if valid. `report` gets one line per event ("reloaded", or each error as
    /// "file:line:column: path: message" — the old config keeps serving). `adjust`, when set, is
    /// applied to each newly loaded config before it is checked and published (the command line's
    /// overrides of the file: --port, --record, ...). Runs until stop().
    void watchConfigFile(const std::string& path, std::function<void(const std::string&)> report,
                         std::chrono::milliseconds interval = std::chrono::milliseconds(500),
                         std::function<void(config::Config&)> adjust = {});

    // ---- breakpoints (a rule's `breakpoint` action; rules/breakpoints.h) ----

    /// Whether an app decides paused exchanges (the desktop app turns this on before start()). Off
    /// (the default, as in headless `portico serve`): start(), publish() and watchConfigFile() refuse a
    /// config with a breakpoint rule, each such action reported as "FILE:LINE:COLUMN:
    /// rules[N].actions[M]: breakpoint needs the desktop app's Paused queue (...)". Turning it off
    /// while exchanges are paused resumes them unchanged.
    void setBreakpointsEnabled(bool on);
    bool breakpointsEnabled() const;
    /// The exchanges paused now, oldest first (copies).
    std::vector<rules::PausedExchange> pausedExchanges() const;
    /// Changes whenever the paused list changes.
    std::uint64_t pausedGeneration() const;
    /// Resume, respond to or abort paused exchange `id` (BreakpointQueue::decide): false with
    /// `error` when it is no longer paused or the decision is malformed (it then stays paused).
    bool decidePaused(std::uint64_t id, rules::BreakpointDecision decision, std::string* error = nullptr);
    /// The same decision for every paused exchange (an edit is ignored); how many were decided.
    std::size_t decideAllPaused(const rules::BreakpointDecision& decision);
    /// Called on any thread, without locks held, after each change of the paused list; empty removes it.
    void setPausedListener(std::function<void()> listener);
    /// The config's breakpoint actions as errors ("FILE:LINE:COLUMN: rules[N].actions[M]: ..."), one
    /// per line; "" when it has none. What start() and publish() refuse while breakpoints are off.
    static std::string breakpointsRefused(const config::Config& config);

    // ---- capture (config `capture:`; docs/capture.md) ----
    // A collector thread drains the workers' rings every 50 ms into a bounded window
    // (capture.max_records / capture.max_bytes) and, with capture.store (or the session file set
    // by setSessionStore), a SQLite session file capped at capture.store_max_bytes. Reads go to
    // the window first and then to the file. The window, statistics and counts stay readable after
    // stop() until the next start().

    /// The session file used when a config has no capture.store (the desktop app's temporary
    /// session): "" for none. Takes effect at the next start().
    void setSessionStore(const std::string& path);
    /// Captured exchanges with id > `sinceId`, oldest first, at most `max` (ids increase by one
    /// per record; a gap means records left the window and the file). Records read back from the
    /// session file come without bodies and messages (exchange() has them).
    std::vector<capture::Exchange> recentExchanges(std::uint64_t sinceId, std::size_t max = 1000) const;
    /// One exchange by id, from the window or the session file; nullopt when it is in neither.
    std::optional<capture::Exchange> exchange(std::uint64_t id) const;
    /// A consistent copy of the session file at `path` (must not exist yet), e.g. to keep the
    /// desktop app's temporary session. False with `error` when there is no session file or the
    /// copy failed.
    bool saveCapture(const std::string& path, std::string& error);
    /// Latency statistics since start: overall, per vhost, per route, and the last 300 s.
    /// Every exchange counts, including those whose record was dropped.
    stats::Report stats() const;
    /// Records whose details were dropped because a worker's ring was full (stats still count them).
    std::uint64_t droppedRecords() const;
    /// Records that reached the collector since start.
    std::uint64_t capturedRecords() const;
    /// Id of the newest record, 0 when none. Without a session file ids begin at 1 at every
    /// start(); with one they continue after the file's newest.
    std::uint64_t lastCapturedId() const;
    /// Id of the oldest record exchange() can still return (the session file's oldest when there
    /// is one, else the window's); 0 when there is none. Records with smaller ids are gone: a view
    /// should drop their rows.
    std::uint64_t oldestCapturedId() const;
    /// Drains the rings now (tests, before reading the window at a known point).
    void flushCapture();
    /// Last session-file error ("" when fine).
    std::string captureStoreError() const;

private:
    Counters sumCounters() const; // caller holds the engine mutex
    struct Impl;
    std::unique_ptr<Impl> d_;
};

/// Library version ("0.1.0").
const char* version();

/// The libraries the server core runs on and their versions as loaded at run time, as (name,
/// version) pairs in a fixed order: OpenSSL, nghttp2, Boost (the headers built against), zlib,
/// brotli, SQLite, PCRE2. For About boxes and bug reports.
std::vector<std::pair<std::string, std::string>> libraryVersions();

} // namespace portico::engine

// The engine facade: owns the workers, publishes config snapshots, reloads the config file, drains.
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include "capture/collector.h"
#include "client/connect.h"
#include "handlers/live_reload.h"
#include "proxy/origin.h"
#include "server/access_log.h"
#include "server/snapshot.h"
#include "server/worker.h"
#include "tls/server_tls.h"
#include "ws/hub.h"

#include <portico/tls/local_ca.h>

#include <boost/version.hpp>
#include <brotli/encode.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <zlib.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace portico::engine {

std::string Endpoint::url() const {
    bool v6 = host.find(':') != std::string::npos;
    return (tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/";
}

bool Endpoint::loopback() const {
    if (host == "localhost") return true;
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(host, ec);
    return !ec && client::isLoopback(a);
}

const char* version() { return PORTICO_VERSION; }

std::vector<std::pair<std::string, std::string>> libraryVersions() {
    std::vector<std::pair<std::string, std::string>> out;
    std::string openssl = OpenSSL_version(OPENSSL_VERSION); // "OpenSSL 3.0.x 1 Nov 2022"
    if (openssl.starts_with("OpenSSL ")) openssl.erase(0, 8);
    out.emplace_back("OpenSSL", openssl);
    out.emplace_back("nghttp2", nghttp2_version(0)->version_str);
    out.emplace_back("Boost", std::to_string(BOOST_VERSION / 100000) + "." +
                                  std::to_string(BOOST_VERSION / 100 % 1000) + "." +
                                  std::to_string(BOOST_VERSION % 100));
    out.emplace_back("zlib", zlibVersion());
    const std::uint32_t b = BrotliEncoderVersion(); // 0xMMMmmmppp
    out.emplace_back("brotli", std::to_string(b >> 24) + "." + std::to_string((b >> 12) & 0xfff) + "." +
                                   std::to_string(b & 0xfff));
    out.emplace_back("SQLite", sqlite3_libversion());
    char pcre[64] = {};
    pcre2_config_8(PCRE2_CONFIG_VERSION, pcre);
    out.emplace_back("PCRE2", pcre);
    return out;
}

namespace {
// SO_REUSEPORT would let a second server (another Portico of the same user) join our port and
// take half of its connections silently. So first bind once without it: that fails with
// EADDRINUSE while anyone listens there (SO_REUSEADDR still lets us reuse TIME_WAIT ports).
bool portIsFree(const std::string& host, std::uint16_t port, std::string& error) {
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return true; // the worker reports the bad address
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (address.is_v4()) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        auto bytes = address.to_v4().to_bytes();
        std::memcpy(&a->sin_addr, bytes.data(), bytes.size());
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        auto bytes = address.to_v6().to_bytes();
        std::memcpy(&a->sin6_addr, bytes.data(), bytes.size());
        len = sizeof *a;
    }
    int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return true;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (address.is_v6()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len);
    int err = errno;
    ::close(fd);
    if (rc == 0) return true;
    error =
        (address.is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(port) + ": " + std::strerror(err);
    return false;
}
// Whether this machine has IPv6 loopback (a container may have IPv6 off): `why` says what failed.
bool ipv6LoopbackUsable(std::string& why) {
    int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = std::strerror(errno);
        return false;
    }
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    const int err = errno;
    ::close(fd);
    if (rc == 0) return true;
    why = std::strerror(err);
    return false;
}
} // namespace

struct Engine::Impl {
    struct BoundListener {
        std::string host; // as configured: an IP literal, or "localhost"
        std::uint16_t configuredPort;
        std::uint16_t port;
        bool tls = false;
        std::vector<std::string> addresses; // bound: {host}, or 127.0.0.1 and ::1 for "localhost"
        std::string note;                   // said once by the CLI and GUI (IPv6 loopback missing)
    };

    server::SnapshotSlot slot;
    std::vector<std::unique_ptr<server::Worker>> workers;
    std::vector<BoundListener> listeners;
    std::shared_ptr<server::AccessLogger> log;
    mutable std::mutex mutex; // guards listeners, running, publish
    Counters finalCounters;   // totals of the workers of the last run, kept after stop()
    bool running = false;

    std::thread watcher;
    std::mutex watchMutex;
    std::condition_variable watchCv;
    bool watchStop = false;

    std::shared_ptr<tls::LocalCa> ca; // opened on first use of `tls: auto`
    // From start() until the next start(). Shared: readers of records (which may wait on the
    // session file) hold it without holding `mutex`; one replaced under them is already stopped.
    std::shared_ptr<capture::Collector> collector;
    // The current collector, taken under `mutex`, for readers of records (who may wait on the
    // session file and must not hold the mutex meanwhile).
    std::shared_ptr<capture::Collector> currentCollector() {
        std::lock_guard lock(mutex);
        return collector;
    }

    std::shared_ptr<ws::Hub> hub = std::make_shared<ws::Hub>();
    std::shared_ptr<rules::MatchCounts> ruleCounts = std::make_shared<rules::MatchCounts>();
    std::shared_ptr<rules::BreakpointQueue> breakpoints = std::make_shared<rules::BreakpointQueue>();
    std::uint64_t liveBatchesAtStop = 0;
    std::unique_ptr<handlers::LiveReloadWatcher> liveReload; // while running
    Engine::LiveReloadObserver liveReloadObserver;           // set before start
    std::string sessionStore;                                // used when capture.store is ""

    /// Static roots of the vhosts with live reload: what the watcher watches.
    static std::vector<std::string> liveReloadRoots(const config::Config& c) {
        std::vector<std::string> roots;
        for (const auto& vh : c.vhosts) {
            if (!vh.liveReload) continue;
            if (vh.root) roots.push_back(vh.root->root);
            for (const auto& r : vh.routes)
                if (const auto* st = std::get_if<config::StaticAction>(&r.action)) roots.push_back(st->root);
        }
        return roots;
    }

    /// The snapshot for `config` whose listeners are bound as `bound` (same order as config->listen).
    std::shared_ptr<server::Snapshot> snapshot(std::shared_ptr<const config::Config> config,
                                               const std::vector<BoundListener>& bound, std::string& error) {
        auto snap = std::make_shared<server::Snapshot>(config, ruleCounts, breakpoints);
        snap->hub = hub;
        for (std::size_t i = 0; i < config->listen.size(); ++i) {
            const auto& l = config->listen[i];
            if (l.forwardProxy) {
                snap->forwardProxyPorts.insert(bound[i].port);
                // Listeners sharing a port (none but "localhost"'s two sockets can) admit either's.
                auto& networks = snap->clientNetworks[bound[i].port];
                if (l.proxy.allow.empty()) {
                    const auto loopback = config::loopbackNetworks();
                    networks.insert(networks.end(), loopback.begin(), loopback.end());
                }
                for (const std::string& text : l.proxy.allow) {
                    auto n =
                        config::parseNetwork(text, error); // validated at load; a model built in code is not
                    if (!n) {
                        error = l.host + ":" + std::to_string(l.port) + ": forward_proxy.allow: " + error;
                        return nullptr;
                    }
                    networks.push_back(*n);
                }
            }
            if (l.forwardProxy && l.proxy.intercept) {
                if (!ca) {
                    ca = tls::LocalCa::openOrCreate(tls::defaultDataDir(), error);
                    if (!ca) return nullptr;
                }
                auto t = tls::ServerTls::createIntercepting(
                    [ca = ca](std::string_view name, std::string& err) -> std::optional<tls::PemPair> {
                        auto leaf = ca->leafFor(name, err);
                        if (!leaf) return std::nullopt;
                        return tls::PemPair{leaf->chainPem, leaf->keyPem};
                    },
                    config->http2.enabled, error);
                if (!t) {
                    error = l.host + ":" + std::to_string(l.port) + ": " + error;
                    return nullptr;
                }
                if (!proxy::prepareInterception(l.proxy, error)) {
                    error = l.host + ":" + std::to_string(l.port) + ": forward_proxy: " + error;
                    return nullptr;
                }
                snap->intercept[bound[i].port] = {std::move(t), l.proxy};
            }
            if (!l.tls) continue;
            tls::Issuer issuer;
            if (l.tls->autoCa) {
                if (!ca) {
                    ca = tls::LocalCa::openOrCreate(tls::defaultDataDir(), error);
                    if (!ca) return nullptr;
                }
                issuer = [ca = ca](std::string_view name, std::string& err) -> std::optional<tls::PemPair> {
                    auto leaf = ca->leafFor(name, err);
                    if (!leaf) return std::nullopt;
                    return tls::PemPair{leaf->chainPem, leaf->keyPem};
                };
            }
            auto t = tls::ServerTls::create(*config, *l.tls, std::move(issuer), error);
            if (!t) {
                error = l.host + ":" + std::to_string(l.port) + ": " + error;
                return nullptr;
            }
            snap->tls[bound[i].port] = std::move(t);
        }
        return snap;
    }

    void closeOnAll(const BoundListener& b) {
        for (const auto& address : b.addresses)
            for (auto& w : workers)
                w->runSync([&] { w->closeListener(address, b.port); });
    }

    /// Opens `l` on every worker. "localhost" is 127.0.0.1 and ::1 on one port (IPv4 picks it when
    /// the config says 0; a port ::1 has taken elsewhere is tried again); without IPv6 loopback it
    /// is IPv4 only, with a note.
    bool open(const config::Listen& l, BoundListener& out, std::string& error) {
        out = BoundListener{l.host, l.port, 0, l.tls.has_value(), {}, {}};
        if (l.host != "localhost") {
            if (!openOnAll(l.host, l.port, out.port, error)) return false;
            out.addresses = {l.host};
            return true;
        }
        std::string why;
        const bool v6 = ipv6LoopbackUsable(why);
        for (int attempt = 0; attempt < 16; ++attempt) {
            out.addresses.clear();
            if (!openOnAll("127.0.0.1", l.port, out.port, error)) return false;
            out.addresses = {"127.0.0.1"};
            if (!v6) {
                out.note = "localhost:" + std::to_string(out.port) +
                           " listens on 127.0.0.1 only: IPv6 loopback [::1] is unavailable (" + why + ")";
                return true;
            }
            std::uint16_t bound6 = 0;
            if (openOnAll("::1", out.port, bound6, error)) {
                out.addresses.push_back("::1");
                return true;
            }
            closeOnAll(out);
            if (l.port != 0) return false;
        }
        return false;
    }

    bool openOnAll(const std::string& host, std::uint16_t port, std::uint16_t& bound, std::string& error) {
        if (port != 0 && !portIsFree(host, port, error)) return false;
        bound = port;
        std::vector<server::Worker*> opened;
        for (auto& w : workers) {
            std::uint16_t got = 0;
            w->runSync([&] { got = w->openListener(host, bound, error); });
            if (got == 0) {
                for (auto* o : opened)
                    o->runSync([&] { o->closeListener(host, bound); });
                return false;
            }
            bound = got; // port 0: the first worker picks, the others share it via SO_REUSEPORT
            opened.push_back(w.get());
        }
        return true;
    }
};

Engine::Engine() : d_(std::make_unique<Impl>()) {}

Engine::~Engine() { stop(); }

bool Engine::start(std::shared_ptr<const config::Config> config, std::string& error) {
    std::lock_guard lock(d_->mutex);
    if (d_->running) {
        error = "already running";
        return false;
    }
    if (config->vhosts.empty()) {
        error = "the config has no vhost";
        return false;
    }
    if (!d_->breakpoints->enabled()) {
        if (std::string refused = breakpointsRefused(*config); !refused.empty()) {
            error = std::move(refused);
            return false;
        }
    }
    if (config->accessLog.format != config::AccessLog::Format::Off) {
        d_->log =
            std::make_shared<server::AccessLogger>(config->accessLog.format, config->accessLog.path, error);
        if (!d_->log->ok()) {
            d_->log.reset();
            return false;
        }
    }
    // Workers read limits from the slot while listeners open; the TLS contexts come after.
    d_->slot.publish(std::make_shared<const server::Snapshot>(config, d_->ruleCounts, d_->breakpoints));
    const unsigned n = config->workerCount();
    for (unsigned i = 0; i < n; ++i)
        d_->workers.push_back(std::make_unique<server::Worker>(i, d_->slot, d_->log));
    auto fail = [&] {
        d_->workers.clear();
        d_->listeners.clear();
        d_->log.reset();
        return false;
    };
    for (const auto& l : config->listen) {
        Impl::BoundListener bound;
        if (!d_->open(l, bound, error)) return fail();
        d_->listeners.push_back(std::move(bound));
    }
    auto snap = d_->snapshot(config, d_->listeners, error);
    if (!snap) return fail();
    std::unique_ptr<capture::Store> store;
    if (const std::string& file = config->capture.store.empty() ? d_->sessionStore : config->capture.store;
        !file.empty()) {
        store = capture::Store::open(file, error);
        if (!store) return fail();
    }
    d_->collector = std::make_shared<capture::Collector>(config->capture, std::move(store));
    std::vector<capture::Recorder*> recorders;
    for (auto& w : d_->workers)
        recorders.push_back(&w->recorder());
    d_->collector->start(std::move(recorders));
    d_->slot.publish(std::move(snap));
    d_->liveReload = std::make_unique<handlers::LiveReloadWatcher>(
        [hub = d_->hub, observer = d_->liveReloadObserver](
            const std::string& json, const std::vector<std::string>& paths, bool stylesheetsOnly) {
            const std::size_t pages = hub->notifyLiveReload(json);
            if (observer) observer(paths, stylesheetsOnly, pages);
        });
    d_->liveReload->setRoots(Impl::liveReloadRoots(*config));
    for (auto& w : d_->workers)
        w->start();
    d_->running = true;
    return true;
}

bool Engine::publish(std::shared_ptr<const config::Config> config, std::string& error) {
    std::lock_guard lock(d_->mutex);
    if (!d_->running) {
        error = "not running";
        return false;
    }
    if (config->vhosts.empty()) {
        error = "the config has no vhost";
        return false;
    }
    if (!d_->breakpoints->enabled()) {
        if (std::string refused = breakpointsRefused(*config); !refused.empty()) {
            error = std::move(refused);
            return false;
        }
    }
    // Open the listeners the new config adds before closing the ones it drops.
    std::vector<Impl::BoundListener> next;
    std::vector<Impl::BoundListener> added;
    // Each bound listener serves at most one of the new config's: two `HOST:0` listeners (any free
    // port each) keep their own ports, in order, instead of both taking the first one's.
    std::vector<bool> taken(d_->listeners.size(), false);
    for (const auto& l : config->listen) {
        auto it = d_->listeners.begin();
        for (; it != d_->listeners.end(); ++it)
            if (!taken[std::size_t(it - d_->listeners.begin())] && it->host == l.host &&
                it->configuredPort == l.port)
                break;
        if (it != d_->listeners.end()) {
            taken[std::size_t(it - d_->listeners.begin())] = true;
            next.push_back(*it);
            next.back().tls = l.tls.has_value();
            continue;
        }
        Impl::BoundListener bound;
        if (!d_->open(l, bound, error)) {
            for (const auto& a : added)
                d_->closeOnAll(a);
            return false;
        }
        added.push_back(std::move(bound));
        next.push_back(added.back());
    }
    auto snap = d_->snapshot(config, next, error);
    if (!snap) {
        for (const auto& a : added)
            d_->closeOnAll(a);
        return false;
    }
    d_->slot.publish(std::move(snap));
    if (d_->liveReload) d_->liveReload->setRoots(Impl::liveReloadRoots(*config));
    for (const auto& old : d_->listeners) {
        bool kept = std::any_of(next.begin(), next.end(), [&](const Impl::BoundListener& b) {
            return b.host == old.host && b.port == old.port;
        });
        if (!kept) d_->closeOnAll(old);
    }
    d_->listeners = std::move(next);
    return true;
}

std::shared_ptr<const config::Config> Engine::config() const {
    std::uint64_t gen = 0;
    auto snap = d_->slot.load(gen);
    return snap ? snap->config : nullptr;
}

void Engine::stop() {
    {
        std::lock_guard lock(d_->watchMutex);
        d_->watchStop = true;
    }
    d_->watchCv.notify_all();
    if (d_->watcher.joinable()) d_->watcher.join();
    std::lock_guard lock(d_->mutex);
    if (!d_->running) return;
    // No change notification may be posted to a worker that is going away.
    if (d_->liveReload) d_->liveBatchesAtStop = d_->liveReload->batches();
    d_->liveReload.reset();
    auto drain = config()->limits.drainTimeout;
    for (auto& w : d_->workers)
        w->beginDrain(drain);
    for (auto& w : d_->workers)
        w->join();
    if (d_->collector) d_->collector->stop();
    d_->finalCounters = sumCounters();
    d_->workers.clear();
    d_->listeners.clear();
    d_->log.reset(); // flushes the access log
    d_->running = false;
}

bool Engine::running() const {
    std::lock_guard lock(d_->mutex);
    return d_->running;
}

std::vector<Endpoint> Engine::endpoints() const {
    std::lock_guard lock(d_->mutex);
    std::vector<Endpoint> out;
    for (const auto& l : d_->listeners)
        out.push_back({l.host, l.port, l.tls, l.note});
    return out;
}

unsigned Engine::workerCount() const {
    std::lock_guard lock(d_->mutex);
    return static_cast<unsigned>(d_->workers.size());
}

Counters Engine::counters() const {
    std::lock_guard lock(d_->mutex);
    return d_->running ? sumCounters() : d_->finalCounters;
}

std::vector<capture::Exchange> Engine::recentExchanges(std::uint64_t sinceId, std::size_t max) const {
    const auto c = d_->currentCollector();
    return c ? c->recent(sinceId, max) : std::vector<capture::Exchange>{};
}

std::optional<capture::Exchange> Engine::exchange(std::uint64_t id) const {
    const auto c = d_->currentCollector();
    return c ? c->get(id) : std::nullopt;
}

void Engine::setSessionStore(const std::string& path) {
    std::lock_guard lock(d_->mutex);
    d_->sessionStore = path;
}

bool Engine::saveCapture(const std::string& path, std::string& error) {
    std::lock_guard lock(d_->mutex);
    if (!d_->collector) {
        error = "the server is not running";
        return false;
    }
    return d_->collector->saveCopy(path, error);
}

stats::Report Engine::stats() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->report() : stats::Report{};
}

std::uint64_t Engine::droppedRecords() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->dropped() : 0;
}

std::uint64_t Engine::oldestCapturedId() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->oldestId() : 0;
}

std::uint64_t Engine::lastCapturedId() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->lastId() : 0;
}

std::uint64_t Engine::capturedRecords() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->captured() : 0;
}

void Engine::flushCapture() {
    std::lock_guard lock(d_->mutex);
    if (d_->collector) d_->collector->drainNow();
}

std::string Engine::captureStoreError() const {
    std::lock_guard lock(d_->mutex);
    return d_->collector ? d_->collector->storeError() : std::string();
}

Counters Engine::sumCounters() const {
    Counters c;
    for (const auto& w : d_->workers) {
        const auto& wc = w->counters();
        c.connectionsAccepted += wc.accepted.load(std::memory_order_relaxed);
        c.connectionsOpen += wc.open.load(std::memory_order_relaxed);
        c.requests += wc.requests.load(std::memory_order_relaxed);
        c.parseErrors += wc.parseErrors.load(std::memory_order_relaxed);
        c.timeouts += wc.timeouts.load(std::memory_order_relaxed);
        c.connectionsRefused += wc.refused.load(std::memory_order_relaxed);
        c.connectionsDenied += wc.denied.load(std::memory_order_relaxed);
        c.tlsHandshakeFailures += wc.tlsHandshakeFailures.load(std::memory_order_relaxed);
        c.h2Abuse += wc.h2Abuse.load(std::memory_order_relaxed);
    }
    return c;
}

ws::Stats Engine::webSocketStats() const { return d_->hub->stats(); }

void Engine::setBreakpointsEnabled(bool on) {
    d_->breakpoints->setEnabled(on);
    if (!on) d_->breakpoints->decideAll({}); // nothing would decide them any more: they go on
}

bool Engine::breakpointsEnabled() const { return d_->breakpoints->enabled(); }

std::vector<rules::PausedExchange> Engine::pausedExchanges() const { return d_->breakpoints->list(); }

std::uint64_t Engine::pausedGeneration() const { return d_->breakpoints->generation(); }

bool Engine::decidePaused(std::uint64_t id, rules::BreakpointDecision decision, std::string* error) {
    return d_->breakpoints->decide(id, std::move(decision), error);
}

std::size_t Engine::decideAllPaused(const rules::BreakpointDecision& decision) {
    return d_->breakpoints->decideAll(decision);
}

void Engine::setPausedListener(std::function<void()> listener) {
    d_->breakpoints->setListener(std::move(listener));
}

std::string Engine::breakpointsRefused(const config::Config& config) {
    std::string out;
    for (std::size_t i = 0; i < config.rules.size(); ++i) {
        const config::Rule& rule = config.rules[i];
        if (!rule.enabled) continue;
        for (std::size_t j = 0; j < rule.actions.size(); ++j) {
            const config::RuleAction& a = rule.actions[j];
            if (a.kind != config::RuleAction::Kind::Breakpoint) continue;
            if (!out.empty()) out.push_back('\n');
            const config::Location& at = a.where.line ? a.where : rule.where;
            if (!at.file.empty())
                out += at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
            out += "rules[" + std::to_string(i) + "].actions[" + std::to_string(j) + "]: breakpoint";
            if (!rule.name.empty()) out += " (rule '" + rule.name + "')";
            out += " needs the desktop app's Paused queue to resume it, and this engine runs without one "
                   "(portico serve is headless): open the config with `portico gui`, or remove the rule or "
                   "set `enabled: false`";
        }
    }
    return out;
}

std::vector<std::uint64_t> Engine::ruleMatches() const {
    std::shared_ptr<const config::Config> cfg = config();
    if (!cfg) return {};
    return d_->ruleCounts->countsFor(*cfg);
}

void Engine::setWebSocketHook(ws::MessageHook hook) { d_->hub->setHook(std::move(hook)); }

std::uint64_t Engine::liveReloadBatches() const {
    std::lock_guard lock(d_->mutex);
    return d_->liveReload ? d_->liveReload->batches() : d_->liveBatchesAtStop;
}

void Engine::setLiveReloadObserver(LiveReloadObserver observer) {
    d_->liveReloadObserver = std::move(observer);
}

void Engine::watchConfigFile(const std::string& path, std::function<void(const std::string&)> report,
                             std::chrono::milliseconds interval,
                             std::function<void(config::Config&)> adjust) {
    if (d_->watcher.joinable()) return;
    d_->watcher = std::thread([this, path, report = std::move(report), interval, adjust = std::move(adjust)] {
        auto stamp = [&](struct stat& st) { return ::stat(path.c_str(), &st) == 0; };
        struct stat last {};
        bool had = stamp(last);
        for (;;) {
            {
                std::unique_lock lock(d_->watchMutex);
                if (d_->watchCv.wait_for(lock, interval, [&] { return d_->watchStop; })) return;
            }
            struct stat now {};
            bool has = stamp(now);
            if (!has) continue; // an editor may be replacing the file; look again next time
            if (had && now.st_mtim.tv_sec == last.st_mtim.tv_sec &&
                now.st_mtim.tv_nsec == last.st_mtim.tv_nsec && now.st_size == last.st_size &&
                now.st_ino == last.st_ino)
                continue;
            had = true;
            last = now;
            auto result = config::loadConfigFile(path);
            if (!result.ok()) {
                report(path + ": not reloaded, the running config keeps serving:");
                for (const auto& e : result.errors)
                    report(e.toString());
                continue;
            }
            if (adjust) {
                auto adjusted = std::make_shared<config::Config>(*result.config);
                adjust(*adjusted);
                result.config = std::move(adjusted);
            }
            auto before = config();
            const auto urlsBefore = endpoints();
            std::string error;
            if (!publish(result.config, error)) {
                report(path + ": not reloaded: " + error);
                continue;
            }
            report(path + ": reloaded");
            // New listeners are said as at start; removed ones too.
            const auto urlsAfter = endpoints();
            auto listed = [](const std::vector<Endpoint>& list, const Endpoint& e) {
                return std::any_of(list.begin(), list.end(),
                                   [&](const Endpoint& o) { return o.url() == e.url(); });
            };
            for (const auto& e : urlsAfter)
                if (!listed(urlsBefore, e)) report("Listening on " + e.url());
            for (const auto& e : urlsBefore)
                if (!listed(urlsAfter, e)) report("Stopped listening on " + e.url());
            // These are fixed for the life of the process; say so instead of ignoring them quietly.
            if (before && before->workers != result.config->workers)
                report(path + ": note: 'workers' changes take effect after a restart");
            if (before && (before->accessLog.format != result.config->accessLog.format ||
                           before->accessLog.path != result.config->accessLog.path))
                report(path + ": note: 'access_log' changes take effect after a restart");
        }
    });
}

} // namespace portico::engine

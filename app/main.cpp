// The `portico` executable: `serve`, `bench`, `cert`, `har`, `replay`, `gui` (the default), `version`,
// `help`.
#include "browser_launch.h"
#include "cli_checks.h"
#include "commands.h"

#include <portico/config/network.h>
#include <portico/engine/engine.h>
#include <portico/tls/local_ca.h>
#include <portico/validate/load.h>

#include <CLI/CLI.hpp>

#ifdef PORTICO_HAVE_UI
#include <gui.h>
#endif

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using portico::config::Config;

// Exit codes (docs/cli.md): 0 ok, 1 bad config or runtime failure, 2 bad command line.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct ServeOptions {
    std::string dir;
    std::string config;
    std::string host;
    int port = -1;
    int httpsPort = -1;
    std::string cert;
    std::string key;
    unsigned workers = 0;
    bool test = false;
    bool noReload = false;
    bool noLiveReload = false;
    std::string accessLog;
    std::string record;
    bool serverTiming = false;
    bool quiet = false;
    bool forwardProxy = false; // `portico proxy`: a forward proxy listener on 127.0.0.1
    bool noIntercept = false;  // `portico proxy --no-intercept`: CONNECT tunnels pass bytes unread
    std::vector<std::string> tlsPassthrough;
    std::string upstreamCaCert;
    bool upstreamInsecure = false;
    std::string maxBodyBytes;         // `portico proxy --max-body-bytes SIZE` (limits.max_body_bytes)
    std::vector<std::string> allow;   // `portico proxy --allow CIDR` (forward_proxy.allow)
    std::vector<std::string> resolve; // `--resolve NAME=ADDR` (hosts:)
};

// A YAML double-quoted scalar holding `text`.
std::string yamlQuoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    return out + "\"";
}

// `portico proxy --host ADDR`: "" when ADDR may be used (loopback, or any address with --allow),
// else the usage error, which names the flag to add.
std::string proxyHostProblem(const ServeOptions& o) {
    if (o.host.empty() || o.host == "localhost") return {};
    std::string error;
    auto n = portico::config::parseNetwork(o.host, error);
    if (!n || o.host.find('/') != std::string::npos)
        return "--host '" + o.host + "': expected an IP address (127.0.0.1, 0.0.0.0, ::) or localhost";
    bool loopback = false;
    for (const auto& l : portico::config::loopbackNetworks())
        loopback = loopback || portico::config::contains(l, n->bytes.data(), n->v6);
    if (loopback || !o.allow.empty()) return {};
    return "--host " + o.host +
           " is not a loopback address: add --allow CIDR (repeatable) for the client networks that may "
           "use the proxy, e.g. --allow 192.168.1.0/24 (never an open proxy)";
}

// `portico proxy`'s config: one forward proxy listener on `--host` (127.0.0.1 by default):`port`,
// admitting `--allow`'s networks (loopback clients without it); a request addressed to the proxy
// itself (origin-form) gets a page saying how to use it.
std::shared_ptr<const Config> forwardProxyConfig(const ServeOptions& o, std::uint16_t port,
                                                 std::string& error) {
    const std::string host = o.host.empty() ? "127.0.0.1" : o.host;
    const std::string address =
        (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    std::string proxy = std::string("{intercept: ") + (o.noIntercept ? "false" : "true");
    if (!o.allow.empty()) {
        proxy += ", allow: [";
        for (std::size_t i = 0; i < o.allow.size(); ++i)
            proxy += (i ? ", " : "") + yamlQuoted(o.allow[i]);
        proxy += "]";
    }
    if (!o.tlsPassthrough.empty()) {
        proxy += ", tls_passthrough: [";
        for (std::size_t i = 0; i < o.tlsPassthrough.size(); ++i)
            proxy += (i ? ", " : "") + yamlQuoted(o.tlsPassthrough[i]);
        proxy += "]";
    }
    if (!o.upstreamCaCert.empty())
        proxy += ", upstream_cacert: " + yamlQuoted(std::filesystem::absolute(o.upstreamCaCert).string());
    if (o.upstreamInsecure) proxy += ", upstream_insecure: true";
    proxy += "}";
    const std::string limits = o.maxBodyBytes.empty()
                                   ? std::string()
                                   : "limits: {max_body_bytes: " + yamlQuoted(o.maxBodyBytes) + "}\n";
    const std::string yaml = limits + "listen: [{address: \"" + address + "\", forward_proxy: " + proxy +
                             "}]\n"
                             "vhosts:\n"
                             "  - routes:\n"
                             "      - path: /\n"
                             "        respond:\n"
                             "          body: |\n"
                             "            This is Portico's forward proxy. Point a client at it:\n"
                             "              export http_proxy=http://{{header.Host}} "
                             "https_proxy=http://{{header.Host}}\n"
                             "              curl -x http://{{header.Host}} http://example.com/\n";
    auto result = portico::config::loadConfigText(yaml, "(portico proxy)", "");
    if (!result.ok()) {
        error = result.errors.front().toString();
        return nullptr;
    }
    return result.config;
}

// `portico proxy env`: shell exports that point a terminal's clients at the proxy and make them
// trust the local CA (a bundle of the system's roots and the CA, rewritten when either changed).
int proxyEnv(int port) {
    std::string error;
    const auto text = portico::launch::proxyEnvText(port, portico::tls::defaultDataDir(), error);
    if (!text) {
        std::cerr << "portico: " << error << "\n";
        return kExitFailure;
    }
    std::cout << *text;
    return kExitOk;
}

std::mutex g_outMutex;
// For a listener on every address (0.0.0.0, ::): the URLs of this machine's own addresses, loopback
// first, since "http://0.0.0.0:8080/" is not a URL a browser on another machine can use.
std::vector<std::string> reachableUrls(const portico::engine::Endpoint& ep) {
    std::vector<std::string> out;
    const bool any4 = ep.host == "0.0.0.0", any6 = ep.host == "::";
    if (!any4 && !any6) return out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    std::vector<std::string> loopback, other;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
        const int family = i->ifa_addr->sa_family;
        // An IPv6 wildcard listener also takes IPv4 unless IPV6_V6ONLY: Portico sets it.
        if ((family != AF_INET || !any4) && (family != AF_INET6 || !any6)) continue;
        char text[INET6_ADDRSTRLEN] = {};
        const void* addr =
            family == AF_INET
                ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr);
        if (!inet_ntop(family, addr, text, sizeof text)) continue;
        if (family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr))
            continue; // needs a zone id in a URL
        portico::engine::Endpoint one = ep;
        one.host = text;
        (i->ifa_flags & IFF_LOOPBACK ? loopback : other).push_back(one.url());
    }
    freeifaddrs(list);
    out = std::move(loopback);
    out.insert(out.end(), other.begin(), other.end());
    return out;
}

void report(const std::string& line) {
    std::lock_guard lock(g_outMutex);
    std::cerr << line << std::endl;
}

// "14:02:09 live reload: /app.css changed; 1 page updated in place" — one line per batch.
std::string liveReloadLine(const std::vector<std::string>& paths, bool stylesheetsOnly, std::size_t pages) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char when[16];
    std::strftime(when, sizeof when, "%H:%M:%S", &tm);
    std::string line = std::string(when) + " live reload: ";
    for (std::size_t i = 0; i < paths.size() && i < 3; ++i)
        line += (i ? ", " : "") + paths[i];
    if (paths.size() > 3) line += " and " + std::to_string(paths.size() - 3) + " more";
    line += " changed; ";
    if (pages == 0)
        line += "no page is open";
    else
        line += std::to_string(pages) + (pages == 1 ? " page " : " pages ") +
                (stylesheetsOnly ? "updated in place" : "reloaded");
    return line;
}

// The command line's overrides of a config (from a file or built for a folder). Applied at start
// and again to each reloaded file, so that `--port`, `--record` and the rest survive a reload.
void applyOverrides(const ServeOptions& o, bool fromDir, bool requestLines, Config& c) {
    if (!fromDir && (o.port >= 0 || !o.host.empty())) {
        portico::config::Listen l;
        l.host = o.host.empty() ? "localhost" : o.host;
        l.port = o.port >= 0 ? static_cast<std::uint16_t>(o.port) : 8080;
        c.listen = {l};
    }
    if (o.httpsPort >= 0) {
        // An HTTPS listener beside the cleartext one: the local CA's certificates unless the
        // user brings their own (checked by serve() before the first start).
        portico::config::Listen l;
        l.host = o.host.empty() ? "localhost" : o.host;
        l.port = static_cast<std::uint16_t>(o.httpsPort);
        l.tls = portico::config::ListenTls{};
        if (o.cert.empty()) {
            l.tls->autoCa = true;
        } else {
            l.tls->files.cert = std::filesystem::absolute(o.cert).string();
            l.tls->files.key = std::filesystem::absolute(o.key).string();
        }
        c.listen.push_back(l);
    }
    if (o.workers) c.workers = o.workers;
    if (o.noLiveReload)
        for (auto& vh : c.vhosts)
            vh.liveReload = false;
    if (!o.accessLog.empty()) {
        c.accessLog.format = portico::config::AccessLog::Format::Combined;
        c.accessLog.path = o.accessLog;
    } else if (requestLines && c.accessLog.format == portico::config::AccessLog::Format::Off) {
        c.accessLog.format = portico::config::AccessLog::Format::Dev;
        c.accessLog.path = "-";
    }
    if (!o.record.empty()) {
        c.capture.enabled = true;
        c.capture.store = std::filesystem::absolute(o.record).string();
    }
    if (o.serverTiming) {
        c.capture.enabled = true;
        c.capture.serverTiming = true;
    }
    // --resolve NAME=ADDR (checked by the parser): before the file's `hosts:`, replacing its entry
    // for the same name.
    portico::config::HostOverrides hosts;
    for (const std::string& mapping : o.resolve) {
        const auto split = portico::app::splitHostMapping(mapping);
        const std::string& name = split.first; // not a structured binding: clang 14 cannot capture those
        std::erase_if(hosts, [&name](const auto& h) { return h.name == name; });
        hosts.push_back({name, split.second, {}});
    }
    for (auto& h : c.hosts)
        if (std::none_of(hosts.begin(), hosts.end(), [&h](const auto& mine) { return mine.name == h.name; }))
            hosts.push_back(std::move(h));
    c.hosts = std::move(hosts);
}

int serve(const ServeOptions& o) {
    std::shared_ptr<const Config> cfg;
    bool fromDir = o.config.empty();
    // Without an explicit port: 8080 (a folder) or 8000 (the forward proxy), moving on when taken.
    const std::uint16_t defaultPort = o.forwardProxy ? 8000 : 8080;
    if (o.forwardProxy) {
        std::string error;
        cfg = forwardProxyConfig(o, o.port >= 0 ? static_cast<std::uint16_t>(o.port) : defaultPort, error);
        if (!cfg) {
            std::cerr << "portico: " << error << "\n";
            return kExitFailure;
        }
    } else if (!fromDir) {
        auto result = portico::config::loadConfigFile(o.config);
        if (!result.ok()) {
            for (const auto& e : result.errors)
                std::cerr << e.toString() << "\n";
            std::cerr << o.config << ": " << result.errors.size() << " error(s); not started\n";
            return kExitFailure;
        }
        cfg = result.config;
        if (o.test) {
            // What `portico serve` would refuse at start (it has no Paused queue).
            if (const std::string refused = portico::engine::Engine::breakpointsRefused(*cfg);
                !refused.empty()) {
                std::cerr << refused << "\n"
                          << o.config << ": not startable by portico serve (breakpoints)\n";
                return kExitFailure;
            }
            std::cout << o.config << ": ok (" << cfg->vhosts.size() << " vhost(s))\n";
            return kExitOk;
        }
    } else {
        std::string dir = o.dir.empty() ? "." : o.dir;
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            std::cerr << dir << ": not a directory\n";
            return kExitFailure;
        }
        if (o.test) {
            std::cout << dir << ": ok\n";
            return kExitOk;
        }
        cfg = portico::config::configForDirectory(std::filesystem::canonical(dir).string(),
                                                  o.host.empty() ? "localhost" : o.host,
                                                  o.port >= 0 ? static_cast<std::uint16_t>(o.port) : 8080);
    }
    // Command-line overrides of the file's settings, applied again to each reloaded file.
    if (o.httpsPort >= 0 && !o.cert.empty()) {
        if (std::string problem = portico::tls::checkCertKeyPair(o.cert, o.key); !problem.empty()) {
            std::cerr << "portico: " << problem << "\n";
            return kExitFailure;
        }
    }
    // On a terminal, one line per exchange unless --quiet or the config or --access-log says
    // where the log goes (like Vite's and `python3 -m http.server`'s request lines).
    const bool requestLines = !o.quiet && o.accessLog.empty() && isatty(STDOUT_FILENO) == 1;
    const auto overrides = [&o, fromDir, requestLines](Config& c) {
        applyOverrides(o, fromDir, requestLines, c);
    };
    auto mutableCfg = std::make_shared<Config>(*cfg);
    overrides(*mutableCfg);
    cfg = mutableCfg;

    // Signals are taken by this thread only (sigwait), never by the workers.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    portico::engine::Engine engine;
    if (!o.quiet)
        engine.setLiveReloadObserver(
            [](const std::vector<std::string>& paths, bool stylesheetsOnly, std::size_t pages) {
                std::lock_guard lock(g_outMutex);
                std::cout << liveReloadLine(paths, stylesheetsOnly, pages) << std::endl;
            });
    std::string error;
    bool started = engine.start(cfg, error);
    // Like Vite: `portico serve DIR` without an explicit port moves on when 8080 is taken, and says so.
    const std::string firstError = error;
    for (std::uint16_t p = defaultPort + 1; !started && fromDir && o.port < 0 && p < defaultPort + 20; ++p) {
        auto retry = std::make_shared<Config>(*cfg);
        retry->listen[0].port = p;
        cfg = retry;
        started = engine.start(cfg, error);
        if (started)
            std::cerr << "Port " << defaultPort << " is in use (" << firstError << "); serving on " << p
                      << " instead\n";
    }
    if (!started) {
        std::cerr << "portico: cannot start: " << error << "\n";
        return kExitFailure;
    }
    {
        std::lock_guard lock(g_outMutex);
        std::cout << "Portico " << portico::engine::version() << " "
                  << (o.forwardProxy ? std::string("forward proxy")
                      : fromDir      ? "serving " + cfg->vhosts.front().root->root
                                     : "serving " + o.config)
                  << " (" << engine.workerCount() << (engine.workerCount() == 1 ? " worker" : " workers")
                  << ")\n";
        for (const auto& ep : engine.endpoints()) {
            std::cout << "Listening on " << ep.url()
                      << (ep.host == "localhost" && ep.note.empty() ? " (127.0.0.1 and [::1])" : "") << "\n";
            if (!ep.note.empty()) std::cerr << "Note: " << ep.note << "\n";
            for (const auto& url : reachableUrls(ep))
                std::cout << "  reachable at " << url << "\n";
            if (!ep.loopback())
                std::cerr << "Warning: " << ep.url()
                          << " is not a loopback address: other machines on the network can reach this "
                             "server and the files it serves.\n";
        }
        if (o.forwardProxy && !engine.endpoints().empty()) {
            const std::string proxyUrl = engine.endpoints().front().url();
            std::cout << "Use it: export http_proxy=" << proxyUrl << " https_proxy=" << proxyUrl << "\n";
            if (!o.allow.empty()) {
                std::cout << "Clients allowed (--allow; others get 403):";
                for (const auto& network : o.allow)
                    std::cout << " " << network;
                std::cout << "\n";
            }
            if (o.noIntercept)
                std::cout << "https:// goes through CONNECT tunnels, passed on unread (--no-intercept)\n";
            else
                std::cout << "https:// is intercepted: clients must trust the local development CA ("
                          << (portico::tls::defaultDataDir() / "ca" / "ca.crt").string()
                          << "; `portico cert install` adds it to the system store)\n";
            if (o.upstreamInsecure)
                std::cerr << "Warning: --upstream-insecure: origins' certificates are NOT verified; anyone "
                             "on the path to them can read and change this traffic.\n";
        }
        if (std::any_of(cfg->listen.begin(), cfg->listen.end(),
                        [](const auto& l) { return l.tls && l.tls->autoCa; }))
            std::cout << "HTTPS certificates come from the local development CA in "
                      << (portico::tls::defaultDataDir() / "ca").string()
                      << "; trust it once with `portico cert install`.\n";
        std::cout << "Press Ctrl+C to stop." << std::endl;
    }
    if (!fromDir && !o.noReload)
        engine.watchConfigFile(o.config, report, std::chrono::milliseconds(500), overrides);

    int sig = 0;
    sigwait(&signals, &sig);
    report(std::string("portico: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
           ": stopping; finishing in-flight requests");
    engine.stop();
    auto c = engine.counters();
    report("portico: stopped after " + std::to_string(c.requests) + " request(s), " +
           std::to_string(c.parseErrors) + " malformed");
    if (!o.record.empty())
        report("portico: recorded " + std::to_string(engine.capturedRecords()) + " exchange(s) to " +
               o.record +
               (engine.droppedRecords()
                    ? " (" + std::to_string(engine.droppedRecords()) + " dropped: rings full)"
                    : ""));
    return kExitOk;
}

// `portico proxy chromium`: the URL, the browser and the arguments after `--`.
struct ChromiumOptions {
    std::string url;
    std::string browser;
    std::vector<std::string> extra;
};

// Something accepts connections on 127.0.0.1:`port` (a proxy started earlier, in another terminal).
bool listensOnLoopback(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return connected;
}

// Chromium or Chrome through the intercepting proxy on 127.0.0.1:PORT, with a throw-away profile
// and the local CA trusted by its key for this browser only. Starts the proxy in this process when
// nothing listens there (stopped when the browser exits); Ctrl+C stops both.
int proxyChromium(const ServeOptions& o, const ChromiumOptions& c) {
    std::string error;
    const std::string browser = portico::launch::findChromium(c.browser, error);
    if (browser.empty()) {
        std::cerr << "portico: " << error << "\n";
        return kExitFailure;
    }
    if (portico::launch::isUnsupportedBrowser(browser)) {
        std::cerr << "portico proxy chromium: " << browser
                  << ": Chromium/Chrome only (for other clients: `portico proxy` and `portico proxy env`)\n";
        return kExitUsage;
    }
    // Signals (and the browser's exit) are taken by this thread only, never by the workers.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::uint16_t port = o.port >= 0 ? static_cast<std::uint16_t>(o.port) : 8000;
    portico::engine::Engine engine;
    const bool ownProxy = port == 0 || !listensOnLoopback(port);
    if (ownProxy) {
        auto cfg = forwardProxyConfig(o, port, error);
        if (!cfg) {
            std::cerr << "portico: " << error << "\n";
            return kExitFailure;
        }
        const bool requestLines = !o.quiet && o.accessLog.empty() && isatty(STDOUT_FILENO) == 1;
        auto withOverrides = std::make_shared<Config>(*cfg);
        applyOverrides(o, true, requestLines, *withOverrides);
        if (!engine.start(withOverrides, error) || engine.endpoints().empty()) {
            std::cerr << "portico: cannot start the proxy: " << error << "\n";
            return kExitFailure;
        }
        port = engine.endpoints().front().port;
        report(
            "Portico forward proxy on http://127.0.0.1:" + std::to_string(port) + "/ (" +
            (o.noIntercept ? std::string("https:// tunnelled unread") : std::string("https:// intercepted")) +
            "); it stops when the browser exits");
        if (o.upstreamInsecure)
            report("Warning: --upstream-insecure: origins' certificates are NOT verified; anyone on the path "
                   "to them can read and change this traffic.");
    } else {
        report("A proxy already listens on 127.0.0.1:" + std::to_string(port) +
               ": the browser goes through it (it must intercept with the local CA in " +
               (portico::tls::defaultDataDir() / "ca").string() + ")");
        if (!o.record.empty() || !o.accessLog.empty() || !o.upstreamCaCert.empty() || o.upstreamInsecure ||
            o.noIntercept || !o.tlsPassthrough.empty() || !o.maxBodyBytes.empty())
            report("Note: the proxy options apply only to a proxy started here; they are ignored");
    }
    auto launch = portico::launch::prepareChromium(browser, port, c.extra, c.url,
                                                   portico::tls::defaultDataDir(), error);
    if (!launch) {
        std::cerr << "portico: " << error << "\n";
        return kExitFailure;
    }
    report("Launching " + launch->program + " with a throw-away profile (" + launch->profileDir +
           ") that trusts the local CA's key (sha256/" + launch->spki + ")");

    // The browser gets default signal handling and an empty mask (not this process's ignored
    // SIGPIPE and blocked SIGINT/SIGTERM/SIGCHLD).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD})
        sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> argvOut;
    argvOut.push_back(launch->program.data());
    for (auto& a : launch->args)
        argvOut.push_back(a.data());
    argvOut.push_back(nullptr);
    pid_t pid = 0;
    // Nothing of this process's but stdin, stdout and stderr: the engine's listening sockets in
    // the browser would keep the proxy's port bound after the proxy stopped.
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addclosefrom_np(&files, 3);
    const int spawned = posix_spawn(&pid, launch->program.c_str(), &files, &attr, argvOut.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    if (spawned != 0) {
        std::cerr << "portico: cannot start " << launch->program << ": " << std::strerror(spawned) << "\n";
        portico::launch::removeProfileDir(launch->profileDir);
        return kExitFailure;
    }

    int status = 0;
    bool interrupted = false;
    for (;;) {
        int sig = 0;
        sigwait(&signals, &sig);
        if (sig == SIGCHLD) {
            if (waitpid(pid, &status, WNOHANG) == pid) break;
            continue;
        }
        // Ctrl+C or SIGTERM: the browser first (5 s to close), then the proxy.
        interrupted = true;
        report(std::string("portico: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
               ": closing the browser and stopping the proxy");
        ::kill(pid, SIGTERM);
        sigset_t child;
        sigemptyset(&child);
        sigaddset(&child, SIGCHLD);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        bool gone = false;
        while (!gone && std::chrono::steady_clock::now() < deadline) {
            gone = waitpid(pid, &status, WNOHANG) == pid;
            const timespec tick{0, 100 * 1000 * 1000};
            if (!gone) sigtimedwait(&child, nullptr, &tick);
        }
        if (!gone) {
            ::kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        break;
    }
    if (!portico::launch::removeProfileDir(launch->profileDir))
        report("portico: could not remove the browser's profile " + launch->profileDir);
    if (ownProxy) {
        engine.stop();
        if (!o.record.empty())
            report("portico: recorded " + std::to_string(engine.capturedRecords()) + " exchange(s) to " +
                   o.record);
    }
    if (interrupted) return kExitOk;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    report("portico: the browser was ended by signal " + std::to_string(WTERMSIG(status)));
    return kExitFailure;
}

} // namespace

int main(int argc, char** argv) {
    // OpenSSL writes sockets with write(): a peer that closed first (a TLS client gone before the
    // server's session tickets or close_notify) must be an EPIPE, not the end of the process.
    std::signal(SIGPIPE, SIG_IGN);
    CLI::App app{"Portico: a desktop dev server and traffic inspector"};
    app.name("portico");
    app.require_subcommand(0, 1);
    app.set_version_flag("-V,--version", std::string("portico ") + portico::engine::version());
    app.failure_message(portico::app::failureMessage);

    ServeOptions so;
    auto* serveCmd = app.add_subcommand("serve", "Serve a folder (no config needed) or a config file");
    serveCmd->add_option("dir", so.dir, "Folder to serve (default: the current folder)")
        ->check(portico::app::existingFolder());
    serveCmd->add_option("-c,--config", so.config, "YAML config file (watched and reloaded on change)")
        ->check(portico::app::existingFile());
    serveCmd->add_option("-p,--port", so.port, "Port to listen on (0 = any free port; default 8080)")
        ->check(portico::app::wholeNumber(0, 65535));
    serveCmd->add_option("-H,--host", so.host,
                         "Address to bind (default localhost: 127.0.0.1 and ::1; 0.0.0.0 or :: exposes it)");
    serveCmd->add_option("-w,--workers", so.workers, "Worker threads (default: one per core)")
        ->check(portico::app::wholeNumber(1, 256));
    serveCmd->add_option("--access-log", so.accessLog,
                         "Write a Combined Log Format access log to FILE (- = stdout)");
    auto* httpsOpt = serveCmd
                         ->add_option("--https-port", so.httpsPort,
                                      "Also serve HTTPS (h2 and HTTP/1.1) on this port (0 = any free port)")
                         ->check(portico::app::wholeNumber(0, 65535));
    auto* certOpt = serveCmd
                        ->add_option("--cert", so.cert,
                                     "Certificate chain (PEM) for --https-port; default: the local CA's")
                        ->check(portico::app::existingFile());
    auto* keyOpt = serveCmd->add_option("--key", so.key, "Private key (PEM) for --cert")
                       ->check(portico::app::existingFile());
    certOpt->needs(keyOpt)->needs(httpsOpt);
    keyOpt->needs(certOpt);
    serveCmd->add_flag("-t,--test", so.test, "Check the config (or folder) and exit: 0 valid, 1 invalid");
    serveCmd->add_flag("--no-reload", so.noReload, "Do not watch the config file");
    serveCmd->add_flag("--no-live-reload", so.noLiveReload,
                       "Turn live reload off (on by default when serving a folder; per vhost in a config)");
    serveCmd->add_flag("-q,--quiet", so.quiet,
                       "No request lines (printed on a terminal by default: time, method, path, status, "
                       "duration, size)");
    serveCmd->add_option("--record", so.record, "Capture every exchange into this SQLite session file");
    serveCmd->add_flag("--server-timing", so.serverTiming,
                       "Capture, and add a Server-Timing header to responses");
    serveCmd
        ->add_option("--resolve", so.resolve,
                     "Connect to upstreams named NAME at ADDR (NAME=ADDR, '*.' wildcards; like the config's "
                     "hosts:); repeatable")
        ->check(portico::app::hostMapping());

    ServeOptions po;
    po.forwardProxy = true;
    auto* proxyCmd = app.add_subcommand(
        "proxy", "Run a forward proxy on 127.0.0.1 for any client (http:// forwarded, https:// tunnelled)");
    // The proxy's options, on `portico proxy` and on `portico proxy chromium` (for the proxy it
    // starts when none listens yet).
    const auto addProxyOptions = [](CLI::App* cmd, ServeOptions& o) {
        cmd->add_option("-p,--port", o.port, "Port to listen on (0 = any free port; default 8000)")
            ->check(portico::app::wholeNumber(0, 65535));
        cmd->add_option("-w,--workers", o.workers, "Worker threads (default: one per core)")
            ->check(portico::app::wholeNumber(1, 256));
        cmd->add_option("--access-log", o.accessLog,
                        "Write a Combined Log Format access log to FILE (- = stdout)");
        cmd->add_flag("-q,--quiet", o.quiet, "No request lines");
        cmd->add_option("--record", o.record, "Capture every exchange into this SQLite session file");
        cmd->add_flag(
            "--no-intercept", o.noIntercept,
            "Pass https:// (CONNECT) tunnels on unread instead of decrypting them with the local CA");
        cmd->add_option("--tls-passthrough", o.tlsPassthrough,
                        "Never intercept hosts matching this glob (e.g. '*.bank.example'); repeatable");
        cmd->add_option("--upstream-cacert", o.upstreamCaCert,
                        "Also trust these CA certificates (PEM) for origins, beside the system store")
            ->check(portico::app::existingFile());
        cmd->add_flag("--upstream-insecure", o.upstreamInsecure,
                      "Do not verify origins' certificates (dangerous; for a local origin with a throw-away "
                      "certificate)");
        cmd->add_option("--max-body-bytes", o.maxBodyBytes,
                        "Largest request body passed on, e.g. 100MiB or 2GiB (default 10MiB: "
                        "limits.max_body_bytes)");
    };
    addProxyOptions(proxyCmd, po);
    proxyCmd->add_option("-H,--host", po.host,
                         "Address to bind (default 127.0.0.1); one that is not loopback needs --allow");
    proxyCmd
        ->add_option("--allow", po.allow,
                     "Client network that may use the proxy (CIDR or address, e.g. 192.168.1.0/24); "
                     "repeatable; default: loopback clients only")
        ->check(portico::app::clientNetwork());
    proxyCmd
        ->add_option("--resolve", po.resolve,
                     "Connect to origins named NAME at ADDR (NAME=ADDR, '*.' wildcards; like the config's "
                     "hosts:); repeatable")
        ->check(portico::app::hostMapping());
    int envPort = 8000;
    auto* proxyEnvCmd = proxyCmd->add_subcommand(
        "env", "Print shell exports that send a terminal's clients through the proxy and trust the local CA");
    proxyEnvCmd->add_option("-p,--port", envPort, "The proxy's port (default 8000)")
        ->check(portico::app::wholeNumber(1, 65535));
    ServeOptions chromiumProxy;
    chromiumProxy.forwardProxy = true;
    ChromiumOptions chromium;
    auto* chromiumCmd = proxyCmd->add_subcommand(
        "chromium", "Open Chromium or Chrome through the proxy (started here if none listens on the port), "
                    "trusting the local CA for that browser only; arguments after -- go to the browser");
    chromiumCmd->add_option("url", chromium.url, "Page to open (default: the browser's start page)");
    chromiumCmd->add_option(
        "--browser", chromium.browser,
        "Chromium or Chrome to run (default: $PORTICO_BROWSER, else chromium, "
        "chromium-browser, google-chrome or google-chrome-stable on PATH); Chromium/Chrome "
        "only");
    addProxyOptions(chromiumCmd, chromiumProxy);
    proxyCmd->require_subcommand(0, 1);

    auto certCmd = portico::app::addCertCommand(app);
    auto bench = portico::app::addBenchCommand(app);
    auto har = portico::app::addHarCommand(app);
    auto replay = portico::app::addReplayCommand(app);
#ifdef PORTICO_HAVE_UI
    portico::ui::GuiOptions guiOptions;
    auto* guiCmd = app.add_subcommand("gui", "Open the desktop app (the default without a subcommand)");
    guiCmd->add_option("project", guiOptions.project,
                       "Config file or folder (default: the last project, or the demo)");
    guiCmd->add_option("-c,--config", guiOptions.project, "Config file (same as the positional argument)");
    guiCmd->add_option("--screenshot", guiOptions.screenshot, "Render the window to this PNG file and exit");
    guiCmd->add_option(
        "--tab", guiOptions.tab,
        "Tab to show: sites, traffic, rules, inspector, load, suite, drilldown (a run's sampled requests), "
        "sample (one of them in the inspector), latency");
    guiCmd->add_option("--demo-traffic", guiOptions.demoTraffic,
                       "Before --screenshot, serve this many seconds of generated traffic");
    guiCmd->add_option("--measure-responsiveness", guiOptions.measureResponsiveness,
                       "Print the lateness of a 10 ms timer while a full-speed load test of this many "
                       "seconds runs against the in-process server, then exit");
#endif
    auto* versionCmd = app.add_subcommand("version", "Print the version");
    std::vector<std::string> helpTopic;
    auto* helpCmd =
        app.add_subcommand("help", "Show help for portico or a subcommand (e.g. help har export)");
    helpCmd->add_option("command", helpTopic, "Subcommand, and its subcommand");

    // dir and --config are mutually exclusive.
    serveCmd->get_option("dir")->excludes(serveCmd->get_option("--config"));

    // `portico proxy chromium ... -- ARGS`: what follows `--` is the browser's, never ours.
    std::vector<std::string> browserArgs;
    if (argc > 2 && std::string_view(argv[1]) == "proxy")
        for (int i = 2; i < argc; ++i) {
            if (std::string_view(argv[i]) != "--") continue;
            if (std::find_if(argv + 2, argv + i,
                             [](const char* a) { return std::string_view(a) == "chromium"; }) != argv + i) {
                browserArgs.assign(argv + i + 1, argv + argc);
                argc = i;
            }
            break;
        }

    // Before CLI11, whose words for these are "The following argument was not expected" and
    // "A subcommand is required".
    if (std::string problem = portico::app::subcommandProblem(app, argc, argv); !problem.empty()) {
        std::cerr << problem << "\n";
        return kExitUsage;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }
    if (proxyCmd->parsed() && proxyCmd->get_subcommands().empty()) {
        if (std::string problem = proxyHostProblem(po); !problem.empty()) {
            std::cerr << "portico proxy: " << problem << "\nRun 'portico help proxy' for usage.\n";
            return kExitUsage;
        }
    }
    // Test hook: with PORTICO_CHECK_ARGS set, stop once the command line parsed (exit 0; a bad one
    // exits 2 above). tst_docs_commands runs every command of the docs this way.
    if (const char* check = std::getenv("PORTICO_CHECK_ARGS"); check && *check) return kExitOk;

    if (versionCmd->parsed()) { // also -V, --version (CLI11 prints it)
        std::cout << "portico " << portico::engine::version() << "\n";
        return kExitOk;
    }
    if (serveCmd->parsed()) return serve(so);
    if (proxyEnvCmd->parsed()) return proxyEnv(envPort);
    if (chromiumCmd->parsed()) {
        chromium.extra = browserArgs;
        return proxyChromium(chromiumProxy, chromium);
    }
    if (proxyCmd->parsed()) return serve(po);
    if (certCmd.cmd->parsed()) return certCmd.run();
    if (bench.cmd->parsed()) return bench.run();
    if (har.cmd->parsed()) return har.run();
    if (replay.cmd->parsed()) return replay.run();
    if (helpCmd->parsed()) {
        std::string error;
        CLI::App* topic = portico::app::helpTopic(app, helpTopic, error);
        if (!topic) {
            std::cerr << error << "\n";
            return kExitUsage;
        }
        // app.help() would describe the selected subcommand ("help" itself); format the topic.
        std::string name = "portico";
        for (const auto& word : helpTopic)
            name += " " + word;
        std::cout << app.get_formatter()->make_help(topic, name, CLI::AppFormatMode::Normal);
        return kExitOk;
    }
#ifdef PORTICO_HAVE_UI
    // No subcommand (or `gui`): the desktop app.
    return portico::ui::runGui(argc > 1 && guiCmd->parsed() ? 1 : argc, argv, guiOptions);
#else
    std::cout << app.help();
    return kExitOk;
#endif
}

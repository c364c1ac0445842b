// The `portico` executable: `serve`, `bench`, `cert`, `har`, `replay`, `gui` (the default), `version`,
// `help`.
#include "cli_checks.h"
#include "commands.h"

#include <portico/engine/engine.h>
#include <portico/tls/local_ca.h>
#include <portico/validate/load.h>

#include <CLI/CLI.hpp>

#ifdef PORTICO_HAVE_UI
#include <gui.h>
#endif

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

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
    std::string maxBodyBytes; // `portico proxy --max-body-bytes SIZE` (limits.max_body_bytes)
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

// `portico proxy`'s config: one forward proxy listener on 127.0.0.1:`port`; a request addressed to
// the proxy itself (origin-form) gets a page saying how to use it.
std::shared_ptr<const Config> forwardProxyConfig(const ServeOptions& o, std::uint16_t port,
                                                 std::string& error) {
    const std::string address = "127.0.0.1:" + std::to_string(port);
    std::string proxy = std::string("{intercept: ") + (o.noIntercept ? "false" : "true");
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
    auto ca = portico::tls::LocalCa::openOrCreate(portico::tls::defaultDataDir(), error);
    if (!ca) {
        std::cerr << "portico: local CA: " << error << "\n";
        return kExitFailure;
    }
    std::string bundle;
    for (const char* roots : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
        std::ifstream in(roots, std::ios::binary);
        if (!in) continue;
        bundle.assign(std::istreambuf_iterator<char>(in), {});
        break;
    }
    if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
    bundle += ca->certPem();
    const std::filesystem::path bundlePath = ca->certPath().parent_path() / "bundle.pem";
    std::string old;
    if (std::ifstream in(bundlePath, std::ios::binary); in)
        old.assign(std::istreambuf_iterator<char>(in), {});
    if (old != bundle) {
        const std::filesystem::path tmp = bundlePath.string() + ".tmp";
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << bundle;
        out.close();
        std::error_code ec;
        if (!out || (std::filesystem::rename(tmp, bundlePath, ec), ec)) {
            std::cerr << "portico: cannot write " << bundlePath.string() << "\n";
            return kExitFailure;
        }
    }
    const std::string proxy = "http://127.0.0.1:" + std::to_string(port);
    auto shellQuoted = [](const std::string& text) {
        std::string out = "'";
        for (char ch : text)
            out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        return out + "'";
    };
    const std::string b = shellQuoted(bundlePath.string());
    const std::string c = shellQuoted(ca->certPath().string());
    std::cout << "# Portico's forward proxy on " << proxy << " (start it with `portico proxy --port " << port
              << "`), and its local CA trusted.\n"
              << "# Apply with: eval \"$(portico proxy env)\"\n"
              << "export HTTP_PROXY=" << proxy << " HTTPS_PROXY=" << proxy << " http_proxy=" << proxy
              << " https_proxy=" << proxy << "\n"
              << "export NO_PROXY= no_proxy=   # nothing bypasses the proxy, localhost included\n"
              << "export SSL_CERT_FILE=" << b << " CURL_CA_BUNDLE=" << b << " REQUESTS_CA_BUNDLE=" << b
              << " GIT_SSL_CAINFO=" << b << "\n"
              << "export NODE_EXTRA_CA_CERTS=" << c << "\n";
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

    ServeOptions po;
    po.forwardProxy = true;
    auto* proxyCmd = app.add_subcommand(
        "proxy", "Run a forward proxy on 127.0.0.1 for any client (http:// forwarded, https:// tunnelled)");
    proxyCmd->add_option("-p,--port", po.port, "Port to listen on (0 = any free port; default 8000)")
        ->check(portico::app::wholeNumber(0, 65535));
    proxyCmd->add_option("-w,--workers", po.workers, "Worker threads (default: one per core)")
        ->check(portico::app::wholeNumber(1, 256));
    proxyCmd->add_option("--access-log", po.accessLog,
                         "Write a Combined Log Format access log to FILE (- = stdout)");
    proxyCmd->add_flag("-q,--quiet", po.quiet, "No request lines");
    proxyCmd->add_option("--record", po.record, "Capture every exchange into this SQLite session file");
    proxyCmd->add_flag(
        "--no-intercept", po.noIntercept,
        "Pass https:// (CONNECT) tunnels on unread instead of decrypting them with the local CA");
    proxyCmd->add_option("--tls-passthrough", po.tlsPassthrough,
                         "Never intercept hosts matching this glob (e.g. '*.bank.example'); repeatable");
    proxyCmd
        ->add_option("--upstream-cacert", po.upstreamCaCert,
                     "Also trust these CA certificates (PEM) for origins, beside the system store")
        ->check(portico::app::existingFile());
    proxyCmd->add_flag(
        "--upstream-insecure", po.upstreamInsecure,
        "Do not verify origins' certificates (dangerous; for a local origin with a throw-away certificate)");
    proxyCmd->add_option(
        "--max-body-bytes", po.maxBodyBytes,
        "Largest request body passed on, e.g. 100MiB or 2GiB (default 10MiB: limits.max_body_bytes)");
    int envPort = 8000;
    auto* proxyEnvCmd = proxyCmd->add_subcommand(
        "env", "Print shell exports that send a terminal's clients through the proxy and trust the local CA");
    proxyEnvCmd->add_option("-p,--port", envPort, "The proxy's port (default 8000)")
        ->check(portico::app::wholeNumber(1, 65535));
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
        "Tab to show: sites, traffic, inspector, load, suite, drilldown (a run's sampled requests), "
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
    // Test hook: with PORTICO_CHECK_ARGS set, stop once the command line parsed (exit 0; a bad one
    // exits 2 above). tst_docs_commands runs every command of the docs this way.
    if (const char* check = std::getenv("PORTICO_CHECK_ARGS"); check && *check) return kExitOk;

    if (versionCmd->parsed()) { // also -V, --version (CLI11 prints it)
        std::cout << "portico " << portico::engine::version() << "\n";
        return kExitOk;
    }
    if (serveCmd->parsed()) return serve(so);
    if (proxyEnvCmd->parsed()) return proxyEnv(envPort);
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

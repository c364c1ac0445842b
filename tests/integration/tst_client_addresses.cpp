// Names with several addresses, as a stock Debian's `localhost` ([::1] then 127.0.0.1): every client
// (load generator, replay, reverse-proxy HTTP/1.1 and h2c upstreams) tries each address in order and
// reports every failure; a `localhost` listener accepts on both families, and says so when ::1 is
// missing. `localhost` must resolve to ::1 then 127.0.0.1, as on a stock Debian; where the machine's
// /etc/hosts says otherwise, the suite runs in a private mount namespace whose /etc/hosts does
// (root only: CI runs as root).
#include "client/connect.h"
#include "test_support.h"

#include <portico/capture/replay.h>
#include <portico/engine/engine.h>
#include <portico/load/runner.h>
#include <portico/validate/load.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/v6_only.hpp>

#include <QCoreApplication>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <fstream>

#include <netdb.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

using namespace portico;
using tcp = boost::asio::ip::tcp;

namespace {

// Set by main() before Qt starts threads: empty when the private /etc/hosts is in place.
std::string g_hostsProblem = "not attempted";

// The order getaddrinfo gives for `name` ("::1 127.0.0.1").
std::string addressesOf(const char* name) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(name, "80", &hints, &res) != 0) return {};
    std::string out;
    char text[NI_MAXHOST];
    for (addrinfo* a = res; a; a = a->ai_next)
        if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0)
            out += (out.empty() ? "" : " ") + std::string(text);
    ::freeaddrinfo(res);
    return out;
}

void privateHosts() {
    if (addressesOf("localhost") == "::1 127.0.0.1") {
        g_hostsProblem.clear(); // a stock Debian /etc/hosts: nothing to change
        return;
    }
    char path[] = "/tmp/portico-hosts-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return void(g_hostsProblem = "mkstemp failed");
    const std::string hosts = "::1\tlocalhost\n127.0.0.1\tlocalhost\n";
    const bool written = ::write(fd, hosts.data(), hosts.size()) == static_cast<ssize_t>(hosts.size());
    ::close(fd);
    if (!written) return void(g_hostsProblem = "cannot write the hosts file");
    if (::unshare(CLONE_NEWNS) != 0)
        g_hostsProblem = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) + " (needs root)";
    else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
             ::mount(path, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0)
        g_hostsProblem = std::string("mount --bind over /etc/hosts: ") + std::strerror(errno);
    else if (addressesOf("localhost") != "::1 127.0.0.1")
        g_hostsProblem = "localhost resolves to '" + addressesOf("localhost") + "'";
    else
        g_hostsProblem.clear();
    ::unlink(path);
}

// A listener on one literal address and port 0 (the test's stand-in for a server of one family).
struct OneFamily {
    explicit OneFamily(const char* host) {
        boost::system::error_code ec;
        const auto a = boost::asio::ip::make_address(host, ec);
        acceptor.open(a.is_v6() ? tcp::v6() : tcp::v4());
        if (a.is_v6()) acceptor.set_option(boost::asio::ip::v6_only(true));
        acceptor.bind(tcp::endpoint(a, 0));
        acceptor.listen();
        port = acceptor.local_endpoint().port();
    }
    boost::asio::io_context io;
    tcp::acceptor acceptor{io};
    std::uint16_t port = 0;
};

std::shared_ptr<const config::Config> loadYaml(const std::string& yaml, const QTemporaryDir& dir) {
    auto r = config::loadConfigText(yaml, "t.yaml", dir.path().toStdString());
    if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
    return r.ok() ? r.config : nullptr;
}

// An engine that answers GET /who with "up" on `listen` (e.g. "127.0.0.1:0", "[::1]:0").
std::unique_ptr<engine::Engine> upstream(const std::string& listen, const QTemporaryDir& dir) {
    auto cfg = loadYaml("listen: ['" + listen +
                            "']\nvhosts:\n  - names: [up]\n    default: true\n    routes:\n"
                            "      - path: /who\n        respond: {body: up}\n",
                        dir);
    if (!cfg) return nullptr;
    auto e = std::make_unique<engine::Engine>();
    std::string error;
    if (!e->start(cfg, error)) {
        qWarning() << error.c_str();
        return nullptr;
    }
    return e;
}

} // namespace

// QSKIP returns from the calling function: a macro, so that it ends the test function itself.
#define NEED_DUAL_LOCALHOST()                                                                                \
    do {                                                                                                     \
        if (!g_hostsProblem.empty())                                                                         \
            QSKIP(("localhost does not resolve to ::1 then 127.0.0.1 and no private /etc/hosts: " +          \
                   g_hostsProblem)                                                                           \
                      .c_str());                                                                             \
    } while (false)

class TestClientAddresses : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    // Load generator, replay and the reverse proxy (HTTP/1.1 and h2c upstreams) against a server of
    // one family reached by a name whose other address refuses.
    void everyClientReaches(const std::string& listen, const char* expectAddress) {
        auto up = upstream(listen, dir_);
        QVERIFY(up);
        const std::uint16_t port = up->endpoints().front().port;
        for (const char* name : {"localhost"}) {
            const std::string origin = std::string("http://") + name + ":" + std::to_string(port);

            load::Options o;
            load::RequestSpec spec;
            spec.url = origin + "/who";
            o.requests.push_back(spec);
            o.connections = 2;
            o.count = 20;
            auto r = load::run(o);
            QVERIFY2(r.ok(), r.error.c_str());
            QCOMPARE(r.statuses[200], std::uint64_t(20));
            QCOMPARE(r.address, std::string(expectAddress) + ":" + std::to_string(port));

            capture::Exchange e;
            e.method = "GET";
            e.scheme = "http";
            e.authority = "up";
            e.target = "/who";
            e.requestHeaders = {{"Host", "up"}};
            capture::ReplayOptions ro;
            ro.baseUrl = origin;
            ro.timeout = std::chrono::milliseconds(5000);
            auto rr = capture::replay(e, ro);
            QVERIFY2(rr.ok(), rr.error.c_str());
            QCOMPARE(rr.exchange.status, 200);
            QCOMPARE(rr.exchange.responseBody, std::string("up"));
        }

        auto front = loadYaml("listen: ['127.0.0.1:0']\nvhosts:\n  - names: [front]\n    default: true\n"
                              "    routes:\n"
                              "      - path: /h1/*\n        proxy: {upstream: 'http://localhost:" +
                                  std::to_string(port) +
                                  "', strip_prefix: /h1}\n"
                                  "      - path: /h2c/*\n        proxy: {upstream: 'h2c://localhost:" +
                                  std::to_string(port) + "', strip_prefix: /h2c}\n",
                              dir_);
        QVERIFY(front);
        engine::Engine proxy;
        std::string error;
        QVERIFY2(proxy.start(front, error), error.c_str());
        const QString base = QString("http://127.0.0.1:%1").arg(proxy.endpoints().front().port);
        for (const char* path : {"/h1/who", "/h2c/who"}) {
            auto reply = test::curlFetch({base + path});
            QVERIFY2(reply.status == 200, (QByteArray(path) + ": " + reply.err + reply.body).constData());
            QCOMPARE(reply.body, QByteArray("up"));
        }
    }

private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    // The shared connect routine, with literal addresses (no name resolution needed).
    void connectFdTriesEachAddressInOrder() {
        OneFamily v4("127.0.0.1");
        const std::vector<tcp::endpoint> eps{{boost::asio::ip::make_address("::1"), v4.port},
                                             {boost::asio::ip::make_address("127.0.0.1"), v4.port}};
        tcp::endpoint reached;
        std::string failures;
        const int fd = client::connectFd(eps, std::chrono::seconds(5), true, reached, failures);
        QVERIFY2(fd >= 0, failures.c_str());
        ::close(fd);
        QCOMPARE(reached, eps[1]);
        QCOMPARE(failures, "[::1]:" + std::to_string(v4.port) + ": Connection refused");
    }

    void connectFdReportsEveryFailure() {
        std::uint16_t port = 0;
        {
            OneFamily gone("127.0.0.1"); // a port that nothing listens on once this closes
            port = gone.port;
        }
        const std::vector<tcp::endpoint> eps{{boost::asio::ip::make_address("::1"), port},
                                             {boost::asio::ip::make_address("127.0.0.1"), port}};
        tcp::endpoint reached;
        std::string failures;
        QCOMPARE(client::connectFd(eps, std::chrono::seconds(5), false, reached, failures), -1);
        const std::string p = std::to_string(port);
        QCOMPARE(failures, "[::1]:" + p + ": Connection refused; 127.0.0.1:" + p + ": Connection refused");
    }

    // A silent first address (its SYN dropped) costs kAttemptTimeout, not the whole budget.
    void connectFdMovesOnFromASilentAddress() {
        test::StuckListener stuck;
        QVERIFY(stuck.port());
        OneFamily live("127.0.0.1");
        const std::vector<tcp::endpoint> eps{{boost::asio::ip::make_address("127.0.0.1"), stuck.port()},
                                             {boost::asio::ip::make_address("127.0.0.1"), live.port}};
        tcp::endpoint reached;
        std::string failures;
        const int fd = client::connectFd(eps, std::chrono::seconds(30), false, reached, failures);
        QVERIFY2(fd >= 0, failures.c_str());
        ::close(fd);
        QCOMPARE(reached, eps[1]);
        QCOMPARE(failures, "127.0.0.1:" + std::to_string(stuck.port()) + ": timed out");
    }

    void asyncConnectTriesEachAddressAndReportsAll() {
        OneFamily v6("::1");
        boost::asio::io_context io;
        client::TcpSocket socket(io.get_executor());
        const std::vector<tcp::endpoint> eps{{boost::asio::ip::make_address("127.0.0.1"), v6.port},
                                             {boost::asio::ip::make_address("::1"), v6.port}};
        boost::system::error_code got = boost::asio::error::would_block;
        tcp::endpoint at;
        std::string failures;
        client::asyncConnect(socket, eps, [&](const auto& e, const tcp::endpoint& ep, const std::string& f) {
            got = e, at = ep, failures = f;
        });
        io.run_for(std::chrono::seconds(5));
        QVERIFY2(!got, got.message().c_str());
        QCOMPARE(at, eps[1]);
        QCOMPARE(socket.remote_endpoint(), eps[1]);
        QCOMPARE(failures, "127.0.0.1:" + std::to_string(v6.port) + ": Connection refused");

        v6.acceptor.close();
        client::TcpSocket again(io.get_executor());
        got = boost::asio::error::would_block;
        client::asyncConnect(again, eps, [&](const auto& e, const tcp::endpoint&, const std::string& f) {
            got = e, failures = f;
        });
        io.restart();
        io.run_for(std::chrono::seconds(5));
        QCOMPARE(got, boost::system::error_code(boost::asio::error::connection_refused));
        const std::string p = std::to_string(v6.port);
        QCOMPARE(failures, "127.0.0.1:" + p + ": Connection refused; [::1]:" + p + ": Connection refused");
    }

    void onlyIpv4Listens() {
        NEED_DUAL_LOCALHOST();
        everyClientReaches("127.0.0.1:0", "127.0.0.1");
    }

    void onlyIpv6Listens() {
        NEED_DUAL_LOCALHOST();
        everyClientReaches("[::1]:0", "[::1]");
    }

    void nothingListensNamesEveryAddress() {
        NEED_DUAL_LOCALHOST();
        std::uint16_t port = 0;
        {
            OneFamily gone("127.0.0.1");
            port = gone.port;
        }
        load::Options o;
        load::RequestSpec spec;
        spec.url = "http://localhost:" + std::to_string(port) + "/";
        o.requests.push_back(spec);
        o.count = 1;
        auto r = load::run(o);
        const std::string p = std::to_string(port);
        QCOMPARE(r.error, "cannot connect to localhost: [::1]:" + p + ": Connection refused; 127.0.0.1:" + p +
                              ": Connection refused");
    }

    // The guide's own example on a stock Debian: `portico bench https://localhost:PORT/` against a
    // server listening on 127.0.0.1 only.
    void benchCommandOverTlsByName() {
        NEED_DUAL_LOCALHOST();
        test::ServerProcess server({"--https-port", "0", dir_.path()},
                                   {"PORTICO_DATA_DIR=" + dir_.filePath("data")});
        QVERIFY2(server.waitReady(), server.output().constData());
        QVERIFY(server.tlsPort());
        auto r = test::runProcess(test::porticoBinary(),
                                  {"bench", QString("https://localhost:%1/").arg(server.tlsPort()), "-n",
                                   "20", "-c", "2", "--insecure", "--no-save"});
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        QVERIFY2(r.out.contains("127.0.0.1:"), r.out.constData());
    }

    // A `localhost` listener takes both families on one port; so does the default listen.
    void localhostListenerAcceptsBothFamilies() {
        for (const std::string yaml : {"listen: ['localhost:0']\n", "listen: ['0']\n", ""}) {
            auto cfg = loadYaml(yaml + "vhosts:\n  - names: [a]\n    default: true\n    routes:\n"
                                       "      - path: /\n        respond: {body: ok}\n",
                                dir_);
            QVERIFY(cfg);
            if (yaml.empty()) { // no listen: 8080 by default; a test takes port 0 instead
                auto c = std::make_shared<config::Config>(*cfg);
                QCOMPARE(c->listen.size(), std::size_t(1));
                QCOMPARE(c->listen.front().host, std::string("localhost"));
                c->listen.front().port = 0;
                cfg = c;
            }
            engine::Engine e;
            std::string error;
            QVERIFY2(e.start(cfg, error), error.c_str());
            const auto ep = e.endpoints().front();
            QCOMPARE(ep.host, std::string("localhost"));
            QCOMPARE(ep.url(), "http://localhost:" + std::to_string(ep.port) + "/");
            QVERIFY(ep.loopback());
            QVERIFY2(ep.note.empty(), ep.note.c_str());
            for (const char* host : {"127.0.0.1", "[::1]"}) {
                auto reply = test::curlFetch({QString("http://%1:%2/").arg(host).arg(ep.port)});
                QVERIFY2(reply.status == 200, (QByteArray(host) + ": " + reply.err).constData());
            }
        }
    }

    // Without IPv6 loopback (a network namespace whose lo lost ::1) `portico serve` says so once,
    // serves IPv4, and prints a URL that works there.
    void withoutIpv6LoopbackServesIpv4AndSaysSo() {
        if (QProcess::execute("unshare", {"--net", "true"}) != 0) QSKIP("needs root for a network namespace");
        const QString script =
            "ip link set lo up && ip addr del ::1/128 dev lo || exit 9\n"
            "\"$0\" serve \"$1\" --port 0 >\"$1/out\" 2>&1 & pid=$!\n"
            "for i in $(seq 100); do grep -q 'Listening on' \"$1/out\" && break; sleep 0.1; done\n"
            "url=$(sed -n 's/^Listening on \\([^ ]*\\).*/\\1/p' \"$1/out\")\n"
            "echo \"curl: $(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' \"$url\")\"\n"
            "kill $pid; wait $pid; cat \"$1/out\"\n";
        QTemporaryDir site;
        QVERIFY(site.isValid());
        QFile index(site.filePath("index.html"));
        QVERIFY(index.open(QIODevice::WriteOnly));
        index.write("hi\n");
        index.close();
        auto r =
            test::runProcess("unshare", {"--net", "sh", "-c", script, test::porticoBinary(), site.path()});
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        QVERIFY2(r.out.contains("curl: 200"), r.out.constData());
        QVERIFY2(r.out.contains("Listening on http://localhost:"), r.out.constData());
        QCOMPARE(r.out.count("IPv6 loopback [::1] is unavailable"), 1);
    }
};

int main(int argc, char** argv) {
    privateHosts(); // before any thread exists: unshare(CLONE_NEWNS) needs a single-threaded process
    QCoreApplication app(argc, argv);
    TestClientAddresses t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_client_addresses.moc"

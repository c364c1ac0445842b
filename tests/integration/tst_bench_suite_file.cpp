// `portico bench --suite-file` against `portico serve --config resources/bench-suite/portico.yaml` on a
// free loopback port: a file whose thresholds are met exits 0, one breached exits 3 naming the
// route and the expression, a bad file exits 2 with FILE:LINE:COLUMN and sends nothing; the
// command line's URL, -d and --threshold over the file's; JSON, history label.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;

namespace {

/// A listener on 127.0.0.1 (port 0) that never accepts by itself: connections made to it wait in
/// the backlog, so `pending()` says whether anything connected.
class SilentListener {
public:
    SilentListener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(fd_, 64) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            return;
        port_ = ntohs(a.sin_port);
    }
    ~SilentListener() {
        if (fd_ >= 0) ::close(fd_);
    }
    std::uint16_t port() const { return port_; }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(port_); }
    /// Connections waiting to be accepted (accepted and closed here).
    int pending() {
        int n = 0;
        for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0; ++n)
            ::close(c);
        return n;
    }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

} // namespace

class TestBenchSuiteFile : public QObject {
    Q_OBJECT

    QTemporaryDir data_, files_;
    std::unique_ptr<test::ServerProcess> server_;

    QString write(const QString& name, const QString& text) {
        const QString path = files_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
        f.write(text.toUtf8());
        return path;
    }
    static test::ProcessResult bench(const QStringList& args) {
        return test::runProcess(test::porticoBinary(), QStringList{"bench"} + args, {}, 120000);
    }
    static QJsonObject readJson(const QString& path) {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) return {};
        return QJsonDocument::fromJson(f.readAll()).object();
    }
    // The lines of `out` from "NAME: Thresholds:" to the next route's block (or the end).
    static QByteArray thresholdsOf(const QByteArray& out, const QByteArray& name) {
        const qsizetype at = out.indexOf("\n" + name + ": Thresholds:\n");
        if (at < 0) return {};
        qsizetype end = at + 1;
        while (true) {
            const qsizetype next = out.indexOf('\n', end);
            if (next < 0) return out.mid(at + 1);
            if (next + 1 < out.size() && out[next + 1] != ' ') return out.mid(at + 1, next + 1 - at - 1);
            end = next + 1;
        }
    }

private slots:
    void initTestCase() {
        QVERIFY(data_.isValid() && files_.isValid());
        qputenv("PORTICO_DATA_DIR", data_.path().toUtf8());
        server_ = std::make_unique<test::ServerProcess>(
            QStringList{"--config", test::sourceDir() + "/resources/bench-suite/portico.yaml", "--port", "0",
                        "--no-reload"});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        if (server_) server_->terminate();
    }

    // The file's base is a closed port and its duration 20 s: the command line's URL and -d win.
    // Thresholds from the file, a route and the command line are all judged; all are met.
    void thresholdsMet() {
        const QString file = write("met.yaml", R"(base: http://127.0.0.1:1
duration: 20s
connections: 3
thresholds: ["errors<1%", "status:2xx>99%"]
routes:
  - name: plaintext
    path: /plaintext
    thresholds: [rps>1]
  - name: json
    path: /json
  - name: post-echo
    path: /echo
    method: POST
    headers: {Content-Type: application/json}
    body: '{"hello":"suite"}'
)");
        const QString json = files_.filePath("met.json");
        auto p = bench({"--suite-file", file, "-d", "300ms", "--threshold", "max<10s", "--json", json,
                        server_->baseUrl()});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("Benchmark suite @ " + server_->baseUrl().toUtf8()), p.out.constData());
        QVERIFY2(p.out.contains("geo. mean") && p.out.contains("  post-echo "), p.out.constData());
        QVERIFY2(p.err.contains("[3/3] post-echo"), p.err.constData());
        QVERIFY2(!p.out.contains("BREACHED"), p.out.constData());
        const QByteArray plain = thresholdsOf(p.out, "plaintext");
        QVERIFY2(plain.contains("met       max<10s") && plain.contains("met       errors<1%") &&
                     plain.contains("met       status:2xx>99%") && plain.contains("met       rps>1"),
                 p.out.constData());
        QVERIFY2(!thresholdsOf(p.out, "json").contains("rps>1"), p.out.constData()); // plaintext's own
        QVERIFY2(p.err.contains("Saved as "), p.err.constData());

        const QJsonObject doc = readJson(json);
        QCOMPARE(doc["kind"].toString(), QStringLiteral("suite"));
        QCOMPARE(doc["baseUrl"].toString(), server_->baseUrl());
        const QJsonArray routes = doc["routes"].toArray();
        QCOMPARE(routes.size(), 3);
        QCOMPARE(routes[2].toObject()["method"].toString(), QStringLiteral("POST"));
        QCOMPARE(routes[2].toObject()["target"].toString(), QStringLiteral("/echo"));
        const QStringList expected{"max<10s", "errors<1%", "status:2xx>99%", "rps>1"};
        for (int i = 0; i < 3; ++i) {
            const QJsonObject result = routes[i].toObject()["result"].toObject();
            QCOMPARE(result["options"].toObject()["connections"].toInt(), 3); // the file's
            QVERIFY2(result["options"].toObject()["durationSeconds"].toDouble() < 1, "-d 300ms wins");
            QVERIFY(result["requests"].toObject()["completed"].toInteger() > 0);
            const QJsonArray ts = result["thresholds"].toArray();
            QCOMPARE(ts.size(), i == 0 ? 4 : 3);
            for (int j = 0; j < ts.size(); ++j) {
                QCOMPARE(ts[j].toObject()["expr"].toString(), expected[j]);
                QVERIFY(ts[j].toObject()["ok"].toBool());
            }
        }

        // Saved in the history under the file's name.
        p = bench({"--history"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("met.yaml"), p.out.constData());
    }

    // A route's own threshold that cannot be met: exit 3, that route and expression named, the
    // other routes met; the command line's -c over the file's.
    void routeThresholdBreached() {
        const QString file = write("breach.yaml", QStringLiteral(R"(base: %1
connections: 7
routes:
  - name: plaintext
    path: /plaintext
    thresholds: [errors<1%]
  - name: slow-json
    path: /json
    thresholds: [p50<1ns]
)")
                                                      .arg(server_->baseUrl()));
        const QString json = files_.filePath("breach.json");
        auto p = bench({"--suite-file", file, "-d", "300ms", "-c", "2", "--no-save", "--json", json});
        QVERIFY2(p.exitCode == 3, (p.out + p.err).constData());
        const QByteArray slow = thresholdsOf(p.out, "slow-json");
        QVERIFY2(slow.contains("BREACHED  p50<1ns"), p.out.constData());
        QVERIFY2(thresholdsOf(p.out, "plaintext").contains("met       errors<1%"), p.out.constData());
        QVERIFY2(!thresholdsOf(p.out, "plaintext").contains("BREACHED"), p.out.constData());
        QVERIFY2(!p.err.contains("Saved as"), p.err.constData());
        const QJsonArray routes = readJson(json)["routes"].toArray();
        QCOMPARE(routes.size(), 2);
        const QJsonObject second = routes[1].toObject();
        QCOMPARE(second["name"].toString(), QStringLiteral("slow-json"));
        QCOMPARE(second["result"].toObject()["options"].toObject()["connections"].toInt(), 2);
        QCOMPARE(second["result"].toObject()["thresholds"].toArray()[0].toObject()["ok"].toBool(), false);

        // The command line's threshold is judged on every route of a file that has none.
        const QString plain = write(
            "plain.yaml",
            QStringLiteral("routes: [{name: only, path: /plaintext}]\nbase: %1\n").arg(server_->baseUrl()));
        p = bench({"--suite-file", plain, "-d", "300ms", "--no-save", "--threshold", "rps>1000000000000"});
        QVERIFY2(p.exitCode == 3, (p.out + p.err).constData());
        QVERIFY2(thresholdsOf(p.out, "only").contains("BREACHED  rps>1000000000000"), p.out.constData());
        p = bench({"--suite-file", plain, "-d", "300ms", "--no-save"});
        QVERIFY2(p.exitCode == 0, (p.out + p.err).constData());
        QVERIFY2(!p.out.contains("Thresholds:"), p.out.constData());
    }

    // A bad file is refused whole, with each error located, before a connection is made.
    void badFileSendsNothing() {
        SilentListener listener;
        QVERIFY(listener.port() != 0);
        const QString bad = write("bad.yaml", QStringLiteral(R"(base: %1
thresholds: [p99<fast]
routes:
  - name: a
    pth: /a
  - name: b
    path: /b
)")
                                                  .arg(listener.url()));
        auto p = bench({"--suite-file", bad, "-d", "200ms", "--no-save"});
        QCOMPARE(p.exitCode, 2);
        const QByteArray at = bad.toUtf8();
        QVERIFY2(p.err.contains(at + ":2:14: thresholds[0]: threshold 'p99<fast'"), p.err.constData());
        QVERIFY2(p.err.contains(at + ":4:5: routes[0]: route needs a `path:`"), p.err.constData());
        QVERIFY2(p.err.contains(at + ":5:5: routes[0].pth: unknown key 'pth' (did you mean 'path'?)"),
                 p.err.constData());
        QVERIFY2(p.err.contains("refused (3 errors); nothing was sent"), p.err.constData());
        QVERIFY(p.out.isEmpty());
        QCOMPARE(listener.pending(), 0);

        // The same file made valid does connect there (so the check above can fail).
        const QString good = write(
            "good.yaml", QStringLiteral("base: %1\nroutes: [{name: a, path: /a}]\n").arg(listener.url()));
        p = bench({"--suite-file", good, "-d", "200ms", "-c", "1", "--timeout", "200ms", "--no-save"});
        QVERIFY2(p.exitCode != 2 && !p.timedOut, p.err.constData());
        QVERIFY(listener.pending() > 0);
    }

    // A suite whose first route cannot start (nothing listens at the base): exit 1 with the reason,
    // and the --json file still written, with `error` and the route that failed (docs/load-results.md).
    void routeThatCannotStartStillWritesJson() {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        QVERIFY(fd >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        QVERIFY(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        ::close(fd); // bound, never listened, closed: connections are refused
        const QString base = QStringLiteral("http://127.0.0.1:%1").arg(ntohs(a.sin_port));
        const QString file = write("closed.yaml", "routes: [{name: a, path: /a}, {name: b, path: /b}]\n");
        const QString json = files_.filePath("closed.json");
        auto p = bench({"--suite-file", file, base, "-d", "200ms", "--no-save", "--json", json});
        QCOMPARE(p.exitCode, 1);
        QVERIFY2(p.err.contains("Connection refused") || p.err.contains("refused"), p.err.constData());
        const QJsonObject doc = readJson(json);
        QVERIFY2(doc["error"].toString().contains("refused"), qPrintable(doc["error"].toString()));
        // The route that could not start is listed with its own error; the second never ran.
        const QJsonArray routes = doc["routes"].toArray();
        QCOMPARE(routes.size(), 1);
        QCOMPARE(routes[0]["name"].toString(), QStringLiteral("a"));
        QVERIFY(routes[0]["result"]["error"].toString().contains("refused"));
        QCOMPARE(doc["kind"].toString(), QStringLiteral("suite"));
    }

    // -H reaches every route of the built-in suite (and of a suite file): a Range field turns the
    // static routes' answers into 206, the others' stay 200.
    void headersReachSuiteRoutes() {
        const QString json = files_.filePath("ranged.json");
        auto p = bench({"--suite", server_->baseUrl(), "-n", "5", "-c", "1", "--no-save", "--json", json,
                        "-H", "Range: bytes=0-0"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        const auto routes = readJson(json)["routes"].toArray();
        QCOMPARE(routes.size(), 11);
        for (const auto& r : routes) {
            const auto o = r.toObject();
            const bool ranged = o["name"].toString() == "static" || o["name"].toString() == "root";
            const auto statuses = o["result"].toObject()["statuses"].toObject();
            QVERIFY2(statuses[ranged ? "206" : "200"].toInt() == 5, qPrintable(o["name"].toString()));
        }
        const QString file = write(
            "ranged.yaml", "routes: [{name: s, path: /static/style.css}, {name: p, path: /plaintext}]\n");
        p = bench({"--suite-file", file, server_->baseUrl(), "-n", "5", "-c", "1", "--no-save", "--json",
                   json, "-H", "Range: bytes=0-0"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        const auto fileRoutes = readJson(json)["routes"].toArray();
        QCOMPARE(fileRoutes.size(), 2);
        QCOMPARE(fileRoutes[0].toObject()["result"].toObject()["statuses"].toObject()["206"].toInt(), 5);
        QCOMPARE(fileRoutes[1].toObject()["result"].toObject()["statuses"].toObject()["200"].toInt(), 5);
    }

    void usageErrors() {
        // A file that is not there, a folder, and options that do not go with a suite file: exit 2.
        auto p = bench({"--suite-file", files_.filePath("none.yaml")});
        QCOMPARE(p.exitCode, 2);
        QVERIFY2(p.err.contains("none.yaml: no such file"), p.err.constData());
        p = bench({"--suite-file", files_.path()});
        QCOMPARE(p.exitCode, 2);
        QVERIFY2(p.err.contains("is a folder"), p.err.constData());
        const QString ok = write("ok.yaml", "routes: [{name: a, path: /a}]\n");
        p = bench({"--suite-file", ok, "--suite"});
        QCOMPARE(p.exitCode, 2);
        QVERIFY2(p.err.contains("--suite-file: takes at most one base URL"), p.err.constData());
        p = bench({"--suite-file", ok, "--threshold", "p99<soon"});
        QCOMPARE(p.exitCode, 2);
        QVERIFY2(p.err.contains("--threshold: threshold 'p99<soon'"), p.err.constData());
        const QString piped = write("piped.yaml", "pipeline: 4\nroutes: [{name: a, path: /a}]\n");
        p = bench({"--suite-file", piped, "--h2"});
        QCOMPARE(p.exitCode, 2);
        QVERIFY2(p.err.contains("pipeline 4 is HTTP/1.1 only"), p.err.constData());
        // The built-in suite refuses what it would otherwise ignore, before anything is sent.
        for (const QStringList& extra :
             {QStringList{"--hgrm", files_.filePath("x.hgrm")},
              QStringList{"--report", files_.filePath("x.html")},
              QStringList{"--hdr-log", files_.filePath("x.hlog")}, QStringList{"--method", "POST"}}) {
            p = bench(QStringList{"--suite"} + extra);
            QCOMPARE(p.exitCode, 2);
            QVERIFY2(p.err.contains("--suite: takes at most one base URL"), p.err.constData());
            QVERIFY(!QFile::exists(files_.filePath("x.hgrm")) && !QFile::exists(files_.filePath("x.html")));
        }
    }
};

QTEST_GUILESS_MAIN(TestBenchSuiteFile)
#include "tst_bench_suite_file.moc"

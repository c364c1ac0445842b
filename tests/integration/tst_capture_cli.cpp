// The capture CLI end to end: `serve --record` survives kill -9 under load (WAL: the file is
// intact and holds everything but the last moment), `har export` / `har import`, and `replay`
// against a live server (same answers, a changed file shows up as a difference, loopback only).
#include "raw_client.h"
#include "test_support.h"

#include <portico/capture/store.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

using namespace portico;

class TestCaptureCli : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString site_;

private slots:
    void initTestCase() {
        site_ = dir_.filePath("site");
        QVERIFY(QDir().mkpath(site_));
        QFile f(site_ + "/index.html");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("<p>v1</p>\n");
    }

    void killNineLosesAtMostTheLastSecond() {
        const QString db = dir_.filePath("kill.db");
        test::ServerProcess server({site_, "--no-live-reload", "--record", db, "-w", "2"});
        QVERIFY2(server.waitReady(), server.output().constData());
        // Two keep-alive clients; `done` counts answered requests, `history` samples it every 50 ms.
        std::atomic<bool> stop{false};
        std::atomic<std::uint64_t> done{0};
        std::vector<std::thread> clients;
        for (int c = 0; c < 2; ++c)
            clients.emplace_back([&] {
                test::RawClient client(server.port());
                for (int i = 0; i < 2'000'000 && !stop; ++i) {
                    if (client.exchange("GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n") != 200) break;
                    done.fetch_add(1);
                    // A busy developer's rate (thousands of requests a second), not a flood: under a
                    // flood the store falls behind and the rings drop (tst_capture_core counts that).
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                }
            });
        std::vector<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> history;
        const auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500)) {
            history.emplace_back(std::chrono::steady_clock::now(), done.load());
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        const auto killedAt = std::chrono::steady_clock::now();
        ::kill(static_cast<pid_t>(server.pid()), SIGKILL);
        stop = true;
        for (auto& t : clients)
            t.join();
        // Requests answered at least one second before the kill must all be in the file.
        std::uint64_t mustHave = 0;
        for (auto& [t, n] : history)
            if (killedAt - t >= std::chrono::seconds(1)) mustHave = n;
        QVERIFY(mustHave > 100);
        std::string error;
        auto store = capture::Store::open(db.toStdString(), error);
        QVERIFY2(store, error.c_str());
        QCOMPARE(store->integrityCheck(), std::string("ok"));
        // Records the rings dropped under this load are counted in the file, committed with the rows.
        const std::uint64_t count = store->count();
        const std::uint64_t dropped = std::stoull("0" + store->meta("dropped_records"));
        QVERIFY2(count + dropped >= mustHave && count <= done.load(),
                 qPrintable(QString("%1 rows + %2 dropped; %3 answered a second before the kill; %4 in all")
                                .arg(count)
                                .arg(dropped)
                                .arg(mustHave)
                                .arg(done.load())));
        auto rows = store->load(0, 5);
        QCOMPARE(rows.size(), std::size_t(5));
        QCOMPARE(rows[0].target, std::string("/index.html"));
        QCOMPARE(rows[0].status, 200);
    }

    void recordExportImport() {
        const QString db = dir_.filePath("session.db");
        {
            test::ServerProcess server({site_, "--no-live-reload", "--record", db});
            QVERIFY2(server.waitReady(), server.output().constData());
            test::RawClient c(server.port());
            QCOMPARE(c.exchange("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), 200);
            QCOMPARE(c.exchange("GET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n"), 404);
            QCOMPARE(
                c.exchange("POST /index.html HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc"),
                405);
            QCOMPARE(server.terminate(), 0);
            QVERIFY(server.output().contains("recorded 3 exchange(s)"));
        }
        const QString har = dir_.filePath("out.har");
        auto r = test::runProcess(test::porticoBinary(), {"har", "export", db, har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        // Captured traffic holds cookies and tokens: the files are the owner's only.
        for (const QString& file : {db, db + "-wal", har}) {
            if (!QFile::exists(file)) continue; // -wal: gone after a clean close
            const auto perms = QFileInfo(file).permissions();
            QVERIFY2(!(perms & (QFileDevice::ReadGroup | QFileDevice::ReadOther | QFileDevice::WriteGroup |
                                QFileDevice::WriteOther)),
                     qPrintable(file));
        }
        QVERIFY(QFileInfo(db).permissions() & QFileDevice::ReadOwner);
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        auto entries = QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        QCOMPARE(entries.size(), 3);
        QCOMPARE(entries[2].toObject()["request"].toObject()["postData"].toObject()["text"].toString(),
                 QString("abc"));
        // Filtered export.
        r = test::runProcess(test::porticoBinary(),
                             {"har", "export", db, "-", "--filter", "status:>=400", "--compact"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray().size(), 2);
        r = test::runProcess(test::porticoBinary(), {"har", "export", db, "-", "--filter", "stauts:1"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("did you mean 'status'"));
        // Import into a new session file, then export again.
        const QString db2 = dir_.filePath("imported.db");
        r = test::runProcess(test::porticoBinary(),
                             {"har", "import", test::sourceDir() + "/tests/data/har/chrome.har", db2});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        r = test::runProcess(test::porticoBinary(), {"har", "export", db2, "-"});
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray().size(), 2);
        // A truncated file: a clear, positioned error and nothing written.
        r = test::runProcess(
            test::porticoBinary(),
            {"har", "import", test::sourceDir() + "/tests/data/har/truncated.har", dir_.filePath("t.db")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("truncated.har:22:44 (byte 700): syntax error"), r.err.constData());
    }

    void replayAgainstALiveServer() {
        const QString db = dir_.filePath("session.db"); // from recordExportImport
        QVERIFY(QFile::exists(db));
        test::ServerProcess server({site_, "--no-live-reload"});
        QVERIFY2(server.waitReady(), server.output().constData());
        auto r = test::runProcess(test::porticoBinary(), {"replay", db, "--target", server.baseUrl()});
        QVERIFY2(r.exitCode == 0, r.out + r.err);
        QVERIFY2(r.out.contains("3 replayed: 3 same, 0 changed, 0 failed"), r.out.constData());
        // Change the file: the replay of GET / shows the body (and ETag...) differences.
        QFile f(site_ + "/index.html");
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("<p>v2, longer</p>\n");
        f.close();
        const QString out = dir_.filePath("replayed.db");
        r = test::runProcess(test::porticoBinary(), {"replay", db, "--target", server.baseUrl(), "--filter",
                                                     "status:200", "--record", out});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("1 replayed: 0 same, 1 changed"), r.out.constData());
        QVERIFY(r.out.contains("body: 10 bytes"));
        std::string error;
        auto store = capture::Store::open(out.toStdString(), error);
        QVERIFY(store);
        QCOMPARE(store->count(), std::uint64_t(1));
        QCOMPARE(store->load()[0].responseBody, std::string("<p>v2, longer</p>\n"));
        // The target is checked before anything is read or sent: not loopback without
        // --allow-remote, not http(s), no valid port — each a usage error naming the flag.
        struct BadTarget {
            QString url;
            QByteArray says;
        };
        for (const BadTarget& t :
             {BadTarget{"http://192.0.2.1:9",
                        "192.0.2.1: not a loopback address; replaying to other hosts needs "
                        "--allow-remote"},
              BadTarget{"ftp://127.0.0.1/", "ftp: only http:// and https:// targets can be replayed"},
              BadTarget{"http://127.0.0.1:99999/", "must be a number from 1 to 65535"},
              BadTarget{"127.0.0.1:8080", "not a URL"},
              BadTarget{"http://127.0.0.1:8080/base?x=1",
                        "a base URL takes no query or fragment, got '?x=1' (each replayed request keeps "
                        "its own query)"}}) {
            r = test::runProcess(test::porticoBinary(), {"replay", db, "--target", t.url});
            QVERIFY2(r.exitCode == 2, r.err.constData());
            QVERIFY2(r.err.startsWith("portico replay: --target " + t.url.toUtf8() + ": ") &&
                         r.err.contains(t.says),
                     r.err.constData());
            QVERIFY2(r.out.isEmpty(), r.out.constData()); // nothing was tried
        }
        // Copy as curl, then run it.
        r = test::runProcess(test::porticoBinary(), {"replay", db, "--curl", "--target", server.baseUrl(),
                                                     "--filter", "method:POST"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("curl -X 'POST' '" + server.baseUrl().toUtf8() + "/index.html'"),
                 r.out.constData());
        QVERIFY(r.out.contains("--data-binary 'abc'"));
        auto sh = test::runProcess(
            "sh", {"-c", QString::fromUtf8(r.out.trimmed()) + " -s -o /dev/null -w '%{http_code}'"});
        QCOMPARE(sh.out, QByteArray("405"));

        // A HAR has no record ids: its entries are numbered by position, from 1.
        const QString har = dir_.filePath("out.har"); // from recordExportImport
        r = test::runProcess(test::porticoBinary(), {"replay", har, "--target", server.baseUrl()});
        QVERIFY2(r.out.contains("#1 GET / ") && r.out.contains("#2 GET /missing ") &&
                     r.out.contains("#3 POST /index.html "),
                 r.out.constData());
    }

    // What replay, bench --from and har export say about a file that is no session file, and
    // about a --filter that chooses nothing.
    void recordingProblemsAreNamed() {
        const QString db = dir_.filePath("session.db"); // from recordExportImport
        QVERIFY(QFile::exists(db));
        // A corrupt session file (its header overwritten) is not reported as a HAR syntax error.
        const QString corrupt = dir_.filePath("corrupt.db");
        QFile::remove(corrupt);
        QVERIFY(QFile::copy(db, corrupt));
        {
            QFile f(corrupt);
            QVERIFY(f.open(QIODevice::ReadWrite));
            f.write(QByteArray(64, '\x5a'));
        }
        const QString url = "http://127.0.0.1:9/";
        for (const QStringList& args : {QStringList{"replay", corrupt, "--target", url},
                                        QStringList{"bench", "--from", corrupt, url, "-n", "1", "--no-save"},
                                        QStringList{"har", "export", corrupt, "-"}}) {
            auto r = test::runProcess(test::porticoBinary(), args);
            const QByteArray what = args.join(' ').toUtf8() + ": " + r.err;
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(r.err.contains(corrupt.toUtf8() + ": ") && r.err.contains("session file"),
                     what.constData());
            QVERIFY2(!r.err.contains("syntax error"), what.constData());
        }
        for (const QStringList& args : {QStringList{"replay", db, "--target", url},
                                        QStringList{"bench", "--from", db, url, "-n", "1", "--no-save"},
                                        QStringList{"har", "export", db, "-"}}) {
            auto r = test::runProcess(test::porticoBinary(), args + QStringList{"--filter", "status:599"});
            const QByteArray what = args.join(' ').toUtf8() + ": " + r.err;
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(r.err.contains("no exchange in " + db.toUtf8() +
                                    " matches --filter 'status:599' (3 recorded)"),
                     what.constData());
            QVERIFY2(r.out.isEmpty(), what.constData());
        }
    }

    // A recorded set as a load test: the run repeats the recording's mix (one request of each of
    // the three recorded kinds here, so about a third each), the POST with its body.
    void replayAsLoad() {
        const QString db = dir_.filePath("session.db"); // from recordExportImport
        QVERIFY(QFile::exists(db));
        test::ServerProcess server({site_, "--no-live-reload"});
        QVERIFY2(server.waitReady(), server.output().constData());
        auto r = test::runProcess(test::porticoBinary(), {"bench", "--from", db, server.baseUrl(), "-n",
                                                          "300", "-c", "2", "--json", "-", "--no-save"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("Replaying 3 recorded request(s) as load (3 distinct)"), r.err.constData());
        auto statuses = QJsonDocument::fromJson(r.out).object()["statuses"].toObject();
        QCOMPARE(statuses.size(), 3);
        int total = 0;
        for (const char* code : {"200", "404", "405"}) {
            const int n = statuses[code].toInt();
            QVERIFY2(n >= 50 && n <= 150, qPrintable(QString("%1: %2").arg(code).arg(n))); // ~6 sd
            total += n;
        }
        QCOMPARE(total, 300);
        // --filter picks the GETs only.
        r = test::runProcess(test::porticoBinary(), {"bench", "--from", db, server.baseUrl(), "-n", "40",
                                                     "--filter", "method:GET", "--json", "-", "--no-save"});
        QCOMPARE(r.exitCode, 0);
        statuses = QJsonDocument::fromJson(r.out).object()["statuses"].toObject();
        QCOMPARE(statuses.size(), 2);
        QCOMPARE(statuses["200"].toInt() + statuses["404"].toInt(), 40);
        // A corrupt recording: its position, nothing sent; --method does not go with --from.
        r = test::runProcess(test::porticoBinary(),
                             {"bench", "--from", test::sourceDir() + "/tests/data/har/truncated.har",
                              server.baseUrl(), "-n", "10", "--no-save"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("truncated.har:22:44 (byte 700): syntax error"), r.err.constData());
        r = test::runProcess(test::porticoBinary(),
                             {"bench", "--from", db, server.baseUrl(), "-m", "PUT", "-n", "10", "--no-save"});
        QCOMPARE(r.exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestCaptureCli)
#include "tst_capture_cli.moc"

// The benchmark suite against `portico serve --config resources/bench-suite/portico.yaml` (every route
// answers 2xx, so the vhost and the C++ route list agree), its table and JSON, setup errors; the run
// history (save, list, find, compare, files that are not runs); and `portico bench --suite`,
// `--history` and `--compare` against a sandboxed data dir.
#include "test_support.h"

#include <portico/load/history.h>
#include <portico/load/runner.h>
#include <portico/load/suite.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace portico;
using namespace std::chrono_literals;

class TestLoadSuite : public QObject {
    Q_OBJECT

    QTemporaryDir data_;
    std::unique_ptr<test::ServerProcess> server_;

    std::string base() const { return server_->baseUrl().toStdString(); }

private slots:
    void initTestCase() {
        QVERIFY(data_.isValid());
        qputenv("PORTICO_DATA_DIR", data_.path().toUtf8());
        server_ = std::make_unique<test::ServerProcess>(
            QStringList{"--config", test::sourceDir() + "/resources/bench-suite/portico.yaml", "--port", "0",
                        "--no-reload"});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        if (server_) server_->terminate();
    }

    void routesAreElevenAndUnique() {
        const auto& routes = load::suiteRoutes();
        QCOMPARE(routes.size(), std::size_t{11});
        std::set<std::string> names;
        for (const auto& r : routes) {
            QVERIFY(!r.target.empty() && r.target.front() == '/');
            names.insert(r.name);
        }
        QCOMPARE(names.size(), std::size_t{11});
    }

    void suiteRunsEveryRoute() {
        load::Options o;
        o.count = 150;
        o.connections = 2;
        std::vector<std::size_t> seen;
        auto suite = load::runSuite(base(), o, nullptr,
                                    [&](std::size_t i, const load::SuiteRun&) { seen.push_back(i); });
        QVERIFY2(suite.ok(), suite.error.c_str());
        QCOMPARE(suite.runs.size(), std::size_t{11});
        QCOMPARE(seen.size(), std::size_t{11});
        double lo = 1e18, hi = 0;
        for (const auto& run : suite.runs) {
            const auto& r = run.result;
            QVERIFY2(r.ok(), r.error.c_str());
            QCOMPARE(r.requests.completed, std::uint64_t{150});
            // Every route exists in the vhost with its method: only 2xx answers.
            QVERIFY2(run.bad() == 0, (run.route.name + " answered non-2xx").c_str());
            lo = std::min(lo, r.requestsPerSecond());
            hi = std::max(hi, r.requestsPerSecond());
        }
        // The POST echo got its body back; the static file and root page are the real files.
        QVERIFY(suite.runs[10].result.bytesRead >= 150 * 256ull);
        QVERIFY(suite.runs[8].result.bytesRead >= 150 * 6000ull);
        const double gm = suite.geometricMean();
        QVERIFY(gm >= lo * 0.999 && gm <= hi * 1.001);

        const std::string table = load::suiteTable(suite);
        for (const auto& r : load::suiteRoutes())
            QVERIFY2(table.find("  " + r.name + " ") != std::string::npos, table.c_str());
        QVERIFY(table.find("geo. mean") != std::string::npos);
        QVERIFY2(table.find("p99     Errors\n") != std::string::npos, table.c_str()); // as the app's column

        auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(load::suiteToJson(suite)));
        QVERIFY(doc.isObject());
        QCOMPARE(doc["kind"].toString(), QStringLiteral("suite"));
        QCOMPARE(doc["routes"].toArray().size(), 11);
        QCOMPARE(doc["routes"].toArray()[3].toObject()["name"].toString(), QStringLiteral("file"));
        QCOMPARE(doc["routes"].toArray()[3].toObject()["description"].toString(),
                 QString::fromStdString(load::suiteRoutes()[3].description));
        QVERIFY(!load::suiteRoutes()[3].description.empty());
        QCOMPARE(doc["routes"]
                     .toArray()[3]
                     .toObject()["result"]
                     .toObject()["requests"]
                     .toObject()["completed"]
                     .toInt(),
                 150);

        // Saved and read back.
        QTemporaryDir hist;
        load::RunRecord saved;
        std::string error;
        QVERIFY2(load::saveSuite(suite, hist.path().toStdString(), "", &saved, error), error.c_str());
        QCOMPARE(saved.kind, std::string("suite"));
        QCOMPARE(saved.routes.size(), std::size_t{11});
        QCOMPARE(saved.completed, std::uint64_t{11 * 150});
        QVERIFY(std::abs(saved.requestsPerSecond - gm) <= gm * 1e-9);
        auto cmp = load::compareRuns(saved, saved);
        QCOMPARE(cmp.rows.size(), std::size_t{1 + 11 + 11 + 1});
        for (const auto& row : cmp.rows)
            if (row.a != 0) QCOMPARE(row.ratio, 1.0);
    }

    void suiteErrors() {
        load::Options o;
        o.count = 10;
        auto s = load::runSuite(base() + "/json", o);
        QVERIFY(!s.ok());
        QVERIFY2(s.error.find("only the origin") != std::string::npos, s.error.c_str());
        s = load::runSuite("http://127.0.0.1:1", o);
        QVERIFY(!s.ok());
        QVERIFY2(s.error.find("plaintext: cannot connect") != std::string::npos, s.error.c_str());
        QCOMPARE(s.geometricMean(), 0.0);
    }

    void history() {
        QTemporaryDir dir;
        const std::filesystem::path hist = dir.filePath("runs").toStdString(); // created on first save
        std::string error;
        QVERIFY(load::listRuns(hist, error).empty());
        QVERIFY(error.empty());

        auto runOnce = [&](unsigned connections) {
            load::Options o;
            load::RequestSpec r;
            r.url = base() + "/json";
            o.requests = {r};
            o.count = 300;
            o.connections = connections;
            return load::run(o);
        };
        auto r1 = runOnce(1);
        auto r2 = runOnce(4);
        QVERIFY(r1.ok() && r2.ok());
        load::RunRecord a, b;
        QVERIFY2(load::saveRun(r1, hist, "", &a, error), error.c_str());
        QVERIFY2(load::saveRun(r2, hist, "", &b, error), error.c_str());
        QVERIFY(a.id != b.id); // same second, same label: still two files
        QCOMPARE(a.label, std::string("/json"));
        QCOMPARE(a.kind, std::string("run"));
        QCOMPARE(a.completed, std::uint64_t{300});
        QCOMPARE(a.connections, 1u);
        QCOMPARE(b.connections, 4u);
        QCOMPARE(a.percentiles.size(), std::size_t{7});
        QCOMPARE(a.percentiles[0].second, r1.latency->valueAtPercentile(50));
        QVERIFY(std::abs(a.requestsPerSecond - r1.requestsPerSecond()) <= r1.requestsPerSecond() * 1e-9);

        // A stray file is skipped and named; a failed run is not saved.
        QFile junk(dir.filePath("runs/zzz.json"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("[1, 2");
        junk.close();
        auto runs = load::listRuns(hist, error);
        QCOMPARE(runs.size(), std::size_t{2});
        QCOMPARE(runs[0].id, a.id);
        QCOMPARE(runs[1].id, b.id);
        QVERIFY2(error.find("zzz.json") != std::string::npos, error.c_str());
        // Valid JSON of the wrong shape makes yaml-cpp throw on a subscript: reported, not thrown.
        QFile shape(dir.filePath("runs/yyy.json"));
        QVERIFY(shape.open(QIODevice::WriteOnly));
        shape.write(R"({"schema": 1, "savedAt": "x", "target": 5, "options": [1], "latency": "no"})");
        shape.close();
        auto listing = load::scanHistory(hist);
        QCOMPARE(listing.runs.size(), std::size_t{2});
        QCOMPARE(listing.unreadable.size(), std::size_t{2});
        QCOMPARE(listing.unreadable[0].file.filename().string(), std::string("yyy.json"));
        QCOMPARE(listing.unreadable[1].file.filename().string(), std::string("zzz.json"));
        QVERIFY2(listing.unreadable[1].reason.find("not a saved run") == 0,
                 listing.unreadable[1].reason.c_str());
        QVERIFY(listing.error.empty());
        std::vector<stats::Histogram::Bucket> buckets;
        QVERIFY(!load::loadLatencyBuckets(listing.unreadable[0].file, buckets, error));
        QVERIFY(!load::loadLatencyBuckets(listing.unreadable[1].file, buckets, error));
        QVERIFY2(load::loadLatencyBuckets(a.file, buckets, error), error.c_str());
        std::uint64_t total = 0;
        std::vector<stats::Histogram::Bucket> expected;
        r1.latency->forEachBucket([&](const stats::Histogram::Bucket& x) { expected.push_back(x); });
        QCOMPARE(buckets.size(), expected.size());
        for (std::size_t i = 0; i < buckets.size(); ++i) {
            QCOMPARE(buckets[i].lowestNs, expected[i].lowestNs);
            QCOMPARE(buckets[i].count, expected[i].count);
            total += buckets[i].count;
        }
        QCOMPARE(total, std::uint64_t{300});
        QVERIFY(shape.remove());
        load::Result failed;
        failed.error = "cannot connect";
        QVERIFY(!load::saveRun(failed, hist, "x", nullptr, error));

        load::RunRecord f;
        QVERIFY(load::findRun(hist, "1", f, error));
        QCOMPARE(f.id, a.id);
        QVERIFY(load::findRun(hist, "last", f, error));
        QCOMPARE(f.id, b.id);
        QVERIFY(load::findRun(hist, b.id, f, error));
        QVERIFY(load::findRun(hist, b.file.string(), f, error));
        QCOMPARE(f.id, b.id);
        QVERIFY(!load::findRun(hist, a.id.substr(0, 9), f, error)); // both share the date: ambiguous
        QVERIFY2(error.find("matches 2 runs") != std::string::npos, error.c_str());
        QVERIFY(!load::findRun(hist, "3", f, error));
        QVERIFY(!load::findRun(hist, "nope", f, error));

        auto c = load::compareRuns(a, b);
        QCOMPARE(c.rows.front().metric, std::string("req/s"));
        QCOMPARE(c.rows.front().ratio, b.requestsPerSecond / a.requestsPerSecond);
        QCOMPARE(c.rows[1].metric, std::string("p50"));
        QCOMPARE(c.rows[1].higherIsBetter, false);
        QCOMPARE(c.rows.back().metric, std::string("failed"));
        const auto text = load::comparisonText(c);
        QVERIFY2(text.find(a.id) != std::string::npos && text.find(b.id) != std::string::npos, text.c_str());
        QVERIFY(load::historyText(runs).find(b.id) != std::string::npos);
    }

    void benchCli() {
        auto p =
            test::runProcess(test::porticoBinary(),
                             {"bench", "--suite", "-n", "40", "-c", "1", server_->baseUrl()}, {}, 120000);
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("geo. mean"), p.out.constData());
        QVERIFY(p.out.contains("post-echo"));
        QVERIFY2(p.err.contains("[11/11] post-echo"), p.err.constData());
        QVERIFY2(p.err.contains("Saved as "), p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "-n", "40", server_->baseUrl() + "/json"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        p = test::runProcess(test::porticoBinary(),
                             {"bench", "-n", "40", "--no-save", server_->baseUrl() + "/json"});
        QVERIFY2(!p.err.contains("Saved as"), p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "--history"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("suite") && p.out.contains("/json"), p.out.constData());
        QVERIFY2(p.out.contains(data_.path().toUtf8()), p.out.constData());
        QVERIFY(!p.out.contains("   3  ")); // --no-save left nothing
        p = test::runProcess(test::porticoBinary(), {"bench", "--compare", "2", "last"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("1.000x"), p.out.constData());
        // Files written by --json compare too (docs/cli.md); a closed run and an open one are shown
        // side by side without a better/worse verdict.
        const QString closedJson = data_.filePath("closed.json"), openJson = data_.filePath("open.json");
        p = test::runProcess(test::porticoBinary(), {"bench", "-n", "40", "--no-save", "--json", closedJson,
                                                     server_->baseUrl() + "/json"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "-n", "40", "-R", "400", "--no-save", "--json",
                                                     openJson, server_->baseUrl() + "/json"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "--compare", closedJson, closedJson});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("1.000x"), p.out.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "--compare", closedJson, openJson});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QVERIFY2(p.out.contains("different load models (A: closed, B: open at 400 req/s)"),
                 p.out.constData());
        QVERIFY2(!p.out.contains("x  better") && !p.out.contains("x  worse"),
                 p.out.constData()); // no verdicts
        p = test::runProcess(test::porticoBinary(), {"bench", "--compare", "1", "9"});
        QCOMPARE(p.exitCode, 1);
        QVERIFY2(p.err.contains("no run number 9"), p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench", "--suite", "-n", "5", "http://127.0.0.1:1"});
        QCOMPARE(p.exitCode, 1);
        QVERIFY2(p.err.contains("cannot connect"), p.err.constData());
        p = test::runProcess(test::porticoBinary(), {"bench"});
        QCOMPARE(p.exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestLoadSuite)
#include "tst_load_suite.moc"

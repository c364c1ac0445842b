// Cross-check of the HdrHistogram outputs (load/hdr_output.h) with another project's reader: the
// JavaScript port hdr-histogram-js (pinned in tests/js, installed into <build>/js by
// `installers/dev.sh test`), run by Node on an interval log and a .hgrm written from a synthetic
// Result (several intervals, one empty, skewed values up to seconds). Per interval the JS reader must
// see our total, max and p50/p90/p99/p99.9 (the same HdrHistogram bucket: equal highest equivalent
// values), the start and end times, and its outputPercentileDistribution, of each interval and of
// all of them merged, must equal our percentileDistribution text byte for byte; the .hgrm parsed as
// plotFiles.html does must give one point per row. Missing node or module: the test fails and says what to
// run.
#include "test_support.h"

#include <portico/load/hdr_output.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

using namespace portico;
using namespace std::chrono_literals;
using stats::Histogram;

namespace {

constexpr double kPercentiles[] = {50, 90, 99, 99.9};
constexpr const char* kPercentileKeys[] = {"p50", "p90", "p99", "p999"};

std::uint64_t jsNumber(const QJsonValue& v) { return static_cast<std::uint64_t>(v.toDouble(-1)); }

// Our answer for a percentile as HdrHistogram gives it: the highest value of the bucket (0 if empty).
std::uint64_t hdrValueAt(const Histogram& h, double p) {
    return h.count() ? Histogram::highestEquivalent(h.valueAtPercentile(p)) : 0;
}

// The first line where `a` and `b` differ, for the failure message.
QByteArray firstDifference(const QString& a, const QString& b) {
    const QStringList la = a.split('\n'), lb = b.split('\n');
    for (qsizetype i = 0; i < std::max(la.size(), lb.size()); ++i)
        if (la.value(i) != lb.value(i))
            return QString("line %1:\n ours: \"%2\"\n js:   \"%3\"")
                .arg(i + 1)
                .arg(la.value(i), lb.value(i))
                .toUtf8();
    return {};
}

} // namespace

class TestHdrJs : public QObject {
    Q_OBJECT

private slots:
    void jsReaderAgrees() {
        // ---- where Node and hdr-histogram-js are (installers/dev.sh test provides both) ----------
        const QString node = QStandardPaths::findExecutable("node");
        if (node.isEmpty())
            QFAIL("node is not on PATH: run installers/dev.sh test (it installs Node.js and npm)");
        const QString modules = test::buildDir() + "/js";
        if (!QFile::exists(modules + "/node_modules/hdr-histogram-js/package.json"))
            QFAIL(qPrintable("hdr-histogram-js is not installed in " + modules +
                             "/node_modules: run installers/dev.sh test (it runs npm ci there)"));

        // ---- a synthetic run: 6 intervals (skewed, even, a single value, the 4th empty), the last one
        // shorter ------------------------------------------------------------------------------------
        load::Result r;
        r.startedAt = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'733'400'000'456));
        std::vector<std::unique_ptr<Histogram>> perInterval;
        auto merged = std::make_unique<Histogram>();
        std::mt19937_64 rng(42);
        for (int i = 0; i < 6; ++i) {
            auto h = std::make_unique<Histogram>();
            if (i == 1) { // 1..10000 µs, evenly
                for (std::uint64_t us = 1; us <= 10000; ++us)
                    h->record(us * 1000);
            } else if (i == 4) { // one value
                h->record(1'500'000'000);
            } else if (i != 3) {
                // Median 0.5..3 ms, a long right tail; one in 997 a stall of 0.2..4 s.
                std::lognormal_distribution<double> body(std::log(5e5 * (1 + i)), 1.2 + 0.2 * i);
                std::uniform_real_distribution<double> stall(2e8, 4e9);
                const int n = i == 2 ? 200000 : 5000 + 3000 * i;
                for (int k = 0; k < n; ++k)
                    h->record(static_cast<std::uint64_t>(k % 997 == 0 ? stall(rng) : body(rng)));
            }
            load::LatencyInterval in;
            in.start = std::chrono::seconds(i);
            in.length = i == 5 ? std::chrono::nanoseconds(730ms) : std::chrono::nanoseconds(1s);
            h->forEachBucket([&](const Histogram::Bucket& b) { in.buckets.push_back(b); });
            in.maxNs = h->max();
            r.intervals.push_back(std::move(in));
            merged->merge(*h);
            perInterval.push_back(std::move(h));
        }
        QVERIFY(merged->max() > 1'000'000'000); // values up to seconds

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString logPath = dir.filePath("run.hlog"), hgrmPath = dir.filePath("run.hgrm");
        const std::string hgrm = load::percentileDistribution(*merged);
        for (const auto& [path, text] :
             {std::pair{logPath, load::intervalLog(r)}, std::pair{hgrmPath, hgrm}}) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text.data(), static_cast<qint64>(text.size()));
        }

        // ---- what hdr-histogram-js reads -----------------------------------------------------------
        const test::ProcessResult p = test::runProcess(
            node, {test::sourceDir() + "/tests/js/hdr_check.mjs", modules, logPath, hgrmPath}, {}, 60000);
        QVERIFY2(p.exitCode == 0, p.err.constData());
        QJsonParseError parseError;
        const QJsonObject js = QJsonDocument::fromJson(p.out, &parseError).object();
        QVERIFY2(parseError.error == QJsonParseError::NoError, p.out.constData());

        QCOMPARE(js["version"].toString(), QString("3.0.1")); // tests/js/package-lock.json
        QCOMPARE(js["startTimeSec"].toDouble(), 1733400000.456);
        QCOMPARE(js["baseTimeSec"].toDouble(), 1733400000.456);

        const QJsonArray intervals = js["intervals"].toArray();
        QCOMPARE(intervals.size(), 6);
        for (int i = 0; i < 6; ++i) {
            const QJsonObject in = intervals[i].toObject();
            const Histogram& h = *perInterval[static_cast<std::size_t>(i)];
            const QByteArray where = "interval " + QByteArray::number(i);
            // Absolute times in ms: BaseTime + the line's start (and + its length).
            const double startMs = 1'733'400'000'456.0 + 1000.0 * i;
            QVERIFY2(std::abs(in["startMs"].toDouble() - startMs) < 0.5, where.constData());
            QVERIFY2(std::abs(in["endMs"].toDouble() - (startMs + (i == 5 ? 730 : 1000))) < 0.5,
                     where.constData());
            QCOMPARE(jsNumber(in["totalCount"]), h.count());
            QCOMPARE(jsNumber(in["maxValue"]), h.count() ? Histogram::highestEquivalent(h.max()) : 0);
            for (std::size_t k = 0; k < std::size(kPercentiles); ++k) {
                const std::uint64_t theirs = jsNumber(in[kPercentileKeys[k]]);
                // HdrHistogram's valuesAreEquivalent: same lowest equivalent value (same bucket) ...
                QVERIFY2(!h.count() || Histogram::lowestEquivalent(theirs) ==
                                           Histogram::lowestEquivalent(h.valueAtPercentile(kPercentiles[k])),
                         (where + " " + kPercentileKeys[k]).constData());
                // ... and getValueAtPercentile's answer is that bucket's highest value.
                QCOMPARE(theirs, hdrValueAt(h, kPercentiles[k]));
            }
            const QString ours = QString::fromStdString(load::percentileDistribution(h));
            const QString text = in["distribution"].toString();
            QVERIFY2(ours == text, (where + ", " + firstDifference(ours, text)).constData());
        }

        const QJsonObject m = js["merged"].toObject();
        QCOMPARE(jsNumber(m["totalCount"]), merged->count());
        QCOMPARE(jsNumber(m["maxValue"]), Histogram::highestEquivalent(merged->max()));
        for (std::size_t k = 0; k < std::size(kPercentiles); ++k)
            QCOMPARE(jsNumber(m[kPercentileKeys[k]]), hdrValueAt(*merged, kPercentiles[k]));
        // Same rows, same mean and standard deviation (over bucket medians), same footer, same bytes.
        const QString ours = QString::fromStdString(hgrm), theirs = m["distribution"].toString();
        QVERIFY2(ours == theirs, firstDifference(ours, theirs).constData());

        // plotFiles.html's parse of our .hgrm: every row but the 100 % one (3 fields) is a point
        // (x = 1/(1-Percentile), y = Value), the first at x = 1.
        const QJsonArray plot = js["plot"].toArray();
        const qsizetype rows = ours.split('\n').filter(QRegularExpression("^ +[0-9]")).size();
        QVERIFY(rows > 50);
        QCOMPARE(plot.size(), rows - 1);
        QCOMPARE(plot[0].toArray()[0].toDouble(), 1.0);
        QCOMPARE(plot[0].toArray()[1].toDouble(),
                 ours.split('\n')[2].section(' ', 0, 0, QString::SectionSkipEmpty).toDouble());
    }

    // `portico bench --hgrm --hdr-log` against `portico serve`: hdr-histogram-js reads the run's
    // interval log (one line per second, together every measured request of the JSON result) and
    // its merge prints our .hgrm byte for byte.
    void benchCommandLineOutputs() {
        const QString node = QStandardPaths::findExecutable("node");
        const QString modules = test::buildDir() + "/js";
        if (node.isEmpty() || !QFile::exists(modules + "/node_modules/hdr-histogram-js/package.json"))
            QFAIL("node or hdr-histogram-js missing: run installers/dev.sh test");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QFile config(dir.filePath("portico.yaml"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("listen: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /slow\n"
                     "        respond: {body: slow, latency: 2ms}\n");
        config.close();
        test::ServerProcess server({"--config", config.fileName(), "--no-reload"});
        QVERIFY2(server.waitReady(), server.output().constData());
        const QString hgrm = dir.filePath("run.hgrm"), log = dir.filePath("run.hlog"),
                      json = dir.filePath("r.json");
        auto bench = test::runProcess(test::porticoBinary(),
                                      {"bench", server.baseUrl() + "/slow", "-c", "2", "-d", "2500ms",
                                       "--no-save", "--hgrm", hgrm, "--hdr-log", log, "--json", json},
                                      {}, 60000);
        QVERIFY2(bench.exitCode == 0, bench.err.constData());
        QFile jsonFile(json);
        QVERIFY(jsonFile.open(QIODevice::ReadOnly));
        const auto latency = QJsonDocument::fromJson(jsonFile.readAll()).object()["latency"].toObject();
        const auto count = static_cast<std::uint64_t>(latency["count"].toInteger());
        QVERIFY(count > 500);
        const test::ProcessResult p = test::runProcess(
            node, {test::sourceDir() + "/tests/js/hdr_check.mjs", modules, log, hgrm}, {}, 60000);
        QVERIFY2(p.exitCode == 0, p.err.constData());
        const QJsonObject js = QJsonDocument::fromJson(p.out).object();
        const QJsonArray intervals = js["intervals"].toArray();
        QCOMPARE(intervals.size(), 3);
        std::uint64_t total = 0;
        for (const auto& in : intervals)
            total += jsNumber(in.toObject()["totalCount"]);
        QCOMPARE(total, count);
        QCOMPARE(jsNumber(js["merged"].toObject()["totalCount"]), count);
        QFile hgrmFile(hgrm);
        QVERIFY(hgrmFile.open(QIODevice::ReadOnly));
        const QString ours = QString::fromUtf8(hgrmFile.readAll());
        const QString theirs = js["merged"].toObject()["distribution"].toString();
        QVERIFY2(ours == theirs, firstDifference(ours, theirs).constData());
        QCOMPARE(server.terminate(), 0);
    }
};

QTEST_GUILESS_MAIN(TestHdrJs)
#include "tst_hdr_js.moc"

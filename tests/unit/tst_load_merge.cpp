// load/merge.h: run objects read back from their JSON, and the exact merge of several generators'
// runs; result.h's wall-clock time format.
#include <portico/load/merge.h>

#include <QtTest>

#include <random>

using namespace portico;
using namespace std::chrono_literals;

namespace {

// A run with `n` latencies drawn from a skewed distribution (seeded), 2 request kinds, a series.
load::Result run(unsigned seed, std::uint64_t n, std::chrono::system_clock::time_point startedAt,
                 std::vector<std::uint64_t>* all = nullptr) {
    load::Result r;
    r.address = "127.0.0.1:8080";
    for (const char* path : {"/a", "/b"}) {
        load::RequestSpec spec;
        spec.url = std::string("http://127.0.0.1:8080") + path;
        r.options.requests.push_back(spec);
    }
    r.options.connections = 4;
    r.options.duration = 1s;
    r.latency = std::make_unique<stats::Histogram>();
    r.byRequest.resize(2);
    for (auto& k : r.byRequest)
        k.latency = std::make_unique<stats::Histogram>();
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> d(12.0 + seed % 3, 1.2); // e^12 ns ≈ 160 µs median
    for (std::uint64_t i = 0; i < n; ++i) {
        const auto v = static_cast<std::uint64_t>(d(rng)) + 1000;
        r.latency->record(v);
        auto& k = r.byRequest[i % 2];
        k.latency->record(v);
        ++k.requests.started;
        ++k.requests.completed;
        ++k.statuses[i % 7 ? 200 : 404];
        if (all) all->push_back(v);
    }
    r.serviceTime = std::make_unique<stats::Histogram>(*r.latency);
    r.requests.started = r.requests.completed = n;
    for (const auto& k : r.byRequest)
        for (const auto& [code, c] : k.statuses)
            r.statuses[code] += c;
    r.startedAt = startedAt;
    r.measured = 1s;
    r.perSlot.assign(10, n / 10);
    r.perSlot.back() += n % 10;
    r.bytesRead = n * 100;
    r.cpuUserSeconds = 0.25;
    return r;
}

const auto kT0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'765'000'000));

// Adds drill-down samples to `r`: completed ones on each of its connections and one of each
// failure kind, sorted by doneNs as a run leaves them.
void addSamples(load::Result& r) {
    std::int64_t t = 1000;
    for (std::uint32_t i = 0; i < 12; ++i) {
        load::ExchangeSample x;
        x.request = i % 2;
        x.status = i % 5 ? 200 : 404;
        x.connection = i % r.options.connections;
        x.localPort = static_cast<std::uint16_t>(40000 + x.connection);
        x.sequence = i / r.options.connections;
        x.intendedNs = x.sentNs = t;
        x.doneNs = t + 150'000 + i * 1000;
        x.latencyNs = static_cast<std::uint64_t>(x.doneNs - x.intendedNs);
        if (i < 9) x.firstByteNs = t + 100'000; // none for the failed ones
        if (i < 3) x.responseHeaders = {{"Content-Type", "text/plain"}, {"X-Q", "a\"b\\c"}};
        if (i == 3) x.responseHeaders.emplace(); // a head kept that had no fields
        if (i < 6)
            x.requestId = "00c0ffee00aa-" + std::to_string(x.connection) + "." + std::to_string(x.localPort) +
                          "." + std::to_string(x.sequence);
        if (i >= 9) { // reset, timeout, protocol
            x.failure = static_cast<std::uint8_t>(i - 8);
            x.status = 0;
        }
        r.samples.push_back(x);
        t += 80'000'000;
    }
}

} // namespace

class TestLoadMerge : public QObject {
    Q_OBJECT
private slots:
    void isoTimeRoundTrip() {
        const auto t = kT0 + 123456us;
        QCOMPARE(load::isoTime(t), std::string("2025-12-06T05:46:40.123456Z"));
        std::chrono::system_clock::time_point back;
        QVERIFY(load::parseIsoTime(load::isoTime(t), back));
        QVERIFY(back == t);
        QVERIFY(load::parseIsoTime("2025-12-06T06:46:40.5+01:00", back));
        QVERIFY(back == kT0 + 500ms);
        QVERIFY(load::parseIsoTime("2025-12-06 05:46:40Z", back));
        QVERIFY(back == kT0);
        QVERIFY(load::parseIsoTime("@1765000000.25", back));
        QVERIFY(back == kT0 + 250ms);
        QVERIFY(load::isoTime({}).empty());
        QVERIFY(load::parseIsoTime("2199-12-31T23:59:59Z", back));
        QVERIFY(back == std::chrono::system_clock::time_point(std::chrono::seconds(7'258'118'399)));
        for (const char* bad : {"", "2025-12-06", "2025-12-06T05:46:40", "2025-13-06T05:46:40Z",
                                "2025-12-06T05:46:40.Z", "2025-12-06T05:46:40Zjunk", "@", "@12x", "tomorrow",
                                "2025-12-06T05:46:40+1:00", "2026-02-30T00:00:00Z", "2026-04-31T12:00:00Z",
                                // outside 1970..2199 (nanoseconds since 1970 overflow int64 in 2262)
                                "4052-12-06T08:33:01.295384Z", "1969-12-31T23:59:59Z", "2200-01-01T00:00:00Z",
                                "@7258118400", "@999999999999"}) {
            auto untouched = kT0;
            QVERIFY2(!load::parseIsoTime(bad, untouched), bad);
            QVERIFY(untouched == kT0);
        }
    }

    // What toJson writes, resultFromJson reads back: counts, histograms bucket for bucket, min and
    // max exact, series, byRequest.
    void jsonRoundTrip() {
        const auto r = run(1, 5000, kT0);
        load::Result back;
        std::string error;
        QVERIFY2(load::resultFromJson(load::toJson(r), back, error), error.c_str());
        QCOMPARE(back.requests.completed, r.requests.completed);
        QCOMPARE(back.statuses, r.statuses);
        QVERIFY(back.startedAt == r.startedAt);
        QCOMPARE(back.perSlot, r.perSlot);
        // A run without a start time (the epoch) is written as "startedAt": "" and read back so.
        {
            auto untimed = run(1, 5000, std::chrono::system_clock::time_point{});
            const std::string text = load::toJson(untimed);
            QVERIFY(text.find("\"startedAt\":\"\"") != std::string::npos);
            load::Result again;
            QVERIFY2(load::resultFromJson(text, again, error), error.c_str());
            QVERIFY(again.startedAt == std::chrono::system_clock::time_point{});
        }
        // `r` was made without the failures' series: none is written, none read back.
        QVERIFY(load::toJson(r).find("\"failed\":[") == std::string::npos);
        QVERIFY(back.failedPerSlot.empty());
        // With failures: their series comes back as written, and must sum to requests.failed.
        {
            auto failing = run(1, 5000, kT0);
            failing.requests.started += 7;
            failing.requests.failed = 7;
            failing.errors.reset = 7;
            failing.failedPerSlot.assign(failing.perSlot.size(), 0);
            failing.failedPerSlot[2] = 3;
            failing.failedPerSlot[9] = 4;
            load::Result withFailures;
            QVERIFY2(load::resultFromJson(load::toJson(failing), withFailures, error), error.c_str());
            QCOMPARE(withFailures.failedPerSlot, failing.failedPerSlot);
            std::string text = load::toJson(failing);
            const auto at = text.find("\"failed\":[0,0,3");
            QVERIFY(at != std::string::npos);
            text[at + 14] = '2'; // now sums to 6, not 7
            QVERIFY(!load::resultFromJson(text, withFailures, error));
            QVERIFY2(error.find("series.failed") != std::string::npos, error.c_str());
            // Merged: slot by slot, as the completions.
            load::Result other;
            QVERIFY2(load::resultFromJson(load::toJson(failing), other, error), error.c_str());
            std::vector<load::Result> two;
            two.push_back(std::move(failing));
            two.push_back(std::move(other));
            load::Result merged;
            QVERIFY2(load::mergeResults(two, merged, error), error.c_str());
            QCOMPARE(merged.failedPerSlot.size(), merged.perSlot.size());
            QCOMPARE(merged.failedPerSlot[2], std::uint64_t(6));
            QCOMPARE(merged.failedPerSlot[9], std::uint64_t(8));
            // With a run whose file had no series (older than it): the merge has none either, so
            // what it writes does not claim a series that misses that run's failures.
            std::vector<load::Result> mixed;
            mixed.push_back(std::move(merged));
            load::Result old;
            std::string oldText = load::toJson(mixed.front());
            const auto from = oldText.find(",\"failed\":[");
            QVERIFY(from != std::string::npos);
            oldText.erase(from, oldText.find(']', from) + 1 - from);
            QVERIFY2(load::resultFromJson(oldText, old, error), error.c_str());
            QVERIFY(old.failedPerSlot.empty());
            mixed.push_back(std::move(old));
            load::Result both;
            QVERIFY2(load::mergeResults(mixed, both, error), error.c_str());
            QVERIFY(both.failedPerSlot.empty());
            QCOMPARE(both.requests.failed, std::uint64_t(28));
            load::Result again;
            QVERIFY2(load::resultFromJson(load::toJson(both), again, error), error.c_str());
        }
        QCOMPARE(back.latency->count(), r.latency->count());
        QCOMPARE(back.latency->min(), r.latency->min());
        QCOMPARE(back.latency->max(), r.latency->max());
        QVERIFY(std::abs(back.latency->mean() - r.latency->mean()) <= 1e-6 * r.latency->mean());
        QVERIFY(std::abs(back.latency->stddev() - r.latency->stddev()) <= 1e-6 * r.latency->stddev());
        for (double p = 0; p <= 100; p += 0.5)
            QCOMPARE(back.latency->valueAtPercentile(p), r.latency->valueAtPercentile(p));
        QCOMPARE(back.byRequest.size(), std::size_t(2));
        QCOMPARE(back.byRequest[1].statuses, r.byRequest[1].statuses);
        QCOMPARE(back.byRequest[1].latency->valueAtPercentile(99),
                 r.byRequest[1].latency->valueAtPercentile(99));
        QCOMPARE(back.options.requests[1].url, r.options.requests[1].url);
        // The JSON of what was read back is the same document (nothing lost or invented)
        // apart from mean/stddev rounding in the last digits.
        QCOMPARE(load::toJson(back).size(), load::toJson(r).size());
    }

    // The drill-down samples survive the JSON exactly, failure kinds included.
    void samplesJsonRoundTrip() {
        auto r = run(1, 1000, kT0);
        addSamples(r);
        r.options.requests[0].headers = {{"X-Trace", "7"},
                                         {"Accept", "text/\"x\""}}; // a sample's request fields
        const std::string json = load::toJson(r);
        QVERIFY(json.find("\"headers\":[[\"X-Trace\",\"7\"],[\"Accept\",\"text/\\\"x\\\"\"]]") !=
                std::string::npos);
        QVERIFY(json.find("\"failure\":\"timeout\"") != std::string::npos);
        QVERIFY(json.find("\"failure\":null") != std::string::npos);
        QVERIFY(
            json.find("\"responseHeaders\":[[\"Content-Type\",\"text/plain\"],[\"X-Q\",\"a\\\"b\\\\c\"]]") !=
            std::string::npos);
        QVERIFY(json.find("\"responseHeaders\":[]") != std::string::npos);
        QVERIFY(json.find("\"requestId\":\"00c0ffee00aa-0.40000.0\"") != std::string::npos);
        load::Result back;
        std::string error;
        QVERIFY2(load::resultFromJson(json, back, error), error.c_str());
        QCOMPARE(back.samples.size(), r.samples.size());
        QVERIFY(back.samples == r.samples);
        QVERIFY(back.options.requests[0].headers == r.options.requests[0].headers);
        QVERIFY(back.options.requests[1].headers.empty());
        QCOMPARE(back.samples[10].failure, std::uint8_t(2));
        QVERIFY(back.options.samples);
        // Older files have no samples: none, and the run reads as one without them.
        auto none = run(1, 1000, kT0);
        none.options.samples = false;
        QVERIFY2(load::resultFromJson(load::toJson(none), back, error), error.c_str());
        QVERIFY(back.samples.empty());
        QVERIFY(!back.options.samples);
    }

    // Merged runs keep every run's samples, times shifted by the run's start offset (exactly, not
    // rounded to a slot), connections numbered after the earlier runs', sorted by doneNs.
    void samplesMergeShifted() {
        std::vector<load::Result> runs;
        runs.push_back(run(1, 100, kT0 + 30ms));
        runs.push_back(run(2, 100, kT0));
        addSamples(runs[0]);
        addSamples(runs[1]);
        const auto first = runs[0].samples, second = runs[1].samples;
        load::Result merged;
        std::string error;
        QVERIFY2(load::mergeResults(runs, merged, error), error.c_str());
        QCOMPARE(merged.samples.size(), first.size() + second.size());
        for (std::size_t i = 1; i < merged.samples.size(); ++i)
            QVERIFY(merged.samples[i - 1].doneNs <= merged.samples[i].doneNs);
        std::size_t fromFirst = 0, fromSecond = 0;
        for (const auto& x : merged.samples) {
            if (x.connection < 4) { // run 1 (started 30 ms after run 2): shifted by 30 ms
                auto y = x;
                y.intendedNs -= 30'000'000;
                y.sentNs -= 30'000'000;
                y.doneNs -= 30'000'000;
                if (y.firstByteNs >= 0) y.firstByteNs -= 30'000'000;
                QVERIFY(std::find(first.begin(), first.end(), y) != first.end());
                ++fromFirst;
            } else { // run 2, the earliest: not shifted, connections 4..7
                auto y = x;
                y.connection -= 4;
                QVERIFY(std::find(second.begin(), second.end(), y) != second.end());
                ++fromSecond;
            }
        }
        QCOMPARE(fromFirst, first.size());
        QCOMPARE(fromSecond, second.size());
        // Through JSON: the merged file reads back (connections below the summed count).
        load::Result back;
        QVERIFY2(load::resultFromJson(load::toJson(merged), back, error), error.c_str());
        QVERIFY(back.samples == merged.samples);
    }

    // A damaged sample is refused with its place and what is wrong.
    void corruptSamples_data() {
        QTest::addColumn<QByteArray>("from");
        QTest::addColumn<QByteArray>("to");
        QTest::addColumn<QString>("says");
        QTest::newRow("not an array")
            << QByteArray("\"samples\":[") << QByteArray("\"samples\":7,\"x\":[") << "samples: not an array";
        QTest::newRow("request") << QByteArray("{\"request\":1,") << QByteArray("{\"request\":2,")
                                 << "samples[1].request: not an index";
        QTest::newRow("failure kind") << QByteArray("\"failure\":\"reset\"")
                                      << QByteArray("\"failure\":\"boom\"") << "samples[9].failure";
        QTest::newRow("failed with a status")
            << QByteArray("\"status\":0,\"failure\":\"reset\"")
            << QByteArray("\"status\":200,\"failure\":\"reset\"") << "samples[9].status";
        QTest::newRow("status") << QByteArray("\"status\":404") << QByteArray("\"status\":42")
                                << "samples[0].status";
        QTest::newRow("negative time")
            << QByteArray("\"intendedNs\":1000,\"sentNs\":1000")
            << QByteArray("\"intendedNs\":-1,\"sentNs\":1000") << "samples[0].intendedNs";
        QTest::newRow("order") << QByteArray("\"intendedNs\":1000,\"sentNs\":1000")
                               << QByteArray("\"intendedNs\":1000,\"sentNs\":999")
                               << "samples[0]: not intendedNs";
        QTest::newRow("latency") << QByteArray("\"latencyNs\":150000,") << QByteArray("\"latencyNs\":150001,")
                                 << "samples[0].latencyNs";
        QTest::newRow("connection") << QByteArray("\"connection\":3,") << QByteArray("\"connection\":4,")
                                    << "samples[3].connection";
        QTest::newRow("port") << QByteArray("\"localPort\":40000") << QByteArray("\"localPort\":70000")
                              << "samples[0].localPort";
        QTest::newRow("missing") << QByteArray(",\"sequence\":0,") << QByteArray(",")
                                 << "samples[0].sequence: missing";
        QTest::newRow("first byte after done")
            << QByteArray("\"firstByteNs\":101000,") << QByteArray("\"firstByteNs\":151001,")
            << "samples[0].firstByteNs: not sentNs";
        QTest::newRow("first byte before sent")
            << QByteArray("\"firstByteNs\":101000,") << QByteArray("\"firstByteNs\":999,")
            << "samples[0].firstByteNs: not sentNs";
        QTest::newRow("response field not a pair") << QByteArray("[\"X-Q\",") << QByteArray("[\"X-Q\",1,")
                                                   << "samples[0].responseHeaders: not an array";
        QTest::newRow("response field without a name")
            << QByteArray("[\"X-Q\",") << QByteArray("[\"\",") << "samples[0].responseHeaders: not an array";
        QTest::newRow("response fields not an array")
            << QByteArray("\"responseHeaders\":[]") << QByteArray("\"responseHeaders\":{}")
            << "samples[3].responseHeaders: not an array";
        QTest::newRow("fraction") << QByteArray("\"doneNs\":151000") << QByteArray("\"doneNs\":151000.5")
                                  << "samples[0].doneNs";
        QTest::newRow("request id not a string")
            << QByteArray("\"requestId\":\"00c0ffee00aa-0.40000.0\"") << QByteArray("\"requestId\":7")
            << "samples[0].requestId: not 1..256 visible ASCII";
        QTest::newRow("request id with a space")
            << QByteArray("\"requestId\":\"00c0ffee00aa-0.40000.0\"")
            << QByteArray("\"requestId\":\"00c0ffee00aa 0.40000.0\"") << "samples[0].requestId";
        QTest::newRow("request id empty") << QByteArray("\"requestId\":\"00c0ffee00aa-0.40000.0\"")
                                          << QByteArray("\"requestId\":\"\"") << "samples[0].requestId";
        QTest::newRow("requestId option")
            << QByteArray("\"requestId\":false") << QByteArray("\"requestId\":1")
            << "options.requestId: not true or false";
    }
    void corruptSamples() {
        QFETCH(QByteArray, from);
        QFETCH(QByteArray, to);
        QFETCH(QString, says);
        auto good = run(1, 1000, kT0);
        addSamples(good);
        QByteArray json = QByteArray::fromStdString(load::toJson(good));
        const auto at = json.indexOf(from);
        QVERIFY2(at >= 0, from.constData());
        json.replace(at, from.size(), to);
        load::Result r;
        std::string error;
        QVERIFY(!load::resultFromJson(json.toStdString(), r, error));
        QVERIFY2(QString::fromStdString(error).contains(says), error.c_str());
    }

    // The merge's percentiles are those of one histogram of every sample of every run.
    void mergeIsExact() {
        std::vector<std::uint64_t> all;
        std::vector<load::Result> runs;
        runs.push_back(run(1, 20000, kT0, &all));
        runs.push_back(run(2, 7000, kT0 + 200ms, &all));
        runs.push_back(run(3, 13000, kT0 + 50ms, &all));
        // Through JSON, as --merge reads them.
        std::vector<load::Result> read(3);
        std::string error;
        for (int i = 0; i < 3; ++i)
            QVERIFY2(load::resultFromJson(load::toJson(runs[i]), read[i], error), error.c_str());
        load::Result merged;
        QVERIFY2(load::mergeResults(read, merged, error), error.c_str());
        stats::Histogram one;
        for (auto v : all)
            one.record(v);
        QCOMPARE(merged.latency->count(), std::uint64_t(40000));
        QCOMPARE(merged.latency->min(), one.min());
        QCOMPARE(merged.latency->max(), one.max());
        for (double p : {0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0})
            QCOMPARE(merged.latency->valueAtPercentile(p), one.valueAtPercentile(p));
        QVERIFY(std::abs(merged.latency->mean() - one.mean()) <= 1e-6 * one.mean());
        // The exact value of rank ceil(p·N) is within the histogram's precision below the answer.
        std::sort(all.begin(), all.end());
        const auto exact99 = all[static_cast<std::size_t>(std::ceil(0.99 * all.size())) - 1];
        QVERIFY(merged.latency->valueAtPercentile(99) >= exact99);
        QVERIFY(merged.latency->valueAtPercentile(99) <= exact99 + exact99 / 1024 + 1);
        QCOMPARE(merged.requests.completed, std::uint64_t(40000));
        QCOMPARE(merged.statuses.at(404) + merged.statuses.at(200), std::uint64_t(40000));
        QCOMPARE(merged.byRequest[0].requests.completed + merged.byRequest[1].requests.completed,
                 std::uint64_t(40000));
        QCOMPARE(merged.options.connections, 12u);
        QCOMPARE(merged.bytesRead, std::uint64_t(4'000'000));
        QCOMPARE(merged.cpuUserSeconds, 0.75);
        // Aligned by start: run 2 began 200 ms (2 slots) after run 1, run 3 50 ms (rounded: 1 slot).
        QVERIFY(merged.startedAt == kT0);
        QCOMPARE(merged.measured, std::chrono::nanoseconds(1200ms));
        {
            // A run that began 1,457 ms after the first is placed at slot 15 (1.5 s): the merge's
            // measured time covers its last slot as placed (2.5 s), not only its exact end
            // (2.457 s), or a plot would divide that slot's completions by 57 ms.
            std::vector<load::Result> two;
            two.push_back(run(1, 1000, kT0));
            two.push_back(run(2, 1000, kT0 + 1457ms));
            load::Result late;
            std::string error;
            QVERIFY2(load::mergeResults(two, late, error), error.c_str());
            QCOMPARE(late.perSlot.size(), std::size_t(25));
            QCOMPARE(late.measured, std::chrono::nanoseconds(2500ms));
        }
        QCOMPARE(merged.perSlot.size(), std::size_t(12));
        QCOMPARE(merged.perSlot[0], std::uint64_t(2000));
        QCOMPARE(merged.perSlot[1], std::uint64_t(2000 + 1300));
        QCOMPARE(merged.perSlot[2], std::uint64_t(2000 + 1300 + 700));
        QCOMPARE(merged.perSlot[11], std::uint64_t(700));
        std::uint64_t sum = 0;
        for (auto n : merged.perSlot)
            sum += n;
        QCOMPARE(sum, std::uint64_t(40000));
        QCOMPARE(merged.requestsPerSecond(), 40000 / 1.2);
    }

    void refusesOtherRequests() {
        std::vector<load::Result> runs;
        runs.push_back(run(1, 100, kT0));
        runs.push_back(run(2, 100, kT0));
        runs[1].options.requests[1].url = "http://127.0.0.1:8080/c";
        load::Result merged;
        std::string error;
        QVERIFY(!load::mergeResults(runs, merged, error));
        QVERIFY2(QString::fromStdString(error).contains("other requests"), error.c_str());
        std::vector<load::Result> none;
        QVERIFY(!load::mergeResults(none, merged, error));
        // Runs of another set-up: through a proxy and direct, with request ids and without.
        for (int kind = 0; kind < 3; ++kind) {
            std::vector<load::Result> unlike;
            unlike.push_back(run(1, 100, kT0));
            unlike.push_back(run(2, 100, kT0));
            if (kind == 0) unlike[1].options.proxy = "http://127.0.0.1:3128";
            if (kind == 1) unlike[0].options.requestId = true;
            if (kind == 2) unlike[1].options.protocol = load::Protocol::Http2;
            QVERIFY(!load::mergeResults(unlike, merged, error));
            const char* says[] = {"another proxy (--proxy)", "another request id setting",
                                  "another protocol"};
            QVERIFY2(error.find(says[kind]) != std::string::npos, error.c_str());
        }
    }

    // A corrupt or foreign file is an error naming the field, never a crash.
    void corruptInput_data() {
        QTest::addColumn<QByteArray>("from");
        QTest::addColumn<QByteArray>("to");
        QTest::addColumn<QString>("says");
        QTest::newRow("truncated") << QByteArray("\"cpu\"") << QByteArray() << "not JSON";
        QTest::newRow("schema") << QByteArray("\"schema\":1") << QByteArray("\"schema\":2") << "schema";
        QTest::newRow("count mismatch")
            << QByteArray("\"latency\":{\"unit\":\"ns\",\"count\":5000")
            << QByteArray("\"latency\":{\"unit\":\"ns\",\"count\":5001") << "latency.count";
        QTest::newRow("bucket shape")
            << QByteArray("\"buckets\":[[") << QByteArray("\"buckets\":[[7,") << "latency.buckets";
        QTest::newRow("negative") << QByteArray("\"completed\":5000") << QByteArray("\"completed\":-5")
                                  << "completed";
        QTest::newRow("status key") << QByteArray("\"statuses\":{\"200\"")
                                    << QByteArray("\"statuses\":{\"20x\"") << "statuses";
        QTest::newRow("startedAt") << QByteArray("\"startedAt\":\"2025")
                                   << QByteArray("\"startedAt\":\"x2025") << "startedAt";
        QTest::newRow("request fields")
            << QByteArray("\"bodyBytes\":0}") << QByteArray("\"bodyBytes\":0,\"headers\":[[\"X\"]]}")
            << "target.requests[0].headers: not an array of [name, value]";
        QTest::newRow("request field name")
            << QByteArray("\"bodyBytes\":0}") << QByteArray("\"bodyBytes\":0,\"headers\":[[\"\",\"v\"]]}")
            << "target.requests[0].headers";
    }
    void corruptInput() {
        QFETCH(QByteArray, from);
        QFETCH(QByteArray, to);
        QFETCH(QString, says);
        QByteArray json = QByteArray::fromStdString(load::toJson(run(1, 5000, kT0)));
        const auto at = json.indexOf(from);
        QVERIFY2(at >= 0, from.constData());
        if (to.isEmpty())
            json.truncate(at);
        else
            json.replace(at, from.size(), to);
        load::Result r;
        std::string error;
        QVERIFY(!load::resultFromJson(json.toStdString(), r, error));
        QVERIFY2(QString::fromStdString(error).contains(says), error.c_str());
    }

    void refusesErrorAndSuiteObjects() {
        load::Result failed;
        failed.error = "cannot connect";
        load::Result r;
        std::string error;
        QVERIFY(!load::resultFromJson(load::toJson(failed), r, error));
        QVERIFY2(QString::fromStdString(error).contains("cannot connect"), error.c_str());
        QVERIFY(!load::resultFromJson(R"({"schema":1,"kind":"suite","routes":[]})", r, error));
        QVERIFY2(QString::fromStdString(error).contains("suite"), error.c_str());
        QVERIFY(!load::resultFromJson("[1,2]", r, error));
    }

    // Histogram::restore checks that the buckets are this layout's.
    void restoreChecksBuckets() {
        stats::Histogram h;
        stats::Histogram::Bucket ok[] = {{5000, 5003, 2}, {999'936, 1'000'447, 3}};
        QVERIFY(h.restore(ok, 2, 5000, 1'000'400, 400000, 10));
        QCOMPARE(h.count(), std::uint64_t(5));
        QCOMPARE(h.max(), std::uint64_t(1'000'400));
        QCOMPARE(h.valueAtPercentile(100), std::uint64_t(1'000'400));
        stats::Histogram::Bucket wide[] = {{999'936, 1'000'999, 1}};
        QVERIFY(!h.restore(wide, 1, 1'000'000, 1'000'000, 1, 0));
        QCOMPARE(h.count(), std::uint64_t(0));
        stats::Histogram::Bucket backwards[] = {{6000, 6003, 1}, {5000, 5003, 1}};
        QVERIFY(!h.restore(backwards, 2, 5000, 6000, 1, 0));
        QVERIFY(!h.restore(ok, 2, 4000, 1'000'400, 1, 0)); // min outside the first bucket
        // A mean outside [min, max] or a standard deviation above max: only a corrupt file has them
        // (1e300 would not even fit the 128-bit sums).
        QVERIFY(!h.restore(ok, 2, 5000, 1'000'400, 1e300, 10));
        QVERIFY(!h.restore(ok, 2, 5000, 1'000'400, 100, 10));
        QVERIFY(!h.restore(ok, 2, 5000, 1'000'400, 400000, 5e6));
        stats::Histogram::Bucket zero[] = {{5000, 5003, 0}};
        QVERIFY(!h.restore(zero, 1, 5000, 5000, 1, 0));
    }
};

QTEST_GUILESS_MAIN(TestLoadMerge)
#include "tst_load_merge.moc"

// load/thresholds.h: the threshold expressions `portico bench --threshold` takes, and how they are
// judged against a run.
#include <portico/load/thresholds.h>

#include <QtTest>

using namespace portico;

namespace {

// 1000 completed requests with latencies 1..1000 µs, 10 failed; statuses 200 ×990, 503 ×10; 2 s.
load::Result sample() {
    load::Result r;
    r.latency = std::make_unique<stats::Histogram>();
    for (std::uint64_t us = 1; us <= 1000; ++us)
        r.latency->record(us * 1000);
    r.requests.completed = 1000;
    r.requests.failed = 10;
    r.requests.started = 1010;
    r.statuses[200] = 990;
    r.statuses[503] = 10;
    r.measured = std::chrono::seconds(2);
    return r;
}

load::ThresholdOutcome judged(const char* expr) {
    std::string error;
    auto t = load::parseThreshold(expr, error);
    if (!t) qFatal("%s", error.c_str());
    return load::judge(*t, sample());
}

} // namespace

class TestLoadThresholds : public QObject {
    Q_OBJECT
private slots:
    void parsesEachKey_data() {
        QTest::addColumn<QString>("expr");
        QTest::addColumn<int>("metric");
        QTest::addColumn<double>("limit");
        using M = load::Threshold::Metric;
        QTest::newRow("p99") << "p99<250ms" << int(M::Percentile) << 250e6;
        QTest::newRow("p99.9 spaces") << " p99.9 <= 1.5s " << int(M::Percentile) << 1.5e9;
        QTest::newRow("max") << "max<800us" << int(M::Percentile) << 800e3;
        QTest::newRow("micro sign") << "p50<3\xC2\xB5s" << int(M::Percentile) << 3e3;
        QTest::newRow("min") << "min>=10ns" << int(M::Min) << 10.0;
        QTest::newRow("mean") << "mean<2m" << int(M::Mean) << 120e9;
        QTest::newRow("hours") << "max<1h" << int(M::Percentile) << 3600e9;
        QTest::newRow("greek mu") << "p90<3\xCE\xBCs" << int(M::Percentile) << 3e3;
        QTest::newRow("rps") << "rps>1000.5" << int(M::Rps) << 1000.5;
        QTest::newRow("errors") << "errors<1%" << int(M::Errors) << 1.0;
        QTest::newRow("status class") << "status:5xx<0.1%" << int(M::Status) << 0.1;
        QTest::newRow("status code") << "status:404 <= 2 %" << int(M::Status) << 2.0;
        QTest::newRow("no errors at all") << "errors<=0%" << int(M::Errors) << 0.0; // a bound, not a typo
        QTest::newRow("every response 2xx") << "status:2xx>=100%" << int(M::Status) << 100.0;
    }
    void parsesEachKey() {
        QFETCH(QString, expr);
        QFETCH(int, metric);
        QFETCH(double, limit);
        std::string error;
        auto t = load::parseThreshold(expr.toStdString(), error);
        QVERIFY2(t, error.c_str());
        QCOMPARE(int(t->metric), metric);
        QCOMPARE(t->limit, limit);
        QCOMPARE(QString::fromStdString(t->expr), expr.trimmed());
    }

    void refusesWithAReason_data() {
        QTest::addColumn<QString>("expr");
        QTest::addColumn<QString>("says");
        QTest::newRow("no operator") << "p99 250ms"
                                     << "expected KEY<VALUE";
        QTest::newRow("no unit") << "p99<250"
                                 << "duration with a unit";
        QTest::newRow("unknown unit") << "p99<250 fortnights"
                                      << "duration with a unit";
        QTest::newRow("negative") << "p99<-1ms"
                                  << "duration with a unit";
        QTest::newRow("percentile 0") << "p0<1ms"
                                      << "(0, 100]";
        QTest::newRow("percentile > 100") << "p100.1<1ms"
                                          << "(0, 100]";
        QTest::newRow("percentile junk") << "p9x<1ms"
                                         << "(0, 100]";
        QTest::newRow("rps unit") << "rps>1k"
                                  << "requests per second";
        QTest::newRow("errors no percent") << "errors<1"
                                           << "percentage";
        QTest::newRow("errors over 100") << "errors<101%"
                                         << "percentage";
        QTest::newRow("status 6xx") << "status:6xx<1%"
                                    << "status:Nxx";
        QTest::newRow("status short") << "status:50<1%"
                                      << "status:Nxx";
        QTest::newRow("unknown key") << "latency<1ms"
                                     << "unknown key 'latency'";
        QTest::newRow("two comparisons") << "p99<1ms<2ms"
                                         << "one comparison";
        QTest::newRow("empty") << ""
                               << "expected KEY<VALUE";
        QTest::newRow("latency below 0") << "p99<0ms"
                                         << "can never be met";
        QTest::newRow("rps below 0") << "rps<0"
                                     << "can never be met";
        QTest::newRow("errors below 0") << "errors<0%"
                                        << "can never be met";
        QTest::newRow("share above 100") << "status:5xx>100%"
                                         << "a share is at most 100%";
    }
    void refusesWithAReason() {
        QFETCH(QString, expr);
        QFETCH(QString, says);
        std::string error;
        QVERIFY(!load::parseThreshold(expr.toStdString(), error));
        QVERIFY2(QString::fromStdString(error).contains(says), error.c_str());
        QVERIFY2(QString::fromStdString(error).startsWith("threshold '"), error.c_str());
    }

    // Values measured and the comparison at and around the limit.
    void judgesAgainstTheRun() {
        // p99 of 1..1000 µs is 990 µs (nearest rank; histogram precision 1/1024 above at most).
        auto p99 = judged("p99<1ms");
        QVERIFY(p99.value >= 990e3 && p99.value <= 990e3 * (1 + 1.0 / 1024));
        QVERIFY(p99.ok);
        QCOMPARE(p99.unit, std::string("ns"));
        QVERIFY(!judged("p99<900us").ok);
        QVERIFY(!judged("max<1ms").ok); // max is exactly 1 ms
        QVERIFY(judged("max<=1ms").ok);
        QVERIFY(judged("min>=1us").ok);
        QVERIFY(!judged("min>1us").ok);
        auto rps = judged("rps>400");
        QCOMPARE(rps.value, 500.0);
        QCOMPARE(rps.unit, std::string("req/s"));
        QVERIFY(rps.ok);
        QVERIFY(!judged("rps>500").ok);
        QVERIFY(judged("rps>=500").ok);
        // errors: 10 failed of 1010 answered = 0.990...%
        auto errors = judged("errors<1%");
        QVERIFY(std::abs(errors.value - 1000.0 / 1010) < 1e-9);
        QVERIFY(errors.ok);
        QVERIFY(!judged("errors<0.5%").ok);
        // status: a share of the responses (10 of 1000 completed), not of the failed ones too.
        auto fiveXX = judged("status:5xx<1%");
        QCOMPARE(fiveXX.value, 1.0);
        QVERIFY(!fiveXX.ok);
        QVERIFY(judged("status:5xx<=1%").ok);
        QCOMPARE(judged("status:200>98%").value, 99.0);
        QCOMPARE(judged("status:404<1%").value, 0.0);
        QCOMPARE(judged("status:2xx>0%").value, 99.0);
    }

    void judgeAllStoresOutcomesAndText() {
        auto r = sample();
        std::vector<load::Threshold> ts;
        std::string error;
        for (const char* e : {"p99<1ms", "rps>1000"})
            ts.push_back(*load::parseThreshold(e, error));
        QVERIFY(!load::judgeAll(ts, r));
        QCOMPARE(r.thresholds.size(), std::size_t(2));
        QVERIFY(r.thresholds[0].ok && !r.thresholds[1].ok);
        const auto text = QString::fromStdString(load::thresholdsText(r));
        QVERIFY2(text.startsWith("Thresholds:\n"), qPrintable(text));
        QVERIFY2(text.contains(QRegularExpression("met\\s+p99<1ms\\s+\\(measured 990\\.\\d\\dus\\)")),
                 qPrintable(text));
        QVERIFY2(text.contains(QRegularExpression("BREACHED\\s+rps>1000\\s+\\(measured 500\\.00 req/s\\)")),
                 qPrintable(text));
        QVERIFY(load::judgeAll({}, r));
        QVERIFY(r.thresholds.empty());
        QVERIFY(load::thresholdsText(r).empty());
    }

    // Nothing completed: a latency threshold is breached (nothing to measure, "0ns" is not a
    // measurement), rps is 0, and the text says why.
    void emptyRun() {
        load::Result r;
        r.latency = std::make_unique<stats::Histogram>();
        r.requests.started = r.requests.failed = 300;
        std::string error;
        auto t = load::parseThreshold("rps>1", error);
        QVERIFY(!load::judge(*t, r).ok);
        t = load::parseThreshold("p99<1s", error);
        QCOMPARE(load::judge(*t, r).value, 0.0);
        QVERIFY(!load::judge(*t, r).ok);
        QVERIFY(!load::judgeAll({*t}, r));
        QVERIFY2(QString::fromStdString(load::thresholdsText(r)).contains("nothing: no request completed"),
                 load::thresholdsText(r).c_str());
        t = load::parseThreshold("errors<50%", error);
        QCOMPARE(load::judge(*t, r).value, 100.0);
    }
};

QTEST_GUILESS_MAIN(TestLoadThresholds)
#include "tst_load_thresholds.moc"

// The terminal ("dev") access-log line's duration (core/src/server/access_log.h, formatDev): two
// decimals under 10 ms, whole milliseconds under 1 s, seconds with two decimals above, each unit
// chosen after rounding so no value prints as the next unit's smallest in the wrong unit.
#include "server/access_log.h"

#include <QtTest>

#include <string>

using portico::server::AccessRecord;
using portico::server::formatDev;

namespace {
// The duration field of formatDev's line for `ns` ("0.41 ms", "12 ms", "1.50 s").
QString durationOf(std::int64_t ns) {
    AccessRecord r;
    r.method = "GET";
    r.target = "/";
    r.status = 200;
    r.bytes = 4;
    r.durationNs = ns;
    const QString line = QString::fromStdString(formatDev(r));
    const auto parts = line.split(QLatin1Char(' '));
    // "HH:MM:SS GET / 200 <value> <unit> 4 B"
    return parts.size() == 8 ? parts[4] + QLatin1Char(' ') + parts[5] : line;
}
} // namespace

class TestAccessLogDev : public QObject {
    Q_OBJECT
private slots:
    void durations_data() {
        QTest::addColumn<qint64>("ns");
        QTest::addColumn<QString>("text");
        QTest::newRow("0.41 ms") << qint64(410'000) << "0.41 ms";
        QTest::newRow("9.99 ms") << qint64(9'994'000) << "9.99 ms";
        QTest::newRow("9.996 ms rounds up") << qint64(9'996'000) << "10 ms";
        QTest::newRow("10.3 ms") << qint64(10'300'000) << "10 ms";
        QTest::newRow("999.4 ms") << qint64(999'400'000) << "999 ms";
        QTest::newRow("999.6 ms rounds up") << qint64(999'600'000) << "1.00 s";
        QTest::newRow("1.5 s") << qint64(1'500'000'000) << "1.50 s";
    }
    void durations() {
        QFETCH(qint64, ns);
        QFETCH(QString, text);
        QCOMPARE(durationOf(ns), text);
    }
};

QTEST_GUILESS_MAIN(TestAccessLogDev)
#include "tst_access_log_dev.moc"

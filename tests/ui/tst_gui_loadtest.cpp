// The Load test and Latency tabs against the in-process server: a run started from the panel
// completes with the server's own count, the UI thread keeps running timers meanwhile, and the
// latency plot holds the run's histogram and percentile markers.
#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "servercontroller.h"

#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using portico::ui::LatencyPage;
using portico::ui::LoadTestPage;
using portico::ui::ServerController;

class TestGuiLoadTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;

private slots:
    void initTestCase() {
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\nworkers: 2\nvhosts:\n  - routes:\n"
                "      - path: /hello\n        respond: {body: hi}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(f.fileName(), &error, false), qPrintable(error));
    }

    void cleanupTestCase() { m_server.reset(); }

    void defaultsPointAtTheServer() {
        LoadTestPage page(m_server.get());
        QCOMPARE(page.findChild<QLineEdit*>("loadUrl")->text(), m_server->firstHttpUrl());
        QVERIFY(m_server->firstHttpUrl().startsWith("http://127.0.0.1:"));
    }

    void countBoundRunMatchesServerCount() {
        LoadTestPage page(m_server.get());
        page.show();
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("");
        page.findChild<QSpinBox*>("loadCount")->setValue(3000);
        page.findChild<QSpinBox*>("loadConnections")->setValue(4);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        const std::uint64_t before = m_server->counters().requests;
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QVERIFY(page.isRunning());
        QVERIFY(!page.start()); // one run at a time
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        QVERIFY(!page.isRunning());
        QCOMPARE(page.runs().size(), 1);
        const load::Result& r = *page.runs().first().result;
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests.completed, std::uint64_t(3000));
        QCOMPARE(r.statuses.at(200), std::uint64_t(3000));
        QTRY_COMPARE(m_server->counters().requests - before, r.requests.completed);
        auto table = page.findChild<QTableWidget*>("loadResults");
        QCOMPARE(table->rowCount(), 1);
        QCOMPARE(table->item(0, 4)->text(), QLocale().toString(3000));
        QCOMPARE(page.findChild<QProgressBar*>("loadProgress")->value(), 1000);
    }

    // The run happens on a worker thread: a 10 ms timer on the UI thread keeps firing throughout.
    void uiThreadStaysResponsiveAndLatencyPlotHoldsData() {
        LoadTestPage page(m_server.get());
        LatencyPage latency;
        connect(&page, &LoadTestPage::runFinished, &latency, &LatencyPage::addRun);
        page.show();
        latency.show();
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("1500ms");
        page.findChild<QSpinBox*>("loadConnections")->setValue(16);
        page.findChild<QSpinBox*>("loadThreads")->setValue(2);
        int ticks = 0;
        QTimer timer;
        timer.setTimerType(Qt::PreciseTimer);
        timer.setInterval(10);
        QElapsedTimer sinceTick;
        QList<qint64> lateness; // µs past the 10 ms each tick came
        connect(&timer, &QTimer::timeout, [&] {
            if (ticks++ > 0) lateness << qMax<qint64>(0, sinceTick.nsecsElapsed() / 1000 - 10000);
            sinceTick.start();
        });
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(page.start());
        timer.start();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        timer.stop();
        const qint64 elapsed = clock.elapsed();
        QVERIFY2(elapsed >= 1400, qPrintable(QString("run took %1 ms").arg(elapsed)));
        // 10 ms timer over >= 1.5 s: about 150 ticks if the loop is free; a blocked loop gives ~1.
        QVERIFY2(ticks >= 50, qPrintable(QString("only %1 ticks in %2 ms").arg(ticks).arg(elapsed)));
        QVERIFY(page.findChild<QLabel*>("loadLive")->text().contains("Finished"));
        std::sort(lateness.begin(), lateness.end());
        auto at = [&](double p) {
            return lateness.isEmpty() ? 0
                                      : lateness[qMin<int>(lateness.size() - 1, int(p * lateness.size()))];
        };
        qInfo("10 ms UI timer during the run: %d ticks in %lld ms; lateness p50 %.2f ms, p99 %.2f ms, max "
              "%.2f ms",
              ticks, elapsed, at(0.5) / 1000.0, at(0.99) / 1000.0,
              (lateness.isEmpty() ? 0 : lateness.last()) / 1000.0);

        const load::Result& r = *page.runs().first().result;
        QVERIFY(r.requests.completed > 100);
        QVERIFY(latency.histogramPoints() > 3);
        const double p50 = latency.markerMs(50), p99 = latency.markerMs(99);
        QVERIFY(p50 > 0);
        QVERIFY(p99 >= p50);
        QCOMPARE(p99, r.latency->valueAtPercentile(99) / 1e6);
    }

    void stopEndsARunEarly() {
        LoadTestPage page(m_server.get());
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("60s");
        page.findChild<QSpinBox*>("loadConnections")->setValue(2);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(page.start());
        QTest::qWait(300);
        page.stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 20000);
        QVERIFY(clock.elapsed() < 15000);
        QVERIFY(page.runs().first().result->requests.completed > 0);
    }

    void badFormShowsError() {
        LoadTestPage page(m_server.get());
        page.findChild<QLineEdit*>("loadDuration")->setText("10");
        QVERIFY(!page.start());
        QVERIFY(page.findChild<QLabel*>("loadFormError")->text().contains("Duration"));
        QVERIFY(!page.isRunning());
    }
};

QTEST_MAIN(TestGuiLoadTest)
#include "tst_gui_loadtest.moc"

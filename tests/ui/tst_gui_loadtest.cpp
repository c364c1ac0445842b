// The Load test and Latency tabs against the in-process server: a run started from the panel
// completes with the server's own count, the UI thread keeps running timers meanwhile, and the
// latency plot holds the run's histogram and percentile markers; the run history lists the panel's
// runs, `portico bench`'s runs and unreadable files, overlays and compares two runs; the eleven-route
// suite runs from the panel. The form checks each field as it is typed and remembers the URL and
// duration (QSettings, in a scratch folder here); a run shows live p50/p99 and a latency histogram,
// a new run clears the last one's figures, a stopped run is marked so in Run and History, and both
// show one timestamp per run. Every test has its own history folder ($PORTICO_DATA_DIR).
#include "inspector/inspectorwidget.h"
#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "loadtest/runhistoryview.h"
#include "loadtest/samplesview.h"
#include "servercontroller.h"
#include "test_support.h"

#include <portico/load/history.h>

#include <qcustomplot.h>

#include <QDialog>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using portico::ui::LatencyPage;
using portico::ui::LoadTestPage;
using portico::ui::RunHistoryView;
using portico::ui::ServerController;

class TestGuiLoadTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;
    int m_dataDirs = 0;

    // A new, empty data directory for this test: the panel and the CLI save runs under it.
    QString freshDataDir() {
        const QString dir = m_dir.path() + QString("/data-%1").arg(++m_dataDirs);
        QDir().mkpath(dir);
        qputenv("PORTICO_DATA_DIR", dir.toUtf8());
        return dir;
    }

    // Runs the panel with `count` requests on `connections` connections; the saved run's ID.
    QString panelRun(LoadTestPage& page, int count, int connections) {
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("");
        page.findChild<QSpinBox*>("loadCount")->setValue(count);
        page.findChild<QSpinBox*>("loadConnections")->setValue(connections);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        if (!page.start()) return {};
        if (!QTest::qWaitFor([&] { return finished.count() == 1; }, 60000)) return {};
        return page.lastSavedId();
    }

    // Replaces a field's text as typed, key by key.
    static void type(QLineEdit* edit, const QString& text) {
        edit->selectAll();
        edit->del();
        QTest::keyClicks(edit, text);
    }
    static void type(QSpinBox* box, const QString& text) {
        box->selectAll();
        QTest::keyClick(box, Qt::Key_Delete);
        QTest::keyClicks(box, text);
    }

    // Starts a 60 s run (ended by stop() in the tests) and waits until the server answered some.
    bool startLongRun(LoadTestPage& page) {
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("60s");
        page.findChild<QSpinBox*>("loadCount")->setValue(0);
        page.findChild<QSpinBox*>("loadConnections")->setValue(2);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        const std::uint64_t before = m_server->counters().requests;
        if (!page.start()) return false;
        return QTest::qWaitFor([&] { return m_server->counters().requests > before + 100; }, 20000);
    }

    static int rowOf(QTableWidget* table, const QString& id) {
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 0) && table->item(r, 0)->data(Qt::UserRole).toString() == id) return r;
        return -1;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        // The form's settings go to a scratch folder, never the user's.
        QStandardPaths::setTestModeEnabled(true);
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QVERIFY2(QSettings().fileName().startsWith(m_dir.path()), qPrintable(QSettings().fileName()));
        freshDataDir();
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\nworkers: 2\nvhosts:\n  - routes:\n"
                "      - path: /hello\n        respond: {body: hi}\n"
                "      - path: /slow\n        respond: {body: slow, latency: 20ms}\n"
                "      - path: /drop\n        respond: {body: x, drop_rate: 1}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(f.fileName(), &error, false), qPrintable(error));
    }

    void cleanupTestCase() { m_server.reset(); }

    // Each test starts from the defaults: no remembered URL or duration.
    void init() { QSettings().remove("loadTest"); }

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

    // Several URLs in the field are request kinds: the By request table lists each with its own
    // figures, and selecting a row shows only that kind in the plots.
    void byRequestTableFiltersThePlots() {
        LoadTestPage page(m_server.get());
        page.show();
        auto url = page.findChild<QLineEdit*>("loadUrl");
        url->setText("http://127.0.0.1:1/ http://127.0.0.1:2/");
        QVERIFY(!page.start());
        QVERIFY2(page.findChild<QLabel*>("loadUrlError")->text().contains("one origin"),
                 qPrintable(page.findChild<QLabel*>("loadUrlError")->text()));
        url->setText(m_server->firstHttpUrl() + "hello " + m_server->firstHttpUrl() + "slow");
        page.findChild<QLineEdit*>("loadDuration")->setText("");
        page.findChild<QSpinBox*>("loadCount")->setValue(400);
        page.findChild<QSpinBox*>("loadConnections")->setValue(4);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        const load::Result& r = *page.runs().first().result;
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.byRequest.size(), std::size_t(2));
        auto table = page.findChild<QTableWidget*>("loadByRequest");
        QVERIFY(table->isVisible());
        QCOMPARE(table->rowCount(), 3);
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("All requests"));
        QCOMPARE(table->item(1, 0)->text(), QStringLiteral("GET /hello"));
        QCOMPARE(table->item(2, 0)->text(), QStringLiteral("GET /slow"));
        QCOMPARE(table->item(0, 1)->text(), QLocale().toString(400));
        QCOMPARE(table->item(1, 1)->text(),
                 QLocale().toString(qulonglong(r.byRequest[0].requests.completed)));
        QVERIFY(r.byRequest[0].requests.completed > 0 && r.byRequest[1].requests.completed > 0);
        QVERIFY(page.findChild<QTableWidget*>("loadResults")->item(0, 2)->text().endsWith("+1 more"));
        // The latency histogram's non-empty bins, in ms.
        auto bins = [&] {
            QVector<double> keys;
            auto* g = page.findChild<QCustomPlot*>("loadLatencyPlot")->graph(0);
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
                if (it->value > 0) keys << it->key;
            return keys;
        };
        auto rateTotal = [&] {
            double sum = 0;
            auto* g = page.findChild<QCustomPlot*>("loadRatePlot")->graph(0);
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
                sum += it->value;
            return sum;
        };
        const double allRate = rateTotal();
        table->selectRow(2);
        auto slow = bins();
        QVERIFY(!slow.isEmpty());
        QVERIFY2(*std::min_element(slow.begin(), slow.end()) >= 15,
                 qPrintable(QString::number(slow.first())));
        QVERIFY(rateTotal() < allRate);
        table->selectRow(1);
        auto fast = bins();
        QVERIFY(!fast.isEmpty());
        QVERIFY2(*std::max_element(fast.begin(), fast.end()) < 15, qPrintable(QString::number(fast.last())));
        table->selectRow(0);
        QCOMPARE(bins().size() >= fast.size(), true);
        QCOMPARE(rateTotal(), allRate);
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

    // Runs from the panel and from `portico bench` (the real CLI, same data dir) are listed newest
    // first with their figures; a corrupt file is a red row with its reason; deleting removes files.
    void historyListsPanelAndCliRunsAndCorruptFiles() {
        const QString data = freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        QCOMPARE(page.historyDir(), load::defaultHistoryDir());
        QCOMPARE(QString::fromStdString(page.historyDir().string()), data + "/bench-history");
        auto history = page.history();
        auto table = page.findChild<QTableWidget*>("loadHistory");
        QVERIFY(table);

        const QString panelId = panelRun(page, 500, 2);
        QVERIFY2(!panelId.isEmpty(), qPrintable(page.lastSaveError()));
        QTRY_VERIFY(rowOf(table, panelId) >= 0);
        // Counted in words, not "1 run(s)".
        QCOMPARE(page.findChild<QLabel*>("historyStatus")->text(), QString("1 run"));

        // The CLI's run appears without a refresh: the view watches the folder.
        const auto cli = test::runProcess(
            test::porticoBinary(),
            {"bench", "-n", "300", "-c", "1", "--label", "from-cli", m_server->firstHttpUrl() + "hello"}, {},
            60000);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        QVERIFY2(cli.err.contains("Saved as "), cli.err.constData());
        const QString cliId =
            QString::fromUtf8(cli.err.mid(cli.err.indexOf("Saved as ") + 9).split(' ').first());
        QTRY_VERIFY_WITH_TIMEOUT(rowOf(table, cliId) >= 0, 10000);
        QCOMPARE(page.findChild<QLabel*>("historyStatus")->text(), QString("2 runs"));

        QFile corrupt(data + "/bench-history/broken.json");
        QVERIFY(corrupt.open(QIODevice::WriteOnly));
        corrupt.write(R"({"schema": 1, "savedAt": "2026-01-01T00:00:00Z", "requests": [)");
        corrupt.close();
        QTRY_COMPARE_WITH_TIMEOUT(table->rowCount(), 3, 10000);

        QCOMPARE(history->runs().size(), std::size_t{2});
        QCOMPARE(history->unreadable().size(), std::size_t{1});
        QVERIFY(history->runs()[0].id > history->runs()[1].id); // newest first
        int bad = -1;
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 1)->text() == "unreadable") bad = r;
        QVERIFY(bad >= 0);
        QCOMPARE(table->item(bad, 0)->text(), QString("broken.json"));
        QVERIFY2(table->item(bad, 2)->text().startsWith("not a saved run"),
                 qPrintable(table->item(bad, 2)->text()));
        QVERIFY(table->columnSpan(bad, 2) > 1);

        // The panel's row holds the run's own figures, read back from its file.
        const load::Result& r = *page.runs().first().result;
        const int row = rowOf(table, panelId);
        QCOMPARE(table->item(row, 1)->text(), QString("run"));
        QCOMPARE(table->item(row, 3)->text(), m_server->firstHttpUrl() + "hello");
        QCOMPARE(table->item(row, 4)->text(), QString("closed"));
        QCOMPARE(table->item(row, 5)->text(), QString("2"));
        QCOMPARE(table->item(row, 7)->text(), QLocale().toString(r.requestsPerSecond(), 'f', 0));
        QCOMPARE(table->item(row, 8)->text(),
                 QString::number(r.latency->valueAtPercentile(50) / 1e6, 'f', 3));
        QCOMPARE(table->item(row, 9)->text(),
                 QString::number(r.latency->valueAtPercentile(99) / 1e6, 'f', 3));
        QCOMPARE(table->item(row, 10)->text(), QString("0"));
        const int cliRow = rowOf(table, cliId);
        QCOMPARE(table->item(cliRow, 2)->text(), QString("from-cli"));
        QCOMPARE(table->item(cliRow, 5)->text(), QString("1"));

        // Selecting the corrupt row says why; nothing is plotted.
        QSignalSpy shown(history, &RunHistoryView::selectionShown);
        table->selectRow(bad);
        QTRY_VERIFY(shown.count() >= 1);
        QCOMPARE(history->plot()->plottableCount(), 0);
        QVERIFY(page.findChild<QLabel*>("historyHint")->text().contains("not a saved run"));

        QVERIFY(history->deleteSelected());
        QVERIFY(!QFile::exists(corrupt.fileName()));
        QTRY_COMPARE(table->rowCount(), 2);
        QCOMPARE(history->unreadable().size(), std::size_t{0});
    }

    // Two runs selected: two curves holding each run's histogram, and the comparison table.
    void overlayAndComparisonOfTwoRuns() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        page.showView("history");
        const QString a = panelRun(page, 400, 1);
        QTest::qWait(1100); // a later second: B's ID sorts after A's
        const QString b = panelRun(page, 800, 8);
        QVERIFY(!a.isEmpty() && !b.isEmpty() && a < b);
        auto history = page.history();
        QTRY_COMPARE(history->runs().size(), std::size_t{2});

        QSignalSpy shown(history, &RunHistoryView::selectionShown);
        QVERIFY(history->selectRuns({b, a}));
        QTRY_VERIFY(shown.count() >= 1);
        QTRY_COMPARE(history->plot()->graphCount(), 2);
        QCOMPARE(history->selectedIds(), (QStringList{a, b}));

        const load::RunRecord& newer = history->runs()[0];
        const load::RunRecord& older = history->runs()[1];
        QCOMPARE(QString::fromStdString(older.id), a);
        QCOMPARE(QString::fromStdString(newer.id), b);
        QCPLegend* legend = history->plot()->legend;
        QVERIFY(legend->visible());
        QCOMPARE(legend->itemCount(), 2);
        const load::RunRecord* recs[] = {&older, &newer};
        for (int i = 0; i < 2; ++i) {
            QCPGraph* g = history->plot()->graph(i);
            const QString rps = QLocale().toString(recs[i]->requestsPerSecond, 'f', 0) + " req/s";
            QVERIFY2(g->name().startsWith(i == 0 ? "A: " : "B: ") && g->name().contains(rps),
                     qPrintable(g->name()));
            std::vector<stats::Histogram::Bucket> buckets;
            std::string error;
            QVERIFY2(load::loadLatencyBuckets(recs[i]->file, buckets, error), error.c_str());
            const auto curve = ui::percentileCurve(buckets, recs[i]->percentiles.back().second);
            QVERIFY(curve.keys.size() > 2);
            QCOMPARE(g->dataCount(), int(curve.keys.size()));
            // The step holding the 50th percentile is the run's p50; the last is its max.
            double p50 = -1, top = 0;
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
                if (it->key < 2.0) p50 = it->value;
                top = std::max(top, it->value);
            }
            QCOMPARE(p50, double(recs[i]->percentiles[0].second) / 1e6);
            QCOMPARE(recs[i]->percentiles.back().first, std::string("100"));
            QCOMPARE(top, double(recs[i]->percentiles.back().second) / 1e6);
            QCOMPARE((g->data()->constEnd() - 1)->key, 2.0 * double(recs[i]->completed));
            for (int k = 0; k < curve.keys.size(); ++k) {
                QCOMPARE(g->data()->at(k)->key, curve.keys[k]);
                QCOMPARE(g->data()->at(k)->value, curve.values[k]);
            }
        }
        QVERIFY(history->plot()->graph(0)->pen().color() != history->plot()->graph(1)->pen().color());

        auto cmp = page.findChild<QTableWidget*>("loadComparison");
        const auto expected = load::compareRuns(older, newer);
        QCOMPARE(cmp->rowCount(), int(expected.rows.size()));
        QStringList metrics;
        for (int r = 0; r < cmp->rowCount(); ++r)
            metrics << cmp->item(r, 0)->text();
        QCOMPARE(metrics,
                 (QStringList{"req/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "failed"}));
        QCOMPARE(cmp->item(0, 1)->text(), QLocale().toString(older.requestsPerSecond, 'f', 1));
        QCOMPARE(cmp->item(0, 2)->text(), QLocale().toString(newer.requestsPerSecond, 'f', 1));
        QCOMPARE(cmp->item(0, 3)->text(),
                 QString::number(newer.requestsPerSecond / older.requestsPerSecond, 'f', 3) + "×");
        QCOMPARE(cmp->item(1, 1)->text(), QString::number(older.percentiles[0].second / 1e6, 'f', 3));
        QCOMPARE(cmp->item(1, 2)->text(), QString::number(newer.percentiles[0].second / 1e6, 'f', 3));
        QCOMPARE(cmp->item(3, 2)->text(), QString::number(newer.percentiles[3].second / 1e6, 'f', 3));
        QCOMPARE(cmp->item(6, 1)->text(), QString("0"));
        QVERIFY(!cmp->isColumnHidden(2));
        // "better" / "worse" are readable: WCAG AA's 4.5:1 against both row colours.
        auto luminance = [](const QColor& c) {
            auto lin = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
            return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF());
        };
        int verdicts = 0;
        for (int r = 0; r < cmp->rowCount(); ++r)
            for (int c = 0; c < cmp->columnCount(); ++c) {
                const QTableWidgetItem* item = cmp->item(r, c);
                if (!item || (item->text() != "better" && item->text() != "worse")) continue;
                ++verdicts;
                const double fg = luminance(item->foreground().color());
                for (auto role : {QPalette::Base, QPalette::AlternateBase}) {
                    const double bg = luminance(cmp->palette().color(role));
                    const double ratio = (std::max(fg, bg) + 0.05) / (std::min(fg, bg) + 0.05);
                    QVERIFY2(ratio >= 4.5, qPrintable(item->text() + QString(" %1:1").arg(ratio)));
                }
            }
        QVERIFY(verdicts > 0);

        // One run: one curve, no B column.
        const int before = shown.count();
        QVERIFY(history->selectRuns({a}));
        QTRY_VERIFY(shown.count() > before);
        QCOMPARE(history->plot()->graphCount(), 1);
        QVERIFY(cmp->isColumnHidden(2));
    }

    // The suite from the panel against the built-in suite server: eleven rows, all answered 2xx.
    void suiteRunsElevenRoutes() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        page.findChild<QLineEdit*>("loadSuiteDuration")->setText("150ms");
        page.findChild<QSpinBox*>("loadConnections")->setValue(2);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::suiteFinished);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(page.startSuite());
        QVERIFY(page.isRunning());
        QVERIFY(!page.start()); // one thing at a time
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);
        QVERIFY2(page.suiteError().isEmpty(), qPrintable(page.suiteError()));
        qInfo("suite of 11 × 150 ms took %lld ms", clock.elapsed());
        auto table = page.findChild<QTableWidget*>("loadSuiteTable");
        QCOMPARE(table->rowCount(), 11);
        QCOMPARE(page.suiteRows().size(), 11);
        for (int r = 0; r < 11; ++r) {
            const auto& row = page.suiteRows()[r];
            QCOMPARE(row.name.toStdString(), load::suiteRoutes()[std::size_t(r)].name);
            QVERIFY2(row.requestsPerSecond > 0, qPrintable(row.name));
            QCOMPARE(row.bad, std::uint64_t{0});
            QCOMPARE(table->item(r, 0)->text(), row.name);
            QVERIFY(QLocale().toDouble(table->item(r, 2)->text()) > 0);
        }
        QVERIFY(page.findChild<QLabel*>("loadSuiteSummary")->text().contains("geometric mean"));

        // Kept in history: listed as a suite; selected, it shows each route's req/s.
        QVERIFY2(!page.lastSavedId().isEmpty(), qPrintable(page.lastSaveError()));
        auto history = page.history();
        QTRY_VERIFY(rowOf(history->table(), page.lastSavedId()) >= 0);
        const int row = rowOf(history->table(), page.lastSavedId());
        QCOMPARE(history->table()->item(row, 1)->text(), QString("suite"));
        QTRY_COMPARE(history->selectedIds(), QStringList{page.lastSavedId()});
        QTRY_COMPARE(history->plot()->plottableCount(), 1);
        auto bars = qobject_cast<QCPBars*>(history->plot()->plottable(0));
        QVERIFY(bars);
        QCOMPARE(bars->dataCount(), 11);
        QCOMPARE(bars->data()->at(0)->value, page.suiteRows()[0].requestsPerSecond);
    }

    void badSuiteFormShowsError() {
        LoadTestPage page(m_server.get());
        page.findChild<QLineEdit*>("loadSuiteDuration")->setText("0s");
        QVERIFY(!page.startSuite());
        QVERIFY(page.findChild<QLabel*>("loadFormError")->text().contains("Suite"));
        page.findChild<QLineEdit*>("loadSuiteDuration")->setText("1s");
        page.findChild<QLineEdit*>("loadSuiteUrl")->setText("http://127.0.0.1:1/plaintext");
        QVERIFY(!page.startSuite());
        QVERIFY(!page.isRunning());
    }

    void badFormShowsError() {
        LoadTestPage page(m_server.get());
        page.findChild<QLineEdit*>("loadDuration")->setText("10");
        QVERIFY(!page.start());
        auto durationError = page.findChild<QLabel*>("loadDurationError");
        QVERIFY(durationError);
        QVERIFY2(durationError->text().contains("add a unit"), qPrintable(durationError->text()));
        QVERIFY(!page.findChild<QPushButton*>("loadStart")->isEnabled());
        QVERIFY(!page.isRunning());
        load::Options o;
        QString error;
        QVERIFY(!page.options(o, error));
        QVERIFY2(error.startsWith("Duration: "), qPrintable(error));
    }

    // Each field's error is under that field as it is typed; Start is off while one is invalid.
    void fieldErrorsShowAtTheFieldWhileTyping() {
        LoadTestPage page(m_server.get());
        page.show();
        auto start = page.findChild<QPushButton*>("loadStart");
        auto formError = page.findChild<QLabel*>("loadFormError");
        auto url = page.findChild<QLineEdit*>("loadUrl");
        auto urlError = page.findChild<QLabel*>("loadUrlError");
        auto duration = page.findChild<QLineEdit*>("loadDuration");
        auto durationError = page.findChild<QLabel*>("loadDurationError");
        auto warmup = page.findChild<QLineEdit*>("loadWarmup");
        auto warmupError = page.findChild<QLabel*>("loadWarmupError");
        auto connections = page.findChild<QSpinBox*>("loadConnections");
        auto connectionsError = page.findChild<QLabel*>("loadConnectionsError");
        auto count = page.findChild<QSpinBox*>("loadCount");
        QVERIFY(urlError && durationError && warmupError && connectionsError);
        QVERIFY(page.formValid());
        QVERIFY(start->isEnabled());
        QVERIFY(urlError->isHidden() && durationError->isHidden() && connectionsError->isHidden());

        type(url, "htp://127.0.0.1/");
        QVERIFY(!urlError->isHidden());
        QVERIFY2(urlError->text().contains("bad URL"), qPrintable(urlError->text()));
        QVERIFY(!start->isEnabled());
        type(url, m_server->firstHttpUrl() + "hello");
        QVERIFY(urlError->isHidden());
        QVERIFY(start->isEnabled());

        // Whole units by design: a fraction is refused with the spelling to use.
        type(duration, "0.3s");
        QVERIFY(!durationError->isHidden());
        QVERIFY2(durationError->text().contains("use whole units: 300ms"), qPrintable(durationError->text()));
        QVERIFY(!start->isEnabled());
        QVERIFY(!page.start());
        QVERIFY(!page.isRunning());
        QVERIFY(formError->text().isEmpty()); // the error is at its field, not under the form
        type(duration, "10");
        QVERIFY2(durationError->text().contains("add a unit: 10s"), qPrintable(durationError->text()));
        type(duration, "1500ms");
        QVERIFY(durationError->isHidden());
        QVERIFY(start->isEnabled());
        // No duration and no count: the run would not end.
        type(duration, "");
        QVERIFY(!durationError->isHidden());
        QVERIFY(!start->isEnabled());
        count->setValue(100);
        QVERIFY(durationError->isHidden());
        QVERIFY(start->isEnabled());
        type(warmup, "1.5s");
        QVERIFY2(warmupError->text().contains("use whole units: 1500ms"), qPrintable(warmupError->text()));
        QVERIFY(!start->isEnabled());
        type(warmup, "1s");
        QVERIFY(warmupError->isHidden());

        // Out of range as typed: below and above 1..100000.
        const QString range = QString("%1 to %2").arg(QLocale().toString(1), QLocale().toString(100000));
        type(connections, "0");
        QVERIFY(!connectionsError->isHidden());
        QVERIFY2(connectionsError->text().contains(range), qPrintable(connectionsError->text()));
        QVERIFY(!start->isEnabled());
        QVERIFY(!page.findChild<QPushButton*>("loadSuiteStart")->isEnabled());
        type(connections, "200000");
        QVERIFY2(connectionsError->text().contains("out of range"), qPrintable(connectionsError->text()));
        QVERIFY(!start->isEnabled());
        type(connections, "8");
        QVERIFY(connectionsError->isHidden());
        QCOMPARE(connections->value(), 8);
        QVERIFY(start->isEnabled());
        QVERIFY(page.findChild<QPushButton*>("loadSuiteStart")->isEnabled());
        QVERIFY(page.formValid());
    }

    void durationFieldParsing() {
        std::chrono::nanoseconds d{0};
        QString error;
        QVERIFY(ui::parseDurationField("250ms", false, d, error));
        QCOMPARE(d, std::chrono::milliseconds(250));
        QVERIFY(ui::parseDurationField("", true, d, error));
        QCOMPARE(d.count(), 0);
        QVERIFY(!ui::parseDurationField("", false, d, error));
        const std::pair<const char*, const char*> refused[] = {
            {"0.3s", "use whole units: 300ms"},        {"1.5m", "use whole units: 90s"},
            {"2.5ms", "use whole units: 2500us"},      {"0,5h", "use whole units: 30m"},
            {"10 s", "no space before the unit: 10s"}, {"10", "add a unit: 10s"},
            {"-1s", "must not be negative"},           {"ten", "a whole number and a unit"}};
        for (const auto& [text, why] : refused) {
            error.clear();
            QVERIFY2(!ui::parseDurationField(text, true, d, error), text);
            QVERIFY2(error.contains(why), qPrintable(QString("%1: %2").arg(text, error)));
        }
    }

    // The URL and the duration come back in a new window (QSettings); this server's own default URL
    // is not pinned, so it follows the server's port.
    void urlAndDurationAreRemembered() {
        const QString remembered = "http://127.0.0.1:1/remembered";
        {
            LoadTestPage page(m_server.get());
            type(page.findChild<QLineEdit*>("loadUrl"), remembered);
            type(page.findChild<QLineEdit*>("loadDuration"), "750ms");
        }
        {
            LoadTestPage page(m_server.get());
            QCOMPARE(page.findChild<QLineEdit*>("loadUrl")->text(), remembered);
            QCOMPARE(page.findChild<QLineEdit*>("loadDuration")->text(), QString("750ms"));
            type(page.findChild<QLineEdit*>("loadUrl"), m_server->firstHttpUrl() + "hello");
            type(page.findChild<QLineEdit*>("loadDuration"), "2s");
            // Text set by code (screenshots, tests) is not the user's: not kept.
            page.findChild<QLineEdit*>("loadDuration")->setText("9s");
        }
        {
            LoadTestPage page(m_server.get());
            QCOMPARE(page.findChild<QLineEdit*>("loadUrl")->text(), m_server->firstHttpUrl() + "hello");
            QCOMPARE(page.findChild<QLineEdit*>("loadDuration")->text(), QString("2s"));
            type(page.findChild<QLineEdit*>("loadUrl"), m_server->firstHttpUrl());
            // An invalid duration is not kept.
            type(page.findChild<QLineEdit*>("loadDuration"), "0.5s");
        }
        QVERIFY(!QSettings().contains("loadTest/url"));
        QCOMPARE(QSettings().value("loadTest/duration").toString(), QString("2s"));
        LoadTestPage page(m_server.get());
        QCOMPARE(page.findChild<QLineEdit*>("loadUrl")->text(), m_server->firstHttpUrl());
        QCOMPARE(page.findChild<QLineEdit*>("loadDuration")->text(), QString("2s"));
    }

    // Start clears the last run's figures, plots and text before the new one's come in.
    void startClearsThePreviousRun() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        QVERIFY(!panelRun(page, 2000, 2).isEmpty());
        auto summary = page.findChild<QLabel*>("loadSummary");
        auto text = page.findChild<QPlainTextEdit*>("loadText");
        auto rate = page.findChild<QCustomPlot*>("loadRatePlot");
        QVERIFY(!summary->text().isEmpty());
        QVERIFY(!text->toPlainText().isEmpty());
        QVERIFY(rate->graph(0)->dataCount() > 0);
        auto latency = page.findChild<QCustomPlot*>("loadLatencyPlot");
        const int latencyBefore = latency ? latency->graph(0)->dataCount() : -1;

        page.findChild<QLineEdit*>("loadDuration")->setText("60s");
        page.findChild<QSpinBox*>("loadCount")->setValue(0);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QCOMPARE(summary->text(), QString());
        QCOMPARE(text->toPlainText(), QString());
        QCOMPARE(rate->graph(0)->dataCount(), 0);
        QCOMPARE(page.findChild<QProgressBar*>("loadProgress")->value(), 0);
        QVERIFY(latencyBefore > 0); // the first run's histogram was drawn, and is gone
        QCOMPARE(latency->graph(0)->dataCount(), 0);
        page.stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 20000);
    }

    // While a run goes: the generator's p50/p99 in the live line and its histogram in the plot.
    void liveLatencyDuringTheRun() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(startLongRun(page));
        QTRY_VERIFY_WITH_TIMEOUT(page.findChild<QLabel*>("loadLive")->text().contains("p99"), 20000);
        QVERIFY(page.isRunning());
        const QString live = page.findChild<QLabel*>("loadLive")->text();
        QVERIFY2(QRegularExpression(R"(p50 [0-9.]+ ms · p99 [0-9.]+ ms)").match(live).hasMatch(),
                 qPrintable(live));
        auto latency = page.findChild<QCustomPlot*>("loadLatencyPlot");
        QTRY_VERIFY_WITH_TIMEOUT(latency->graph(0)->dataCount() > 0, 20000);
        QVERIFY(page.isRunning());
        double total = 0;
        for (auto it = latency->graph(0)->data()->constBegin(); it != latency->graph(0)->data()->constEnd();
             ++it)
            total += it->value;
        QVERIFY(total > 0);
        QTRY_VERIFY_WITH_TIMEOUT(page.findChild<QCustomPlot*>("loadRatePlot")->graph(0)->dataCount() > 0,
                                 20000);
        QVERIFY(page.isRunning());
        page.stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 20000);
        // The run's own histogram replaces the live one: every completed request is in it.
        total = 0;
        for (auto it = latency->graph(0)->data()->constBegin(); it != latency->graph(0)->data()->constEnd();
             ++it)
            total += it->value;
        QCOMPARE(total, double(page.runs().first().result->latency->count()));
    }

    // Stop: the Run area and History say "stopped", not "Finished" at 100 %.
    void stoppedRunIsMarkedStopped() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(startLongRun(page));
        page.stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 20000);
        QVERIFY(page.runs().first().stopped);
        const QString live = page.findChild<QLabel*>("loadLive")->text();
        QVERIFY2(live.contains("Stopped") && !live.contains("Finished"), qPrintable(live));
        QVERIFY(page.findChild<QProgressBar*>("loadProgress")->value() < 1000);
        auto table = page.findChild<QTableWidget*>("loadResults");
        QCOMPARE(table->item(0, 11)->text(), QString("stopped"));

        const QString id = page.lastSavedId();
        QVERIFY2(!id.isEmpty(), qPrintable(page.lastSaveError()));
        auto history = page.history()->table();
        QTRY_VERIFY(rowOf(history, id) >= 0);
        QCOMPARE(history->item(rowOf(history, id), 2)->text(), QString("/hello (stopped)"));

        // A run that reaches its bound is "finished" in both.
        const QString done = panelRun(page, 300, 1);
        QVERIFY(!done.isEmpty());
        QVERIFY(!page.runs().last().stopped);
        QCOMPARE(table->item(1, 11)->text(), QString("finished"));
        QVERIFY(page.findChild<QLabel*>("loadLive")->text().contains("Finished"));
        QTRY_VERIFY(rowOf(history, done) >= 0);
        QCOMPARE(history->item(rowOf(history, done), 2)->text(), QString("/hello"));
    }

    // The Run table and History show the same time for a run, in the same format.
    void runAndHistoryShowOneTimestamp() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        const QString id = panelRun(page, 300, 1);
        QVERIFY(!id.isEmpty());
        auto history = page.history()->table();
        QTRY_VERIFY(rowOf(history, id) >= 0);
        const QString when = page.findChild<QTableWidget*>("loadResults")->item(0, 1)->text();
        QCOMPARE(when, page.runs().first().when);
        QVERIFY2(QRegularExpression(R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$)").match(when).hasMatch(),
                 qPrintable(when));
        QCOMPARE(history->item(rowOf(history, id), 0)->text(), when);
    }

    // The last 100 ms slot is cut short by the end of the run: scaled by the time it covers, or left
    // out when that is too short to be a rate; never drawn as a drop to about 0.
    void throughputLastSlotIsNotADrop() {
        using std::chrono::milliseconds;
        auto check = [](const ui::ThroughputSeries& series, QVector<double> keys, QVector<double> values) {
            QCOMPARE(series.keys.size(), keys.size());
            QCOMPARE(series.values.size(), values.size());
            for (int i = 0; i < keys.size(); ++i) {
                QCOMPARE(series.keys[i], keys[i]);
                QCOMPARE(series.values[i], values[i]);
            }
        };
        // A duration bound: the last slot holds only what was in flight at the end (2 requests in
        // 1 ms); drawn, it would be a drop to 20 req/s.
        check(ui::throughputSeries({100, 100, 100, 2}, milliseconds(301)), {0.05, 0.15, 0.25},
              {1000, 1000, 1000});
        // A count bound ending 70 ms into the last slot: scaled by those 70 ms.
        check(ui::throughputSeries({100, 100, 70}, milliseconds(270)), {0.05, 0.15, 0.235},
              {1000, 1000, 1000});
        // A slot without answers inside the run is a real 0.
        check(ui::throughputSeries({100, 0, 100}, milliseconds(300)), {0.05, 0.15, 0.25}, {1000, 0, 1000});
        // A run shorter than a slot keeps its only point.
        check(ui::throughputSeries({5}, milliseconds(20)), {0.01}, {250});
        QVERIFY(ui::throughputSeries({}, milliseconds(0)).keys.isEmpty());
    }

    // A synthetic run: what filterSamples keeps for each selection, at the edges of its ranges.
    void samplesFilterByLatencyTimeKindAndFailure() {
        load::Result r;
        r.options.requests = {{"http://127.0.0.1:1/a"}, {"http://127.0.0.1:1/b"}};
        auto sample = [](std::uint32_t request, std::uint64_t latencyNs, std::int64_t doneNs,
                         std::uint8_t failure) {
            load::ExchangeSample s;
            s.request = request;
            s.latencyNs = latencyNs;
            s.doneNs = doneNs;
            s.failure = failure;
            s.status = failure ? 0 : 200;
            return s;
        };
        r.samples = {sample(0, 1'000'000, 500'000'000, 0),   // 0: 1 ms, done 0.5 s
                     sample(1, 2'000'000, 999'999'999, 0),   // 1: 2 ms, done just before 1 s
                     sample(0, 2'000'000, 1'000'000'000, 0), // 2: 2 ms, done at 1 s
                     sample(1, 3'000'000, 1'500'000'000, 2), // 3: timed out after 3 ms
                     sample(0, 999'999, 2'000'000'000, 0)};  // 4: just under 1 ms
        using By = ui::SampleFilter::By;
        using V = std::vector<std::size_t>;
        QCOMPARE(ui::filterSamples(r, {By::All, 0, 0, -1}), (V{0, 1, 2, 3, 4}));
        QCOMPARE(ui::filterSamples(r, {By::All, 0, 0, 1}), (V{1, 3}));
        // [1 ms, 3 ms): the failed one (3 ms) is in no latency bar, 999,999 ns is below.
        QCOMPARE(ui::filterSamples(r, {By::Latency, 1'000'000, 3'000'001, -1}), (V{0, 1, 2}));
        QCOMPARE(ui::filterSamples(r, {By::Latency, 1'000'000, 2'000'000, -1}), (V{0}));
        QCOMPARE(ui::filterSamples(r, {By::Latency, 1'000'000, 3'000'000, 0}), (V{0, 2}));
        // The second [0, 1 s) by completion time; [1 s, 2 s) holds the failure too.
        QCOMPARE(ui::filterSamples(r, {By::Completion, 0, 1'000'000'000, -1}), (V{0, 1}));
        QCOMPARE(ui::filterSamples(r, {By::Completion, 1'000'000'000, 2'000'000'000, -1}), (V{2, 3}));
        QCOMPARE(ui::filterSamples(r, {By::Failed, 0, 0, -1}), (V{3}));
        QCOMPARE(ui::filterSamples(r, {By::Failed, 0, 0, 0}), V{});

        // The view: the Failed button counts the run's failures; a bar with none says why.
        ui::SamplesView view(nullptr);
        view.setRun(std::make_shared<load::Result>(std::move(r)), 0);
        auto failed = view.findChild<QPushButton*>("loadSamplesFailed");
        QCOMPARE(failed->text(), QStringLiteral("Failed (1)"));
        QVERIFY(failed->isEnabled());
        QCOMPARE(view.table()->rowCount(), 5);
        failed->click();
        QCOMPARE(view.table()->rowCount(), 1);
        QCOMPARE(view.table()->item(0, 2)->text(), QStringLiteral("timed out"));
        view.setRequest(0);
        QCOMPARE(view.table()->rowCount(), 0);
        QCOMPARE(failed->text(), QStringLiteral("Failed (0)"));
        QVERIFY(!failed->isEnabled());
        QVERIFY2(view.title()->text().contains("none fell here"), qPrintable(view.title()->text()));
        view.findChild<QPushButton*>("loadSamplesAll")->click();
        QCOMPARE(view.table()->rowCount(), 3); // request 0's
    }

    // A sample as the generator saw it, for the inspector: the request from the options, the
    // server's stream numbering, the times.
    // Request ids go to this app's own listeners only: same scheme and port, a loopback host (or
    // the listener's own, or any host for a wildcard listener).
    void requestIdsOnlyForTheOwnServer() {
        const QStringList listeners{"http://127.0.0.1:8080/", "https://[::1]:8443/", "http://0.0.0.0:9000/"};
        QVERIFY(ui::targetsListener(listeners, "http://127.0.0.1:8080/x"));
        QVERIFY(ui::targetsListener(listeners, "http://localhost:8080/"));
        QVERIFY(ui::targetsListener(listeners, "https://localhost:8443/a"));
        QVERIFY(ui::targetsListener(listeners, "https://127.0.0.2:8443/a"));
        QVERIFY(ui::targetsListener(listeners, "http://devbox.lan:9000/"));
        QVERIFY(!ui::targetsListener(listeners, "http://127.0.0.1:8081/"));  // another port
        QVERIFY(!ui::targetsListener(listeners, "https://127.0.0.1:8080/")); // another scheme
        QVERIFY(!ui::targetsListener(listeners, "http://example.test:8080/"));
        QVERIFY(!ui::targetsListener(listeners, "not a url"));
        QVERIFY(!ui::targetsListener({}, "http://127.0.0.1:8080/"));
    }

    void sampleExchangeBuildsTheClientSideRecord() {
        load::Result r;
        load::RequestSpec spec{"https://example.test:8443/api?x=1", "POST", {{"X-Trace", "7"}}, "{}"};
        r.options.requests = {spec};
        r.options.protocol = load::Protocol::Http2;
        r.startedAt = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
        load::ExchangeSample s;
        s.status = 201;
        s.sentNs = 5'000'000;
        s.doneNs = 7'500'000;
        s.sequence = 3;
        s.localPort = 40000;
        s.responseHeaders = {{"content-type", "application/json"}, {"x-request-id", "abc"}};
        capture::Exchange e = ui::sampleExchange(r, s);
        QCOMPARE(std::string(e.requestHeader("x-request-id")), std::string()); // the run sent none
        s.requestId = "0123456789ab-0.40000.3";
        e = ui::sampleExchange(r, s);
        QCOMPARE(std::string(e.requestHeader("x-request-id")), s.requestId);
        QCOMPARE(e.id, std::uint64_t(0));
        QCOMPARE(e.method, std::string("POST"));
        QCOMPARE(e.url(), std::string("https://example.test:8443/api?x=1"));
        QCOMPARE(e.protocol, capture::Protocol::Http2);
        QCOMPARE(e.streamId, 7u); // 2 × 3 + 1
        QCOMPARE(e.status, 201);
        QCOMPARE(e.client, std::string("local port 40000"));
        QCOMPARE(std::string(e.requestHeader("host")), std::string("example.test:8443"));
        QCOMPARE(std::string(e.requestHeader("x-trace")), std::string("7"));
        QCOMPARE(std::string(e.requestHeader("content-length")), std::string("2"));
        QCOMPARE(e.requestBody, std::string("{}"));
        QCOMPARE(e.responseHeaders.size(), std::size_t(2));
        QCOMPARE(std::string(e.responseHeader("x-request-id")), std::string("abc"));
        QCOMPARE(e.durationNs(), std::int64_t(2'500'000));
        QCOMPARE(e.startedUnixNs, std::int64_t(1'800'000'000'005'000'000));
        QVERIFY(e.error.empty());
        s.failure = 1;
        s.status = 0;
        r.options.protocol = load::Protocol::Http1;
        e = ui::sampleExchange(r, s);
        QCOMPARE(e.error, std::string("connection reset"));
        QCOMPARE(e.streamId, 4u); // HTTP/1.1: sequence + 1
        QCOMPARE(e.httpVersion, std::uint8_t(11));
    }

    // Drill-down against this app's server with capture on: a click on a histogram bar lists the
    // samples of that latency, a click on the throughput plot those of that second, the By request
    // table narrows them, and a double-click opens the server's own record of the request.
    void drillDownFromThePlotsToTheServerRecord() {
        freshDataDir();
        auto withCapture = [&](bool on) {
            auto next = std::make_shared<config::Config>(*m_server->config());
            next->capture.enabled = on;
            QString error;
            return m_server->apply(next, &error, false) ? QString() : error;
        };
        const QString applied = withCapture(true);
        QVERIFY2(applied.isEmpty(), qPrintable(applied));
        LoadTestPage page(m_server.get());
        page.resize(1400, 1000);
        page.show();
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello " +
                                                       m_server->firstHttpUrl() + "slow");
        page.findChild<QLineEdit*>("loadDuration")->setText("");
        page.findChild<QSpinBox*>("loadCount")->setValue(300);
        page.findChild<QSpinBox*>("loadConnections")->setValue(4);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        const load::Result& r = *page.runs().first().result;
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(!r.samples.empty());
        QVERIFY(r.options.requestId); // its own server: the requests carry ids
        for (const auto& s : r.samples)
            QVERIFY2(s.requestId.size() > 13, s.requestId.c_str());
        auto table = page.findChild<QTableWidget*>("loadSamples");
        QCOMPARE(table->rowCount(), int(r.samples.size()));

        // Click the latency histogram in the middle of the /slow requests' bar (20 ms of latency).
        auto* latency = page.findChild<QCustomPlot*>("loadLatencyPlot");
        QTRY_VERIFY(latency->isVisible());
        const double at = 21.0; // ms
        const auto [low, high] = LoadTestPage::latencyBarAt(at);
        QVERIFY2(low <= 21'000'000 && high > 21'000'000 && high < 30'000'000,
                 qPrintable(QString("%1 %2").arg(low).arg(high)));
        const QPoint p(int(latency->xAxis->coordToPixel(at)), latency->axisRect()->center().y());
        QTest::mouseClick(latency, Qt::LeftButton, {}, p);
        std::vector<std::size_t> expected;
        for (std::size_t i = 0; i < r.samples.size(); ++i)
            if (!r.samples[i].failure && r.samples[i].latencyNs >= low && r.samples[i].latencyNs < high)
                expected.push_back(i);
        QVERIFY2(!expected.empty(), "no /slow request was sampled in the 20 ms bar");
        QCOMPARE(table->rowCount(), int(expected.size()));
        for (int row = 0; row < table->rowCount(); ++row) {
            QCOMPARE(table->item(row, 1)->text(), QStringLiteral("GET /slow"));
            const double rowMs = table->item(row, 3)->text().toDouble();
            QVERIFY2(rowMs >= low / 1e6 - 0.05 && rowMs < high / 1e6 + 0.05,
                     qPrintable(QString::number(rowMs)));
        }
        QVERIFY2(page.samples()->title()->text().contains("latency"),
                 qPrintable(page.samples()->title()->text()));
        // The bar is shaded while its requests are listed.
        QVERIFY(page.selectedBar()->visible());
        QCOMPARE(page.selectedBar()->topLeft->coords().x(), low / 1e6);
        QCOMPARE(page.selectedBar()->bottomRight->coords().x(), high / 1e6);

        // The throughput plot: the first second's completions.
        auto* rate = page.findChild<QCustomPlot*>("loadRatePlot");
        QVERIFY(rate->graph(0)->dataCount() > 0);
        const double firstKey = rate->graph(0)->data()->at(0)->key;
        QTest::mouseClick(rate, Qt::LeftButton, {},
                          QPoint(int(rate->xAxis->coordToPixel(firstKey)), rate->axisRect()->center().y()));
        std::size_t inFirstSecond = 0;
        for (const auto& s : r.samples)
            inFirstSecond += s.doneNs >= 0 && s.doneNs < 1'000'000'000;
        QVERIFY(inFirstSecond > 0);
        QCOMPARE(table->rowCount(), int(inFirstSecond));
        QVERIFY(!page.selectedBar()->visible()); // a second of the run, not a bar
        for (int row = 0; row < table->rowCount(); ++row)
            QVERIFY(table->item(row, 0)->text().toDouble() < 1.0005);

        // The By request table narrows the list to one kind.
        page.findChild<QTableWidget*>("loadByRequest")->selectRow(1); // GET /hello
        QVERIFY(table->rowCount() > 0);
        for (int row = 0; row < table->rowCount(); ++row)
            QCOMPARE(table->item(row, 1)->text(), QStringLiteral("GET /hello"));

        // Double-click: the server's own record of that request.
        m_server->engine().flushCapture();
        const QRect cell = table->visualItemRect(table->item(0, 1));
        // A press first: the view opens only the row that the double-click's press landed on.
        QTest::mousePress(table->viewport(), Qt::LeftButton, {}, cell.center());
        QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, cell.center());
        auto* dialog = page.samples()->inspectorDialog();
        QVERIFY(dialog && dialog->isVisible());
        QVERIFY(page.samples()->openedServerRecord());
        const auto& shown = page.samples()->inspector()->exchange();
        QVERIFY(shown.has_value());
        QVERIFY(shown->id > page.runs().first().captureFromId);
        QCOMPARE(shown->target, std::string("/hello"));
        QVERIFY2(QString::fromStdString(shown->client).endsWith(":" + table->item(0, 7)->text()),
                 shown->client.c_str());
        QCOMPARE(shown->streamId, table->item(0, 6)->text().toUInt() + 1);
        QCOMPARE(shown->status, 200);
        // Found by the id the request carried: the sample of that row sent the record's id.
        const auto row = std::find_if(r.samples.begin(), r.samples.end(), [&](const load::ExchangeSample& s) {
            return QString::number(s.connection) == table->item(0, 5)->text() &&
                   QString::number(s.sequence) == table->item(0, 6)->text() &&
                   QString::number(s.localPort) == table->item(0, 7)->text();
        });
        QVERIFY(row != r.samples.end());
        QCOMPARE(std::string(shown->requestHeader("x-request-id")), row->requestId);
        QVERIFY2(page.samples()
                     ->inspectorDialog()
                     ->findChild<QLabel*>("loadSampleSource")
                     ->text()
                     .contains(QString::fromStdString(row->requestId)),
                 "the dialog names the request id");

        // With capture off, the next run's samples open as the generator saw them.
        QVERIFY(withCapture(false).isEmpty());
        page.findChild<QSpinBox*>("loadCount")->setValue(50);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 2, 60000);
        QVERIFY(table->rowCount() > 0);
        QVERIFY(page.samples()->openRow(0));
        QVERIFY(!page.samples()->openedServerRecord());
        QCOMPARE(page.samples()->inspector()->exchange()->id, std::uint64_t(0));
        QVERIFY(QString::fromStdString(page.samples()->inspector()->exchange()->client)
                    .startsWith("local port "));
        QVERIFY(!page.samples()->openRow(table->rowCount()));
    }

    // A run with failures: the throughput plot draws them per second (a second graph, with a
    // legend), Failed (N) lists the sampled ones, and a click on the plot lists them with that
    // second's completions.
    void failuresAreDrawnAndListed() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.resize(1400, 1000);
        page.show();
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello " +
                                                       m_server->firstHttpUrl() + "drop");
        page.findChild<QLineEdit*>("loadDuration")->setText("");
        page.findChild<QSpinBox*>("loadCount")->setValue(200);
        page.findChild<QSpinBox*>("loadConnections")->setValue(2);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        const load::Result& r = *page.runs().first().result;
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(r.requests.failed > 10);
        auto* rate = page.findChild<QCustomPlot*>("loadRatePlot");
        QCOMPARE(rate->graphCount(), 2);
        QVERIFY(rate->legend->visible());
        const auto expected = ui::throughputSeries(r.failedPerSlot, r.measured);
        QCOMPARE(rate->graph(1)->dataCount(), int(expected.keys.size()));
        double drawn = 0, want = 0;
        for (int i = 0; i < rate->graph(1)->dataCount(); ++i) {
            drawn += rate->graph(1)->data()->at(i)->value;
            want += expected.values[i];
        }
        QVERIFY(want > 0);
        QCOMPARE(drawn, want);

        std::size_t sampledFailures = 0;
        for (const auto& s : r.samples)
            sampledFailures += s.failure != 0;
        QCOMPARE(sampledFailures, std::size_t(r.requests.failed)); // under the cap of 256
        auto failed = page.findChild<QPushButton*>("loadSamplesFailed");
        QCOMPARE(failed->text(), QStringLiteral("Failed (%1)").arg(sampledFailures));
        failed->click();
        auto table = page.findChild<QTableWidget*>("loadSamples");
        QCOMPARE(table->rowCount(), int(sampledFailures));
        for (int row = 0; row < table->rowCount(); ++row) {
            QCOMPARE(table->item(row, 1)->text(), QStringLiteral("GET /drop"));
            QCOMPARE(table->item(row, 2)->text(), QStringLiteral("connection reset"));
        }
        // Selecting /hello in By request hides the failures' graph (it is the whole run's).
        page.findChild<QTableWidget*>("loadByRequest")->selectRow(1);
        QCOMPARE(rate->graph(1)->dataCount(), 0);
        QVERIFY(!rate->legend->visible());
        page.findChild<QTableWidget*>("loadByRequest")->selectRow(0);
        QCOMPARE(rate->graph(1)->dataCount(), int(expected.keys.size()));
    }

    // The plot of a duration-bound run holds that series: no point past the end of the run.
    void throughputPlotEndsWithTheRun() {
        freshDataDir();
        LoadTestPage page(m_server.get());
        page.show();
        page.findChild<QLineEdit*>("loadUrl")->setText(m_server->firstHttpUrl() + "hello");
        page.findChild<QLineEdit*>("loadDuration")->setText("500ms");
        page.findChild<QSpinBox*>("loadConnections")->setValue(2);
        page.findChild<QSpinBox*>("loadThreads")->setValue(1);
        QSignalSpy finished(&page, &LoadTestPage::runFinished);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 30000);
        const load::Result& r = *page.runs().first().result;
        QCPGraph* g = page.findChild<QCustomPlot*>("loadRatePlot")->graph(0);
        QVERIFY(g->dataCount() > 0);
        for (int i = 0; i < g->dataCount(); ++i)
            QVERIFY2(g->data()->at(i)->key < std::chrono::duration<double>(r.measured).count(),
                     qPrintable(QString("point at %1 s, run measured %2 s")
                                    .arg(g->data()->at(i)->key)
                                    .arg(std::chrono::duration<double>(r.measured).count())));
        const auto expected = ui::throughputSeries(r.perSlot, r.measured);
        QCOMPARE(g->dataCount(), int(expected.keys.size()));
        for (int i = 0; i < g->dataCount(); ++i) {
            QCOMPARE(g->data()->at(i)->key, expected.keys[i]);
            QCOMPARE(g->data()->at(i)->value, expected.values[i]);
        }
    }
};

QTEST_MAIN(TestGuiLoadTest)
#include "tst_gui_loadtest.moc"

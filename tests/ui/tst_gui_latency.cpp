// The Latency tab's server scopes against a real in-process server: real requests to two routes,
// the page's histogram and percentile markers for one route match the engine's statistics for that
// route, "all" holds every exchange, and p50/p90/p99 over time come from the selected scope's 1 s
// series.
#include "latency/latencypage.h"
#include "servercontroller.h"

#include <portico/load/runner.h>
#include <portico/stats/report.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

using namespace portico;
using portico::ui::LatencyPage;
using portico::ui::ServerController;

class TestGuiLatency : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;

    void send(const QString& path, std::uint64_t count) {
        load::Options o;
        load::RequestSpec spec;
        spec.url = (m_server->firstHttpUrl() + path.mid(1)).toStdString();
        o.requests.push_back(spec);
        o.connections = 2;
        o.threads = 1;
        o.count = count;
        const load::Result r = load::run(o);
        QCOMPARE(r.requests.completed, count);
    }

    static const stats::GroupStats* route(const stats::Report& report, const std::string& name) {
        for (const auto& r : report.routes)
            if (r.route == name) return &r;
        return nullptr;
    }

private slots:
    void initTestCase() {
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\nworkers: 2\ncapture: true\nvhosts:\n  - routes:\n"
                "      - path: /fast\n        name: fast\n        respond: {body: hi}\n"
                "      - path: /slow\n        name: slow\n        respond: {body: slow, latency: 20ms}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(m_dir.path() + "/portico.yaml", &error, false), qPrintable(error));
    }

    void cleanupTestCase() { m_server.reset(); }

    void serverScopes() {
        send("/fast", 60);
        send("/slow", 12);
        m_server->engine().flushCapture();
        const std::uint64_t total = 72;

        LatencyPage page(m_server.get());
        auto source = page.findChild<QComboBox*>("latencySource");
        QVERIFY(source);
        // The sampler copies the engine's report about once a second; the page reads the copy.
        QTRY_VERIFY_WITH_TIMEOUT(
            (page.refreshServer(), page.selectSource("Server: route slow") && page.histogramTotal() == 12.0),
            5000);
        // Scopes come first, the load-test runs last; the page opened on "all".
        QCOMPARE(source->itemText(0), QString("Server: all"));
        QCOMPARE(source->itemText(source->count() - 1), QString("Load-test runs"));
        QVERIFY(source->findText("Server: route fast") > 0);

        const stats::Report report = m_server->engine().stats();
        const stats::GroupStats* slow = route(report, "slow");
        const stats::GroupStats* fast = route(report, "fast");
        QVERIFY(slow && fast);
        QCOMPARE(slow->count, std::uint64_t(12));
        QCOMPARE(fast->count, std::uint64_t(60));
        QCOMPARE(page.histogramTotal(), double(slow->count));
        QVERIFY(page.histogramPoints() >= 1);
        for (int p : {50, 90, 99})
            QCOMPARE(page.markerMs(p), slow->histogram.valueAtPercentile(p) / 1e6);
        QVERIFY(page.markerMs(50) >= 20.0); // the route's mock latency
        QVERIFY(page.markerMs(50) < 20.0 * 50);

        QVERIFY(page.selectSource("Server: route fast"));
        // The title names the scope shown, and marker labels use µs below a millisecond.
        QVERIFY2(page.timelineTitle().contains("route fast"), qPrintable(page.timelineTitle()));
        QCOMPARE(ui::LatencyPage::latencyText(0.00152), QString("1.52 µs"));
        QCOMPARE(ui::LatencyPage::latencyText(15.24), QString("15.2 ms"));
        QCOMPARE(ui::LatencyPage::latencyText(1200), QString("1.20 s"));
        QCOMPARE(page.histogramTotal(), double(fast->count));
        QCOMPARE(page.markerMs(50), fast->histogram.valueAtPercentile(50) / 1e6);
        QVERIFY(page.markerMs(50) < 20.0);
        // The axis follows the data (not a fixed 0.001–300 ms), and the marker labels sit in
        // opaque boxes so a line or bar under them does not cross the text.
        auto plot = page.findChild<QCustomPlot*>("latencyHistogram");
        QVERIFY(plot);
        const QCPRange x = plot->xAxis->range();
        QVERIFY2(x.lower <= page.markerMs(50) && x.upper >= page.markerMs(99) && x.upper < 20.0 * 10 &&
                     x.lower > page.markerMs(50) / 100,
                 qPrintable(QString("%1..%2").arg(x.lower).arg(x.upper)));
        int labels = 0;
        for (int i = 0; i < plot->itemCount(); ++i)
            if (auto* text = qobject_cast<QCPItemText*>(plot->item(i))) {
                ++labels;
                QVERIFY(text->brush().style() != Qt::NoBrush && text->brush().color().alpha() > 200);
            }
        QCOMPARE(labels, 3);
        // What the figure measures is said next to it.
        auto measures = page.findChild<QLabel*>("latencyMeasures");
        QVERIFY(measures && measures->text().contains("first byte") &&
                measures->text().contains("ready to write"));

        QVERIFY(page.selectSource("Server: all"));
        QVERIFY2(page.timelineTitle().contains("all vhosts"), qPrintable(page.timelineTitle()));
        QCOMPARE(report.overall.count, total);
        QCOMPARE(page.histogramTotal(), double(total));
        QVERIFY(page.histogramTotal() > double(slow->count));
        QCOMPARE(page.markerMs(99), report.overall.histogram.valueAtPercentile(99) / 1e6);

        // p50/p90/p99 over time: at least one 1 s slot with traffic, once the collector ticked.
        QTRY_VERIFY_WITH_TIMEOUT((page.refreshServer(), page.timelinePoints(50) >= 1), 8000);
        QVERIFY(page.timelinePoints(99) >= 1);

        // Over time per scope: once every route's series holds all its exchanges, the slow route's
        // p50 is at or above its 20 ms in every second and the fast route's p99 below it in every
        // second (the overall series mixes both: 12 of 72 are slow).
        auto inSeries = [](const stats::GroupStats* g) {
            std::uint64_t n = 0;
            for (const auto& p : g->series)
                n += p.count;
            return n;
        };
        QTRY_VERIFY_WITH_TIMEOUT(([&] {
                                     page.refreshServer();
                                     const auto copy = m_server->latencyReport();
                                     const stats::GroupStats *s = copy ? route(*copy, "slow") : nullptr,
                                                             *f = copy ? route(*copy, "fast") : nullptr;
                                     return s && f && inSeries(s) == 12 && inSeries(f) == 60;
                                 }()),
                                 8000);
        QVERIFY(page.selectSource("Server: route slow"));
        const QVector<double> slowP50 = page.timelineValuesMs(50);
        QVERIFY(!slowP50.isEmpty());
        for (double v : slowP50)
            QVERIFY2(v >= 20.0, qPrintable(QString("slow route p50 %1 ms in a second").arg(v)));
        QVERIFY(page.selectSource("Server: route fast"));
        const QVector<double> fastP99 = page.timelineValuesMs(99);
        QVERIFY(!fastP99.isEmpty());
        for (double v : fastP99)
            QVERIFY2(v < 20.0, qPrintable(QString("fast route p99 %1 ms in a second").arg(v)));
        QVERIFY(page.selectSource("Server: all"));
        double allMax = 0;
        for (double v : page.timelineValuesMs(99))
            allMax = std::max(allMax, v);
        QVERIFY(allMax >= 20.0);

        // Switching to the runs view and back keeps working (no runs: the histogram is empty).
        QVERIFY(page.selectSource("Load-test runs"));
        QVERIFY(measures->text().startsWith("Load-test latency: measured by the client"));
        QCOMPARE(page.histogramPoints(), 0);
        QCOMPARE(page.markerMs(50), -1.0);
        QVERIFY(page.selectSource("Server: route slow"));
        QCOMPARE(page.histogramTotal(), 12.0);
    }
};

QTEST_MAIN(TestGuiLatency)
#include "tst_gui_latency.moc"

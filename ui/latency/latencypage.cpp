// LatencyPage: QCustomPlot histogram (log-spaced bins over the HDR buckets) and percentiles per run
// or, for a server scope, over time.
#include "latencypage.h"

#include "servercontroller.h"

#include <portico/stats/report.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace portico::ui {

namespace {

constexpr int kBinsPerDecade = 40;
const int kPercentiles[] = {50, 90, 99};
const QColor kMarkerColors[] = {QColor(39, 174, 96), QColor(243, 156, 18), QColor(192, 57, 43)};
const QColor kRunColors[] = {QColor(41, 128, 185), QColor(142, 68, 173)};

} // namespace

// "15.2 µs", "1.52 ms", "312 ms", "1.20 s": three significant digits in the unit that suits.
QString LatencyPage::timelineTitle() const { return m_timelineTitle->text(); }

QString LatencyPage::latencyText(double ms) {
    if (ms < 1) return QStringLiteral("%1 µs").arg(ms * 1000, 0, 'g', 3);
    if (ms < 1000) return QStringLiteral("%1 ms").arg(ms, 0, 'g', 3);
    return QStringLiteral("%1 s").arg(ms / 1000, 0, 'f', 2);
}

namespace {

QCPTextElement* title(QCustomPlot* plot, const QString& text) {
    plot->plotLayout()->insertRow(0);
    auto t = new QCPTextElement(plot, text, QFont(plot->font().family(), 10, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, t);
    return t;
}

} // namespace

LatencyPage::LatencyPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    m_source = new QComboBox;
    m_source->setObjectName("latencySource");
    m_source->addItem(tr("Load-test runs"), QStringList{"runs"});
    connect(m_source, &QComboBox::currentIndexChanged, this, &LatencyPage::rebuild);
    m_run = new QComboBox;
    m_run->setObjectName("latencyRun");
    m_compare = new QComboBox;
    m_compare->setObjectName("latencyCompare");
    connect(m_run, &QComboBox::currentIndexChanged, this, &LatencyPage::rebuild);
    connect(m_compare, &QComboBox::currentIndexChanged, this, &LatencyPage::rebuild);
    auto sourceBar = new QHBoxLayout;
    sourceBar->addWidget(new QLabel(tr("Source")));
    sourceBar->addWidget(m_source, 1);
    m_runBar = new QWidget;
    auto bar = new QHBoxLayout(m_runBar);
    bar->setContentsMargins(0, 0, 0, 0);
    sourceBar->addWidget(m_runBar, 2);
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_run, 1);
    bar->addWidget(new QLabel(tr("Overlay")));
    bar->addWidget(m_compare, 1);

    m_histogram = new QCustomPlot;
    m_histogram->setObjectName("latencyHistogram");
    title(m_histogram, tr("Latency distribution"));
    m_histogram->xAxis->setScaleType(QCPAxis::stLogarithmic);
    m_histogram->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_histogram->xAxis->setNumberFormat("gb");
    m_histogram->xAxis->setLabel(tr("latency (ms, log scale)"));
    m_histogram->yAxis->setLabel(tr("requests per bin"));
    m_histogram->legend->setVisible(true);
    m_histogram->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    for (const QColor& c : kRunColors) {
        QCPGraph* g = m_histogram->addGraph();
        g->setLineStyle(QCPGraph::lsStepCenter);
        g->setPen(QPen(c, 1.5));
        QColor fill = c;
        fill.setAlpha(60);
        g->setBrush(fill);
    }

    m_percentiles = new QCustomPlot;
    m_percentiles->setObjectName("latencyPercentiles");
    title(m_percentiles, tr("p50 / p90 / p99 by run"));
    m_percentiles->xAxis->setLabel(tr("run"));
    m_percentiles->yAxis->setLabel(tr("ms"));
    m_percentiles->legend->setVisible(true);
    m_percentiles->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    QSharedPointer<QCPAxisTickerFixed> integers(new QCPAxisTickerFixed);
    integers->setTickStep(1);
    integers->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_percentiles->xAxis->setTicker(integers);
    for (int i = 0; i < 3; ++i) {
        QCPGraph* g = m_percentiles->addGraph();
        g->setName(QString("p%1").arg(kPercentiles[i]));
        g->setPen(QPen(kMarkerColors[i], 2));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    }

    m_timeline = new QCustomPlot;
    m_timeline->setObjectName("latencyTimeline");
    m_timelineTitle = title(m_timeline, tr("p50 / p90 / p99 over time (1 s slots)"));
    QSharedPointer<QCPAxisTickerDateTime> clock(new QCPAxisTickerDateTime);
    clock->setDateTimeFormat("HH:mm:ss");
    m_timeline->xAxis->setTicker(clock);
    m_timeline->yAxis->setLabel(tr("ms"));
    m_timeline->legend->setVisible(true);
    m_timeline->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    for (int i = 0; i < 3; ++i) {
        QCPGraph* g = m_timeline->addGraph();
        g->setName(QString("p%1").arg(kPercentiles[i]));
        g->setPen(QPen(kMarkerColors[i], 2));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    }

    m_empty = new QLabel(
        tr("No latency data yet: run a load test (Load test tab) and its histogram appears here."));
    m_empty->setAlignment(Qt::AlignCenter);
    // What the figures measure, next to them: server and client latencies are different things.
    m_measures = new QLabel;
    m_measures->setObjectName("latencyMeasures");
    m_measures->setWordWrap(true);

    auto layout = new QVBoxLayout(this);
    layout->addLayout(sourceBar);
    layout->addWidget(m_measures);
    layout->addWidget(m_empty);
    layout->addWidget(m_histogram, 3);
    layout->addWidget(m_percentiles, 2);
    layout->addWidget(m_timeline, 2);

    m_replot = new QTimer(this);
    m_replot->setInterval(33);
    connect(m_replot, &QTimer::timeout, this, &LatencyPage::replotIfDirty);
    m_replot->start();
    if (m_server) {
        m_refresh = new QTimer(this);
        m_refresh->setInterval(1000);
        connect(m_refresh, &QTimer::timeout, this, [this] {
            if (isVisible()) refreshServer();
        });
        m_refresh->start();
        refreshServer();
    }
    rebuild();
}

void LatencyPage::refreshServer() {
    if (!m_server) return;
    auto report = m_server->latencyReport();
    if (!report || report == m_report) return;
    m_report = std::move(report);
    // Scopes first, then the runs entry; keep the selection by its data.
    QList<QPair<QString, QStringList>> items;
    items.append({tr("Server: all"), QStringList{"all"}});
    for (const auto& v : m_report->vhosts)
        items.append({tr("Server: vhost %1").arg(QString::fromStdString(v.vhost)),
                      QStringList{"vhost", QString::fromStdString(v.vhost)}});
    for (const auto& r : m_report->routes) {
        const QString route = QString::fromStdString(r.route);
        const QString label = m_report->vhosts.size() > 1
                                  ? QString("%1 %2").arg(QString::fromStdString(r.vhost), route)
                                  : route;
        items.append({tr("Server: route %1").arg(label),
                      QStringList{"route", QString::fromStdString(r.vhost), route}});
    }
    items.append({tr("Load-test runs"), QStringList{"runs"}});
    bool same = items.size() == m_source->count();
    for (int i = 0; same && i < items.size(); ++i)
        same = m_source->itemText(i) == items[i].first;
    if (!same) {
        QStringList current = m_source->currentData().toStringList();
        if (current == QStringList{"runs"} && m_runs.isEmpty()) current = QStringList{"all"};
        m_source->blockSignals(true);
        m_source->clear();
        int select = 0;
        for (int i = 0; i < items.size(); ++i) {
            m_source->addItem(items[i].first, items[i].second);
            if (items[i].second == current) select = i;
        }
        m_source->setCurrentIndex(select);
        m_source->blockSignals(false);
    }
    if (!same || m_source->currentData().toStringList() != QStringList{"runs"}) rebuild();
}

bool LatencyPage::selectSource(const QString& label) {
    const int i = m_source->findText(label);
    if (i < 0) return false;
    m_source->setCurrentIndex(i);
    rebuild();
    return true;
}

const stats::GroupStats* LatencyPage::selectedScope() const {
    const QStringList scope = m_source->currentData().toStringList();
    if (!m_report || scope.isEmpty()) return nullptr;
    if (scope[0] == "all") return &m_report->overall;
    if (scope[0] == "vhost" && scope.size() == 2)
        for (const auto& v : m_report->vhosts)
            if (QString::fromStdString(v.vhost) == scope[1]) return &v;
    if (scope[0] == "route" && scope.size() == 3)
        for (const auto& r : m_report->routes)
            if (QString::fromStdString(r.vhost) == scope[1] && QString::fromStdString(r.route) == scope[2])
                return &r;
    return nullptr;
}

void LatencyPage::addRun(const LoadRun& run) {
    m_runs << run;
    const QString label =
        tr("#%1 %2 — %3")
            .arg(run.number)
            .arg(run.when, QString::fromStdString(run.result->options.requests.front().url));
    m_run->blockSignals(true);
    m_compare->blockSignals(true);
    if (m_compare->count() == 0) m_compare->addItem(tr("(none)"));
    m_run->addItem(label);
    m_compare->addItem(label);
    m_run->setCurrentIndex(m_run->count() - 1);
    m_run->blockSignals(false);
    m_compare->blockSignals(false);
    m_source->blockSignals(true);
    m_source->setCurrentIndex(m_source->findData(QStringList{"runs"}));
    m_source->blockSignals(false);
    rebuild();
}

void LatencyPage::drawHistogram(int graph, const stats::Histogram& histogram, const QString& name) {
    // HDR buckets are far finer than a screen; sum them into log-spaced bins for display.
    QMap<int, double> bins;
    histogram.forEachBucket([&](const stats::Histogram::Bucket& b) {
        const double mid = (b.lowestNs + b.highestNs) / 2.0 / 1e6;
        bins[int(std::floor(std::log10(mid) * kBinsPerDecade))] += double(b.count);
    });
    QVector<double> keys, values;
    for (auto it = bins.begin(); it != bins.end(); ++it) {
        keys << std::pow(10.0, (it.key() + 0.5) / kBinsPerDecade);
        values << it.value();
    }
    QCPGraph* g = m_histogram->graph(graph);
    g->setData(keys, values, true);
    g->setName(name);
    g->setVisible(true);
    g->addToLegend();
}

void LatencyPage::drawMarkers(const stats::Histogram& histogram) {
    m_histogram->rescaleAxes(true);
    m_histogram->yAxis->setRangeLower(0);
    m_histogram->yAxis->setRangeUpper(m_histogram->yAxis->range().upper * 1.15);
    QCPRange x = m_histogram->xAxis->range();
    m_histogram->xAxis->setRange(x.lower / 1.5, x.upper * 1.5);
    for (int i = 0; i < 3; ++i) {
        const double v = histogram.valueAtPercentile(kPercentiles[i]) / 1e6;
        m_markers[kPercentiles[i]] = v;
        auto line = new QCPItemStraightLine(m_histogram);
        line->point1->setCoords(v, 0);
        line->point2->setCoords(v, 1);
        line->setPen(QPen(kMarkerColors[i], 1.5, Qt::DashLine));
        auto label = new QCPItemText(m_histogram);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(v, 0.04 + 0.07 * i);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setColor(kMarkerColors[i]);
        // Readable where it crosses a bar or another marker's line: an opaque box with a border
        // in the marker's colour.
        label->setBrush(QBrush(QColor(255, 255, 255, 235)));
        label->setPen(QPen(kMarkerColors[i], 1));
        label->setPadding(QMargins(4, 1, 4, 1));
        label->setText(QString("p%1 %2").arg(kPercentiles[i]).arg(latencyText(v)));
    }
}

void LatencyPage::rebuildServer() {
    m_empty->setText(tr("No requests served yet: send some to the server and their latency appears here."));
    m_measures->setText(tr("Server latency: from the request's first byte to its response being ready to "
                           "write, measured inside the server (mock latency included; the network and the "
                           "client's own time are not)."));
    const stats::GroupStats* scope = selectedScope();
    const bool has = scope && scope->histogram.count() > 0;
    m_empty->setVisible(!has);
    m_histogram->setVisible(has);
    m_timeline->setVisible(has);
    if (has) {
        drawHistogram(0, scope->histogram, m_source->currentText().section(": ", 1));
        drawMarkers(scope->histogram);
    }
    // The title names what is shown: the whole server, one vhost or one route.
    const QString scopeName = m_source->currentText().section(": ", 1);
    m_timelineTitle->setText(tr("p50 / p90 / p99 over time, %1 (1 s slots)")
                                 .arg(scopeName == "all" ? tr("all vhosts") : scopeName));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int i = 0; i < 3; ++i) {
        QVector<double> x, y;
        if (scope)
            for (const stats::SeriesPoint& p : scope->series) {
                const std::uint64_t v = i == 0 ? p.p50 : i == 1 ? p.p90 : p.p99;
                x << double(p.unixSecond);
                y << (p.count ? v / 1e6 : nan); // a gap where nothing was served
            }
        m_timeline->graph(i)->setData(x, y, true);
    }
    m_timeline->rescaleAxes();
    m_timeline->yAxis->setRangeLower(0);
    m_timeline->yAxis->setRangeUpper(m_timeline->yAxis->range().upper * 1.15);
    m_dirty = true;
    replotIfDirty();
}

void LatencyPage::rebuild() {
    m_histogram->clearItems();
    m_markers.clear();
    for (int i = 0; i < m_histogram->graphCount(); ++i) {
        m_histogram->graph(i)->data()->clear();
        m_histogram->graph(i)->setVisible(false);
        m_histogram->graph(i)->removeFromLegend();
    }
    const bool runs = m_source->currentData().toStringList() == QStringList{"runs"};
    m_runBar->setVisible(runs);
    m_percentiles->setVisible(runs && !m_runs.isEmpty());
    if (!runs) {
        rebuildServer();
        return;
    }
    m_timeline->setVisible(false);
    m_empty->setText(
        tr("No latency data yet: run a load test (Load test tab) and its histogram appears here."));
    m_measures->setText(tr("Load-test latency: measured by the client, from sending a request (with a "
                           "rate: from the time it was due, so a stalled server shows) to the last byte "
                           "of its response."));
    m_empty->setVisible(m_runs.isEmpty());
    m_histogram->setVisible(!m_runs.isEmpty());
    const int selected = m_run->currentIndex();
    if (selected >= 0 && selected < m_runs.size()) {
        const LoadRun& run = m_runs[selected];
        drawHistogram(0, *run.result->latency, tr("run #%1").arg(run.number));
        const int other = m_compare->currentIndex() - 1;
        if (other >= 0 && other < m_runs.size() && other != selected)
            drawHistogram(1, *m_runs[other].result->latency, tr("run #%1").arg(m_runs[other].number));
        drawMarkers(*run.result->latency);
    }
    for (int i = 0; i < 3; ++i) {
        QVector<double> x, y;
        for (const LoadRun& run : m_runs) {
            x << run.number;
            y << run.result->latency->valueAtPercentile(kPercentiles[i]) / 1e6;
        }
        m_percentiles->graph(i)->setData(x, y, true);
    }
    m_percentiles->rescaleAxes();
    m_percentiles->xAxis->setRange(0.5, qMax(1, int(m_runs.size())) + 0.5);
    m_percentiles->yAxis->setRangeLower(0);
    m_percentiles->yAxis->setRangeUpper(m_percentiles->yAxis->range().upper * 1.15);
    m_dirty = true;
    replotIfDirty();
}

void LatencyPage::replotIfDirty() {
    if (!m_dirty || !isVisible()) return;
    m_dirty = false;
    m_histogram->replot();
    m_percentiles->replot();
    m_timeline->replot();
}

int LatencyPage::histogramPoints() const { return m_histogram->graph(0)->dataCount(); }

double LatencyPage::markerMs(int percentile) const { return m_markers.value(percentile, -1); }

double LatencyPage::histogramTotal() const {
    double total = 0;
    for (auto it = m_histogram->graph(0)->data()->constBegin();
         it != m_histogram->graph(0)->data()->constEnd(); ++it)
        total += it->value;
    return total;
}

int LatencyPage::timelinePoints(int percentile) const {
    for (int p : kPercentiles)
        if (p == percentile) return int(timelineValuesMs(percentile).size());
    return -1;
}

QVector<double> LatencyPage::timelineValuesMs(int percentile) const {
    QVector<double> values;
    for (int i = 0; i < 3; ++i)
        if (kPercentiles[i] == percentile)
            for (auto it = m_timeline->graph(i)->data()->constBegin();
                 it != m_timeline->graph(i)->data()->constEnd(); ++it)
                if (!std::isnan(it->value)) values << it->value;
    return values;
}

} // namespace portico::ui

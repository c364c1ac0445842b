// LatencyPage: QCustomPlot histogram (log-spaced bins over the HDR buckets) and percentiles per run.
#include "latencypage.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>

namespace portico::ui {

namespace {

constexpr int kBinsPerDecade = 40;
const int kPercentiles[] = {50, 90, 99};
const QColor kMarkerColors[] = {QColor(39, 174, 96), QColor(243, 156, 18), QColor(192, 57, 43)};
const QColor kRunColors[] = {QColor(41, 128, 185), QColor(142, 68, 173)};

QCPTextElement* title(QCustomPlot* plot, const QString& text) {
    plot->plotLayout()->insertRow(0);
    auto t = new QCPTextElement(plot, text, QFont(plot->font().family(), 10, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, t);
    return t;
}

} // namespace

LatencyPage::LatencyPage(QWidget* parent) : QWidget(parent) {
    m_run = new QComboBox;
    m_run->setObjectName("latencyRun");
    m_compare = new QComboBox;
    m_compare->setObjectName("latencyCompare");
    connect(m_run, &QComboBox::currentIndexChanged, this, &LatencyPage::rebuild);
    connect(m_compare, &QComboBox::currentIndexChanged, this, &LatencyPage::rebuild);
    auto bar = new QHBoxLayout;
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

    m_empty = new QLabel(
        tr("No latency data yet: run a load test (Load test tab) and its histogram appears here."));
    m_empty->setAlignment(Qt::AlignCenter);

    auto layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(m_empty);
    layout->addWidget(m_histogram, 3);
    layout->addWidget(m_percentiles, 2);

    m_replot = new QTimer(this);
    m_replot->setInterval(33);
    connect(m_replot, &QTimer::timeout, this, &LatencyPage::replotIfDirty);
    m_replot->start();
    rebuild();
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
    rebuild();
}

void LatencyPage::drawHistogram(int graph, const LoadRun& run) {
    // HDR buckets are far finer than a screen; sum them into log-spaced bins for display.
    QMap<int, double> bins;
    run.result->latency->forEachBucket([&](const stats::Histogram::Bucket& b) {
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
    g->setName(tr("run #%1").arg(run.number));
    g->setVisible(true);
    g->addToLegend();
}

void LatencyPage::rebuild() {
    m_empty->setVisible(m_runs.isEmpty());
    m_histogram->setVisible(!m_runs.isEmpty());
    m_percentiles->setVisible(!m_runs.isEmpty());
    m_histogram->clearItems();
    m_markers.clear();
    for (int i = 0; i < m_histogram->graphCount(); ++i) {
        m_histogram->graph(i)->data()->clear();
        m_histogram->graph(i)->setVisible(false);
        m_histogram->graph(i)->removeFromLegend();
    }
    const int selected = m_run->currentIndex();
    if (selected >= 0 && selected < m_runs.size()) {
        const LoadRun& run = m_runs[selected];
        drawHistogram(0, run);
        const int other = m_compare->currentIndex() - 1;
        if (other >= 0 && other < m_runs.size() && other != selected) drawHistogram(1, m_runs[other]);
        m_histogram->rescaleAxes(true);
        m_histogram->yAxis->setRangeLower(0);
        m_histogram->yAxis->setRangeUpper(m_histogram->yAxis->range().upper * 1.15);
        QCPRange x = m_histogram->xAxis->range();
        m_histogram->xAxis->setRange(x.lower / 1.5, x.upper * 1.5);
        for (int i = 0; i < 3; ++i) {
            const double v = run.result->latency->valueAtPercentile(kPercentiles[i]) / 1e6;
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
            label->setText(QString("p%1 %2 ms").arg(kPercentiles[i]).arg(v, 0, 'g', 3));
        }
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
}

int LatencyPage::histogramPoints() const { return m_histogram->graph(0)->dataCount(); }

double LatencyPage::markerMs(int percentile) const { return m_markers.value(percentile, -1); }

} // namespace portico::ui

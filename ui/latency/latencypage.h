// The Latency tab: a run's latency histogram with percentile markers, another run overlaid, and
// p50/p90/p99 of every run.
#pragma once

#include "loadtest/loadtestpage.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QTimer;

namespace portico::ui {

/// Plots replot on a timer, only when visible and when something changed.
class LatencyPage : public QWidget {
    Q_OBJECT

public:
    explicit LatencyPage(QWidget* parent = nullptr);

    void addRun(const LoadRun& run);
    /// Points of the histogram currently drawn (bins with a count), for tests.
    int histogramPoints() const;
    /// The value (ms) of the p-th percentile marker drawn for the selected run, -1 if none.
    double markerMs(int percentile) const;

private:
    void rebuild();
    void replotIfDirty();
    void drawHistogram(int graph, const LoadRun& run);

    QList<LoadRun> m_runs;
    QComboBox* m_run = nullptr;
    QComboBox* m_compare = nullptr;
    QCustomPlot* m_histogram = nullptr;
    QCustomPlot* m_percentiles = nullptr;
    QLabel* m_empty = nullptr;
    QTimer* m_replot = nullptr;
    QMap<int, double> m_markers;
    bool m_dirty = false;
};

} // namespace portico::ui

// The Latency tab: a run's latency histogram with percentile markers, another run overlaid, and
// p50/p90/p99 of every run; or the server's served latency (all, a vhost, a route) with p50/p90/p99
// over time.
#pragma once

#include "loadtest/loadtestpage.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QCPTextElement;
class QLabel;
class QTimer;

namespace portico::stats {
class Histogram;
struct GroupStats;
struct Report;
} // namespace portico::stats

namespace portico::ui {

class ServerController;

/// Plots replot on a timer, only when visible and when something changed.
class LatencyPage : public QWidget {
    Q_OBJECT

public:
    /// With `server`, the Source selector also lists the server's scopes (all, each vhost, each
    /// route), read once a second from ServerController::latencyReport().
    explicit LatencyPage(ServerController* server = nullptr, QWidget* parent = nullptr);

    void addRun(const LoadRun& run);
    /// A latency in milliseconds as people read it: "15.2 µs", "1.52 ms", "312 ms", "1.20 s".
    static QString latencyText(double ms);
    /// The over-time plot's title ("p50 / p90 / p99 over time, route hello (1 s slots)").
    QString timelineTitle() const;
    /// Reads the server's latest report now (the 1 Hz timer does it too) and redraws a server scope.
    void refreshServer();
    /// Selects a source by its label ("Server: all", "Server: route hello", "Load-test runs");
    /// false when there is no such entry.
    bool selectSource(const QString& label);
    /// Total count of the histogram currently drawn (graph 0), for tests.
    double histogramTotal() const;
    /// Points of the p`percentile` over-time graph (server scopes), for tests.
    int timelinePoints(int percentile) const;
    /// Their values (ms), seconds without traffic left out, for tests.
    QVector<double> timelineValuesMs(int percentile) const;
    /// Points of the histogram currently drawn (bins with a count), for tests.
    int histogramPoints() const;
    /// The value (ms) of the p-th percentile marker drawn for the selected run, -1 if none.
    double markerMs(int percentile) const;

private:
    void rebuild();
    void replotIfDirty();
    void drawHistogram(int graph, const stats::Histogram& histogram, const QString& name);
    void drawMarkers(const stats::Histogram& histogram);
    void rebuildServer();
    const stats::GroupStats* selectedScope() const;

    ServerController* m_server = nullptr;
    std::shared_ptr<const stats::Report> m_report;
    QList<LoadRun> m_runs;
    QComboBox* m_source = nullptr;
    QWidget* m_runBar = nullptr;
    QCustomPlot* m_timeline = nullptr;
    QCPTextElement* m_timelineTitle = nullptr;
    QTimer* m_refresh = nullptr;
    QComboBox* m_run = nullptr;
    QComboBox* m_compare = nullptr;
    QCustomPlot* m_histogram = nullptr;
    QCustomPlot* m_percentiles = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_measures = nullptr; ///< what the shown latency measures (server or client)
    QTimer* m_replot = nullptr;
    QMap<int, double> m_markers;
    bool m_dirty = false;
};

} // namespace portico::ui

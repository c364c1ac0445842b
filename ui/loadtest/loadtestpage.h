// The Load test tab: a form over load::Options checked as you type, Start/Stop, live progress, rate,
// p50/p99 and latency histogram, results table; the run history (shared with `portico bench`) with
// overlay and comparison; the benchmark suite.
#pragma once

#include <portico/engine/jobs.h>
#include <portico/load/live.h>
#include <portico/load/result.h>
#include <portico/load/suite.h>

#include <QElapsedTimer>
#include <QList>
#include <QPair>
#include <QVector>
#include <QWidget>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

class QComboBox;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTabWidget;
class QThread;
class QTimer;

namespace portico::ui {

class RunHistoryView;
class SamplesView;
class ServerController;

/// One finished run, as kept in the session's history.
struct LoadRun {
    int number = 0;
    /// When it was saved, as the History view shows it (historyTime(): "2026-12-01 00:45:12", local
    /// time); the end time in that format when it could not be saved.
    QString when;
    bool stopped = false; ///< ended by Stop (or by closing the window) before its bound
    std::shared_ptr<const load::Result> result;
    /// The server's last capture id when the run started: its samples' server records come after
    /// it (SamplesView, findServerRecord).
    std::uint64_t captureFromId = 0;
};

/// The throughput plot's points from a run's 100 ms slots (load::Result::perSlot, `measured`): x =
/// the middle of the part of the slot that was measured (s), y = requests/s over that part. The
/// last slot is usually cut short by the end of the run: it is scaled by the time it covers, or left
/// out when that is under half a slot (after a duration bound it holds only the requests that were
/// in flight), so it is not drawn as a drop to about 0. A run shorter than half a slot keeps it.
struct ThroughputSeries {
    QVector<double> keys, values;
};
ThroughputSeries throughputSeries(const std::vector<std::uint64_t>& perSlot,
                                  std::chrono::nanoseconds measured);

/// A duration field's value ("10s", "500ms", "2m": a whole number and a unit, ns us ms s m h). Empty
/// text is 0 when `emptyAllowed`. False with `error` (without the field's name) otherwise; a
/// fraction gets the whole-unit spelling ("0.3s" -> "use whole units: 300ms").
bool parseDurationField(const QString& text, bool emptyAllowed, std::chrono::nanoseconds& out,
                        QString& error);

/// One route's row of the suite table (copied out of the worker thread's SuiteRun).
struct SuiteRow {
    QString name, target;
    double requestsPerSecond = 0;
    std::uint64_t p50 = 0, p99 = 0; ///< ns
    std::uint64_t bad = 0;          ///< non-2xx/3xx answers + failed requests (SuiteRun::bad)
    QString error;                  ///< the route could not run
};

/// Runs engine::runLoad (or engine::runLoadSuite) on a worker thread (never the UI thread); Stop
/// cancels it (engine::Cancel). Every field is checked as it changes: its error is shown under it and Start
/// is disabled while one is invalid. The URL and duration are kept in QSettings ("loadTest/url",
/// "loadTest/duration") as the user edits them (not when set by code, e.g. for screenshots). While a run
/// goes, a 30 Hz timer updates the progress bar, and about 4 times a second the generator's live totals
/// (load::Live) give the request rate, p50/p99 and the latency histogram. Every finished run (marked
/// "stopped" when Stop ended it), and every suite that ran to the end, is saved in the history folder
/// (load::saveRun / saveSuite, as `portico bench` does; default load::defaultHistoryDir()) on the worker
/// thread, then listed in the History tab.
class LoadTestPage : public QWidget {
    Q_OBJECT

public:
    explicit LoadTestPage(ServerController* server, QWidget* parent = nullptr);
    ~LoadTestPage() override;

    /// A run or a suite is in progress (one at a time).
    bool isRunning() const { return m_thread != nullptr; }
    const QList<LoadRun>& runs() const { return m_runs; }
    /// The form as load options; false with `error` (the first field's error) when a field is not valid.
    bool options(load::Options& out, QString& error) const;
    /// Every field is valid (what Start's enabled state follows when no run is going).
    bool formValid() const;
    /// The suite's options: connections, threads and pipeline from the form, the suite's per-route
    /// duration (closed model, no count). False with `error` when a field is not valid.
    bool suiteOptions(load::Options& out, QString& error) const;

    /// Where runs are saved and listed (tests and screenshots use a scratch folder).
    void setHistoryDir(const std::filesystem::path& dir);
    std::filesystem::path historyDir() const { return m_historyDir; }
    RunHistoryView* history() const { return m_history; }
    /// The shown run's drill-down: its sampled requests, narrowed by a click on a plot.
    SamplesView* samples() const { return m_samples; }
    /// What a click at `ms` (the x coordinate, ms) on the latency histogram selects: the latency
    /// range of the bar there [low, high) in ns, bars as drawLatency draws them.
    static std::pair<std::uint64_t, std::uint64_t> latencyBarAt(double ms);
    /// Lists the shown run's samples whose latency is in the latency histogram's bar at `ms`, or
    /// (throughputAt) that completed in the second of the run at `seconds`; false when no run is
    /// shown (or a run is going). What a click on the plots does.
    bool samplesAtLatency(double ms);
    /// The shaded bar on the latency histogram, visible while samplesAtLatency's selection is listed.
    QCPItemRect* selectedBar() const { return m_selectedBar; }
    bool samplesAtTime(double seconds);
    /// The last suite's rows, in run order (complete once suiteFinished was emitted).
    const QList<SuiteRow>& suiteRows() const { return m_suiteRows; }
    /// Shows "run", "history" or "suite" in the right-hand tabs; false for another name.
    bool showView(const QString& name);

public slots:
    bool start();
    /// Runs the eleven-route suite against the suite URL, or, when that field is empty, against a
    /// suite vhost served in this process for the run (resources/bench-suite, 127.0.0.1, any free
    /// port). Bounded: 11 × (per-route duration + stop grace).
    bool startSuite();
    void stop();

signals:
    void runStarted();
    void runFinished(const portico::ui::LoadRun& run);
    /// The suite ended (completed, stopped or failed: see suiteError()).
    void suiteFinished();

public:
    QString suiteError() const { return m_suiteError; }
    /// The history ID of the last save ("" if none), or why it failed.
    QString lastSavedId() const { return m_lastSavedId; }
    QString lastSaveError() const { return m_lastSaveError; }

private:
    /// Checks every field, shows each one's error under it, enables Start accordingly; the number
    /// of invalid fields.
    int validateForm();
    QString fieldError(const QWidget* field) const;
    void saveFormSettings();
    void clearRunView();
    void sampleLive(qint64 nowMs);
    void drawLatency(const stats::Histogram& histogram);
    void tick();
    void onFinished();
    void onSuiteFinished();
    void addSuiteRow(int index, const SuiteRow& row);
    void resetDefaults();
    void showResult(const load::Result& r, bool stopped);
    /// Fills the By request table from `r.byRequest` (hidden with a single request kind).
    void showByRequest(const load::Result& r);
    /// Draws the throughput and latency plots for one request kind (`kind` ≥ 0) or all (-1).
    void showKind(int kind);
    /// Draws the run's failed requests per second on the throughput plot (graph 1, with a legend)
    /// when it had any; clears it for null (a request kind is shown, or no run).
    void showFailures(const load::Result* r);
    void setRunning(bool running);

    ServerController* m_server;
    QLineEdit* m_url = nullptr;
    QComboBox* m_method = nullptr;
    QSpinBox* m_connections = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_pipeline = nullptr;
    QLineEdit* m_duration = nullptr;
    QSpinBox* m_count = nullptr;
    QSpinBox* m_rate = nullptr;
    QLineEdit* m_warmup = nullptr;
    /// Each field's error label, shown under it (object name: the field's + "Error").
    QList<QPair<QWidget*, QLabel*>> m_fieldErrors;
    QLabel* m_formError = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_live = nullptr;
    QLabel* m_summary = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCustomPlot* m_latencyPlot = nullptr;
    QCPItemStraightLine* m_markerLines[2] = {}; ///< p50, p99 on the latency histogram
    QCPItemText* m_markerLabels[2] = {};
    /// The latency histogram bar whose sampled requests are listed (samplesAtLatency); hidden otherwise.
    QCPItemRect* m_selectedBar = nullptr;
    QTableWidget* m_table = nullptr;
    /// Per request kind of the shown run: "All requests", then one row per kind; selecting a row
    /// filters the plots to it.
    QTableWidget* m_byRequest = nullptr;
    std::shared_ptr<const load::Result> m_shown; ///< the run the plots and m_byRequest show
    int m_kind = -1;                             ///< the request kind the plots show (-1 all)
    SamplesView* m_samples = nullptr;
    std::uint64_t m_captureFrom = 0; ///< the server's last capture id when the running run started
    QPlainTextEdit* m_text = nullptr;
    QTimer* m_timer = nullptr;

    QThread* m_thread = nullptr;
    /// The run's or suite's cancel (a new one per run; shared with its worker thread).
    std::shared_ptr<engine::Cancel> m_cancel = std::make_shared<engine::Cancel>();
    std::shared_ptr<load::Result> m_pending; ///< written by the worker, read after it finished
    load::Options m_running;
    std::shared_ptr<load::Live> m_liveRun; ///< fed by the worker, read by sampleLive()
    std::unique_ptr<stats::Histogram> m_liveLatency;
    QElapsedTimer m_clock;
    std::uint64_t m_lastCompleted = 0;
    qint64 m_lastSampleMs = 0; ///< last read of m_liveRun
    qint64 m_lastRateMs = 0;   ///< last throughput point
    std::uint64_t m_rateCompleted = 0;
    double m_rateNow = 0;
    std::uint64_t m_liveDone = 0; ///< completed + failed so far (progress of a count-bound run)
    QList<LoadRun> m_runs;

    std::filesystem::path m_historyDir;
    RunHistoryView* m_history = nullptr;
    QTabWidget* m_views = nullptr;
    QLineEdit* m_suiteUrl = nullptr;
    QLineEdit* m_suiteDuration = nullptr;
    QPushButton* m_suiteStart = nullptr;
    QTableWidget* m_suiteTable = nullptr;
    QLabel* m_suiteSummary = nullptr;
    bool m_suiteRunning = false;
    std::chrono::nanoseconds m_suiteRouteDuration{0};
    int m_suiteDone = 0;
    qint64 m_suiteRouteStartMs = 0;
    QList<SuiteRow> m_suiteRows;
    QString m_suiteError;
    /// Written by the worker, read after it finished.
    struct Saved {
        std::string id, error;
        std::string suiteError, suiteBaseUrl;
        double geometricMean = 0;
        bool suiteAborted = false;
        bool stopped = false; ///< a load run ended by Stop before its bound (engine::LoadRun::stopped)
        std::string savedAt;  ///< ISO 8601 UTC of the save
    };
    std::shared_ptr<Saved> m_saved;
    QString m_lastSavedId, m_lastSaveError;
};

} // namespace portico::ui

Q_DECLARE_METATYPE(portico::ui::LoadRun)

// The Load test tab: a form over load::Options, Start/Stop, live progress and rate, results table;
// the run history (shared with `portico bench`) with overlay and comparison; the benchmark suite.
#pragma once

#include <portico/load/result.h>
#include <portico/load/suite.h>

#include <QElapsedTimer>
#include <QWidget>

#include <atomic>
#include <filesystem>
#include <memory>

class QComboBox;
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
class ServerController;

/// One finished run, as kept in the session's history.
struct LoadRun {
    int number = 0;
    QString when;
    std::shared_ptr<const load::Result> result;
};

/// One route's row of the suite table (copied out of the worker thread's SuiteRun).
struct SuiteRow {
    QString name, target;
    double requestsPerSecond = 0;
    std::uint64_t p50 = 0, p99 = 0; ///< ns
    std::uint64_t bad = 0;          ///< non-2xx/3xx answers + failed requests (SuiteRun::bad)
    QString error;                  ///< the route could not run
};

/// Runs load::run (or load::runSuite) on a worker thread (never the UI thread); Stop sets its abort
/// flag. While it runs, a 30 Hz timer updates the progress bar and, when the target is this server,
/// the live request rate read from the engine's counters. Every finished run, and every suite that
/// ran to the end, is saved in the history folder (load::saveRun / saveSuite, as `portico bench`
/// does; default load::defaultHistoryDir()) on the worker thread, then listed in the History tab.
class LoadTestPage : public QWidget {
    Q_OBJECT

public:
    explicit LoadTestPage(ServerController* server, QWidget* parent = nullptr);
    ~LoadTestPage() override;

    /// A run or a suite is in progress (one at a time).
    bool isRunning() const { return m_thread != nullptr; }
    const QList<LoadRun>& runs() const { return m_runs; }
    /// The form as load options; false with `error` when a field is not valid.
    bool options(load::Options& out, QString& error) const;
    /// The suite's options: connections, threads and pipeline from the form, the suite's per-route
    /// duration (closed model, no count). False with `error` when a field is not valid.
    bool suiteOptions(load::Options& out, QString& error) const;

    /// Where runs are saved and listed (tests and screenshots use a scratch folder).
    void setHistoryDir(const std::filesystem::path& dir);
    std::filesystem::path historyDir() const { return m_historyDir; }
    RunHistoryView* history() const { return m_history; }
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
    void tick();
    void onFinished();
    void onSuiteFinished();
    void addSuiteRow(int index, const SuiteRow& row);
    void resetDefaults();
    void showResult(const load::Result& r);
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
    QLabel* m_formError = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_live = nullptr;
    QLabel* m_summary = nullptr;
    QCustomPlot* m_plot = nullptr;
    QTableWidget* m_table = nullptr;
    QPlainTextEdit* m_text = nullptr;
    QTimer* m_timer = nullptr;

    QThread* m_thread = nullptr;
    std::atomic<bool> m_abort{false};
    std::shared_ptr<load::Result> m_pending; ///< written by the worker, read after it finished
    load::Options m_running;
    bool m_targetIsServer = false;
    QElapsedTimer m_clock;
    std::uint64_t m_startRequests = 0;
    std::uint64_t m_lastRequests = 0;
    qint64 m_lastMs = 0;
    double m_rateNow = 0;
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
    };
    std::shared_ptr<Saved> m_saved;
    QString m_lastSavedId, m_lastSaveError;
};

} // namespace portico::ui

Q_DECLARE_METATYPE(portico::ui::LoadRun)

// The Load test tab: a form over load::Options, Start/Stop, live progress and rate, results table.
#pragma once

#include <portico/load/result.h>

#include <QElapsedTimer>
#include <QWidget>

#include <atomic>
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
class QThread;
class QTimer;

namespace portico::ui {

class ServerController;

/// One finished run, as kept in the session's history.
struct LoadRun {
    int number = 0;
    QString when;
    std::shared_ptr<const load::Result> result;
};

/// Runs load::run on a worker thread (never the UI thread); Stop sets its abort flag. While it
/// runs, a 30 Hz timer updates the progress bar and, when the target is this server, the live
/// request rate read from the engine's counters.
class LoadTestPage : public QWidget {
    Q_OBJECT

public:
    explicit LoadTestPage(ServerController* server, QWidget* parent = nullptr);
    ~LoadTestPage() override;

    bool isRunning() const { return m_thread != nullptr; }
    const QList<LoadRun>& runs() const { return m_runs; }
    /// The form as load options; false with `error` when a field is not valid.
    bool options(load::Options& out, QString& error) const;

public slots:
    bool start();
    void stop();

signals:
    void runStarted();
    void runFinished(const portico::ui::LoadRun& run);

private:
    void tick();
    void onFinished();
    void resetDefaults();
    void showResult(const load::Result& r);

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
};

} // namespace portico::ui

Q_DECLARE_METATYPE(portico::ui::LoadRun)

// The run history of the Load test tab: the saved runs of a history folder (the one `portico bench`
// writes), newest first; one selected run shown, two overlaid and compared.
#pragma once

#include <portico/load/history.h>

#include <QList>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <filesystem>
#include <functional>
#include <vector>

class QCustomPlot;
class QFileSystemWatcher;
class QLabel;
class QPushButton;
class QTableWidget;
class QThread;
class QTimer;

namespace portico::ui {

/// The points of a latency percentile curve (HdrHistogram's percentile plot) from a run's histogram
/// buckets (ascending, ns, see load::loadLatencyBuckets). `keys` are 1/(1−q) for the fraction q of
/// requests answered faster (1 = 0 %, 10 = 90 %, 100 = 99 %, … on a log axis); `values` are latencies
/// in ms. For step-left drawing: point i starts the step of bucket i (its highest value); the last
/// point (at twice the request count) closes the last step. `maxNs` > 0 caps the values at the
/// run's exact maximum (a bucket's highest value may lie above it, as in valueAtPercentile). Empty
/// for no buckets.
struct PercentileCurve {
    QVector<double> keys;
    QVector<double> values;
};
PercentileCurve percentileCurve(const std::vector<stats::Histogram::Bucket>& buckets,
                                std::uint64_t maxNs = 0);

/// How the Run and History views show when a run was saved: `isoUtc` ("2026-11-30T23:45:12Z", as
/// load::RunRecord::savedAt) in local time, "2026-12-01 00:45:12". Unparsable text is returned as is.
QString historyTime(const std::string& isoUtc);

/// The label a run stopped by the user is saved with: its derived label plus this suffix
/// ("/hello (stopped)"), so History (and `portico bench --history`) can tell it from a run that
/// reached its bound.
inline constexpr char kStoppedLabelSuffix[] = " (stopped)";
bool isStoppedLabel(const std::string& label);

/// Lists `load::scanHistory(dir)` in a table (date, kind, target, model, connections, measured
/// time, req/s, p50, p99, failed requests; an unreadable file as one red row with its reason), newest
/// first. Reading the folder and the selected runs' histograms happens on worker threads; the view
/// refreshes when the folder changes (also when `portico bench` saves a run), on refresh(), and when
/// shown. Selecting one run shows its percentile curve (a suite: its routes' req/s) and figures;
/// selecting two overlays them in two colours and fills the comparison table from
/// load::compareRuns (A is the older run).
class RunHistoryView : public QWidget {
    Q_OBJECT

public:
    explicit RunHistoryView(const std::filesystem::path& dir, QWidget* parent = nullptr);
    ~RunHistoryView() override;

    std::filesystem::path directory() const { return m_dir; }
    /// Shows another folder (created on the first save, not here).
    void setDirectory(const std::filesystem::path& dir);

    /// The runs as last read, newest first (unreadable files are not here; see unreadable()).
    const std::vector<load::RunRecord>& runs() const { return m_runs; }
    const std::vector<load::UnreadableRun>& unreadable() const { return m_unreadable; }
    /// IDs of the selected runs, oldest first.
    QStringList selectedIds() const;
    /// Selects these runs (by ID); others are deselected. False when one is not listed.
    bool selectRuns(const QStringList& ids);
    /// Deletes the selected files (runs and unreadable files) without asking; false with `error`
    /// naming the files that could not be removed.
    bool deleteSelected(QString* error = nullptr);

    QTableWidget* table() const { return m_table; }
    QCustomPlot* plot() const { return m_plot; }
    QTableWidget* comparison() const { return m_comparison; }

public slots:
    /// Reads the folder again (on a worker thread); `select` (IDs) are selected once it is read.
    void refresh(const QStringList& select = {});

signals:
    /// The table shows a fresh reading of the folder.
    void listed();
    /// The plot and the comparison table show the current selection.
    void selectionShown();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void showListing(load::HistoryListing listing, const QStringList& select);
    /// Selects the rows whose column-0 `role` data is in `keys`; the number found.
    int selectRows(const QStringList& keys, int role);
    QStringList selectedFiles() const;
    void onSelectionChanged();
    void showSelection(const std::vector<load::RunRecord>& chosen,
                       const std::vector<std::vector<stats::Histogram::Bucket>>& buckets,
                       const QStringList& errors);
    void drawCurves(const std::vector<load::RunRecord>& chosen,
                    const std::vector<std::vector<stats::Histogram::Bucket>>& buckets);
    void drawSuites(const std::vector<load::RunRecord>& chosen);
    void fillComparison(const std::vector<load::RunRecord>& chosen);
    void confirmDelete();
    void watchFolder();
    /// Runs `work` on a new thread, then `done` on this object's thread (skipped if destroyed).
    void inThread(std::function<void()> work, std::function<void()> done);

    std::filesystem::path m_dir;
    std::vector<load::RunRecord> m_runs;
    std::vector<load::UnreadableRun> m_unreadable;
    QLabel* m_folder = nullptr;
    QLabel* m_status = nullptr;
    QTableWidget* m_table = nullptr;
    QPushButton* m_refresh = nullptr;
    QPushButton* m_delete = nullptr;
    QCustomPlot* m_plot = nullptr;
    QTableWidget* m_comparison = nullptr;
    QLabel* m_hint = nullptr;
    QFileSystemWatcher* m_watcher = nullptr;
    QTimer* m_debounce = nullptr;
    QList<QThread*> m_threads;
    bool m_scanning = false;
    bool m_scanAgain = false;
    QStringList m_selectAfterScan;
    QStringList m_shownFiles; ///< the selection the plot and comparison show
    quint64 m_selectionGeneration = 0;
};

} // namespace portico::ui

// The Traffic tab: the live exchange table over the engine's capture window, its filter bar and
// toolbar, and the inspector of the selected exchange.
#pragma once

#include <QWidget>

#include <cstdint>

class QLabel;
class QMenu;
class QLineEdit;
class QPushButton;
class QSplitter;
class QTableView;
class QTimer;

namespace portico::ui {

class InspectorWidget;
class ServerController;
class TrafficFeed;
class TrafficModel;

/// A TrafficFeed thread reads the exchanges the engine captured since the last one it saw, 30 times
/// a second (Engine::recentExchanges, at most batchLimit() per read), and the UI thread inserts
/// each batch of ready-made rows into the model at once. The view
/// follows new rows while it is scrolled to the bottom; scrolling up stops that, scrolling back
/// down resumes it. Pause stops reading (records that leave the engine's window meanwhile are not
/// shown); Clear empties the table (the capture window is left alone).
class TrafficPage : public QWidget {
    Q_OBJECT

public:
    explicit TrafficPage(ServerController* server, QWidget* parent = nullptr);
    ~TrafficPage() override;

    TrafficModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    InspectorWidget* inspector() const { return m_inspector; }
    QSplitter* splitter() const { return m_splitter; }
    bool isPaused() const { return m_paused; }
    bool isFollowing() const { return m_follow; }
    /// Records that left the engine's capture window before the table read them (since Clear).
    std::uint64_t skipped() const { return m_skipped; }
    /// "" or the filter's parse error as shown next to the field.
    QString filterError() const;
    void setBatchLimit(std::size_t n);
    std::size_t batchLimit() const;
    /// Writes the selected rows (or every shown row when none or one is selected and `allShown`)
    /// still in the capture window as HAR 1.2; the number written, -1 with `error`.
    int exportHar(const QString& path, bool allShown, QString* error = nullptr);

public slots:
    /// Reads new exchanges from the engine now (on this thread) and inserts them with whatever the
    /// feed thread has queued, in order.
    void poll();
    /// Inserts the batches the feed has queued.
    void drain();
    void setPaused(bool paused);
    void togglePause() { setPaused(!m_paused); }
    void clearRows();
    void focusFilter();
    void setFilterText(const QString& text);
    void applyFilter();
    void exportHarDialog();
    /// Keeps the whole capture (the session file, every exchange it still holds) at a chosen path.
    void saveCaptureDialog();
    void selectRow(int row);
    /// The table's context menu for `row` (actions named copyUrl, copyCurl, copyPython, resend,
    /// filterHost, filterRoute, createRule, exportSelected); the caller owns it.
    QMenu* contextMenuFor(int row);

signals:
    void notice(const QString& text);
    /// "Create rule from this exchange": a rule matching it (RulesPage::matchFor) and a name for it
    /// ("GET /api/todos").
    void createRuleRequested(const QString& match, const QString& name);

private:
    void showCurrent();
    void updateCaptureState();
    void updateEmptyHint();
    void updateCount();
    void updateDropped();
    void enableCapture();

    ServerController* m_server;
    TrafficModel* m_model = nullptr;
    QTableView* m_view = nullptr;
    InspectorWidget* m_inspector = nullptr;
    QSplitter* m_splitter = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_filterError = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_clear = nullptr;
    QPushButton* m_export = nullptr;
    QLabel* m_count = nullptr;
    QLabel* m_dropped = nullptr;
    QWidget* m_captureOff = nullptr;
    QLabel* m_emptyHint = nullptr; ///< shown while capture is on and nothing was captured
    TrafficFeed* m_feed = nullptr;
    QTimer* m_statusTimer = nullptr;
    QTimer* m_filterDelay = nullptr;
    std::uint64_t m_skipped = 0;     ///< records the feed never read (window moved on), since Clear
    std::uint64_t m_droppedBase = 0; ///< the engine's dropped-record count at the last Clear
    bool m_paused = false;
    bool m_follow = true;
};

} // namespace portico::ui

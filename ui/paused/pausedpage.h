// The Paused tab: exchanges held by a rule's `breakpoint` action (rules/breakpoints.h), listed with
// how long they have waited and how long until their timeout resumes them, and an editor for the
// selected one: resume it (as it was, or as edited), answer it with a response written here, or
// abort it (reset or close its connection).
#pragma once

#include <portico/rules/breakpoints.h>

#include <QAbstractTableModel>
#include <QSet>
#include <QWidget>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QTimer;
class QTreeView;

namespace portico::engine {
class Engine;
}

namespace portico::ui {

/// The paused exchanges as rows, oldest first. setExchanges() keeps the rows of exchanges that are
/// still there (removes the gone ones, appends the new ones), so a view's selection stays put.
class PausedModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Id, Stage, Rule, Method, Url, PausedFor, TimeLeft, ColumnCount };
    explicit PausedModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setExchanges(std::vector<rules::PausedExchange> list);
    /// The two clock columns changed (the page's 1 s timer).
    void tick();
    const rules::PausedExchange* at(int row) const;
    int rowOf(std::uint64_t id) const; ///< -1 when it is not listed
    const std::vector<rules::PausedExchange>& exchanges() const { return m_rows; }

    /// "12 s", "4 min 05 s", "1 h 02 min" (whole seconds down, or up with `roundUp`).
    static QString duration(std::chrono::nanoseconds d, bool roundUp = false);
    static std::chrono::nanoseconds pausedFor(const rules::PausedExchange& e);
    static std::chrono::nanoseconds timeLeft(const rules::PausedExchange& e);

private:
    std::vector<rules::PausedExchange> m_rows;
};

/// See the file comment. The engine's paused list is read when its listener says it changed (on a
/// worker thread: queued into this thread) and, as a fallback, when the 1 s clock timer finds its
/// generation changed. The editor is loaded only when the selection moves to another exchange or
/// the one shown is gone, so a refresh never overwrites an edit in progress.
class PausedPage : public QWidget {
    Q_OBJECT

public:
    explicit PausedPage(engine::Engine& engine, QWidget* parent = nullptr);
    ~PausedPage() override;

    PausedModel* model() const { return m_model; }
    QTreeView* view() const { return m_view; }
    int count() const { return m_model->rowCount(); }
    /// The exchange the editor shows (0: none).
    std::uint64_t selectedId() const { return m_editId; }
    /// Selects exchange `id`; false when it is not listed.
    bool select(std::uint64_t id);
    /// The line over the editor: the last decision's error (red), or a notice such as "Exchange 3 is
    /// gone ...".
    QString message() const;
    bool messageIsError() const { return m_messageIsError; }

    /// The editor's message as a decision would send it (only the fields the user changed are
    /// taken from the widgets; the others keep the paused bytes). nullopt when nothing is selected.
    std::optional<rules::PausedMessage> editedMessage() const;

public slots:
    /// Reads the engine's paused list now.
    void refresh();
    /// Resume (F8): the selected exchange goes on, with the edit when the fields differ from the
    /// paused message. False (the error on the message line) when the engine refused it.
    bool resumeSelected();
    /// Respond…: shows the response form for the selected exchange (200 text/plain for a request,
    /// the paused response for a response).
    void showRespondForm();
    /// The response form's Send: answers the selected exchange with it.
    bool sendResponse();
    void cancelResponse();
    bool abortSelected(rules::BreakpointDecision::Abort how);
    /// Resume all (Ctrl+F8), Abort all (reset): every paused exchange; how many.
    int resumeAll();
    int abortAll();

signals:
    /// The number of paused exchanges changed (the tab's title).
    void countChanged(int count);
    /// An exchange paused that was not listed before (the window brings the tab forward).
    void exchangePaused(quint64 id);

private:
    void onSelectionChanged();
    void loadEditor(const rules::PausedExchange* e);
    void setMessage(const QString& text, bool error);
    /// Decides the editor's exchange; `done` ("Exchange %1 resumed") goes on the message line,
    /// the engine's refusal in red.
    bool decide(rules::BreakpointDecision d, const QString& done);
    void selectRow(int row);
    void commitOpenEditor();
    void updateButtons();
    void updateSummary();

    engine::Engine& m_engine;
    struct Relay;
    std::shared_ptr<Relay> m_relay; ///< the engine's listener reaches this page through it
    PausedModel* m_model = nullptr;
    QTreeView* m_view = nullptr;
    QTimer* m_clock = nullptr;
    std::uint64_t m_generation = ~std::uint64_t(0);
    std::uint64_t m_lastSeenId = 0; ///< the newest id listed so far (exchangePaused)
    QSet<quint64> m_decided;        ///< ids this page decided (not "gone" when they leave)
    bool m_refreshing = false;      ///< the model is changing: selection signals are not the user's

    std::uint64_t m_editId = 0;
    rules::PausedExchange m_edit; ///< the exchange as it was loaded into the editor

    QStackedWidget* m_pages = nullptr; ///< the empty-state text, or the list and editor
    QLabel* m_message = nullptr;
    bool m_messageIsError = false;
    QLabel* m_countLabel = nullptr;
    QPushButton* m_resumeAll = nullptr;
    QPushButton* m_abortAll = nullptr;

    QStackedWidget* m_editorStack = nullptr; ///< the editor, or the response form
    QLabel* m_summary = nullptr;
    QWidget* m_requestFields = nullptr;
    QWidget* m_responseFields = nullptr;
    QComboBox* m_method = nullptr;
    QLineEdit* m_target = nullptr;
    QLineEdit* m_host = nullptr;
    QSpinBox* m_status = nullptr;
    QTableWidget* m_headers = nullptr;
    QPlainTextEdit* m_body = nullptr;
    QLabel* m_bodyNote = nullptr;
    QPushButton* m_resume = nullptr;
    QPushButton* m_respond = nullptr;
    QPushButton* m_abort = nullptr;

    QSpinBox* m_respondStatus = nullptr;
    QTableWidget* m_respondHeaders = nullptr;
    QPlainTextEdit* m_respondBody = nullptr;
    QLabel* m_respondBodyNote = nullptr;
    QLabel* m_respondTitle = nullptr;

    QAction* m_resumeAction = nullptr;
    QAction* m_resumeAllAction = nullptr;
};

} // namespace portico::ui

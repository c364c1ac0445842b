// PausedPage: the engine's paused list in a model, the editor of the selected exchange and its
// decisions (resume, respond, abort).
#include "pausedpage.h"

#include <portico/engine/engine.h>

#include <QAction>
#include <QApplication>
#include <QColor>
#include <QComboBox>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStringDecoder>
#include <QTableWidget>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace portico::ui {

using rules::BreakpointDecision;
using rules::PausedExchange;
using rules::PausedMessage;
using Stage = config::Rule::Stage;

namespace {

constexpr int kOriginalRole = Qt::UserRole + 1; ///< the paused bytes behind a field (QByteArray)
constexpr int kShownRole = Qt::UserRole + 2;    ///< the text the field was loaded with

const char* kErrorColor = "#c0392b";

QString fromBytes(const std::string& s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }
QByteArray toBytes(const std::string& s) { return QByteArray(s.data(), qsizetype(s.size())); }
std::string toStd(const QByteArray& b) { return std::string(b.constData(), std::size_t(b.size())); }

/// The value of a field loaded from `original`: the original bytes while the text is the one loaded
/// (so a value that is not UTF-8 goes back as it came), else the text typed, trimmed, as UTF-8.
std::string fieldValue(const QString& text, const QVariant& shown, const QVariant& original) {
    if (shown.isValid() && text == shown.toString()) return toStd(original.toByteArray());
    return text.trimmed().toUtf8().toStdString();
}

// ---- the header tables: name, value; each loaded cell remembers its bytes ----

QTableWidget* newHeaderTable(const QString& name) {
    auto* t = new QTableWidget(0, 2);
    t->setObjectName(name);
    t->setHorizontalHeaderLabels({QObject::tr("Name"), QObject::tr("Value")});
    t->verticalHeader()->hide();
    t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 8);
    t->horizontalHeader()->setStretchLastSection(true);
    t->horizontalHeader()->resizeSection(0, t->fontMetrics().horizontalAdvance("Content-Type-Options") + 16);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setWordWrap(false);
    t->setAlternatingRowColors(true);
    t->setEditTriggers(QAbstractItemView::AllEditTriggers);
    return t;
}

QTableWidgetItem* headerItem(const std::string& bytes) {
    auto* item = new QTableWidgetItem(fromBytes(bytes));
    item->setData(kOriginalRole, toBytes(bytes));
    item->setData(kShownRole, item->text());
    return item;
}

void loadHeaders(QTableWidget* t, const std::vector<std::pair<std::string, std::string>>& headers) {
    t->setRowCount(0);
    t->setRowCount(int(headers.size()));
    for (int r = 0; r < int(headers.size()); ++r) {
        t->setItem(r, 0, headerItem(headers[std::size_t(r)].first));
        t->setItem(r, 1, headerItem(headers[std::size_t(r)].second));
    }
}

std::vector<std::pair<std::string, std::string>> headersOf(const QTableWidget* t) {
    std::vector<std::pair<std::string, std::string>> out;
    for (int r = 0; r < t->rowCount(); ++r) {
        auto value = [&](int c) {
            const QTableWidgetItem* item = t->item(r, c);
            return item ? fieldValue(item->text(), item->data(kShownRole), item->data(kOriginalRole))
                        : std::string();
        };
        std::string name = value(0), v = value(1);
        if (name.empty() && v.empty()) continue; // a row added and left empty
        out.emplace_back(std::move(name), std::move(v));
    }
    return out;
}

void addHeaderRow(QTableWidget* t) {
    const int r = t->rowCount();
    t->insertRow(r);
    t->setItem(r, 0, new QTableWidgetItem);
    t->setItem(r, 1, new QTableWidgetItem);
    t->setCurrentCell(r, 0);
    t->setFocus();
    t->editItem(t->item(r, 0));
}

void removeHeaderRows(QTableWidget* t) {
    QList<int> rows;
    for (const QModelIndex& i : t->selectionModel()->selectedRows())
        rows << i.row();
    if (rows.isEmpty() && t->currentRow() >= 0) rows << t->currentRow();
    std::sort(rows.begin(), rows.end(), std::greater<>());
    for (int r : rows)
        t->removeRow(r);
}

/// A header table with Add and Remove under it, titled.
QWidget* headerBox(QTableWidget* table, const QString& prefix) {
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(QObject::tr("Headers")));
    layout->addWidget(table, 1);
    auto* buttons = new QHBoxLayout;
    auto* add = new QPushButton(QObject::tr("Add header"));
    add->setObjectName(prefix + "AddHeader");
    auto* remove = new QPushButton(QObject::tr("Remove"));
    remove->setObjectName(prefix + "RemoveHeader");
    remove->setToolTip(QObject::tr("Remove the selected header rows"));
    QObject::connect(add, &QPushButton::clicked, table, [table] { addHeaderRow(table); });
    QObject::connect(remove, &QPushButton::clicked, table, [table] { removeHeaderRows(table); });
    buttons->addWidget(add);
    buttons->addWidget(remove);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    return box;
}

// ---- the body fields: plain text when the body is UTF-8, else its bytes kept, read-only ----

QPlainTextEdit* newBodyEdit(const QString& name) {
    auto* e = new QPlainTextEdit;
    e->setObjectName(name);
    e->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    e->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    return e;
}

QWidget* bodyBox(QPlainTextEdit* edit, QLabel* note) {
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(QObject::tr("Body")));
    layout->addWidget(edit, 1);
    note->setWordWrap(true);
    note->setStyleSheet("color: #7f8c8d");
    layout->addWidget(note);
    return box;
}

void loadBody(QPlainTextEdit* edit, QLabel* note, const std::string& body) {
    const QByteArray bytes = toBytes(body);
    QStringDecoder decode(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    QString text = decode(bytes);
    const bool utf8 = !decode.hasError();
    const bool nul = bytes.contains('\0');
    // CRLF line ends (form posts, multipart) are shown as line breaks and written back as CRLF; a
    // lone CR cannot be shown in a text field and keeps the body read-only.
    const bool crlf = bytes.contains("\r\n");
    const bool loneCr = bytes.count('\r') != bytes.count("\r\n");
    if (crlf && !loneCr) text.replace(QLatin1String("\r\n"), QLatin1String("\n"));
    const bool editable = utf8 && !nul && !loneCr;
    edit->setPlainText(text);
    edit->setReadOnly(!editable);
    edit->setProperty("original", bytes);
    edit->setProperty("shown", edit->toPlainText());
    edit->setProperty("crlf", crlf && !loneCr);
    if (!utf8)
        note->setText(QObject::tr("Not valid UTF-8 (%n byte(s)): shown with � where the bytes are not text, "
                                  "sent as it is (read-only).",
                                  nullptr, int(bytes.size())));
    else if (!editable)
        note->setText(QObject::tr("Holds NUL or CR characters (%n byte(s)): sent as it is (read-only).",
                                  nullptr, int(bytes.size())));
    else
        note->clear();
    note->setVisible(!note->text().isEmpty());
}

std::string bodyOf(const QPlainTextEdit* edit) {
    const QString text = edit->toPlainText();
    if (text == edit->property("shown").toString()) return toStd(edit->property("original").toByteArray());
    QByteArray out = text.toUtf8();
    if (edit->property("crlf").toBool()) out.replace("\n", "\r\n");
    return toStd(out);
}

QString stageName(Stage s) { return s == Stage::Request ? QObject::tr("request") : QObject::tr("response"); }

} // namespace

// ---- PausedModel ----

PausedModel::PausedModel(QObject* parent) : QAbstractTableModel(parent) {}

int PausedModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int PausedModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

std::chrono::nanoseconds PausedModel::pausedFor(const PausedExchange& e) {
    return std::max(std::chrono::nanoseconds(0), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                     std::chrono::system_clock::now() - e.pausedAt));
}

std::chrono::nanoseconds PausedModel::timeLeft(const PausedExchange& e) {
    return std::max(std::chrono::nanoseconds(0), e.timeout - pausedFor(e));
}

QString PausedModel::duration(std::chrono::nanoseconds d, bool roundUp) {
    const long long s = roundUp ? std::chrono::ceil<std::chrono::seconds>(d).count()
                                : std::chrono::duration_cast<std::chrono::seconds>(d).count();
    if (s < 60) return tr("%1 s").arg(s);
    if (s < 3600) return tr("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
    return tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0'));
}

QVariant PausedModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_rows.size())) return {};
    const PausedExchange& e = m_rows[std::size_t(index.row())];
    if (role == Qt::UserRole) return QVariant::fromValue(quint64(e.id));
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
        switch (index.column()) {
        case Id:
            return QString::number(e.id);
        case Stage:
            return stageName(e.stage);
        case Rule:
            return fromBytes(e.rule);
        case Method:
            return fromBytes(e.request.method);
        case Url:
            if (role == Qt::ToolTipRole || !e.response) return fromBytes(e.url());
            return tr("%1 → %2").arg(fromBytes(e.url())).arg(e.response->status);
        case PausedFor:
            return duration(pausedFor(e));
        case TimeLeft:
            if (role == Qt::ToolTipRole)
                return tr("Resumed unchanged when its %1 timeout ends").arg(duration(e.timeout));
            return duration(timeLeft(e), true); // paused for + time left = the timeout
        default:
            return {};
        }
    }
    if (role == Qt::TextAlignmentRole &&
        (index.column() == Id || index.column() == PausedFor || index.column() == TimeLeft))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() == TimeLeft && timeLeft(e) < std::chrono::seconds(10))
        return QColor(kErrorColor);
    return {};
}

QVariant PausedModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal && role == Qt::TextAlignmentRole)
        return QVariant(
            (section == Id || section == PausedFor || section == TimeLeft ? Qt::AlignRight : Qt::AlignLeft) |
            Qt::AlignVCenter);
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Id:
        return tr("#");
    case Stage:
        return tr("Stage");
    case Rule:
        return tr("Rule");
    case Method:
        return tr("Method");
    case Url:
        return tr("URL");
    case PausedFor:
        return tr("Paused for");
    case TimeLeft:
        return tr("Time left");
    default:
        return {};
    }
}

void PausedModel::setExchanges(std::vector<PausedExchange> list) {
    // Gone rows leave (from the bottom up, so indexes stay right), kept rows take their new copy,
    // new ones (ids grow, the list is oldest first) are appended.
    for (int r = int(m_rows.size()) - 1; r >= 0; --r) {
        const auto id = m_rows[std::size_t(r)].id;
        if (std::none_of(list.begin(), list.end(), [id](const PausedExchange& e) { return e.id == id; })) {
            beginRemoveRows({}, r, r);
            m_rows.erase(m_rows.begin() + r);
            endRemoveRows();
        }
    }
    std::vector<PausedExchange> added;
    for (PausedExchange& e : list) {
        const int r = rowOf(e.id);
        if (r >= 0)
            m_rows[std::size_t(r)] = std::move(e);
        else
            added.push_back(std::move(e));
    }
    if (!m_rows.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    if (!added.empty()) {
        beginInsertRows({}, rowCount(), rowCount() + int(added.size()) - 1);
        for (PausedExchange& e : added)
            m_rows.push_back(std::move(e));
        endInsertRows();
    }
}

void PausedModel::tick() {
    if (!m_rows.empty()) emit dataChanged(index(0, PausedFor), index(rowCount() - 1, TimeLeft));
}

const PausedExchange* PausedModel::at(int row) const {
    return row >= 0 && row < int(m_rows.size()) ? &m_rows[std::size_t(row)] : nullptr;
}

int PausedModel::rowOf(std::uint64_t id) const {
    for (std::size_t r = 0; r < m_rows.size(); ++r)
        if (m_rows[r].id == id) return int(r);
    return -1;
}

// ---- PausedPage ----

// The engine calls its listener on worker threads, without its locks, and may still be calling a
// copy after it was replaced: the listener holds this, and the page's destructor cuts it off.
struct PausedPage::Relay {
    std::mutex mutex;
    PausedPage* page = nullptr;
    std::atomic<bool> pending{false}; ///< a refresh is queued: further changes ride on it

    void notify() {
        if (pending.exchange(true)) return;
        std::lock_guard lock(mutex);
        if (PausedPage* p = page)
            QMetaObject::invokeMethod(
                p, [p] { p->refresh(); }, Qt::QueuedConnection);
    }
};

PausedPage::PausedPage(engine::Engine& engine, QWidget* parent)
    : QWidget(parent), m_engine(engine), m_relay(std::make_shared<Relay>()) {
    m_model = new PausedModel(this);

    // The bar: count, Resume all, Abort all.
    m_countLabel = new QLabel;
    m_countLabel->setObjectName("pausedCount");
    m_resumeAll = new QPushButton(tr("Resume all"));
    m_resumeAll->setObjectName("resumeAllButton");
    m_resumeAll->setToolTip(tr("Every paused exchange goes on as it was (Ctrl+F8)"));
    m_abortAll = new QPushButton(tr("Abort all"));
    m_abortAll->setObjectName("abortAllButton");
    m_abortAll->setToolTip(tr("Every paused exchange is ended without an answer (its connection reset)"));
    connect(m_resumeAll, &QPushButton::clicked, this, &PausedPage::resumeAll);
    connect(m_abortAll, &QPushButton::clicked, this, &PausedPage::abortAll);
    auto* bar = new QHBoxLayout;
    bar->addWidget(m_countLabel, 1);
    bar->addWidget(m_resumeAll);
    bar->addWidget(m_abortAll);

    m_message = new QLabel;
    m_message->setObjectName("pausedMessage");
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->hide();

    // The empty state.
    auto* empty = new QLabel(
        tr("<p><b>No exchange is paused.</b></p>"
           "<p>Add a rule with a breakpoint action in Rules (e.g. match <code>path:/checkout "
           "method:POST</code>): a matching exchange then waits here, before it is sent on (request "
           "stage) or before its answer is returned (response stage), until you resume, answer or abort "
           "it, or its timeout resumes it unchanged.</p>"
           "<p>F8 resumes the selected exchange, Ctrl+F8 all of them.</p>"));
    empty->setObjectName("pausedEmpty");
    empty->setWordWrap(true);
    empty->setAlignment(Qt::AlignCenter);
    empty->setTextFormat(Qt::RichText);
    empty->setMargin(24);
    empty->setMaximumWidth(720);
    auto* emptyPage = new QWidget;
    auto* emptyLayout = new QHBoxLayout(emptyPage);
    emptyLayout->addStretch(1);
    emptyLayout->addWidget(empty, 4);
    emptyLayout->addStretch(1);

    // The list.
    m_view = new QTreeView;
    m_view->setObjectName("pausedList");
    m_view->setModel(m_model);
    m_view->setRootIsDecorated(false);
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setAllColumnsShowFocus(true);
    QHeaderView* h = m_view->header();
    h->setStretchLastSection(false);
    h->setSectionsMovable(false);
    const QFontMetrics fm = m_view->fontMetrics();
    const int widths[PausedModel::ColumnCount] = {fm.horizontalAdvance("00000") + 16,
                                                  fm.horizontalAdvance("response") + 24,
                                                  fm.horizontalAdvance("checkout breakpoint") + 24,
                                                  fm.horizontalAdvance("OPTIONS") + 24,
                                                  320,
                                                  fm.horizontalAdvance("00 min 00 s") + 24,
                                                  fm.horizontalAdvance("00 min 00 s") + 24};
    for (int c = 0; c < PausedModel::ColumnCount; ++c)
        h->resizeSection(c, widths[c]);
    h->setSectionResizeMode(PausedModel::Url, QHeaderView::Stretch);
    h->setMinimumSectionSize(fm.horizontalAdvance("#") + 16);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &PausedPage::onSelectionChanged);

    // The editor: summary, the message's fields, headers and body, the decisions.
    m_summary = new QLabel;
    m_summary->setObjectName("pausedSummary");
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_method = new QComboBox;
    m_method->setObjectName("pausedMethod");
    m_method->setEditable(true);
    m_method->addItems({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"});
    m_method->setMinimumContentsLength(8);
    m_target = new QLineEdit;
    m_target->setObjectName("pausedTarget");
    m_target->setToolTip(tr("The request-target as it goes on: /path?query (or http://host/path on a forward "
                            "proxy; a full URL there also sets the Host)"));
    m_host = new QLineEdit;
    m_host->setObjectName("pausedHost");
    m_host->setToolTip(tr("The Host header (HTTP/2: :authority), with the port when it has one"));
    m_host->setMinimumWidth(fm.horizontalAdvance("localhost:00000") + 24);
    m_requestFields = new QWidget;
    auto* requestRow = new QHBoxLayout(m_requestFields);
    requestRow->setContentsMargins(0, 0, 0, 0);
    requestRow->addWidget(new QLabel(tr("Method")));
    requestRow->addWidget(m_method);
    requestRow->addSpacing(8);
    requestRow->addWidget(new QLabel(tr("URL")));
    requestRow->addWidget(m_target, 3);
    requestRow->addSpacing(8);
    requestRow->addWidget(new QLabel(tr("Host")));
    requestRow->addWidget(m_host, 1);

    m_status = new QSpinBox;
    m_status->setObjectName("pausedStatus");
    m_status->setRange(200, 599);
    m_responseFields = new QWidget;
    auto* responseRow = new QHBoxLayout(m_responseFields);
    responseRow->setContentsMargins(0, 0, 0, 0);
    responseRow->addWidget(new QLabel(tr("Status")));
    responseRow->addWidget(m_status);
    responseRow->addStretch(1);

    m_headers = newHeaderTable("pausedHeaders");
    m_body = newBodyEdit("pausedBody");
    m_bodyNote = new QLabel;
    m_bodyNote->setObjectName("pausedBodyNote");
    auto* parts = new QSplitter(Qt::Horizontal);
    parts->setChildrenCollapsible(false);
    parts->addWidget(headerBox(m_headers, "paused"));
    parts->addWidget(bodyBox(m_body, m_bodyNote));
    parts->setStretchFactor(0, 1);
    parts->setStretchFactor(1, 1);

    m_resume = new QPushButton(tr("Resume"));
    m_resume->setObjectName("resumeButton");
    m_resume->setToolTip(tr("Send it on (F8): with your edits when you made any, else as it was"));
    m_respond = new QPushButton(tr("Respond…"));
    m_respond->setObjectName("respondButton");
    m_respond->setToolTip(tr("Answer it with a response you write here; nothing is sent on"));
    m_abort = new QPushButton(tr("Abort"));
    m_abort->setObjectName("abortButton");
    m_abort->setToolTip(tr("End it without an answer"));
    auto* abortMenu = new QMenu(m_abort);
    QAction* reset = abortMenu->addAction(tr("Reset the connection"));
    reset->setObjectName("abortReset");
    reset->setToolTip(tr("TCP reset (HTTP/2: only this stream is reset)"));
    QAction* close = abortMenu->addAction(tr("Close the connection"));
    close->setObjectName("abortClose");
    close->setToolTip(tr("Closed after the answers before it (HTTP/2: GOAWAY, its other streams end too)"));
    m_abort->setMenu(abortMenu);
    connect(reset, &QAction::triggered, this, [this] { abortSelected(BreakpointDecision::Abort::Reset); });
    connect(close, &QAction::triggered, this, [this] { abortSelected(BreakpointDecision::Abort::Close); });
    connect(m_resume, &QPushButton::clicked, this, &PausedPage::resumeSelected);
    connect(m_respond, &QPushButton::clicked, this, &PausedPage::showRespondForm);
    auto* decisions = new QHBoxLayout;
    decisions->addWidget(m_resume);
    decisions->addWidget(m_respond);
    decisions->addWidget(m_abort);
    decisions->addStretch(1);

    auto* editForm = new QWidget;
    auto* editLayout = new QVBoxLayout(editForm);
    editLayout->setContentsMargins(0, 0, 0, 0);
    editLayout->addWidget(m_requestFields);
    editLayout->addWidget(m_responseFields);
    editLayout->addWidget(parts, 1);
    editLayout->addLayout(decisions);

    // The response form (Respond…).
    m_respondTitle = new QLabel;
    m_respondTitle->setObjectName("respondTitle");
    m_respondStatus = new QSpinBox;
    m_respondStatus->setObjectName("respondStatus");
    m_respondStatus->setRange(200, 599);
    m_respondHeaders = newHeaderTable("respondHeaders");
    m_respondBody = newBodyEdit("respondBody");
    m_respondBodyNote = new QLabel;
    m_respondBodyNote->setObjectName("respondBodyNote");
    auto* statusRow = new QHBoxLayout;
    statusRow->addWidget(new QLabel(tr("Status")));
    statusRow->addWidget(m_respondStatus);
    statusRow->addStretch(1);
    auto* respondParts = new QSplitter(Qt::Horizontal);
    respondParts->setChildrenCollapsible(false);
    respondParts->addWidget(headerBox(m_respondHeaders, "respond"));
    respondParts->addWidget(bodyBox(m_respondBody, m_respondBodyNote));
    auto* send = new QPushButton(tr("Send response"));
    send->setObjectName("respondSend");
    send->setDefault(true);
    auto* cancel = new QPushButton(tr("Cancel"));
    cancel->setObjectName("respondCancel");
    connect(send, &QPushButton::clicked, this, &PausedPage::sendResponse);
    connect(cancel, &QPushButton::clicked, this, &PausedPage::cancelResponse);
    auto* respondButtons = new QHBoxLayout;
    respondButtons->addWidget(send);
    respondButtons->addWidget(cancel);
    respondButtons->addStretch(1);
    auto* respondForm = new QWidget;
    respondForm->setObjectName("respondForm");
    auto* respondLayout = new QVBoxLayout(respondForm);
    respondLayout->setContentsMargins(0, 0, 0, 0);
    respondLayout->addWidget(m_respondTitle);
    respondLayout->addLayout(statusRow);
    respondLayout->addWidget(respondParts, 1);
    respondLayout->addLayout(respondButtons);

    m_editorStack = new QStackedWidget;
    m_editorStack->addWidget(editForm);
    m_editorStack->addWidget(respondForm);
    auto* editor = new QWidget;
    editor->setObjectName("pausedEditor");
    auto* editorLayout = new QVBoxLayout(editor);
    editorLayout->setContentsMargins(0, 4, 0, 0);
    editorLayout->addWidget(m_summary);
    editorLayout->addWidget(m_editorStack, 1);

    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName("pausedSplitter");
    split->setChildrenCollapsible(false);
    split->addWidget(m_view);
    split->addWidget(editor);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);

    m_pages = new QStackedWidget;
    m_pages->addWidget(emptyPage);
    m_pages->addWidget(split);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(m_message);
    layout->addWidget(m_pages, 1);

    // DevTools' keys: F8 resumes, Ctrl+F8 resumes all (while this page is shown).
    m_resumeAction = new QAction(tr("Resume"), this);
    m_resumeAction->setObjectName("resumeAction");
    m_resumeAction->setShortcut(QKeySequence(Qt::Key_F8));
    connect(m_resumeAction, &QAction::triggered, this, &PausedPage::resumeSelected);
    addAction(m_resumeAction);
    m_resumeAllAction = new QAction(tr("Resume all"), this);
    m_resumeAllAction->setObjectName("resumeAllAction");
    m_resumeAllAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F8));
    connect(m_resumeAllAction, &QAction::triggered, this, &PausedPage::resumeAll);
    addAction(m_resumeAllAction);
    m_resume->setText(tr("Resume (F8)"));
    m_resumeAll->setText(tr("Resume all (Ctrl+F8)"));

    // The clocks tick once a second; the same tick reads the list when its generation moved and no
    // listener call said so (another page took the engine's one listener).
    m_clock = new QTimer(this);
    m_clock->setInterval(1000);
    connect(m_clock, &QTimer::timeout, this, [this] {
        if (m_engine.pausedGeneration() != m_generation)
            refresh();
        else
            m_model->tick();
    });
    m_clock->start();

    m_relay->page = this;
    m_engine.setPausedListener([relay = m_relay] { relay->notify(); });
    loadEditor(nullptr);
    refresh();
}

PausedPage::~PausedPage() {
    m_engine.setPausedListener({});
    std::lock_guard lock(m_relay->mutex);
    m_relay->page = nullptr;
}

QString PausedPage::message() const { return m_message->text(); }

void PausedPage::setMessage(const QString& text, bool error) {
    m_messageIsError = error;
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: %1").arg(kErrorColor) : QString());
    m_message->setVisible(!text.isEmpty());
}

void PausedPage::refresh() {
    m_relay->pending.store(false);
    m_generation = m_engine.pausedGeneration();
    std::vector<PausedExchange> list = m_engine.pausedExchanges();
    const int before = m_model->rowCount();
    QList<quint64> added;
    for (const PausedExchange& e : list)
        if (e.id > m_lastSeenId) added << e.id;
    if (!added.isEmpty()) m_lastSeenId = added.back();

    m_refreshing = true;
    m_model->setExchanges(std::move(list));
    m_refreshing = false;

    if (m_editId && m_model->rowOf(m_editId) < 0) {
        // The exchange in the editor left the list: decided here (the message says so already),
        // else resumed by its timeout or its client went away.
        const std::uint64_t gone = m_editId;
        if (!m_decided.contains(gone)) {
            const bool timedOut = PausedModel::timeLeft(m_edit) <= std::chrono::seconds(1);
            setMessage(timedOut
                           ? tr("Exchange %1 is gone: resumed unchanged after its %2 timeout.")
                                 .arg(gone)
                                 .arg(PausedModel::duration(m_edit.timeout))
                           : tr("Exchange %1 is gone: its client left or its connection ended.").arg(gone),
                       false);
        }
        // The next one after it, else the newest before it.
        int next = -1;
        for (int r = 0; r < m_model->rowCount() && next < 0; ++r)
            if (m_model->at(r)->id > gone) next = r;
        if (next < 0) next = m_model->rowCount() - 1;
        loadEditor(nullptr);
        selectRow(next);
    } else if (!m_editId && m_model->rowCount() > 0) {
        selectRow(0);
    } else if (m_editId) {
        // Kept: the view's selection follows it (rows above it may have left).
        const int row = m_model->rowOf(m_editId);
        if (m_view->selectionModel()->selectedRows().value(0).row() != row) {
            m_refreshing = true;
            selectRow(row);
            m_refreshing = false;
        }
    }
    // Ids decided here that have left the list are done with.
    for (auto it = m_decided.begin(); it != m_decided.end();)
        it = m_model->rowOf(*it) < 0 ? m_decided.erase(it) : std::next(it);
    const int count = m_model->rowCount();
    m_countLabel->setText(count == 0   ? tr("Nothing paused")
                          : count == 1 ? tr("1 exchange paused")
                                       : tr("%1 exchanges paused").arg(count));
    m_pages->setCurrentIndex(count == 0 ? 0 : 1);
    updateButtons();
    if (count != before) emit countChanged(count);
    for (quint64 id : added)
        emit exchangePaused(id);
}

void PausedPage::selectRow(int row) {
    if (row < 0 || row >= m_model->rowCount()) {
        m_view->selectionModel()->clearSelection();
        if (!m_refreshing) loadEditor(nullptr);
        return;
    }
    m_view->selectionModel()->setCurrentIndex(m_model->index(row, 0), QItemSelectionModel::ClearAndSelect |
                                                                          QItemSelectionModel::Rows);
    m_view->scrollTo(m_model->index(row, 0));
    // When the selection was already on that row no signal came: load it here.
    if (!m_refreshing && m_editId != m_model->at(row)->id) loadEditor(m_model->at(row));
}

bool PausedPage::select(std::uint64_t id) {
    const int row = m_model->rowOf(id);
    if (row < 0) return false;
    selectRow(row);
    return true;
}

void PausedPage::onSelectionChanged() {
    if (m_refreshing) return;
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    const PausedExchange* e = rows.isEmpty() ? nullptr : m_model->at(rows.front().row());
    if (!e) return; // a cleared selection keeps the editor (refresh picks another when it is gone)
    if (e->id != m_editId) loadEditor(e);
}

void PausedPage::loadEditor(const PausedExchange* e) {
    m_editorStack->setCurrentIndex(0);
    m_editId = e ? e->id : 0;
    m_edit = e ? *e : PausedExchange{};
    const bool response = e && e->stage == Stage::Response;
    m_requestFields->setVisible(!response);
    m_responseFields->setVisible(response);
    const PausedMessage empty;
    const PausedMessage& m = !e ? empty : response && e->response ? *e->response : e->request;
    auto setField = [](QLineEdit* edit, const std::string& bytes) {
        edit->setText(fromBytes(bytes));
        edit->setProperty("shown", edit->text());
        edit->setProperty("original", toBytes(bytes));
        edit->setCursorPosition(0);
    };
    m_method->setCurrentText(fromBytes(m.method));
    m_method->setProperty("shown", m_method->currentText());
    m_method->setProperty("original", toBytes(m.method));
    setField(m_target, m.target);
    setField(m_host, m.host);
    m_status->setValue(response ? m.status : 200);
    loadHeaders(m_headers, m.headers);
    loadBody(m_body, m_bodyNote, m.body);
    updateSummary();
    updateButtons();
}

void PausedPage::updateSummary() {
    if (!m_editId) {
        m_summary->clear();
        return;
    }
    const PausedExchange& e = m_edit;
    QString text = tr("<b>Exchange %1</b> · paused at the %2 stage by rule <b>%3</b> · HTTP/%4%5")
                       .arg(e.id)
                       .arg(stageName(e.stage), fromBytes(e.rule).toHtmlEscaped(),
                            e.httpVersion == 2 ? QStringLiteral("2") : QStringLiteral("1.1"),
                            e.scheme == "https" ? tr(" over TLS") : QString());
    if (!e.clientAddress.empty()) text += tr(" from %1").arg(fromBytes(e.clientAddress).toHtmlEscaped());
    if (e.stage == Stage::Response)
        text += tr("<br>%1 %2 — its answer, before it is returned:")
                    .arg(fromBytes(e.request.method).toHtmlEscaped(), fromBytes(e.url()).toHtmlEscaped());
    m_summary->setText(text);
}

void PausedPage::updateButtons() {
    const bool listed = m_editId && m_model->rowOf(m_editId) >= 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_resume, m_respond, m_abort, m_editorStack})
        w->setEnabled(listed);
    m_resumeAction->setEnabled(listed);
    const bool any = m_model->rowCount() > 0;
    m_resumeAll->setEnabled(any);
    m_abortAll->setEnabled(any);
    m_resumeAllAction->setEnabled(any);
}

std::optional<PausedMessage> PausedPage::editedMessage() const {
    if (!m_editId) return std::nullopt;
    PausedMessage m;
    if (m_edit.stage == Stage::Response) {
        m.status = m_status->value();
    } else {
        m.method =
            fieldValue(m_method->currentText(), m_method->property("shown"), m_method->property("original"));
        m.target = fieldValue(m_target->text(), m_target->property("shown"), m_target->property("original"));
        m.host = fieldValue(m_host->text(), m_host->property("shown"), m_host->property("original"));
    }
    m.headers = headersOf(m_headers);
    m.body = bodyOf(m_body);
    return m;
}

bool PausedPage::decide(BreakpointDecision d, const QString& done) {
    if (!m_editId) return false;
    const std::uint64_t id = m_editId;
    std::string error;
    m_decided.insert(id);
    if (!m_engine.decidePaused(id, std::move(d), &error)) {
        m_decided.remove(id);
        setMessage(tr("Exchange %1: %2").arg(id).arg(fromBytes(error)), true);
        return false;
    }
    setMessage(done, false);
    refresh();
    return true;
}

void PausedPage::commitOpenEditor() {
    // A header cell still being typed in (F8 pressed there) holds its text in the cell's editor
    // until it loses the focus: take the focus away so the table has it.
    QWidget* focus = QApplication::focusWidget();
    if (focus && (m_headers->isAncestorOf(focus) || m_respondHeaders->isAncestorOf(focus)))
        focus->clearFocus();
}

bool PausedPage::resumeSelected() {
    if (!m_editId) return false;
    commitOpenEditor();
    BreakpointDecision d;
    d.kind = BreakpointDecision::Kind::Resume;
    const std::optional<PausedMessage> m = editedMessage();
    const PausedMessage& paused =
        m_edit.stage == Stage::Response && m_edit.response ? *m_edit.response : m_edit.request;
    const bool edited = m && *m != paused;
    if (edited) d.edited = *m;
    return decide(
        std::move(d),
        (edited ? tr("Exchange %1 resumed with your edits.") : tr("Exchange %1 resumed.")).arg(m_editId));
}

void PausedPage::showRespondForm() {
    if (!m_editId) return;
    if (m_edit.stage == Stage::Response && m_edit.response) {
        m_respondStatus->setValue(m_edit.response->status);
        loadHeaders(m_respondHeaders, m_edit.response->headers);
        loadBody(m_respondBody, m_respondBodyNote, m_edit.response->body);
        m_respondTitle->setText(
            tr("Answer exchange %1 with this response instead of the paused one:").arg(m_editId));
    } else {
        m_respondStatus->setValue(200);
        loadHeaders(m_respondHeaders, {{"Content-Type", "text/plain; charset=utf-8"}});
        loadBody(m_respondBody, m_respondBodyNote, "");
        m_respondTitle->setText(
            tr("Answer exchange %1 with this response; nothing is sent on:").arg(m_editId));
    }
    m_editorStack->setCurrentIndex(1);
    m_respondBody->setFocus();
}

void PausedPage::cancelResponse() { m_editorStack->setCurrentIndex(0); }

bool PausedPage::sendResponse() {
    if (!m_editId) return false;
    BreakpointDecision d;
    d.kind = BreakpointDecision::Kind::Respond;
    commitOpenEditor();
    d.response.status = m_respondStatus->value();
    d.response.headers = headersOf(m_respondHeaders);
    d.response.body = bodyOf(m_respondBody);
    const QString done = tr("Exchange %1 answered with %2.").arg(m_editId).arg(d.response.status);
    return decide(std::move(d), done);
}

bool PausedPage::abortSelected(BreakpointDecision::Abort how) {
    BreakpointDecision d;
    d.kind = BreakpointDecision::Kind::Abort;
    d.abort = how;
    return decide(d,
                  (how == BreakpointDecision::Abort::Reset ? tr("Exchange %1 aborted (connection reset).")
                                                           : tr("Exchange %1 aborted (connection closed)."))
                      .arg(m_editId));
}

int PausedPage::resumeAll() {
    for (const PausedExchange& e : m_model->exchanges())
        m_decided.insert(e.id);
    const std::size_t n = m_engine.decideAllPaused(BreakpointDecision{});
    setMessage(n == 1 ? tr("1 exchange resumed.") : tr("%1 exchanges resumed.").arg(n), false);
    refresh();
    return int(n);
}

int PausedPage::abortAll() {
    for (const PausedExchange& e : m_model->exchanges())
        m_decided.insert(e.id);
    BreakpointDecision d;
    d.kind = BreakpointDecision::Kind::Abort;
    d.abort = BreakpointDecision::Abort::Reset;
    const std::size_t n = m_engine.decideAllPaused(d);
    setMessage(n == 1 ? tr("1 exchange aborted.") : tr("%1 exchanges aborted.").arg(n), false);
    refresh();
    return int(n);
}

} // namespace portico::ui

// TrafficPage: the feed timer, follow-the-bottom scrolling, the filter bar, HAR export.
#include "trafficpage.h"

#include "inspector/inspectorwidget.h"
#include "rules/rulespage.h"
#include "servercontroller.h"
#include "trafficfeed.h"
#include "trafficmodel.h"

#include <portico/capture/filter.h>
#include <portico/capture/har.h>

#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollBar>
#include <QShortcut>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <unordered_set>

namespace portico::ui {

TrafficPage::TrafficPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    m_model = new TrafficModel(this);

    m_filter = new QLineEdit;
    m_filter->setObjectName("trafficFilter");
    m_filter->setClearButtonEnabled(true);
    m_filter->setPlaceholderText(
        tr("Filter (Ctrl+F): status:>=400 method:POST path:/api host:localhost -route:static"));
    m_filter->setToolTip(
        tr("Terms are ANDed; '-' negates. Keys: status method path url host vhost route protocol "
           "client error header. A bare word matches the URL. See docs/capture.md."));
    m_filterError = new QLabel;
    m_filterError->setObjectName("trafficFilterError");
    m_filterError->setStyleSheet("color: #c0392b");
    m_filterError->hide();
    m_pause = new QPushButton(tr("Pause"));
    m_pause->setObjectName("trafficPause");
    m_pause->setCheckable(true);
    m_pause->setToolTip(tr("Stop adding new exchanges to the table (Space in the table, Ctrl+P)"));
    m_clear = new QPushButton(tr("Clear"));
    m_clear->setObjectName("trafficClear");
    m_clear->setToolTip(tr("Empty the table (Ctrl+L)"));
    m_export = new QPushButton(tr("Export HAR…"));
    m_export->setObjectName("trafficExportHar");
    m_export->setToolTip(tr("Save the selected rows, or all shown rows, as HAR 1.2"));
    m_count = new QLabel;
    m_count->setObjectName("trafficCount");
    m_dropped = new QLabel;
    m_dropped->setObjectName("trafficDropped");
    m_dropped->setStyleSheet("color: #d35400");
    m_dropped->setToolTip(tr("The server's capture rings were full: these exchanges were counted in the "
                             "statistics but their details were not recorded (capture.ring_records)"));
    m_dropped->hide();
    // The filter box keeps one width (room for a long filter, narrower on a small window): counts
    // and errors that change as traffic arrives never move it. Its error goes on the row below;
    // the counts take the rest of the bar and are clipped, not the box, when the window is narrow.
    m_filter->setMinimumWidth(m_filter->fontMetrics().averageCharWidth() * 24);
    m_filter->setMaximumWidth(m_filter->fontMetrics().averageCharWidth() * 84);
    m_filter->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_count->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_dropped->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_filterError->setWordWrap(true);
    auto bar = new QHBoxLayout;
    bar->addWidget(m_filter, 4);
    bar->addWidget(m_pause);
    bar->addWidget(m_clear);
    bar->addWidget(m_export);
    bar->addSpacing(8);
    bar->addWidget(m_count, 1);
    bar->addWidget(m_dropped, 1);

    m_captureOff = new QWidget;
    m_captureOff->setObjectName("trafficCaptureOff");
    auto offLayout = new QHBoxLayout(m_captureOff);
    offLayout->setContentsMargins(0, 0, 0, 0);
    auto offText = new QLabel(tr("Capture is off in this config, so no exchanges are recorded."));
    auto enable = new QPushButton(tr("Record traffic"));
    enable->setObjectName("trafficEnableCapture");
    enable->setToolTip(tr("Adds `capture: true` to the config, applies it live and saves the file"));
    offLayout->addWidget(offText, 1);
    offLayout->addWidget(enable);
    connect(enable, &QPushButton::clicked, this, &TrafficPage::enableCapture);

    // First start: an empty table says how to fill it.
    m_emptyHint = new QLabel;
    m_emptyHint->setObjectName("trafficEmptyHint");
    m_emptyHint->setWordWrap(true);
    m_emptyHint->setOpenExternalLinks(true);
    m_emptyHint->setTextInteractionFlags(Qt::TextBrowserInteraction);

    m_view = new QTableView;
    m_view->setObjectName("trafficTable");
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setWordWrap(false);
    m_view->setShowGrid(false);
    m_view->setAlternatingRowColors(true);
    m_view->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
    // Fixed row heights: the view never measures rows, so 100k rows cost what the visible ones do.
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    QHeaderView* h = m_view->horizontalHeader();
    h->setHighlightSections(false);
    // A click on a header sorts by that column (the selection stays on its exchange); Time is
    // capture order.
    h->setSectionsClickable(true);
    h->setSortIndicatorShown(true);
    h->setSortIndicator(TrafficModel::Time, Qt::AscendingOrder);
    const QFontMetrics fm = m_view->fontMetrics();
    const int widths[TrafficModel::ColumnCount] = {fm.horizontalAdvance("00:00:00.000") + 16,
                                                   fm.horizontalAdvance("HTTP/1.1") + 20,
                                                   fm.horizontalAdvance("OPTIONS") + 16,
                                                   fm.horizontalAdvance("localhost:00000") + 24,
                                                   300,
                                                   fm.horizontalAdvance("Status") + 20,
                                                   fm.horizontalAdvance("000.0 kB") + 16,
                                                   fm.horizontalAdvance("000.00 ms") + 20,
                                                   160};
    for (int c = 0; c < TrafficModel::ColumnCount; ++c)
        h->resizeSection(c, widths[c]);
    h->setSectionResizeMode(TrafficModel::Path, QHeaderView::Stretch);
    m_view->setSortingEnabled(true);

    m_inspector = new InspectorWidget(server);
    m_inspector->setObjectName("inspector");
    m_splitter = new QSplitter(Qt::Vertical);
    m_splitter->setObjectName("trafficSplitter");
    m_splitter->addWidget(m_view);
    m_splitter->addWidget(m_inspector);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    m_splitter->setChildrenCollapsible(false);

    auto layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(m_filterError);
    layout->addWidget(m_captureOff);
    layout->addWidget(m_emptyHint);
    layout->addWidget(m_splitter, 1);

    connect(m_pause, &QPushButton::toggled, this, &TrafficPage::setPaused);
    connect(m_clear, &QPushButton::clicked, this, &TrafficPage::clearRows);
    connect(m_export, &QPushButton::clicked, this, &TrafficPage::exportHarDialog);
    connect(m_inspector, &InspectorWidget::notice, this, &TrafficPage::notice);
    m_filterDelay = new QTimer(this);
    m_filterDelay->setSingleShot(true);
    m_filterDelay->setInterval(200);
    connect(m_filterDelay, &QTimer::timeout, this, &TrafficPage::applyFilter);
    connect(m_filter, &QLineEdit::textChanged, m_filterDelay, qOverload<>(&QTimer::start));
    connect(m_filter, &QLineEdit::returnPressed, this, &TrafficPage::applyFilter);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &TrafficPage::showCurrent);
    // A selected row that leaves (its record left the capture window) clears the inspector with a
    // message; the selection must not slide to a neighbour and show another exchange.
    connect(m_model, &TrafficModel::rowsLeaving, this, [this](std::uint64_t keepFrom) {
        const QModelIndex current = m_view->selectionModel()->currentIndex();
        const std::uint64_t id = current.isValid() ? m_model->idAt(current.row()) : 0;
        if (!id || id >= keepFrom) return;
        m_view->selectionModel()->clear(); // → showCurrent() with nothing selected
        m_inspector->clear(
            tr("#%1 has left the capture (the session file keeps capture.store_max_bytes; Clear "
               "also removes it)")
                .arg(id));
    });
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QModelIndex index = m_view->indexAt(pos);
        if (!index.isValid()) return;
        // Right-clicking outside the selection selects that row first, as file managers do.
        if (!m_view->selectionModel()->isRowSelected(index.row(), {})) selectRow(index.row());
        QMenu* menu = contextMenuFor(index.row());
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->viewport()->mapToGlobal(pos));
    });
    auto space = new QShortcut(QKeySequence(Qt::Key_Space), m_view);
    space->setContext(Qt::WidgetShortcut);
    connect(space, &QShortcut::activated, this, &TrafficPage::togglePause);

    // Follow the bottom: new rows scroll into view only while the user has not scrolled up.
    QScrollBar* vbar = m_view->verticalScrollBar();
    connect(vbar, &QScrollBar::valueChanged, this,
            [this, vbar](int value) { m_follow = value >= vbar->maximum() - 1; });
    connect(vbar, &QScrollBar::rangeChanged, this, [this, vbar](int, int max) {
        if (m_follow && !m_paused) vbar->setValue(max);
    });

    connect(server, &ServerController::configChanged, this, &TrafficPage::updateCaptureState);
    connect(server, &ServerController::interceptChanged, this, &TrafficPage::updateCaptureState);
    connect(server, &ServerController::listenersChanged, this, &TrafficPage::updateEmptyHint);
    m_feed = new TrafficFeed(&server->engine());
    m_feed->setParent(this);
    connect(m_feed, &TrafficFeed::ready, this, &TrafficPage::drain); // queued from the feed thread
    m_feed->startThread();
    m_statusTimer = new QTimer(this);
    m_statusTimer->setInterval(250);
    connect(m_statusTimer, &QTimer::timeout, this, &TrafficPage::updateDropped);
    m_statusTimer->start();
    updateCaptureState();
    updateCount();
}

TrafficPage::~TrafficPage() {
    delete m_feed; // stops its thread before the widgets go
    m_feed = nullptr;
    // ~QWidget hides the children after this body has run, and the view's scroll bar then reports
    // a range change to a lambda reading m_follow of a TrafficPage that is gone (UBSan).
    m_view->verticalScrollBar()->disconnect(this);
}

void TrafficPage::setBatchLimit(std::size_t n) { m_feed->setBatchLimit(n); }

std::size_t TrafficPage::batchLimit() const { return m_feed->batchLimit(); }

void TrafficPage::poll() {
    if (!m_paused) m_feed->fetchNow();
    drain();
    updateDropped();
}

void TrafficPage::drain() {
    if (!m_feed) return;
    for (TrafficBatch& batch : m_feed->take()) {
        if (batch.reset) {
            m_model->clear();
            m_inspector->clear();
        }
        m_skipped += batch.skipped;
        m_model->appendRows(std::move(batch.rows), batch.matched, batch.generation);
        m_model->updateRows(batch.completed);
        for (const TrafficRow& row : batch.completed) {
            if (m_inspector->exchange() && m_inspector->exchange()->id == row.id)
                if (auto e = m_server->engine().exchange(row.id)) m_inspector->showExchange(*e);
        }
    }
    // Rows and details leave together: what the engine no longer has (window and session file)
    // leaves the table.
    if (const std::uint64_t oldest = m_server->engine().oldestCapturedId()) m_model->dropBefore(oldest);
    updateCount();
}

void TrafficPage::updateDropped() {
    const std::uint64_t total = m_server->live().droppedRecords;
    const std::uint64_t dropped = total >= m_droppedBase ? total - m_droppedBase : total;
    m_dropped->setVisible(dropped > 0);
    if (dropped) m_dropped->setText(tr("%1 records dropped").arg(QLocale().toString(qulonglong(dropped))));
}

void TrafficPage::setPaused(bool paused) {
    m_paused = paused;
    m_feed->setPaused(paused);
    if (m_pause->isChecked() != paused) m_pause->setChecked(paused);
    m_pause->setText(paused ? tr("Resume") : tr("Pause"));
    if (!paused && m_follow) m_view->scrollToBottom();
}

void TrafficPage::clearRows() {
    m_feed->discardPending();
    m_model->clear();
    m_inspector->clear();
    m_skipped = 0;
    m_droppedBase = m_server->live().droppedRecords; // "N dropped" counts from here
    m_follow = true;
    updateCount();
    updateDropped();
}

QMenu* TrafficPage::contextMenuFor(int row) {
    auto* menu = new QMenu(this);
    menu->setObjectName("trafficContextMenu");
    const std::optional<TrafficRow> r = m_model->rowAt(row);
    if (!r) return menu;
    const QString url = QString::fromStdString(r->scheme.empty() ? "http" : r->scheme) + "://" +
                        QString::fromStdString(r->authority) + QString::fromStdString(r->target);
    auto add = [menu](const QString& text, const char* name, auto slot) {
        QAction* a = menu->addAction(text, slot);
        a->setObjectName(name);
        return a;
    };
    add(tr("Copy URL"), "copyUrl", [this, url] {
        QApplication::clipboard()->setText(url);
        emit notice(tr("Copied %1").arg(url));
    });
    add(tr("Copy as curl"), "copyCurl", [this] { m_inspector->copyAsCurl(); });
    add(tr("Copy as Python"), "copyPython", [this] { m_inspector->copyAsPython(); });
    add(tr("Copy as fetch"), "copyFetch", [this] { m_inspector->copyAsFetch(); });
    add(tr("Copy as HTTPie"), "copyHttpie", [this] { m_inspector->copyAsHttpie(); });
    add(tr("Resend"), "resend", [this] {
        m_inspector->resend();
    })->setEnabled(!r->method.empty() && !r->target.empty() && !m_inspector->isResending());
    menu->addSeparator();
    // Filter terms quote what has spaces or quotes ("(no route)").
    auto term = [](const QString& key, const QString& value) {
        return value.contains(' ') || value.contains('"') ? key + ":\"" + QString(value).remove('"') + "\""
                                                          : key + ":" + value;
    };
    const QString host = QString::fromStdString(r->authority);
    add(tr("Filter by host %1").arg(host), "filterHost",
        [this, term, host] { setFilterText(term("host", host)); });
    const QString route = QString::fromStdString(r->route);
    if (!route.isEmpty())
        add(tr("Filter by route %1").arg(route), "filterRoute",
            [this, term, route] { setFilterText(term("route", route)); });
    menu->addSeparator();
    // A request-stage rule for this exchange's host, path and method, edited in the Rules tab.
    const capture::Exchange summary = r->summary();
    add(tr("Create rule from this exchange"), "createRule", [this, summary] {
        const QString name = QString::fromStdString(summary.method) + " " +
                             QString::fromStdString(summary.target).section('?', 0, 0);
        emit createRuleRequested(RulesPage::matchFor(summary), name.trimmed());
    });
    menu->addSeparator();
    add(tr("Export selected as HAR…"), "exportSelected", [this] { exportHarDialog(); });
    return menu;
}

void TrafficPage::focusFilter() {
    m_filter->setFocus(Qt::ShortcutFocusReason);
    m_filter->selectAll();
}

void TrafficPage::setFilterText(const QString& text) {
    m_filter->setText(text);
    applyFilter();
}

QString TrafficPage::filterError() const {
    return m_filterError->isHidden() ? QString() : m_filterError->text();
}

void TrafficPage::applyFilter() {
    m_filterDelay->stop();
    const QString text = m_filter->text().trimmed();
    std::string error;
    auto filter = capture::Filter::parse(text.toStdString(), error);
    if (!filter) {
        // The table keeps the last good filter; the field says what is wrong with this one.
        m_filterError->setText(QString::fromStdString(error));
        m_filterError->setToolTip(QString::fromStdString(error));
        m_filterError->show();
        m_filter->setStyleSheet("QLineEdit { border: 1px solid #c0392b; }");
        return;
    }
    m_filterError->hide();
    m_filterError->clear();
    m_filter->setStyleSheet({});
    const std::uint64_t selected = m_inspector->exchange() ? m_inspector->exchange()->id : 0;
    std::function<std::vector<capture::Exchange>(std::uint64_t, std::size_t)> details;
    if (text.contains("header:", Qt::CaseInsensitive)) {
        auto* engine = &m_server->engine();
        details = [engine](std::uint64_t since, std::size_t max) {
            return engine->recentExchanges(since, max);
        };
    }
    auto copy = filter;
    m_model->setFilter(std::move(filter), details);
    m_feed->setFilter(m_model->filter() ? copy : std::nullopt, m_model->filterGeneration());
    // The selected exchange stays selected and in view when the filter still shows it.
    const int selectedRow = selected ? m_model->rowOfId(selected) : -1;
    if (selectedRow >= 0) {
        m_view->selectionModel()->setCurrentIndex(
            m_model->index(selectedRow, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_view->scrollTo(m_model->index(selectedRow, 0), QAbstractItemView::PositionAtCenter);
    } else if (m_follow) {
        m_view->scrollToBottom();
    }
    updateCount();
}

void TrafficPage::selectRow(int row) {
    if (row < 0) row += m_model->rowCount();
    if (row < 0 || row >= m_model->rowCount()) return;
    const QModelIndex index = m_model->index(row, 0);
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                         QItemSelectionModel::Rows);
    m_view->scrollTo(index);
}

void TrafficPage::showCurrent() {
    const QModelIndex current = m_view->selectionModel()->currentIndex();
    const std::uint64_t id = current.isValid() ? m_model->idAt(current.row()) : 0;
    if (!id) {
        m_inspector->clear();
        return;
    }
    if (auto e = m_server->engine().exchange(id))
        m_inspector->showExchange(*e);
    else
        m_inspector->clear(
            tr("#%1 has left the capture window (capture.max_records); only its row is kept").arg(id));
}

void TrafficPage::updateCount() {
    updateEmptyHint();
    const int shown = m_model->rowCount();
    const auto total = qulonglong(m_model->totalRows());
    QString text = std::size_t(shown) == m_model->totalRows()
                       ? (total == 1 ? tr("1 exchange") : tr("%1 exchanges").arg(QLocale().toString(total)))
                       : tr("%1 of %2").arg(QLocale().toString(shown), QLocale().toString(total));
    // Faster than the table can read (a load test): the window (capture.max_records) moved on.
    if (m_skipped) text += tr(" · %1 skipped").arg(QLocale().toString(qulonglong(m_skipped)));
    m_count->setText(text);
    m_count->setToolTip(m_skipped
                            ? tr("Exchanges that left the server's capture window (capture.max_records) "
                                 "before the table read them; they are in the statistics")
                            : QString());
}

void TrafficPage::updateCaptureState() {
    const auto cfg = m_server->config();
    // Intercepting captures whatever the project says (ServerController::setIntercept).
    m_captureOff->setVisible((!cfg || !cfg->capture.enabled) && !m_server->intercepting());
    updateEmptyHint();
}

void TrafficPage::updateEmptyHint() {
    const auto cfg = m_server->config();
    const QString url = m_server->firstHttpUrl();
    const bool show = cfg && cfg->capture.enabled && m_model->totalRows() == 0 && !url.isEmpty();
    if (show)
        m_emptyHint->setText(tr("Nothing captured yet. Open <a href=\"%1\">%1</a> in a browser, or run "
                                "<code>curl %1</code>: each request appears here as it is served.")
                                 .arg(url.toHtmlEscaped()));
    m_emptyHint->setVisible(show);
}

void TrafficPage::enableCapture() {
    auto cfg = m_server->config();
    if (!cfg) return;
    auto next = std::make_shared<config::Config>(*cfg);
    next->capture.enabled = true;
    QString error;
    if (!m_server->apply(next, &error))
        emit notice(tr("Could not turn capture on: %1").arg(error));
    else
        emit notice(tr("Capture is on: new exchanges appear in the table"));
    updateCaptureState();
}

int TrafficPage::exportHar(const QString& path, bool allShown, QString* error) {
    std::vector<std::uint64_t> ids;
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    if (!allShown && !rows.isEmpty()) {
        for (const QModelIndex& i : rows)
            ids.push_back(m_model->idAt(i.row()));
    } else {
        ids.reserve(std::size_t(m_model->rowCount()));
        for (int r = 0; r < m_model->rowCount(); ++r)
            ids.push_back(m_model->idAt(r));
    }
    std::sort(ids.begin(), ids.end());
    std::vector<capture::Exchange> exchanges;
    if (!ids.empty()) {
        const std::unordered_set<std::uint64_t> wanted(ids.begin(), ids.end());
        auto window =
            m_server->engine().recentExchanges(ids.front() - 1, std::size_t(ids.back() - ids.front() + 1));
        for (auto& e : window)
            if (wanted.count(e.id)) exchanges.push_back(std::move(e));
    }
    QSaveFile file(path);
    // gRPC messages as JSON with their routes' descriptor sets (as the inspector shows them).
    capture::GrpcSchemaCache schemas;
    std::vector<std::shared_ptr<const capture::GrpcSchema>> keep;
    capture::HarOptions options;
    const auto config = m_server->config();
    options.grpcSchema = [&](const capture::Exchange& e) -> const capture::GrpcSchema* {
        if (!config) return nullptr;
        auto schema = schemas.forCall(*config, e);
        if (schema && (keep.empty() || keep.back() != schema)) keep.push_back(schema); // alive until written
        return schema.get();
    };
    const std::string har = capture::toHar(exchanges, options);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(har.data(), qint64(har.size())) != qint64(har.size()) || !file.commit()) {
        if (error) *error = file.errorString();
        return -1;
    }
    return int(exchanges.size());
}

void TrafficPage::exportHarDialog() {
    const bool selection = m_view->selectionModel()->selectedRows().size() > 1;
    const QString path = QFileDialog::getSaveFileName(
        this, selection ? tr("Export selected exchanges as HAR") : tr("Export shown exchanges as HAR"),
        QStringLiteral("portico.har"), tr("HAR (*.har);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    const int n = exportHar(path, !selection, &error);
    if (n < 0)
        emit notice(tr("Cannot write %1: %2").arg(path, error));
    else
        emit notice((n == 1 ? tr("Wrote 1 exchange to %1").arg(path)
                            : tr("Wrote %1 exchanges to %2").arg(n).arg(path)));
}

void TrafficPage::saveCaptureDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save capture as a session file"),
                                                      QStringLiteral("portico-session.sqlite"),
                                                      tr("Portico session (*.sqlite);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (m_server->saveCapture(path, &error))
        emit notice(tr("Saved the capture to %1 (open it with portico replay, har export or bench --from)")
                        .arg(path));
    else
        emit notice(tr("Cannot save the capture: %1").arg(error));
}

} // namespace portico::ui

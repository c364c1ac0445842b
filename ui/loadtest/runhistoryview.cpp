// RunHistoryView: the history folder read off the UI thread, percentile curves and suite bars in
// QCustomPlot, the comparison of load::compareRuns in a table.
#include "runhistoryview.h"

#include <qcustomplot.h>

#include <QDateTime>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>
#include <string_view>

namespace portico::ui {

namespace {

const QColor kColors[] = {QColor(41, 128, 185), QColor(211, 84, 0)};
// Text colours with WCAG AA contrast (≥ 4.5:1) on white and on the alternate rows: 5.3:1,
// 6.6:1 and 6.5:1 on white (≥ 4.8:1 on the alternate rows).
const QColor kGood(0x1e, 0x7b, 0x34);
const QColor kBad(0xa9, 0x32, 0x26);
const QColor kStopped(0xa0, 0x40, 0x00);

enum Column {
    ColSaved,
    ColKind,
    ColLabel,
    ColTarget,
    ColModel,
    ColConns,
    ColDuration,
    ColRps,
    ColP50,
    ColP99,
    ColFailed,
    ColumnCount
};
constexpr int kIdRole = Qt::UserRole;       // run ID, empty for an unreadable file
constexpr int kFileRole = Qt::UserRole + 1; // the file

QString ms(double ns) { return QString::number(ns / 1e6, 'f', 3); }

std::uint64_t percentile(const load::RunRecord& r, const char* key) {
    for (const auto& [k, v] : r.percentiles)
        if (k == key) return v;
    return 0;
}

QString modelText(const load::RunRecord& r) {
    if (r.model == "open") return QObject::tr("open %1/s").arg(QLocale().toString(r.rate, 'f', 0));
    return QString::fromStdString(r.model.empty() ? "closed" : r.model);
}

QString value(const load::Comparison::Row& row, double v) {
    if (row.unit == "ns") return ms(v);
    if (row.unit == "req/s") return QLocale().toString(v, 'f', 1);
    return QLocale().toString(qlonglong(v));
}

QString metricName(const load::Comparison::Row& row) {
    return row.unit == "ns" ? QString::fromStdString(row.metric) + " ms" : QString::fromStdString(row.metric);
}

QTableWidgetItem* cell(const QString& text, bool number) {
    auto item = new QTableWidgetItem(text);
    if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

QString historyTime(const std::string& isoUtc) {
    QDateTime t = QDateTime::fromString(QString::fromStdString(isoUtc), Qt::ISODate);
    return t.isValid() ? t.toLocalTime().toString("yyyy-MM-dd HH:mm:ss") : QString::fromStdString(isoUtc);
}

bool isStoppedLabel(const std::string& label) {
    const std::string_view suffix = kStoppedLabelSuffix;
    return label.size() >= suffix.size() &&
           label.compare(label.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

PercentileCurve percentileCurve(const std::vector<stats::Histogram::Bucket>& buckets, std::uint64_t maxNs) {
    PercentileCurve c;
    double total = 0;
    for (const auto& b : buckets)
        total += double(b.count);
    if (total <= 0) return c;
    double below = 0;
    for (const auto& b : buckets) {
        if (b.count == 0) continue;
        c.keys << 1.0 / (1.0 - below / total);
        c.values << double(maxNs ? std::min(b.highestNs, maxNs) : b.highestNs) / 1e6;
        below += double(b.count);
    }
    c.keys << 2 * total;
    c.values << c.values.last();
    return c;
}

RunHistoryView::RunHistoryView(const std::filesystem::path& dir, QWidget* parent)
    : QWidget(parent), m_dir(dir) {
    m_folder = new QLabel;
    m_folder->setObjectName("historyFolder");
    m_folder->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status = new QLabel;
    m_status->setObjectName("historyStatus");
    m_refresh = new QPushButton(tr("Refresh"));
    m_refresh->setObjectName("historyRefresh");
    m_delete = new QPushButton(tr("Delete…"));
    m_delete->setObjectName("historyDelete");
    m_delete->setEnabled(false);
    m_delete->setToolTip(tr("Delete the selected runs' files from the history folder (Delete)"));
    connect(m_refresh, &QPushButton::clicked, this, [this] { refresh(); });
    connect(m_delete, &QPushButton::clicked, this, &RunHistoryView::confirmDelete);
    auto bar = new QHBoxLayout;
    bar->addWidget(m_folder, 1);
    bar->addWidget(m_status);
    bar->addWidget(m_refresh);
    bar->addWidget(m_delete);

    m_table = new QTableWidget(0, ColumnCount);
    m_table->setObjectName("loadHistory");
    m_table->setHorizontalHeaderLabels({tr("Saved"), tr("Kind"), tr("Label"), tr("Target"), tr("Model"),
                                        tr("Conns"), tr("Time"), tr("Req/s"), tr("p50 ms"), tr("p99 ms"),
                                        tr("Failed")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setToolTip(tr("Select a run to see it, two (Ctrl+click) to compare them"));
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &RunHistoryView::onSelectionChanged);
    auto del = new QShortcut(QKeySequence::Delete, m_table, nullptr, nullptr, Qt::WidgetShortcut);
    connect(del, &QShortcut::activated, this, &RunHistoryView::confirmDelete);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("historyPlot");
    m_plot->setMinimumHeight(200);
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(
        0, 0,
        new QCPTextElement(m_plot, tr("Latency by percentile"), QFont(font().family(), 10, QFont::Bold)));

    m_hint = new QLabel(tr("Select a run to see it, or two runs (Ctrl+click) to overlay and compare them."));
    m_hint->setObjectName("historyHint");
    m_hint->setWordWrap(true);

    m_comparison = new QTableWidget(0, 6);
    m_comparison->setObjectName("loadComparison");
    m_comparison->setHorizontalHeaderLabels(
        {tr("Metric"), tr("A"), tr("B"), tr("B/A"), tr("B−A"), QString()});
    m_comparison->verticalHeader()->hide();
    m_comparison->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_comparison->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_comparison->horizontalHeader()->setStretchLastSection(true);

    auto detail = new QWidget;
    auto detailLayout = new QVBoxLayout(detail);
    detailLayout->setContentsMargins(0, 0, 0, 0);
    detailLayout->addWidget(m_hint);
    auto plots = new QSplitter;
    plots->addWidget(m_plot);
    plots->addWidget(m_comparison);
    plots->setStretchFactor(0, 3);
    plots->setStretchFactor(1, 2);
    detailLayout->addWidget(plots, 1);

    auto top = new QWidget;
    auto topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addLayout(bar);
    topLayout->addWidget(m_table);

    auto split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(detail);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    auto layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    m_watcher = new QFileSystemWatcher(this);
    m_debounce = new QTimer(this);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(300);
    connect(m_debounce, &QTimer::timeout, this, [this] { refresh(); });
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, m_debounce, qOverload<>(&QTimer::start));
    setDirectory(dir);
}

RunHistoryView::~RunHistoryView() {
    for (QThread* t : m_threads) {
        t->wait();
        delete t;
    }
}

void RunHistoryView::setDirectory(const std::filesystem::path& dir) {
    m_dir = dir;
    m_folder->setText(tr("History: %1").arg(QString::fromStdString(dir.string())));
    if (!m_watcher->directories().isEmpty()) m_watcher->removePaths(m_watcher->directories());
    watchFolder();
    refresh();
}

void RunHistoryView::watchFolder() {
    // The folder appears on the first save (by us or the CLI): watch its parent until then.
    const QString dir = QString::fromStdString(m_dir.string());
    const QString parent = QString::fromStdString(m_dir.parent_path().string());
    const QStringList want = QFileInfo::exists(dir) ? QStringList{dir} : QStringList{parent};
    const QStringList have = m_watcher->directories();
    if (have == want) return;
    if (!have.isEmpty()) m_watcher->removePaths(have);
    if (QFileInfo::exists(want.first())) m_watcher->addPaths(want);
}

void RunHistoryView::inThread(std::function<void()> work, std::function<void()> done) {
    QThread* t = QThread::create(std::move(work));
    t->setObjectName("portico-history");
    m_threads << t;
    connect(t, &QThread::finished, this, [this, t, done = std::move(done)] {
        m_threads.removeOne(t);
        t->deleteLater();
        done();
    });
    t->start();
}

void RunHistoryView::refresh(const QStringList& select) {
    m_selectAfterScan << select;
    if (m_scanning) {
        m_scanAgain = true;
        return;
    }
    m_scanning = true;
    auto listing = std::make_shared<load::HistoryListing>();
    const auto dir = m_dir;
    inThread([dir, listing] { *listing = load::scanHistory(dir); },
             [this, listing] {
                 m_scanning = false;
                 if (m_scanAgain) { // the folder changed (or another refresh came) while reading it
                     m_scanAgain = false;
                     refresh();
                     return;
                 }
                 const QStringList select = m_selectAfterScan;
                 m_selectAfterScan.clear();
                 showListing(std::move(*listing), select);
             });
}

void RunHistoryView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    refresh();
}

void RunHistoryView::showListing(load::HistoryListing listing, const QStringList& select) {
    watchFolder();
    const QStringList before = selectedFiles();
    m_runs = std::move(listing.runs);
    std::reverse(m_runs.begin(), m_runs.end()); // newest first
    m_unreadable = std::move(listing.unreadable);

    // One list by file name (IDs start with the save time), newest first; unreadable files among them.
    struct Entry {
        std::string stem;
        const load::RunRecord* run;
        const load::UnreadableRun* bad;
    };
    std::vector<Entry> entries;
    for (const auto& r : m_runs)
        entries.push_back({r.id, &r, nullptr});
    for (const auto& u : m_unreadable)
        entries.push_back({u.file.stem().string(), nullptr, &u});
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.stem > b.stem; });

    m_table->blockSignals(true);
    m_table->clearSpans();
    m_table->setRowCount(0);
    m_table->setRowCount(int(entries.size()));
    for (int row = 0; row < int(entries.size()); ++row) {
        const Entry& e = entries[std::size_t(row)];
        if (e.bad) {
            const QString file = QString::fromStdString(e.bad->file.string());
            auto name = cell(QString::fromStdString(e.bad->file.filename().string()), false);
            name->setData(kFileRole, file);
            name->setForeground(kBad);
            name->setToolTip(file);
            m_table->setItem(row, ColSaved, name);
            auto kind = cell(tr("unreadable"), false);
            kind->setForeground(kBad);
            m_table->setItem(row, ColKind, kind);
            auto why = cell(QString::fromStdString(e.bad->reason), false);
            why->setForeground(kBad);
            why->setToolTip(QString::fromStdString(e.bad->reason));
            m_table->setItem(row, ColLabel, why);
            m_table->setSpan(row, ColLabel, 1, ColumnCount - ColLabel);
            continue;
        }
        const load::RunRecord& r = *e.run;
        const bool suite = r.kind == "suite";
        auto saved = cell(historyTime(r.savedAt), false);
        saved->setData(kIdRole, QString::fromStdString(r.id));
        saved->setData(kFileRole, QString::fromStdString(r.file.string()));
        saved->setToolTip(QString::fromStdString(r.id));
        m_table->setItem(row, ColSaved, saved);
        m_table->setItem(row, ColKind, cell(QString::fromStdString(r.kind), false));
        auto label = cell(QString::fromStdString(r.label), false);
        if (isStoppedLabel(r.label)) {
            label->setForeground(kStopped);
            label->setToolTip(
                tr("Stopped by the user before its bound: the figures cover the part that ran"));
        }
        m_table->setItem(row, ColLabel, label);
        m_table->setItem(row, ColTarget, cell(QString::fromStdString(r.target), false));
        m_table->setItem(
            row, ColModel,
            cell(modelText(r) + (r.protocol == "h2" ? QStringLiteral(" · h2") : QString()), false));
        m_table->setItem(row, ColConns, cell(QString::number(r.connections), true));
        m_table->setItem(row, ColDuration, cell(QString::number(r.durationSeconds, 'f', 1) + " s", true));
        auto rps = cell(QLocale().toString(r.requestsPerSecond, 'f', 0), true);
        if (suite) rps->setToolTip(tr("geometric mean of the routes' req/s"));
        m_table->setItem(row, ColRps, rps);
        m_table->setItem(row, ColP50,
                         cell(suite ? QStringLiteral("—") : ms(double(percentile(r, "50"))), true));
        m_table->setItem(row, ColP99,
                         cell(suite ? QStringLiteral("—") : ms(double(percentile(r, "99"))), true));
        auto failed = cell(QLocale().toString(qulonglong(r.failed)), true);
        if (r.failed) failed->setForeground(kBad);
        failed->setToolTip(tr("requests failed (reset, timeout, protocol); %1 cancelled at the end")
                               .arg(QLocale().toString(qulonglong(r.cancelled))));
        m_table->setItem(row, ColFailed, failed);
    }
    // The selection is kept across readings (or replaced by `select`); redrawn only if it changed.
    if (select.isEmpty())
        selectRows(before, kFileRole);
    else
        selectRows(select, kIdRole);
    m_table->blockSignals(false);
    if (selectedFiles() != m_shownFiles || !select.isEmpty()) onSelectionChanged();

    if (!listing.error.empty())
        m_status->setText(
            tr("<span style='color:#c0392b'>%1</span>").arg(QString::fromStdString(listing.error)));
    else if (m_unreadable.empty())
        m_status->setText(m_runs.size() == 1 ? tr("1 run") : tr("%1 runs").arg(m_runs.size()));
    else
        m_status->setText((m_runs.size() == 1 ? tr("1 run") : tr("%1 runs").arg(m_runs.size())) +
                          tr(", <span style='color:#c0392b'>%1 unreadable</span>").arg(m_unreadable.size()));

    emit listed();
}

QStringList RunHistoryView::selectedIds() const {
    QStringList ids;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows(ColSaved)) {
        const QString id = index.data(kIdRole).toString();
        if (!id.isEmpty()) ids << id;
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

QStringList RunHistoryView::selectedFiles() const {
    QStringList files;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows(ColSaved))
        files << index.data(kFileRole).toString();
    std::sort(files.begin(), files.end());
    return files;
}

int RunHistoryView::selectRows(const QStringList& keys, int role) {
    QItemSelection selection;
    int found = 0;
    for (int row = 0; row < m_table->rowCount(); ++row) {
        const QTableWidgetItem* item = m_table->item(row, ColSaved);
        if (item && keys.contains(item->data(role).toString())) {
            selection.select(m_table->model()->index(row, 0), m_table->model()->index(row, ColumnCount - 1));
            ++found;
        }
    }
    m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    return found;
}

bool RunHistoryView::selectRuns(const QStringList& ids) { return selectRows(ids, kIdRole) == ids.size(); }

void RunHistoryView::onSelectionChanged() {
    m_shownFiles = selectedFiles();
    std::vector<load::RunRecord> chosen;
    QStringList unreadable;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows(ColSaved)) {
        const QString id = index.data(kIdRole).toString();
        if (id.isEmpty()) {
            unreadable << m_table->item(index.row(), ColLabel)->text();
            continue;
        }
        for (const auto& r : m_runs)
            if (QString::fromStdString(r.id) == id) chosen.push_back(r);
    }
    m_delete->setEnabled(!m_table->selectionModel()->selectedRows().isEmpty());
    std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    const quint64 generation = ++m_selectionGeneration;
    if (chosen.empty() || chosen.size() > 2) {
        showSelection({}, {}, unreadable);
        return;
    }
    const bool runs =
        std::all_of(chosen.begin(), chosen.end(), [](const auto& r) { return r.kind == "run"; });
    if (!runs) {
        showSelection(chosen, {}, unreadable);
        return;
    }
    // The histograms are in the files (not in the listing): read them off the UI thread.
    struct Loaded {
        std::vector<std::vector<stats::Histogram::Bucket>> buckets;
        QStringList errors;
    };
    auto loaded = std::make_shared<Loaded>();
    inThread(
        [chosen, loaded] {
            for (const auto& r : chosen) {
                std::vector<stats::Histogram::Bucket> b;
                std::string error;
                if (!load::loadLatencyBuckets(r.file, b, error))
                    loaded->errors << QString::fromStdString(error);
                loaded->buckets.push_back(std::move(b));
            }
        },
        [this, chosen, loaded, generation, unreadable] {
            if (generation != m_selectionGeneration) return; // a newer selection is on its way
            showSelection(chosen, loaded->buckets, unreadable + loaded->errors);
        });
}

void RunHistoryView::showSelection(const std::vector<load::RunRecord>& chosen,
                                   const std::vector<std::vector<stats::Histogram::Bucket>>& buckets,
                                   const QStringList& errors) {
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->legend->setVisible(false);
    QString hint;
    if (chosen.empty())
        hint = tr("Select a run to see it, or two runs (Ctrl+click) to overlay and compare them.");
    else if (chosen.size() == 1)
        hint = tr("Run %1. Select a second run (Ctrl+click) to compare.")
                   .arg(QString::fromStdString(chosen[0].id));
    else
        hint = tr("A: %1   B: %2   (B compared with A; A is the older run)")
                   .arg(QString::fromStdString(chosen[0].id), QString::fromStdString(chosen[1].id));
    const bool runs = !chosen.empty() && std::all_of(chosen.begin(), chosen.end(),
                                                     [](const auto& r) { return r.kind == "run"; });
    const bool suites = !chosen.empty() && std::all_of(chosen.begin(), chosen.end(),
                                                       [](const auto& r) { return r.kind == "suite"; });
    if (runs && buckets.size() == chosen.size())
        drawCurves(chosen, buckets);
    else if (suites)
        drawSuites(chosen);
    else if (!chosen.empty())
        hint += tr(" A run and a suite: only req/s and failed requests compare.");
    for (const QString& e : errors)
        hint += "\n" + e;
    m_hint->setText(hint);
    m_hint->setStyleSheet(errors.isEmpty() ? QString() : QStringLiteral("QLabel { color: #c0392b; }"));
    fillComparison(chosen);
    m_plot->replot();
    emit selectionShown();
}

void RunHistoryView::drawCurves(const std::vector<load::RunRecord>& chosen,
                                const std::vector<std::vector<stats::Histogram::Bucket>>& buckets) {
    // HdrHistogram's percentile plot: x = 1/(1-q) on a log axis, labelled as percentiles.
    m_plot->xAxis->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const char* labels[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"};
    double tick = 1;
    for (const char* label : labels) {
        ticker->addTick(tick, label);
        tick *= 10;
    }
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setLabel(tr("percentile (log scale)"));
    m_plot->xAxis->setTickLabelRotation(0);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_plot->yAxis->setLabel(tr("latency (ms)"));
    m_plot->yAxis->setNumberFormat("gb");
    double maxKey = 10, maxValue = 0;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        const PercentileCurve c = percentileCurve(buckets[i], percentile(chosen[i], "100"));
        QCPGraph* g = m_plot->addGraph();
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(QPen(kColors[i], 2));
        const QString tag = chosen.size() == 2 ? (i == 0 ? "A: " : "B: ") : QString();
        // Short enough for the legend; the ID is in the table and the hint above.
        g->setName(tag + tr("%1 · %2 conn · %3 req/s")
                             .arg(historyTime(chosen[i].savedAt).mid(11))
                             .arg(chosen[i].connections)
                             .arg(QLocale().toString(chosen[i].requestsPerSecond, 'f', 0)));
        g->setData(c.keys, c.values, true);
        if (!c.keys.isEmpty()) {
            maxKey = std::max(maxKey, c.keys.last());
            maxValue = std::max(maxValue, *std::max_element(c.values.begin(), c.values.end()));
        }
    }
    m_plot->xAxis->setRange(1, maxKey);
    m_plot->yAxis->setRange(0, maxValue > 0 ? maxValue * 1.1 : 1);
    m_plot->legend->setVisible(true);
}

void RunHistoryView::drawSuites(const std::vector<load::RunRecord>& chosen) {
    // Grouped bars: each route's req/s, A and B side by side.
    QStringList names;
    for (const auto& r : chosen)
        for (const auto& route : r.routes)
            if (!names.contains(QString::fromStdString(route.name)))
                names << QString::fromStdString(route.name);
    m_plot->xAxis->setScaleType(QCPAxis::stLinear);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int i = 0; i < names.size(); ++i)
        ticker->addTick(i + 1, names[i]);
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setTickLabelRotation(45);
    m_plot->xAxis->setLabel(QString());
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_plot->yAxis->setLabel(tr("requests/s"));
    m_plot->yAxis->setNumberFormat("gb");
    auto group = new QCPBarsGroup(m_plot);
    double maxValue = 0;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        auto bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setWidth(chosen.size() == 2 ? 0.38 : 0.6);
        bars->setPen(QPen(kColors[i].darker(120)));
        bars->setBrush(kColors[i]);
        bars->setBarsGroup(group);
        const QString tag = chosen.size() == 2 ? (i == 0 ? "A: " : "B: ") : QString();
        bars->setName(tag + QString::fromStdString(chosen[i].id));
        QVector<double> keys, values;
        for (const auto& route : chosen[i].routes) {
            keys << names.indexOf(QString::fromStdString(route.name)) + 1;
            values << route.requestsPerSecond;
            maxValue = std::max(maxValue, route.requestsPerSecond);
        }
        bars->setData(keys, values);
    }
    m_plot->xAxis->setRange(0.4, names.size() + 0.6);
    m_plot->yAxis->setRange(0, maxValue > 0 ? maxValue * 1.15 : 1);
    m_plot->legend->setVisible(true);
}

void RunHistoryView::fillComparison(const std::vector<load::RunRecord>& chosen) {
    m_comparison->setRowCount(0);
    const bool two = chosen.size() == 2;
    for (int c = 2; c <= 5; ++c)
        m_comparison->setColumnHidden(c, !two);
    if (chosen.empty()) return;
    const load::RunRecord& a = chosen[0];
    const load::RunRecord& b = two ? chosen[1] : chosen[0];
    const load::Comparison comparison = load::compareRuns(a, b);
    m_comparison->setHorizontalHeaderItem(1,
                                          new QTableWidgetItem(two ? tr("A") : QString::fromStdString(a.id)));
    m_comparison->setRowCount(int(comparison.rows.size()));
    for (int i = 0; i < int(comparison.rows.size()); ++i) {
        const auto& row = comparison.rows[std::size_t(i)];
        m_comparison->setItem(i, 0, cell(metricName(row), false));
        m_comparison->setItem(i, 1, cell(value(row, row.a), true));
        if (!two) continue;
        m_comparison->setItem(i, 2, cell(value(row, row.b), true));
        m_comparison->setItem(i, 3, cell(row.a != 0 ? QString::number(row.ratio, 'f', 3) + "×" : "—", true));
        const double delta = row.b - row.a;
        const QString sign = delta > 0 ? "+" : "";
        m_comparison->setItem(i, 4, cell(sign + value(row, delta), true));
        QString verdict;
        if (delta != 0) {
            const bool better = row.higherIsBetter ? delta > 0 : delta < 0;
            verdict = better ? tr("better") : tr("worse");
            auto v = cell(verdict, false);
            v->setForeground(better ? kGood : kBad);
            m_comparison->setItem(i, 5, v);
        }
    }
}

void RunHistoryView::confirmDelete() {
    const int n = m_table->selectionModel()->selectedRows().size();
    if (n == 0) return;
    if (QMessageBox::question(this, tr("Delete runs"),
                              (n == 1 ? tr("Delete 1 saved run file from %1?")
                                      : tr("Delete %1 saved run files from %2?").arg(n))
                                  .arg(QString::fromStdString(m_dir.string()))) != QMessageBox::Yes)
        return;
    QString error;
    if (!deleteSelected(&error)) QMessageBox::warning(this, tr("Delete runs"), error);
}

bool RunHistoryView::deleteSelected(QString* error) {
    QStringList failed;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows(ColSaved)) {
        const std::filesystem::path file = index.data(kFileRole).toString().toStdString();
        std::error_code ec;
        if (!std::filesystem::equivalent(file.parent_path(), m_dir, ec)) continue; // only this folder's files
        if (!std::filesystem::remove(file, ec) || ec)
            failed << QString::fromStdString(file.string()) + ": " +
                          QString::fromStdString(ec ? ec.message() : std::string("already gone"));
    }
    m_table->clearSelection();
    refresh();
    if (error) *error = failed.join("\n");
    return failed.isEmpty();
}

} // namespace portico::ui

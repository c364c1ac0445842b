// LoadTestPage: the load generator and the suite (engine/jobs.h) on a worker thread, fields checked
// as they change, live progress, rate, p50/p99 and latency histogram from the generator's own totals
// (load::Live), runs saved in the history folder that `portico bench` shares.
#include "loadtestpage.h"

#include "runhistoryview.h"
#include "samplesview.h"
#include "servercontroller.h"

#include <portico/engine/engine.h>
#include <portico/engine/jobs.h>
#include <portico/load/history.h>
#include <portico/validate/load.h>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

namespace portico::ui {

namespace {

constexpr int kBinsPerDecade = 20; // latency histogram bins
const QColor kRed(192, 57, 43);
const char* const kUrlKey = "loadTest/url";
const char* const kDurationKey = "loadTest/duration";

// A number field whose valid range is [min, max]. The box itself takes up to 999,999,999 so that a
// value above the range can be typed and explained at the field instead of being swallowed.
QSpinBox* spin(int min, int max, int value, const QString& name, const QString& label) {
    auto s = new QSpinBox;
    s->setRange(min, std::max(max, 999'999'999));
    s->setValue(value);
    s->setObjectName(name);
    s->setGroupSeparatorShown(true);
    s->setProperty("validMin", min);
    s->setProperty("validMax", max);
    s->setProperty("fieldName", label);
    s->setToolTip(QObject::tr("%1 to %2").arg(QLocale().toString(min), QLocale().toString(max)));
    return s;
}

struct DurationUnit {
    const char* name;
    std::uint64_t ns;
};
// Largest first: a fraction is spelled in the largest unit that makes it whole.
constexpr DurationUnit kDurationUnits[] = {
    {"h", 3'600'000'000'000ull}, {"m", 60'000'000'000ull}, {"s", 1'000'000'000ull},
    {"ms", 1'000'000ull},        {"us", 1'000ull},         {"ns", 1ull}};

std::uint64_t unitNs(const QString& unit) {
    if (unit == QStringLiteral("µs")) return 1'000;
    for (const auto& u : kDurationUnits)
        if (unit == QLatin1String(u.name)) return u.ns;
    return 0;
}

// The suite vhost's config: installed next to the demo, else the source tree's.
QString bundledSuiteConfig() {
    const QString installed =
        QCoreApplication::applicationDirPath() + "/../share/portico/bench-suite/portico.yaml";
    if (QFileInfo::exists(installed)) return QFileInfo(installed).canonicalFilePath();
    return QStringLiteral(PORTICO_BENCH_SUITE_DIR "/portico.yaml");
}

// Serves the suite vhost in this process on 127.0.0.1 (any free port) with half the cores, so the
// load generator keeps the other half. Returns its origin, or "" with `error`.
std::string startSuiteServer(engine::Engine& engine, const QString& file, std::string& error) {
    const auto loaded = config::loadConfigFile(file.toStdString());
    if (!loaded.ok()) {
        error =
            loaded.errors.empty() ? file.toStdString() + ": cannot load" : loaded.errors.front().toString();
        return {};
    }
    auto cfg = std::make_shared<config::Config>(*loaded.config);
    config::Listen listen;
    listen.host = "127.0.0.1";
    listen.port = 0;
    cfg->listen = {listen};
    cfg->workers = unsigned(qMax(1, QThread::idealThreadCount() / 2));
    cfg->capture.enabled = false;
    if (!engine.start(cfg, error)) return {};
    const auto endpoints = engine.endpoints();
    if (endpoints.empty()) {
        error = "the suite server has no listener";
        return {};
    }
    return "http://127.0.0.1:" + std::to_string(endpoints.front().port);
}

} // namespace

ThroughputSeries throughputSeries(const std::vector<std::uint64_t>& perSlot,
                                  std::chrono::nanoseconds measured) {
    ThroughputSeries series;
    const double slot = std::chrono::duration<double>(load::Result::kSlot).count();
    const double total = std::chrono::duration<double>(measured).count();
    for (std::size_t i = 0; i < perSlot.size(); ++i) {
        const double start = double(i) * slot;
        const double covered = std::min(slot, total - start);
        // A slot the run ended early in: too short a part to be a rate (after a duration bound it
        // holds only the requests that were in flight) unless it is all there is.
        if (covered <= 0 || (covered < slot / 2 && i > 0)) break;
        series.keys << start + covered / 2;
        series.values << double(perSlot[i]) / covered;
    }
    return series;
}

bool parseDurationField(const QString& text, bool emptyAllowed, std::chrono::nanoseconds& out,
                        QString& error) {
    const QString t = text.trimmed();
    out = std::chrono::nanoseconds(0);
    if (t.isEmpty()) {
        if (emptyAllowed) return true;
        error = QObject::tr("required, e.g. 10s or 500ms");
        return false;
    }
    config::Duration d{0};
    if (config::parseDuration(t.toStdString(), d)) {
        out = d;
        return true;
    }
    static const QRegularExpression fraction(R"(^(\d*)[.,](\d+)\s*(ns|us|µs|ms|s|m|h)$)");
    static const QRegularExpression spaced(R"(^(\d+)\s+(ns|us|µs|ms|s|m|h)$)");
    static const QRegularExpression number(R"(^\d+$)");
    if (const auto m = fraction.match(t); m.hasMatch()) {
        // Whole units by design (as in the config file): say which spelling is meant.
        const std::uint64_t factor = unitNs(m.captured(3));
        const QString digits = m.captured(2).left(12);
        std::uint64_t scale = 1;
        for (int i = 0; i < digits.size(); ++i)
            scale *= 10;
        const std::uint64_t whole = m.captured(1).toULongLong();
        const std::uint64_t part = digits.toULongLong();
        const long double ns = (long double)whole * factor + (long double)part * factor / scale;
        QString spelled;
        if (ns >= 1 && ns < 1e19L && std::fmod(ns, 1.0L) == 0) {
            const auto total = std::uint64_t(ns);
            for (const auto& u : kDurationUnits)
                if (total % u.ns == 0) {
                    spelled = QString::number(total / u.ns) + QLatin1String(u.name);
                    break;
                }
        }
        error = spelled.isEmpty() ? QObject::tr("no fractions; use whole units, e.g. 300ms")
                                  : QObject::tr("no fractions; use whole units: %1").arg(spelled);
        return false;
    }
    if (const auto m = spaced.match(t); m.hasMatch()) {
        error = QObject::tr("no space before the unit: %1%2").arg(m.captured(1), m.captured(2));
        return false;
    }
    if (number.match(t).hasMatch()) {
        error = QObject::tr("add a unit: %1s or %1ms").arg(t);
        return false;
    }
    if (t.startsWith('-')) {
        error = QObject::tr("must not be negative");
        return false;
    }
    error = QObject::tr("write a whole number and a unit (ns, us, ms, s, m, h), e.g. 10s or 500ms");
    return false;
}

LoadTestPage::LoadTestPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    qRegisterMetaType<LoadRun>();
    m_url = new QLineEdit;
    m_url->setObjectName("loadUrl");
    m_method = new QComboBox;
    m_method->setObjectName("loadMethod");
    m_method->addItems({"GET", "HEAD", "POST", "PUT", "DELETE"});
    m_connections = spin(1, 100000, 16, "loadConnections", tr("Connections"));
    m_threads = spin(1, 256, qBound(1, QThread::idealThreadCount() / 2, 4), "loadThreads", tr("Threads"));
    m_pipeline = spin(1, 1024, 1, "loadPipeline", tr("Pipeline"));
    m_duration = new QLineEdit("5s");
    m_duration->setObjectName("loadDuration");
    m_duration->setPlaceholderText(tr("e.g. 10s (empty: bounded by count)"));
    m_duration->setProperty("fieldName", tr("Duration"));
    m_duration->setToolTip(tr("A whole number and a unit: 10s, 500ms, 2m"));
    m_count = new QSpinBox;
    m_count->setObjectName("loadCount");
    m_count->setRange(0, 2'000'000'000);
    m_count->setGroupSeparatorShown(true);
    m_count->setProperty("validMin", 0);
    m_count->setProperty("validMax", 2'000'000'000);
    m_count->setProperty("fieldName", tr("Requests"));
    m_count->setSpecialValueText(tr("no limit"));
    m_rate = spin(0, 10'000'000, 0, "loadRate", tr("Arrival rate"));
    m_rate->setSpecialValueText(tr("as fast as possible (closed model)"));
    m_rate->setSuffix(tr(" req/s"));
    m_warmup = new QLineEdit;
    m_warmup->setObjectName("loadWarmup");
    m_warmup->setPlaceholderText(tr("none"));
    m_warmup->setProperty("fieldName", tr("Warm-up"));
    m_warmup->setToolTip(m_duration->toolTip());
    m_url->setProperty("fieldName", tr("URL"));
    m_formError = new QLabel;
    m_formError->setObjectName("loadFormError");
    m_formError->setStyleSheet("QLabel { color: #c0392b; }");
    m_formError->setWordWrap(true);

    // The last URL and duration typed or run (the URL only when it is not this server's default).
    {
        QSettings settings;
        const QString url = settings.value(kUrlKey).toString();
        if (!url.isEmpty()) {
            m_url->setText(url);
            m_url->setModified(true); // kept when the server's listeners change
        }
        const QString duration = settings.value(kDurationKey).toString();
        if (!duration.isEmpty()) m_duration->setText(duration);
    }

    auto form = new QFormLayout;
    // Each field with its error right under it (hidden while the field is valid).
    auto addField = [&](const QString& label, QWidget* field) {
        auto error = new QLabel;
        error->setObjectName(field->objectName() + "Error");
        error->setStyleSheet("QLabel { color: #c0392b; }");
        error->setWordWrap(true);
        error->hide();
        auto box = new QWidget;
        auto boxLayout = new QVBoxLayout(box);
        boxLayout->setContentsMargins(0, 0, 0, 0);
        boxLayout->setSpacing(2);
        boxLayout->addWidget(field);
        boxLayout->addWidget(error);
        form->addRow(label, box);
        m_fieldErrors << qMakePair(field, error);
    };
    addField(tr("URL"), m_url);
    form->addRow(tr("Method"), m_method);
    addField(tr("Connections"), m_connections);
    addField(tr("Threads"), m_threads);
    addField(tr("Pipeline"), m_pipeline);
    addField(tr("Duration"), m_duration);
    addField(tr("Requests"), m_count);
    addField(tr("Arrival rate"), m_rate);
    addField(tr("Warm-up"), m_warmup);
    for (QLineEdit* edit : {m_url, m_duration, m_warmup})
        connect(edit, &QLineEdit::textChanged, this, &LoadTestPage::validateForm);
    // A spin box signals only acceptable values; its editor also signals "0" or "" as typed.
    for (QSpinBox* box : {m_connections, m_threads, m_pipeline, m_count, m_rate}) {
        connect(box, &QSpinBox::textChanged, this, &LoadTestPage::validateForm);
        if (auto editor = box->findChild<QLineEdit*>())
            connect(editor, &QLineEdit::textChanged, this, &LoadTestPage::validateForm);
    }
    connect(m_url, &QLineEdit::textEdited, this, &LoadTestPage::saveFormSettings);
    connect(m_duration, &QLineEdit::textEdited, this, &LoadTestPage::saveFormSettings);

    m_start = new QPushButton(tr("Start"));
    m_start->setObjectName("loadStart");
    m_start->setToolTip(tr("Start the load test (Ctrl+Return)"));
    m_stop = new QPushButton(tr("Stop"));
    m_stop->setObjectName("loadStop");
    m_stop->setEnabled(false);
    connect(m_start, &QPushButton::clicked, this, &LoadTestPage::start);
    connect(m_stop, &QPushButton::clicked, this, &LoadTestPage::stop);
    auto startShortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
    connect(startShortcut, &QShortcut::activated, this, [this] { isRunning() ? stop() : void(start()); });
    auto buttons = new QHBoxLayout;
    buttons->addWidget(m_start);
    buttons->addWidget(m_stop);
    buttons->addStretch();

    m_progress = new QProgressBar;
    m_progress->setObjectName("loadProgress");
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_live = new QLabel(tr("Idle."));
    m_live->setObjectName("loadLive");
    m_summary = new QLabel;
    m_summary->setObjectName("loadSummary");
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);

    auto left = new QWidget;
    auto leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addLayout(form);
    leftLayout->addLayout(buttons);
    leftLayout->addWidget(m_formError);
    leftLayout->addWidget(m_progress);
    leftLayout->addWidget(m_live);
    leftLayout->addWidget(m_summary);
    leftLayout->addStretch();

    m_plot = new QCustomPlot;
    m_plot->setObjectName("loadRatePlot");
    m_plot->setMinimumHeight(220);
    m_plot->addGraph();
    m_plot->graph(0)->setName(tr("requests/s"));
    m_plot->graph(0)->setPen(QPen(QColor(41, 128, 185), 2));
    m_plot->graph(0)->setBrush(QColor(41, 128, 185, 40));
    // Failed requests per second (Result::failedPerSlot), drawn when a run had any.
    m_plot->addGraph();
    m_plot->graph(1)->setName(tr("failed/s"));
    m_plot->graph(1)->setPen(QPen(kRed, 2));
    m_plot->graph(1)->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
    m_plot->xAxis->setLabel(tr("seconds"));
    m_plot->yAxis->setLabel(tr("requests/s"));
    m_plot->yAxis->setNumberFormat("gb");
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(
        0, 0, new QCPTextElement(m_plot, tr("Throughput"), QFont(font().family(), 10, QFont::Bold)));

    // Latency distribution: live from the generator's histogram, then the run's own.
    m_latencyPlot = new QCustomPlot;
    m_latencyPlot->setObjectName("loadLatencyPlot");
    m_latencyPlot->setMinimumHeight(220);
    QCPGraph* bins = m_latencyPlot->addGraph();
    bins->setName(tr("requests"));
    bins->setLineStyle(QCPGraph::lsStepCenter);
    bins->setPen(QPen(QColor(142, 68, 173), 1.5));
    bins->setBrush(QColor(142, 68, 173, 50));
    m_latencyPlot->xAxis->setScaleType(QCPAxis::stLogarithmic);
    m_latencyPlot->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_latencyPlot->xAxis->setNumberFormat("gb");
    m_latencyPlot->xAxis->setLabel(tr("latency (ms, log scale)"));
    m_latencyPlot->yAxis->setLabel(tr("requests"));
    m_latencyPlot->yAxis->setNumberFormat("gb");
    m_latencyPlot->plotLayout()->insertRow(0);
    m_latencyPlot->plotLayout()->addElement(
        0, 0,
        new QCPTextElement(m_latencyPlot, tr("Latency histogram"), QFont(font().family(), 10, QFont::Bold)));
    const QColor markerColors[] = {QColor(39, 174, 96), kRed};
    for (int i = 0; i < 2; ++i) {
        m_markerLines[i] = new QCPItemStraightLine(m_latencyPlot);
        m_markerLines[i]->setPen(QPen(markerColors[i], 1.5, Qt::DashLine));
        m_markerLabels[i] = new QCPItemText(m_latencyPlot);
        m_markerLabels[i]->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        m_markerLabels[i]->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        m_markerLabels[i]->setPadding(QMargins(4, 0, 0, 0));
        m_markerLabels[i]->setColor(markerColors[i]);
        m_markerLines[i]->setVisible(false);
        m_markerLabels[i]->setVisible(false);
    }

    m_selectedBar = new QCPItemRect(m_latencyPlot);
    m_selectedBar->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_selectedBar->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_selectedBar->setPen(QPen(QColor(230, 126, 34), 1.5));
    m_selectedBar->setBrush(QColor(230, 126, 34, 60));
    m_selectedBar->setVisible(false);

    m_table = new QTableWidget(0, 12);
    m_table->setObjectName("loadResults");
    m_table->setHorizontalHeaderLabels({tr("#"), tr("When"), tr("Target"), tr("Conns"), tr("Completed"),
                                        tr("Req/s"), tr("p50 ms"), tr("p90 ms"), tr("p99 ms"), tr("Max ms"),
                                        tr("Errors"), tr("Status")});
    m_table->horizontalHeaderItem(11)->setToolTip(
        tr("finished: the run reached its bound; stopped: Stop ended it early"));
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);

    m_byRequest = new QTableWidget(0, 9);
    m_byRequest->setObjectName("loadByRequest");
    m_byRequest->setHorizontalHeaderLabels({tr("Request"), tr("Completed"), tr("Req/s"), tr("p50 ms"),
                                            tr("p90 ms"), tr("p99 ms"), tr("Max ms"), tr("Errors"),
                                            tr("Statuses")});
    m_byRequest->setToolTip(tr("Each request kind of the run; select one to show only it in the plots"));
    m_byRequest->verticalHeader()->hide();
    m_byRequest->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_byRequest->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_byRequest->setSelectionMode(QAbstractItemView::SingleSelection);
    m_byRequest->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_byRequest->horizontalHeader()->setStretchLastSection(true);
    m_byRequest->hide();
    connect(m_byRequest, &QTableWidget::itemSelectionChanged, this, [this] {
        const auto rows = m_byRequest->selectionModel()->selectedRows();
        showKind(rows.isEmpty() ? -1 : rows.front().row() - 1);
    });

    // Drill-down: a click on a histogram bar or a throughput point lists the run's sampled requests
    // there; one of them opens in the inspector.
    m_samples = new SamplesView(m_server);
    m_samples->setObjectName("loadSamplesView");
    // The shaded bar follows the list: any other selection (All, Failed, a second) hides it.
    connect(m_samples, &SamplesView::selectionChanged, this, [this] {
        const bool bar = m_samples->filter().by == SampleFilter::By::Latency;
        if (m_selectedBar->visible() != bar) {
            m_selectedBar->setVisible(bar);
            m_latencyPlot->replot();
        }
    });
    auto inPlot = [](QCustomPlot* plot, QMouseEvent* event) {
        return event->button() == Qt::LeftButton && plot->axisRect()->rect().contains(event->pos());
    };
    connect(m_latencyPlot, &QCustomPlot::mousePress, this, [this, inPlot](QMouseEvent* event) {
        if (inPlot(m_latencyPlot, event))
            samplesAtLatency(m_latencyPlot->xAxis->pixelToCoord(event->pos().x()));
    });
    connect(m_plot, &QCustomPlot::mousePress, this, [this, inPlot](QMouseEvent* event) {
        if (inPlot(m_plot, event)) samplesAtTime(m_plot->xAxis->pixelToCoord(event->pos().x()));
    });
    m_latencyPlot->setToolTip(tr("Click a bar to list the sampled requests of that latency"));
    m_plot->setToolTip(tr("Click a point to list the sampled requests that completed in that second"));

    m_text = new QPlainTextEdit;
    m_text->setObjectName("loadText");
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setPlaceholderText(tr("The summary of the last run appears here."));

    auto plots = new QSplitter;
    plots->addWidget(m_plot);
    plots->addWidget(m_latencyPlot);
    auto runView = new QSplitter(Qt::Vertical);
    runView->addWidget(plots);
    runView->addWidget(m_table);
    runView->addWidget(m_byRequest);
    runView->addWidget(m_samples);
    runView->addWidget(m_text);
    runView->setStretchFactor(0, 2);
    runView->setStretchFactor(1, 1);
    runView->setStretchFactor(2, 1);
    runView->setStretchFactor(3, 1);
    runView->setStretchFactor(4, 1);

    // The suite: its own bound (per route), the form's connections, threads and pipeline.
    m_suiteUrl = new QLineEdit;
    m_suiteUrl->setObjectName("loadSuiteUrl");
    m_suiteUrl->setPlaceholderText(tr("built-in suite server (this process, loopback)"));
    m_suiteUrl->setToolTip(
        tr("Empty: the suite vhost (resources/bench-suite) is served in this process on "
           "127.0.0.1 for the run. Or the origin of a running suite server, e.g. "
           "http://127.0.0.1:8090 (portico serve --config resources/bench-suite/portico.yaml)"));
    m_suiteDuration = new QLineEdit("3s");
    m_suiteDuration->setObjectName("loadSuiteDuration");
    m_suiteDuration->setToolTip(tr("Measured time per route (11 routes)"));
    m_suiteStart = new QPushButton(tr("Run suite"));
    m_suiteStart->setObjectName("loadSuiteStart");
    m_suiteStart->setToolTip(tr("Run the eleven-route benchmark suite with the form's connections, threads "
                                "and pipeline"));
    connect(m_suiteStart, &QPushButton::clicked, this, &LoadTestPage::startSuite);
    auto suiteBox = new QGroupBox(tr("Benchmark suite (11 routes)"));
    auto suiteForm = new QFormLayout(suiteBox);
    suiteForm->addRow(tr("Server"), m_suiteUrl);
    suiteForm->addRow(tr("Per route"), m_suiteDuration);
    suiteForm->addRow(m_suiteStart);
    leftLayout->insertWidget(leftLayout->count() - 1, suiteBox);

    m_suiteTable = new QTableWidget(0, 6);
    m_suiteTable->setObjectName("loadSuiteTable");
    m_suiteTable->setHorizontalHeaderLabels(
        {tr("Route"), tr("Request"), tr("Req/s"), tr("p50 ms"), tr("p99 ms"), tr("Errors")});
    m_suiteTable->horizontalHeaderItem(5)->setToolTip(tr("answers other than 2xx/3xx, and failed requests"));
    m_suiteTable->verticalHeader()->hide();
    m_suiteTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_suiteTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_suiteTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_suiteTable->horizontalHeader()->setStretchLastSection(true);
    m_suiteSummary = new QLabel(tr("Run the suite to fill this table; past suites are in History."));
    m_suiteSummary->setObjectName("loadSuiteSummary");
    m_suiteSummary->setWordWrap(true);
    auto suiteView = new QWidget;
    auto suiteLayout = new QVBoxLayout(suiteView);
    suiteLayout->addWidget(m_suiteSummary);
    suiteLayout->addWidget(m_suiteTable, 1);

    m_historyDir = load::defaultHistoryDir();
    m_history = new RunHistoryView(m_historyDir);

    m_views = new QTabWidget;
    m_views->setObjectName("loadViews");
    m_views->addTab(runView, tr("Run"));
    m_views->addTab(m_history, tr("History"));
    m_views->addTab(suiteView, tr("Suite"));

    auto splitter = new QSplitter;
    splitter->addWidget(left);
    splitter->addWidget(m_views);
    splitter->setStretchFactor(1, 1);
    auto layout = new QVBoxLayout(this);
    layout->addWidget(splitter);

    m_timer = new QTimer(this);
    m_timer->setInterval(33);
    connect(m_timer, &QTimer::timeout, this, &LoadTestPage::tick);
    connect(m_server, &ServerController::listenersChanged, this, &LoadTestPage::resetDefaults);
    resetDefaults();
    validateForm();
}

LoadTestPage::~LoadTestPage() {
    if (m_thread) {
        m_cancel->cancel();
        m_thread->wait();
        delete m_thread;
    }
}

void LoadTestPage::resetDefaults() {
    // Defaults point at the running server, unless the user typed another target.
    const QString url = m_server->firstHttpUrl();
    if (!url.isEmpty() && (m_url->text().isEmpty() || !m_url->isModified())) m_url->setText(url);
}

QString LoadTestPage::fieldError(const QWidget* field) const {
    if (field == m_url) {
        const QStringList urls = m_url->text().split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
        if (urls.isEmpty()) return tr("required, e.g. http://127.0.0.1:8080/");
        std::string origin;
        for (const QString& url : urls) {
            load::Url parsed;
            std::string why;
            if (!load::parseUrl(url.toStdString(), parsed, why)) return QString::fromStdString(why);
            if (origin.empty()) origin = parsed.origin();
            if (parsed.origin() != origin)
                return tr("all URLs must have one origin (%1), not %2")
                    .arg(QString::fromStdString(origin), QString::fromStdString(parsed.origin()));
        }
        return {};
    }
    if (field == m_duration || field == m_warmup) {
        std::chrono::nanoseconds d{0};
        QString error;
        if (!parseDurationField(static_cast<const QLineEdit*>(field)->text(), true, d, error)) return error;
        if (field == m_duration && d.count() == 0 && m_count->value() == 0 && fieldError(m_count).isEmpty())
            return tr("give a time (e.g. 10s) or a number of requests: a run must end");
        return {};
    }
    if (auto box = qobject_cast<const QSpinBox*>(field)) {
        const qlonglong min = box->property("validMin").toLongLong();
        const qlonglong max = box->property("validMax").toLongLong();
        const QString range = tr("%1 to %2").arg(QLocale().toString(min), QLocale().toString(max));
        if (!box->specialValueText().isEmpty() && box->text() == box->specialValueText()) return {};
        const QString text = box->cleanText().trimmed();
        if (text.isEmpty()) return tr("required: %1").arg(range);
        bool ok = false;
        qlonglong v = box->locale().toLongLong(text, &ok);
        if (!ok) v = text.toLongLong(&ok);
        if (!ok) return tr("a whole number, %1").arg(range);
        if (v < min || v > max) return tr("out of range: %1").arg(range);
        return {};
    }
    return {};
}

bool LoadTestPage::formValid() const {
    for (const auto& [field, label] : m_fieldErrors)
        if (!fieldError(field).isEmpty()) return false;
    return true;
}

int LoadTestPage::validateForm() {
    int bad = 0;
    for (const auto& [field, label] : m_fieldErrors) {
        const QString error = fieldError(field);
        label->setText(error);
        label->setVisible(!error.isEmpty());
        bad += error.isEmpty() ? 0 : 1;
    }
    setRunning(isRunning());
    return bad;
}

void LoadTestPage::saveFormSettings() {
    QSettings settings;
    const QString url = m_url->text().trimmed();
    if (fieldError(m_url).isEmpty()) {
        if (url != m_server->firstHttpUrl())
            settings.setValue(kUrlKey, url);
        else
            settings.remove(kUrlKey); // this server's default follows its port
    }
    std::chrono::nanoseconds d{0};
    QString ignored;
    const QString duration = m_duration->text().trimmed();
    if (!duration.isEmpty() && parseDurationField(duration, false, d, ignored))
        settings.setValue(kDurationKey, duration);
}

bool LoadTestPage::options(load::Options& o, QString& error) const {
    for (const auto& [field, label] : m_fieldErrors) {
        const QString e = fieldError(field);
        if (!e.isEmpty()) {
            error = field->property("fieldName").toString() + ": " + e;
            return false;
        }
    }
    o = load::Options{};
    // Several URLs separated by spaces: each is a request kind of equal weight (as on the CLI).
    for (const QString& url : m_url->text().split(QRegularExpression("\\s+"), Qt::SkipEmptyParts)) {
        load::RequestSpec spec;
        spec.url = url.toStdString();
        spec.method = m_method->currentText().toStdString();
        o.requests.push_back(std::move(spec));
    }
    o.connections = unsigned(m_connections->value());
    o.threads = unsigned(qMin(m_threads->value(), m_connections->value()));
    o.pipeline = unsigned(m_pipeline->value());
    o.count = std::uint64_t(m_count->value());
    o.rate = m_rate->value();
    // A run against this window's own server carries request ids: a sample then opens the
    // server's record of the very same exchange (findServerRecord).
    o.requestId =
        m_server && !o.requests.empty() && targetsListener(m_server->urls(), o.requests.front().url);
    QString ignored;
    parseDurationField(m_duration->text(), true, o.duration, ignored);
    parseDurationField(m_warmup->text(), true, o.warmup, ignored);
    std::string why;
    if (!load::validate(o, why)) {
        error = QString::fromStdString(why);
        return false;
    }
    return true;
}

bool LoadTestPage::start() {
    if (m_thread) return false;
    load::Options o;
    QString error;
    if (!options(o, error)) {
        // The fields say what is wrong (Start is disabled meanwhile); this is for the shortcut.
        validateForm();
        for (const auto& [field, label] : m_fieldErrors)
            if (!label->text().isEmpty()) {
                field->setFocus();
                break;
            }
        if (formValid()) m_formError->setText(error); // not a single field's fault
        return false;
    }
    m_formError->clear();
    clearRunView();
    m_running = o;
    m_captureFrom = m_server ? m_server->engine().lastCapturedId() : 0;
    m_cancel = std::make_shared<engine::Cancel>();
    m_pending = std::make_shared<load::Result>();
    m_saved = std::make_shared<Saved>();
    m_liveRun = std::make_shared<load::Live>();
    auto result = m_pending;
    auto saved = m_saved;
    auto live = m_liveRun;
    auto cancel = m_cancel;
    const auto dir = m_historyDir;
    // Saved like `portico bench` saves (also when stopped early, then labelled so), on the worker:
    // the JSON of a big histogram is not written on the UI thread.
    m_thread = QThread::create([o, result, saved, cancel, dir, live] {
        engine::LoadRun run = engine::runLoad(o, cancel.get(), live.get());
        *result = std::move(run.result);
        if (!result->ok()) return;
        // Stopped = Stop ended it before its bound (not a Stop pressed as it ended anyway).
        saved->stopped = run.stopped;
        std::string label;
        if (saved->stopped) {
            load::Url u;
            std::string ignored;
            label = (load::parseUrl(o.requests.front().url, u, ignored) ? u.target : std::string("run")) +
                    kStoppedLabelSuffix;
        }
        load::RunRecord record;
        if (load::saveRun(*result, dir, label, &record, saved->error)) {
            saved->id = record.id;
            saved->savedAt = record.savedAt;
        }
    });
    m_thread->setObjectName("portico-load");
    connect(m_thread, &QThread::finished, this, &LoadTestPage::onFinished);
    m_lastCompleted = m_rateCompleted = m_liveDone = 0;
    m_lastSampleMs = m_lastRateMs = -1;
    m_rateNow = 0;
    m_clock.start();
    m_thread->start();
    m_timer->start();
    setRunning(true);
    m_progress->setValue(0);
    m_live->setText(tr("Running…"));
    emit runStarted();
    return true;
}

void LoadTestPage::setRunning(bool running) {
    if (!m_start || !m_suiteStart || !m_stop) return; // still building the page
    m_start->setEnabled(!running && formValid());
    // The suite takes connections, threads and pipeline from the form.
    const bool suiteFields = fieldError(m_connections).isEmpty() && fieldError(m_threads).isEmpty() &&
                             fieldError(m_pipeline).isEmpty();
    m_suiteStart->setEnabled(!running && suiteFields);
    m_stop->setEnabled(running);
}

void LoadTestPage::clearRunView() {
    // Nothing of the previous run stays on screen while the next one goes.
    m_summary->clear();
    m_text->clear();
    m_table->clearSelection();
    m_byRequest->setRowCount(0);
    m_byRequest->hide();
    m_shown.reset();
    m_kind = -1;
    m_samples->setRun(nullptr, 0);
    m_plot->graph(0)->data()->clear();
    m_plot->graph(1)->data()->clear();
    m_plot->legend->setVisible(false);
    m_plot->replot();
    m_latencyPlot->graph(0)->data()->clear();
    for (int i = 0; i < 2; ++i) {
        m_markerLines[i]->setVisible(false);
        m_markerLabels[i]->setVisible(false);
    }
    m_latencyPlot->replot();
}

bool LoadTestPage::suiteOptions(load::Options& o, QString& error) const {
    for (const QWidget* field : {static_cast<QWidget*>(m_connections), static_cast<QWidget*>(m_threads),
                                 static_cast<QWidget*>(m_pipeline)}) {
        const QString e = fieldError(field);
        if (!e.isEmpty()) {
            error = field->property("fieldName").toString() + ": " + e;
            return false;
        }
    }
    o = load::Options{};
    o.connections = unsigned(m_connections->value());
    o.threads = unsigned(qMin(m_threads->value(), m_connections->value()));
    o.pipeline = unsigned(m_pipeline->value());
    config::Duration d{0};
    const QString duration = m_suiteDuration->text().trimmed();
    if (!config::parseDuration(duration.toStdString(), d) || d.count() <= 0) {
        error = tr("Suite per-route time: write e.g. 3s or 500ms, got '%1'").arg(duration);
        return false;
    }
    o.duration = d;
    o.stopGrace = std::chrono::seconds(2);
    load::RequestSpec probe; // validate() wants a request; runSuite replaces it per route
    probe.url = "http://127.0.0.1/";
    o.requests = {probe};
    std::string why;
    if (!load::validate(o, why)) {
        error = QString::fromStdString(why);
        return false;
    }
    return true;
}

bool LoadTestPage::startSuite() {
    if (m_thread) return false;
    load::Options o;
    QString error;
    if (!suiteOptions(o, error)) {
        m_formError->setText(error);
        return false;
    }
    const std::string url = m_suiteUrl->text().trimmed().toStdString();
    QString configFile;
    if (url.empty()) {
        configFile = bundledSuiteConfig();
        if (!QFileInfo::exists(configFile)) {
            m_formError->setText(
                tr("The suite's config is missing (%1): give the URL of a suite server.").arg(configFile));
            return false;
        }
    } else {
        load::Url parsed;
        std::string why;
        if (!load::parseUrl(url, parsed, why) || parsed.target != "/") {
            m_formError->setText(why.empty() ? tr("Suite server: give only the origin, e.g. %1")
                                                   .arg(QString::fromLatin1(load::kSuiteDefaultUrl))
                                             : QString::fromStdString(why));
            return false;
        }
    }
    m_formError->clear();
    m_running = o;
    m_cancel = std::make_shared<engine::Cancel>();
    m_suiteRunning = true;
    m_suiteRouteDuration = o.duration;
    m_suiteDone = 0;
    m_suiteRouteStartMs = 0;
    m_suiteRows.clear();
    m_suiteError.clear();
    m_suiteTable->setRowCount(0);
    m_suiteSummary->setText(tr("Running the suite…"));
    m_saved = std::make_shared<Saved>();
    auto saved = m_saved;
    auto cancel = m_cancel;
    const auto dir = m_historyDir;
    m_thread = QThread::create([this, o, url, configFile, saved, cancel, dir] {
        engine::Engine server; // only when no URL is given
        std::string base = url;
        if (base.empty()) {
            base = startSuiteServer(server, configFile, saved->suiteError);
            if (base.empty()) return;
        }
        auto progress = [this](std::size_t i, const load::SuiteRun& run) {
            SuiteRow row;
            row.name = QString::fromStdString(run.route.name);
            row.target = QString::fromStdString(run.route.method + " " + run.route.target);
            if (run.result.ok() && run.result.latency) {
                row.requestsPerSecond = run.result.requestsPerSecond();
                row.p50 = run.result.latency->valueAtPercentile(50);
                row.p99 = run.result.latency->valueAtPercentile(99);
                row.bad = run.bad();
            } else {
                row.error = QString::fromStdString(run.result.error);
            }
            // Queued to the page (dropped if it is gone; its destructor waits for this thread).
            QMetaObject::invokeMethod(
                this, [this, i, row] { addSuiteRow(int(i), row); }, Qt::QueuedConnection);
        };
        const load::SuiteResult suite = engine::runLoadSuite(base, o, cancel.get(), progress);
        server.stop();
        saved->suiteBaseUrl = suite.baseUrl;
        saved->suiteError = suite.error;
        saved->geometricMean = suite.geometricMean();
        saved->suiteAborted = cancel->cancelled() || suite.runs.size() < load::suiteRoutes().size();
        if (suite.ok() && !saved->suiteAborted) { // as the CLI: a stopped suite is not saved
            load::RunRecord record;
            const std::string label = url.empty() ? "suite (built-in server)" : "suite";
            if (load::saveSuite(suite, dir, label, &record, saved->error)) saved->id = record.id;
        }
    });
    m_thread->setObjectName("portico-suite");
    connect(m_thread, &QThread::finished, this, &LoadTestPage::onSuiteFinished);
    m_clock.start();
    m_thread->start();
    m_timer->start();
    setRunning(true);
    m_progress->setValue(0);
    m_live->setText(tr("Suite: starting…"));
    m_views->setCurrentIndex(2);
    return true;
}

void LoadTestPage::addSuiteRow(int index, const SuiteRow& row) {
    if (!m_suiteRunning) return;
    m_suiteDone = index + 1;
    m_suiteRouteStartMs = m_clock.elapsed();
    m_suiteRows << row;
    const int r = m_suiteTable->rowCount();
    m_suiteTable->insertRow(r);
    const QStringList cells =
        row.error.isEmpty()
            ? QStringList{row.name,    row.target,  QLocale().toString(row.requestsPerSecond, 'f', 0),
                          ms(row.p50), ms(row.p99), QLocale().toString(qulonglong(row.bad))}
            : QStringList{row.name, row.target, tr("error: %1").arg(row.error), {}, {}, {}};
    for (int c = 0; c < cells.size(); ++c) {
        auto item = new QTableWidgetItem(cells[c]);
        if (c >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        if ((c == 5 && row.bad) || !row.error.isEmpty()) item->setForeground(QColor(192, 57, 43));
        m_suiteTable->setItem(r, c, item);
    }
}

void LoadTestPage::onSuiteFinished() {
    m_timer->stop();
    m_thread->deleteLater();
    m_thread = nullptr;
    m_suiteRunning = false;
    setRunning(false);
    const auto saved = std::move(m_saved);
    m_suiteError = QString::fromStdString(saved->suiteError);
    m_lastSavedId = QString::fromStdString(saved->id);
    m_lastSaveError = QString::fromStdString(saved->error);
    m_progress->setValue(m_suiteError.isEmpty() && !saved->suiteAborted ? 1000 : 0);
    QString summary;
    if (!m_suiteError.isEmpty())
        summary = tr("<span style='color:#c0392b'>Suite failed: %1</span>").arg(m_suiteError.toHtmlEscaped());
    else if (saved->suiteAborted)
        summary = m_suiteRows.size() == 1
                      ? tr("Suite stopped after 1 route; not saved.")
                      : tr("Suite stopped after %1 routes; not saved.").arg(m_suiteRows.size());
    else
        summary = tr("Suite @ %1: geometric mean <b>%2</b> req/s over %3 routes.")
                      .arg(QString::fromStdString(saved->suiteBaseUrl))
                      .arg(QLocale().toString(saved->geometricMean, 'f', 0))
                      .arg(m_suiteRows.size());
    if (!m_lastSavedId.isEmpty())
        summary += tr(" Saved in the history as %1.").arg(m_lastSavedId);
    else if (!m_lastSaveError.isEmpty())
        summary +=
            tr(" <span style='color:#c0392b'>Not saved: %1</span>").arg(m_lastSaveError.toHtmlEscaped());
    m_suiteSummary->setText(summary);
    m_live->setText(m_suiteError.isEmpty() ? tr("Suite finished.") : tr("Suite failed."));
    if (!m_lastSavedId.isEmpty()) m_history->refresh({m_lastSavedId});
    emit suiteFinished();
}

void LoadTestPage::setHistoryDir(const std::filesystem::path& dir) {
    m_historyDir = dir;
    m_history->setDirectory(dir);
}

bool LoadTestPage::showView(const QString& name) {
    const QString n = name.toLower();
    const int index = n == "run" ? 0 : n == "history" ? 1 : n == "suite" ? 2 : -1;
    if (index < 0) return false;
    m_views->setCurrentIndex(index);
    return true;
}

void LoadTestPage::stop() {
    if (!m_thread) return;
    m_cancel->cancel();
    m_live->setText(tr("Stopping (in-flight requests get the stop grace)…"));
}

void LoadTestPage::tick() {
    const qint64 now = m_clock.elapsed();
    if (m_suiteRunning) {
        const double routes = double(load::suiteRoutes().size());
        const double routeMs = double(m_suiteRouteDuration.count()) / 1e6;
        const double within = routeMs > 0 ? qBound(0.0, (now - m_suiteRouteStartMs) / routeMs, 1.0) : 0;
        m_progress->setValue(int(qBound(0.0, (m_suiteDone + within) / routes, 1.0) * 1000));
        const int next = qMin(m_suiteDone, int(routes) - 1);
        m_live->setText(tr("Suite: route %1 of %2 (%3) · %4 s")
                            .arg(next + 1)
                            .arg(int(routes))
                            .arg(QString::fromStdString(load::suiteRoutes()[std::size_t(next)].name))
                            .arg(now / 1000.0, 0, 'f', 1));
        return;
    }
    // The workers publish about 4 times a second; reading more often only costs merges.
    if (m_lastSampleMs < 0 || now - m_lastSampleMs >= 250) sampleLive(now);
    const double total = double((m_running.warmup + m_running.duration).count()) / 1e6;
    double fraction = total > 0 ? now / total : 0;
    if (m_running.count) fraction = qMax(fraction, double(m_liveDone) / double(m_running.count));
    m_progress->setValue(int(qBound(0.0, fraction, 1.0) * 1000));
}

void LoadTestPage::sampleLive(qint64 nowMs) {
    m_lastSampleMs = nowMs;
    if (!m_liveRun) return;
    if (!m_liveLatency) m_liveLatency = std::make_unique<stats::Histogram>();
    const load::Live::Totals t = m_liveRun->totals(m_liveLatency.get());
    if (!t.started) {
        m_live->setText(tr("%1 s · connecting…").arg(nowMs / 1000.0, 0, 'f', 1));
        return;
    }
    m_liveDone = t.completed + t.failed;
    const double elapsed = std::chrono::duration<double>(t.elapsed).count();
    const double warmup = std::chrono::duration<double>(m_running.warmup).count();
    const qint64 elapsedMs = qint64(elapsed * 1000);
    if (elapsed < warmup) {
        m_live->setText(tr("%1 s · warm-up (not measured)").arg(elapsed, 0, 'f', 1));
        return;
    }
    // Throughput: one point per half second of measured completions (finer would show the
    // threads' publishing rhythm, not the server's).
    if (m_lastRateMs < 0) {
        m_lastRateMs = elapsedMs;
        m_rateCompleted = t.completed;
    } else if (elapsedMs - m_lastRateMs >= 500) {
        m_rateNow = double(t.completed - m_rateCompleted) * 1000.0 / double(elapsedMs - m_lastRateMs);
        const double mid = (m_lastRateMs + elapsedMs) / 2000.0 - warmup;
        m_plot->graph(0)->addData(qMax(0.0, mid), m_rateNow);
        m_lastRateMs = elapsedMs;
        m_rateCompleted = t.completed;
        if (m_plot->isVisible()) {
            m_plot->rescaleAxes();
            m_plot->yAxis->setRangeLower(0);
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        }
    }
    QString text = tr("%1 s · %2 requests · %3 req/s")
                       .arg(elapsed - warmup, 0, 'f', 1)
                       .arg(QLocale().toString(qulonglong(t.completed)))
                       .arg(QLocale().toString(m_rateNow, 'f', 0));
    if (t.completed) text += tr(" · p50 %1 ms · p99 %2 ms").arg(ms(t.p50Ns), ms(t.p99Ns));
    if (t.failed) text += tr(" · %1 failed").arg(QLocale().toString(qulonglong(t.failed)));
    if (!m_cancel->cancelled()) m_live->setText(text); // else it keeps saying that it is stopping
    if (m_lastCompleted != t.completed) drawLatency(*m_liveLatency);
    m_lastCompleted = t.completed;
}

void LoadTestPage::drawLatency(const stats::Histogram& h) {
    // HDR buckets are far finer than a screen: summed into log-spaced bins (as the Latency tab).
    QMap<int, double> bins;
    h.forEachBucket([&](const stats::Histogram::Bucket& b) {
        const double mid = (double(b.lowestNs) + double(b.highestNs)) / 2.0 / 1e6;
        bins[int(std::floor(std::log10(mid) * kBinsPerDecade))] += double(b.count);
    });
    QVector<double> keys, values;
    for (auto it = bins.begin(); it != bins.end(); ++it) {
        keys << std::pow(10.0, (it.key() + 0.5) / kBinsPerDecade);
        values << it.value();
    }
    m_latencyPlot->graph(0)->setData(keys, values, true);
    const bool any = h.count() > 0;
    if (any) {
        m_latencyPlot->rescaleAxes();
        m_latencyPlot->yAxis->setRange(0, m_latencyPlot->yAxis->range().upper * 1.25);
        const QCPRange x = m_latencyPlot->xAxis->range();
        m_latencyPlot->xAxis->setRange(x.lower / 1.5, x.upper * 1.5);
    }
    const double percentiles[] = {50, 99};
    for (int i = 0; i < 2; ++i) {
        const double v = double(h.valueAtPercentile(percentiles[i])) / 1e6;
        m_markerLines[i]->point1->setCoords(v, 0);
        m_markerLines[i]->point2->setCoords(v, 1);
        m_markerLabels[i]->position->setCoords(v, 0.03 + 0.08 * i);
        m_markerLabels[i]->setText(
            tr("p%1 %2 ms").arg(percentiles[i]).arg(ms(h.valueAtPercentile(percentiles[i]))));
        m_markerLines[i]->setVisible(any);
        m_markerLabels[i]->setVisible(any);
    }
    if (m_latencyPlot->isVisible()) m_latencyPlot->replot(QCustomPlot::rpQueuedReplot);
}

void LoadTestPage::onFinished() {
    m_timer->stop();
    m_thread->deleteLater();
    m_thread = nullptr;
    setRunning(false);
    m_liveRun.reset();
    std::shared_ptr<const load::Result> result = std::move(m_pending);
    const auto saved = std::move(m_saved);
    if (!result->ok()) {
        m_live->setText(tr("Failed: %1").arg(QString::fromStdString(result->error)));
        m_progress->setValue(0);
        return;
    }
    // A stopped run's bar stays where it was: it did not run to its bound.
    if (!saved->stopped) m_progress->setValue(1000);
    // One time for the run, in History's format: its save time (the end time if it was not saved).
    const QString when = historyTime(saved->savedAt.empty()
                                         ? QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString()
                                         : saved->savedAt);
    LoadRun run{int(m_runs.size()) + 1, when, saved->stopped, result, m_captureFrom};
    m_runs << run;
    showResult(*result, saved->stopped);
    m_lastSavedId = QString::fromStdString(saved->id);
    m_lastSaveError = QString::fromStdString(saved->error);
    if (!m_lastSavedId.isEmpty())
        m_history->refresh({m_lastSavedId});
    else
        m_live->setText(m_live->text() + tr(" Not saved in the history: %1").arg(m_lastSaveError));
    emit runFinished(run);
}

void LoadTestPage::showByRequest(const load::Result& r) {
    m_shown = m_runs.isEmpty() ? nullptr : m_runs.last().result;
    m_byRequest->setRowCount(0);
    if (r.byRequest.size() < 2 || !m_shown) {
        m_byRequest->hide();
        return;
    }
    const double seconds = std::chrono::duration<double>(r.measured).count();
    auto addRow = [&](const QString& name, const load::RequestCounts& c, const stats::Histogram* h,
                      const std::map<int, std::uint64_t>& statuses) {
        const int row = m_byRequest->rowCount();
        m_byRequest->insertRow(row);
        QStringList codes;
        for (const auto& [code, n] : statuses)
            codes << QStringLiteral("%1: %2").arg(code).arg(QLocale().toString(qulonglong(n)));
        const bool any = h && c.completed;
        const QStringList cells{name,
                                QLocale().toString(qulonglong(c.completed)),
                                QLocale().toString(seconds > 0 ? double(c.completed) / seconds : 0.0, 'f', 0),
                                any ? ms(h->valueAtPercentile(50)) : QStringLiteral("-"),
                                any ? ms(h->valueAtPercentile(90)) : QStringLiteral("-"),
                                any ? ms(h->valueAtPercentile(99)) : QStringLiteral("-"),
                                any ? ms(h->max()) : QStringLiteral("-"),
                                QLocale().toString(qulonglong(c.failed)),
                                codes.join(QStringLiteral(", "))};
        for (int col = 0; col < cells.size(); ++col) {
            auto item = new QTableWidgetItem(cells[col]);
            if (col >= 1 && col <= 7) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (col == 0) item->setToolTip(name);
            m_byRequest->setItem(row, col, item);
        }
    };
    addRow(tr("All requests"), r.requests, r.latency.get(), r.statuses);
    for (std::size_t i = 0; i < r.byRequest.size(); ++i) {
        const auto& spec = r.options.requests[i];
        load::Url u;
        std::string ignored;
        const std::string target = load::parseUrl(spec.url, u, ignored) ? u.target : spec.url;
        const auto& k = r.byRequest[i];
        addRow(QString::fromStdString(spec.method + " " + target), k.requests, k.latency.get(), k.statuses);
    }
    m_byRequest->show();
}

void LoadTestPage::showKind(int kind) {
    if (!m_shown) return;
    const load::Result& r = *m_shown;
    const bool one =
        kind >= 0 && std::size_t(kind) < r.byRequest.size() && r.byRequest[std::size_t(kind)].latency;
    m_kind = one ? kind : -1;
    m_samples->setRequest(m_kind);
    const ThroughputSeries series =
        throughputSeries(one ? r.byRequest[std::size_t(kind)].perSlot : r.perSlot, r.measured);
    m_plot->graph(0)->setData(series.keys, series.values, true);
    showFailures(one ? nullptr : &r);
    m_plot->rescaleAxes();
    m_plot->yAxis->setRangeLower(0);
    m_plot->replot();
    drawLatency(one ? *r.byRequest[std::size_t(kind)].latency : *r.latency);
}

void LoadTestPage::showResult(const load::Result& r, bool stopped) {
    // The generator's own time series replaces the live estimate, and its histogram the live one.
    const ThroughputSeries series = throughputSeries(r.perSlot, r.measured);
    m_plot->graph(0)->setData(series.keys, series.values, true);
    showFailures(&r);
    m_plot->rescaleAxes();
    m_plot->yAxis->setRangeLower(0);
    m_plot->replot();

    const auto& h = *r.latency;
    const std::uint64_t errors = r.errors.connect + r.errors.reset + r.errors.timeout + r.errors.protocol;
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    const QString target =
        QString::fromStdString(r.options.requests.front().url) +
        (r.options.requests.size() > 1 ? tr(" +%1 more").arg(r.options.requests.size() - 1) : QString());
    const QStringList cells{QString::number(m_runs.size()),
                            m_runs.last().when,
                            target,
                            QString::number(r.options.connections),
                            QLocale().toString(qulonglong(r.requests.completed)),
                            QLocale().toString(r.requestsPerSecond(), 'f', 0),
                            ms(h.valueAtPercentile(50)),
                            ms(h.valueAtPercentile(90)),
                            ms(h.valueAtPercentile(99)),
                            ms(h.max()),
                            QString::number(errors),
                            stopped ? tr("stopped") : tr("finished")};
    for (int c = 0; c < cells.size(); ++c) {
        auto item = new QTableWidgetItem(cells[c]);
        if (c >= 3 && c < 11) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        if (c == 11 && stopped) item->setForeground(QColor(211, 84, 0));
        m_table->setItem(row, c, item);
    }
    m_table->selectRow(row);
    m_text->setPlainText(QString::fromStdString(load::summaryText(r)));
    showByRequest(r);
    m_kind = -1;
    m_samples->setRun(m_runs.isEmpty() ? nullptr : m_runs.last().result,
                      m_runs.isEmpty() ? 0 : m_runs.last().captureFromId);
    drawLatency(h);
    const QString requests = QLocale().toString(qulonglong(r.requests.completed));
    const double seconds = std::chrono::duration<double>(r.measured).count();
    if (stopped)
        m_live->setText(
            (r.requests.completed == 1
                 ? tr("Stopped by the user: %1 request in %2 s (the run did not reach its bound).")
                 : tr("Stopped by the user: %1 requests in %2 s (the run did not reach its bound)."))
                .arg(requests)
                .arg(seconds, 0, 'f', 2));
    else
        m_live->setText((r.requests.completed == 1 ? tr("Finished: %1 request in %2 s.")
                                                   : tr("Finished: %1 requests in %2 s."))
                            .arg(requests)
                            .arg(seconds, 0, 'f', 2));
    m_summary->setText(tr("<table cellspacing=6><tr><td><b>%1</b><br>req/s</td><td><b>%2</b><br>p50 ms</td>"
                          "<td><b>%3</b><br>p90 ms</td><td><b>%4</b><br>p99 "
                          "ms</td><td><b>%5</b><br>errors</td></tr></table>")
                           .arg(QLocale().toString(r.requestsPerSecond(), 'f', 0),
                                ms(h.valueAtPercentile(50)), ms(h.valueAtPercentile(90)),
                                ms(h.valueAtPercentile(99)))
                           .arg(errors));
}

} // namespace portico::ui

namespace portico::ui {

std::pair<std::uint64_t, std::uint64_t> LoadTestPage::latencyBarAt(double ms) {
    // drawLatency puts bin k's point at 10^((k + 0.5) / kBinsPerDecade) ms and draws it as a step
    // centred there on the log axis: the bar spans [10^(k / n), 10^((k + 1) / n)) ms.
    if (!(ms > 0)) return {0, 0};
    const double k = std::floor(std::log10(ms) * kBinsPerDecade);
    const auto ns = [](double exponent) {
        return std::uint64_t(std::llround(std::pow(10.0, exponent / kBinsPerDecade) * 1e6));
    };
    return {ns(k), ns(k + 1)};
}

void LoadTestPage::showFailures(const load::Result* r) {
    // The failed requests' series is per run, not per request kind: hidden while a kind is shown.
    const bool any = r && r->requests.failed > 0 && r->failedPerSlot.size() == r->perSlot.size();
    if (any) {
        const ThroughputSeries failed = throughputSeries(r->failedPerSlot, r->measured);
        m_plot->graph(1)->setData(failed.keys, failed.values, true);
    } else {
        m_plot->graph(1)->data()->clear();
    }
    m_plot->legend->setVisible(any);
}

bool LoadTestPage::samplesAtLatency(double at) {
    if (!m_shown || m_thread) return false;
    const auto [low, high] = latencyBarAt(at);
    if (high == 0) return false;
    m_selectedBar->topLeft->setCoords(double(low) / 1e6, 0);
    m_selectedBar->bottomRight->setCoords(double(high) / 1e6, 1);
    m_samples->select({SampleFilter::By::Latency, std::int64_t(low), std::int64_t(high), m_kind},
                      tr("latency %1–%2 ms").arg(ms(low), ms(high)));
    m_latencyPlot->replot(); // the shaded bar moved
    return true;
}

bool LoadTestPage::samplesAtTime(double seconds) {
    if (!m_shown || m_thread || !(seconds >= 0)) return false;
    const double second = std::floor(seconds);
    m_samples->select(
        {SampleFilter::By::Completion, std::int64_t(second * 1e9), std::int64_t((second + 1) * 1e9), m_kind},
        tr("done %1–%2 s").arg(second).arg(second + 1));
    return true;
}

} // namespace portico::ui

// LoadTestPage: the load generator and the suite on a worker thread, live progress from the engine's
// counters, runs saved in the history folder that `portico bench` shares.
#include "loadtestpage.h"

#include "runhistoryview.h"
#include "servercontroller.h"

#include <portico/config/loader.h>
#include <portico/engine/engine.h>
#include <portico/load/history.h>
#include <portico/load/runner.h>

#include <qcustomplot.h>

#include <algorithm>

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
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
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

QString ms(std::uint64_t ns) { return QString::number(ns / 1e6, 'f', ns < 10'000'000 ? 3 : 1); }

QSpinBox* spin(int min, int max, int value, const QString& name) {
    auto s = new QSpinBox;
    s->setRange(min, max);
    s->setValue(value);
    s->setObjectName(name);
    s->setGroupSeparatorShown(true);
    return s;
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

LoadTestPage::LoadTestPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    qRegisterMetaType<LoadRun>();
    m_url = new QLineEdit;
    m_url->setObjectName("loadUrl");
    m_method = new QComboBox;
    m_method->setObjectName("loadMethod");
    m_method->addItems({"GET", "HEAD", "POST", "PUT", "DELETE"});
    m_connections = spin(1, 100000, 16, "loadConnections");
    m_threads = spin(1, 256, qBound(1, QThread::idealThreadCount() / 2, 4), "loadThreads");
    m_pipeline = spin(1, 1024, 1, "loadPipeline");
    m_duration = new QLineEdit("5s");
    m_duration->setObjectName("loadDuration");
    m_duration->setPlaceholderText(tr("e.g. 10s (empty: bounded by count)"));
    m_count = spin(0, 2'000'000'000, 0, "loadCount");
    m_count->setSpecialValueText(tr("no limit"));
    m_rate = spin(0, 10'000'000, 0, "loadRate");
    m_rate->setSpecialValueText(tr("as fast as possible (closed model)"));
    m_rate->setSuffix(tr(" req/s"));
    m_warmup = new QLineEdit;
    m_warmup->setObjectName("loadWarmup");
    m_warmup->setPlaceholderText(tr("none"));
    m_formError = new QLabel;
    m_formError->setObjectName("loadFormError");
    m_formError->setStyleSheet("QLabel { color: #c0392b; }");
    m_formError->setWordWrap(true);

    auto form = new QFormLayout;
    form->addRow(tr("URL"), m_url);
    form->addRow(tr("Method"), m_method);
    form->addRow(tr("Connections"), m_connections);
    form->addRow(tr("Threads"), m_threads);
    form->addRow(tr("Pipeline"), m_pipeline);
    form->addRow(tr("Duration"), m_duration);
    form->addRow(tr("Requests"), m_count);
    form->addRow(tr("Arrival rate"), m_rate);
    form->addRow(tr("Warm-up"), m_warmup);
    form->addRow(m_formError);

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
    m_plot->xAxis->setLabel(tr("seconds"));
    m_plot->yAxis->setLabel(tr("requests/s"));
    m_plot->yAxis->setNumberFormat("gb");
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(
        0, 0, new QCPTextElement(m_plot, tr("Throughput"), QFont(font().family(), 10, QFont::Bold)));

    m_table = new QTableWidget(0, 11);
    m_table->setObjectName("loadResults");
    m_table->setHorizontalHeaderLabels({tr("#"), tr("When"), tr("Target"), tr("Conns"), tr("Completed"),
                                        tr("Req/s"), tr("p50 ms"), tr("p90 ms"), tr("p99 ms"), tr("Max ms"),
                                        tr("Errors")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);

    m_text = new QPlainTextEdit;
    m_text->setObjectName("loadText");
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setPlaceholderText(tr("The summary of the last run appears here."));

    auto runView = new QSplitter(Qt::Vertical);
    runView->addWidget(m_plot);
    runView->addWidget(m_table);
    runView->addWidget(m_text);
    runView->setStretchFactor(0, 2);
    runView->setStretchFactor(1, 1);
    runView->setStretchFactor(2, 1);

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
}

LoadTestPage::~LoadTestPage() {
    if (m_thread) {
        m_abort = true;
        m_thread->wait();
        delete m_thread;
    }
}

void LoadTestPage::resetDefaults() {
    // Defaults point at the running server, unless the user typed another target.
    const QString url = m_server->firstHttpUrl();
    if (!url.isEmpty() && (m_url->text().isEmpty() || !m_url->isModified())) m_url->setText(url);
}

bool LoadTestPage::options(load::Options& o, QString& error) const {
    load::RequestSpec spec;
    spec.url = m_url->text().trimmed().toStdString();
    spec.method = m_method->currentText().toStdString();
    o = load::Options{};
    o.requests = {spec};
    o.connections = unsigned(m_connections->value());
    o.threads = unsigned(qMin(m_threads->value(), m_connections->value()));
    o.pipeline = unsigned(m_pipeline->value());
    o.count = std::uint64_t(m_count->value());
    o.rate = m_rate->value();
    config::Duration d{0};
    const QString duration = m_duration->text().trimmed();
    if (!duration.isEmpty() && !config::parseDuration(duration.toStdString(), d)) {
        error = tr("Duration: write e.g. 10s or 500ms, got '%1'").arg(duration);
        return false;
    }
    o.duration = d;
    const QString warmup = m_warmup->text().trimmed();
    d = config::Duration(0);
    if (!warmup.isEmpty() && !config::parseDuration(warmup.toStdString(), d)) {
        error = tr("Warm-up: write e.g. 1s, got '%1'").arg(warmup);
        return false;
    }
    o.warmup = d;
    load::Url parsed;
    std::string why;
    if (!load::parseUrl(spec.url, parsed, why)) {
        error = QString::fromStdString(why);
        return false;
    }
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
        m_formError->setText(error);
        return false;
    }
    m_formError->clear();
    // Live numbers come from the engine's counters when the target is this server.
    load::Url target;
    std::string why;
    load::parseUrl(o.requests.front().url, target, why);
    m_targetIsServer = false;
    for (const auto& ep : m_server->engine().endpoints())
        if (!ep.tls && ep.port == target.port) m_targetIsServer = true;
    m_running = o;
    m_abort = false;
    m_pending = std::make_shared<load::Result>();
    m_saved = std::make_shared<Saved>();
    auto result = m_pending;
    auto saved = m_saved;
    const std::atomic<bool>* abort = &m_abort;
    const auto dir = m_historyDir;
    // Saved like `portico bench` saves (also when stopped early), on the worker: the JSON of a big
    // histogram is not written on the UI thread.
    m_thread = QThread::create([o, result, saved, abort, dir] {
        *result = load::run(o, abort);
        if (!result->ok()) return;
        load::RunRecord record;
        if (load::saveRun(*result, dir, "", &record, saved->error)) saved->id = record.id;
    });
    m_thread->setObjectName("portico-load");
    connect(m_thread, &QThread::finished, this, &LoadTestPage::onFinished);
    m_startRequests = m_lastRequests = m_server->live().requests;
    m_lastMs = 0;
    m_rateNow = 0;
    m_plot->graph(0)->data()->clear();
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
    m_start->setEnabled(!running);
    m_suiteStart->setEnabled(!running);
    m_stop->setEnabled(running);
}

bool LoadTestPage::suiteOptions(load::Options& o, QString& error) const {
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
    m_abort = false;
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
    const std::atomic<bool>* abort = &m_abort;
    const auto dir = m_historyDir;
    m_thread = QThread::create([this, o, url, configFile, saved, abort, dir] {
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
        const load::SuiteResult suite = load::runSuite(base, o, abort, progress);
        server.stop();
        saved->suiteBaseUrl = suite.baseUrl;
        saved->suiteError = suite.error;
        saved->geometricMean = suite.geometricMean();
        saved->suiteAborted = abort->load() || suite.runs.size() < load::suiteRoutes().size();
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
    m_abort = true;
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
    const double total = double((m_running.warmup + m_running.duration).count()) / 1e6;
    double fraction = total > 0 ? now / total : 0;
    if (m_targetIsServer) {
        // Sampled off the UI thread: the engine's mutex is busy while the server is.
        const std::uint64_t requests = std::max(m_server->live().requests, m_lastRequests);
        if (now - m_lastMs >= 100) {
            m_rateNow = double(requests - m_lastRequests) * 1000.0 / double(now - m_lastMs);
            m_plot->graph(0)->addData(now / 1000.0, m_rateNow);
            m_lastRequests = requests;
            m_lastMs = now;
            if (m_plot->isVisible()) {
                m_plot->rescaleAxes();
                m_plot->yAxis->setRangeLower(0);
                m_plot->replot(QCustomPlot::rpQueuedReplot);
            }
        }
        const std::uint64_t done = requests - m_startRequests;
        if (m_running.count) fraction = qMax(fraction, double(done) / double(m_running.count));
        m_live->setText(tr("%1 s · %2 requests · %3 req/s (server side)")
                            .arg(now / 1000.0, 0, 'f', 1)
                            .arg(QLocale().toString(qulonglong(done)))
                            .arg(QLocale().toString(m_rateNow, 'f', 0)));
    } else {
        m_live->setText(tr("%1 s · live numbers are shown for this server's own listeners only")
                            .arg(now / 1000.0, 0, 'f', 1));
    }
    m_progress->setValue(int(qBound(0.0, fraction, 1.0) * 1000));
}

void LoadTestPage::onFinished() {
    m_timer->stop();
    m_thread->deleteLater();
    m_thread = nullptr;
    setRunning(false);
    std::shared_ptr<const load::Result> result = std::move(m_pending);
    const auto saved = std::move(m_saved);
    if (!result->ok()) {
        m_live->setText(tr("Failed: %1").arg(QString::fromStdString(result->error)));
        m_progress->setValue(0);
        return;
    }
    m_progress->setValue(1000);
    LoadRun run{int(m_runs.size()) + 1, QTime::currentTime().toString("HH:mm:ss"), result};
    m_runs << run;
    showResult(*result);
    m_lastSavedId = QString::fromStdString(saved->id);
    m_lastSaveError = QString::fromStdString(saved->error);
    if (!m_lastSavedId.isEmpty())
        m_history->refresh({m_lastSavedId});
    else
        m_live->setText(m_live->text() + tr(" Not saved in the history: %1").arg(m_lastSaveError));
    emit runFinished(run);
}

void LoadTestPage::showResult(const load::Result& r) {
    // The generator's own time series replaces the live estimate.
    m_plot->graph(0)->data()->clear();
    const double slot = std::chrono::duration<double>(load::Result::kSlot).count();
    for (std::size_t i = 0; i < r.perSlot.size(); ++i)
        m_plot->graph(0)->addData((i + 0.5) * slot, r.perSlot[i] / slot);
    m_plot->rescaleAxes();
    m_plot->yAxis->setRangeLower(0);
    m_plot->replot();

    const auto& h = *r.latency;
    const std::uint64_t errors = r.errors.connect + r.errors.reset + r.errors.timeout + r.errors.protocol;
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    const QStringList cells{QString::number(m_runs.size()),
                            m_runs.last().when,
                            QString::fromStdString(r.options.requests.front().url),
                            QString::number(r.options.connections),
                            QLocale().toString(qulonglong(r.requests.completed)),
                            QLocale().toString(r.requestsPerSecond(), 'f', 0),
                            ms(h.valueAtPercentile(50)),
                            ms(h.valueAtPercentile(90)),
                            ms(h.valueAtPercentile(99)),
                            ms(h.max()),
                            QString::number(errors)};
    for (int c = 0; c < cells.size(); ++c) {
        auto item = new QTableWidgetItem(cells[c]);
        if (c >= 3) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(row, c, item);
    }
    m_table->selectRow(row);
    m_text->setPlainText(QString::fromStdString(load::summaryText(r)));
    m_live->setText((r.requests.completed == 1 ? tr("Finished: %1 request in %2 s.")
                                               : tr("Finished: %1 requests in %2 s."))
                        .arg(QLocale().toString(qulonglong(r.requests.completed)))
                        .arg(std::chrono::duration<double>(r.measured).count(), 0, 'f', 2));
    m_summary->setText(tr("<table cellspacing=6><tr><td><b>%1</b><br>req/s</td><td><b>%2</b><br>p50 ms</td>"
                          "<td><b>%3</b><br>p90 ms</td><td><b>%4</b><br>p99 "
                          "ms</td><td><b>%5</b><br>errors</td></tr></table>")
                           .arg(QLocale().toString(r.requestsPerSecond(), 'f', 0),
                                ms(h.valueAtPercentile(50)), ms(h.valueAtPercentile(90)),
                                ms(h.valueAtPercentile(99)))
                           .arg(errors));
}

} // namespace portico::ui

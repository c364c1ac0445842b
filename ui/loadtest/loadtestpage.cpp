// LoadTestPage: the load generator on a worker thread, live progress from the engine's counters.
#include "loadtestpage.h"

#include "servercontroller.h"

#include <portico/config/loader.h>
#include <portico/load/runner.h>

#include <qcustomplot.h>

#include <algorithm>

#include <QComboBox>
#include <QDateTime>
#include <QFontDatabase>
#include <QFormLayout>
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

    auto right = new QSplitter(Qt::Vertical);
    right->addWidget(m_plot);
    right->addWidget(m_table);
    right->addWidget(m_text);
    right->setStretchFactor(0, 2);
    right->setStretchFactor(1, 1);
    right->setStretchFactor(2, 1);

    auto splitter = new QSplitter;
    splitter->addWidget(left);
    splitter->addWidget(right);
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
    auto result = m_pending;
    const std::atomic<bool>* abort = &m_abort;
    m_thread = QThread::create([o, result, abort] { *result = load::run(o, abort); });
    m_thread->setObjectName("portico-load");
    connect(m_thread, &QThread::finished, this, &LoadTestPage::onFinished);
    m_startRequests = m_lastRequests = m_server->live().requests;
    m_lastMs = 0;
    m_rateNow = 0;
    m_plot->graph(0)->data()->clear();
    m_clock.start();
    m_thread->start();
    m_timer->start();
    m_start->setEnabled(false);
    m_stop->setEnabled(true);
    m_progress->setValue(0);
    m_live->setText(tr("Running…"));
    emit runStarted();
    return true;
}

void LoadTestPage::stop() {
    if (!m_thread) return;
    m_abort = true;
    m_live->setText(tr("Stopping (in-flight requests get the stop grace)…"));
}

void LoadTestPage::tick() {
    const qint64 now = m_clock.elapsed();
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
    m_start->setEnabled(true);
    m_stop->setEnabled(false);
    std::shared_ptr<const load::Result> result = std::move(m_pending);
    if (!result->ok()) {
        m_live->setText(tr("Failed: %1").arg(QString::fromStdString(result->error)));
        m_progress->setValue(0);
        return;
    }
    m_progress->setValue(1000);
    LoadRun run{int(m_runs.size()) + 1, QTime::currentTime().toString("HH:mm:ss"), result};
    m_runs << run;
    showResult(*result);
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
    m_live->setText(tr("Finished: %1 requests in %2 s.")
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

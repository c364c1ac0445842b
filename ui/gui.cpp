// runGui: QApplication setup, the project to open (last one, or a copy of the demo), screenshots.
#include "gui.h"

#include "inspector/inspectorwidget.h"
#include "inspector/timelinewidget.h"
#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "loadtest/runhistoryview.h"
#include "loadtest/samplesview.h"
#include "mainwindow.h"
#include "servercontroller.h"
#include "sites/sitespage.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include <portico/engine/engine.h>
#include <portico/engine/jobs.h>

#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSocketNotifier>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

namespace portico::ui {

namespace {

QString bundledDemo() {
    const QString installed = QCoreApplication::applicationDirPath() + "/../share/portico/demo";
    if (QFileInfo::exists(installed + "/portico.yaml")) return QDir(installed).canonicalPath();
    return QStringLiteral(PORTICO_DEMO_DIR);
}

bool copyTree(const QString& from, const QString& to) {
    QDir().mkpath(to);
    QDirIterator it(from, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString src = it.next();
        const QString dst = to + "/" + QDir(from).relativeFilePath(src);
        QDir().mkpath(QFileInfo(dst).absolutePath());
        if (!QFile::exists(dst) && !QFile::copy(src, dst)) return false;
    }
    return true;
}

// The demo is copied before it is opened, so Apply never writes into the installation.
QString demoCopy(const QString& where) {
    if (!copyTree(bundledDemo(), where)) return {};
    return where + "/portico.yaml";
}

void waitMs(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// Capture on for this session only (the project file is not touched).
bool captureInMemory(ServerController& server) {
    const auto cfg = server.config();
    if (!cfg) return false;
    if (cfg->capture.enabled) return true;
    auto next = std::make_shared<config::Config>(*cfg);
    next->capture.enabled = true;
    QString error;
    if (!server.apply(next, &error, false)) {
        std::fprintf(stderr, "portico: cannot turn capture on: %s\n", qPrintable(error));
        return false;
    }
    return true;
}

// Runs `options` on a worker thread while the event loop keeps turning; returns its result.
std::shared_ptr<load::Result> runLoad(const load::Options& options) {
    auto result = std::make_shared<load::Result>();
    QThread* thread = QThread::create([options, result] { *result = engine::runLoad(options).result; });
    QEventLoop loop;
    QObject::connect(thread, &QThread::finished, &loop, &QEventLoop::quit);
    thread->start();
    loop.exec();
    thread->wait();
    delete thread;
    return result;
}

// A bounded mix of real requests on loopback (pages, JSON, an image, a redirect, 404s, a 405, a
// slow mock), at a readable rate, so the Traffic table and the inspector have something to show.
void demoTraffic(ServerController& server, double seconds) {
    QString base = server.firstHttpUrl();
    if (base.isEmpty()) return;
    load::Options o;
    auto add = [&](const char* path, const char* method, unsigned weight) {
        load::RequestSpec spec;
        spec.url = (base + QString::fromLatin1(path).mid(1)).toStdString();
        spec.method = method;
        spec.weight = weight;
        spec.headers.push_back({"User-Agent", "portico-demo/1.0"});
        spec.headers.push_back({"Accept", QByteArray(path).startsWith("/api") ? "application/json" : "*/*"});
        if (spec.method == "POST") {
            spec.body = R"({"title":"water the plants"})";
            spec.headers.push_back({"Content-Type", "application/json"});
        }
        o.requests.push_back(spec);
    };
    add("/", "GET", 3);
    add("/style.css", "GET", 2);
    add("/images/pattern.png", "GET", 2);
    add("/api/hello/portico", "GET", 4);
    add("/api/todos", "GET", 4);
    add("/api/todos", "POST", 1);
    add("/old-home", "GET", 1);
    add("/missing", "GET", 1);
    add("/api/slow", "GET", 1);
    o.connections = 4;
    o.rate = 30;
    o.duration = std::chrono::milliseconds(qint64(seconds * 1000));
    o.stopGrace = std::chrono::seconds(1);
    // Some of it over HTTP/2 (h2c with prior knowledge on the same listener), at the same time.
    load::Options h2 = o;
    h2.requests = {o.requests[1], o.requests[3], o.requests[4]};
    h2.protocol = load::Protocol::Http2;
    h2.streams = 2;
    h2.connections = 1;
    h2.rate = 8;
    QThread* second = QThread::create([h2] { engine::runLoad(h2); });
    second->start();
    runLoad(o);
    second->wait();
    delete second;
}

// Selects the last shown /api/todos GET (a JSON body, a full timeline), else the last row.
void selectDemoRow(TrafficPage* traffic) {
    TrafficModel* model = traffic->model();
    for (int row = model->rowCount() - 1; row >= 0; --row) {
        const std::optional<TrafficRow> r = model->rowAt(row);
        if (r && r->target == "/api/todos" && r->method == "GET" && r->status == 200) {
            traffic->selectRow(row);
            return;
        }
    }
    traffic->selectRow(-1);
}

// `draftShown`: the Sites form shows a refused file with its problems (runGui), already at the
// first problem.
int screenshot(MainWindow& window, ServerController& server, const GuiOptions& options,
               const QString& historyDir, bool draftShown) {
    window.resize(1280, 800);
    window.show();
    waitMs(200);
    QString tab = QString::fromStdString(options.tab).toLower();
    const bool trafficTab = tab == "traffic" || tab == "inspector";
    const bool suiteTab = tab == "suite";
    // "drilldown": a run's sampled requests under the latency histogram's p99 bar; "sample": the
    // first of them opened in the inspector window (that window is the picture).
    const bool drillTab = tab == "drilldown" || tab == "sample";
    QWidget* picture = &window;
    double seconds = options.demoTraffic;
    if (seconds <= 0 && (tab.startsWith("load") || tab == "latency" || trafficTab)) seconds = 2;
    // Runs made for the picture go to a scratch history, not the user's.
    window.loadTestPage()->setHistoryDir(historyDir.toStdString());
    if (suiteTab) {
        LoadTestPage* load = window.loadTestPage();
        window.showTab("load");
        load->findChild<QLineEdit*>("loadSuiteDuration")
            ->setText(QString("%1ms").arg(qint64((seconds > 0 ? seconds : 0.3) * 1000)));
        QEventLoop loop;
        QObject::connect(load, &LoadTestPage::suiteFinished, &loop, &QEventLoop::quit);
        if (load->startSuite()) loop.exec();
        load->showView("suite");
        tab = "load";
    } else if (drillTab) {
        if (!captureInMemory(server)) return 1;
        LoadTestPage* load = window.loadTestPage();
        load->findChild<QLineEdit*>("loadUrl")->setText(server.firstHttpUrl() + "api/hello/portico " +
                                                        server.firstHttpUrl());
        load->findChild<QLineEdit*>("loadDuration")
            ->setText(QString("%1ms").arg(qint64((seconds > 0 ? seconds : 2) * 1000)));
        window.showTab("load");
        QEventLoop loop;
        QObject::connect(load, &LoadTestPage::runFinished, &loop, &QEventLoop::quit);
        if (load->start()) loop.exec();
        if (load->runs().isEmpty()) return 1;
        server.engine().flushCapture();
        // The bar of the sampled request closest to the p99 (the p99's own bar may hold none).
        const load::Result& r = *load->runs().last().result;
        const double p99 = double(r.latency->valueAtPercentile(99));
        double at = p99, nearest = std::numeric_limits<double>::infinity();
        for (const auto& x : r.samples)
            if (!x.failure && std::abs(double(x.latencyNs) - p99) < nearest) {
                nearest = std::abs(double(x.latencyNs) - p99);
                at = double(x.latencyNs);
            }
        load->samplesAtLatency(at / 1e6);
        if (tab == "sample") {
            if (!load->samples()->openRow(0)) {
                std::fprintf(stderr, "portico: the run sampled no request at its p99\n");
                return 1;
            }
            picture = load->samples()->inspectorDialog();
            picture->resize(1280, 800); // as every screenshot
            waitMs(200);
        }
        tab = "load";
    } else if (seconds > 0 && trafficTab) {
        if (!captureInMemory(server)) return 1;
        window.showTab(tab);
        demoTraffic(server, seconds);
        server.engine().flushCapture();
        waitMs(150);
        window.trafficPage()->poll();
        selectDemoRow(window.trafficPage());
        if (tab == "inspector") {
            auto tabs = window.trafficPage()->inspector()->tabs();
            tabs->setCurrentIndex(tabs->indexOf(window.trafficPage()->inspector()->timelinePage()));
        }
    } else if (seconds > 0) {
        LoadTestPage* load = window.loadTestPage();
        load->findChild<QLineEdit*>("loadUrl")->setText(server.firstHttpUrl() + "api/hello/portico");
        load->findChild<QLineEdit*>("loadDuration")->setText(QString("%1ms").arg(qint64(seconds * 1000)));
        window.showTab("load");
        // A second run with four times the connections, overlaid on the first (Latency tab, and the
        // Load test tab's history).
        QStringList saved;
        for (int i = 0; i < 2; ++i) {
            QEventLoop loop;
            QObject::connect(load, &LoadTestPage::runFinished, &loop, &QEventLoop::quit);
            if (i > 0) load->findChild<QSpinBox*>("loadConnections")->setValue(64);
            if (i > 0) waitMs(1000); // a later second: the second run's ID sorts after the first's
            if (load->start()) loop.exec();
            saved << load->lastSavedId();
        }
        if (auto overlay = window.latencyPage()->findChild<QComboBox*>("latencyCompare"))
            overlay->setCurrentIndex(1);
        if (tab.startsWith("load")) {
            load->showView("history");
            RunHistoryView* history = load->history();
            // Once the second save is listed (it selects itself), select both.
            for (int i = 0; i < 50 && history->runs().size() < 2; ++i)
                waitMs(100);
            QEventLoop loop;
            QObject::connect(history, &RunHistoryView::selectionShown, &loop, &QEventLoop::quit);
            QTimer::singleShot(5000, &loop, &QEventLoop::quit);
            if (history->selectRuns(saved)) loop.exec();
        }
    }
    if (!tab.isEmpty() && !window.showTab(tab)) {
        std::fprintf(stderr,
                     "portico: no tab '%s' (sites, traffic, rules, inspector, load, suite, drilldown, "
                     "sample, latency)\n",
                     options.tab.c_str());
        return 2;
    }
    if ((tab.isEmpty() || tab == "sites") && !draftShown) window.sitesPage()->select(0, 0);
    waitMs(400);
    const QString file = QString::fromStdString(options.screenshot);
    if (!picture->grab().save(file, "PNG")) {
        std::fprintf(stderr, "portico: cannot write %s\n", options.screenshot.c_str());
        return 1;
    }
    std::printf("%s\n", options.screenshot.c_str());
    return 0;
}

// CPU time of the calling thread (user + system), ms; Linux /proc, -1 elsewhere.
double threadCpuMs() {
    QFile f(QStringLiteral("/proc/thread-self/stat"));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    const QByteArray line = f.readAll();
    const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
    if (fields.size() < 13) return -1;
    const double ticks = fields[11].toDouble() + fields[12].toDouble(); // utime, stime (fields 14, 15)
    return ticks * 1000.0 / double(sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = std::size_t(std::clamp(p / 100.0 * double(v.size() - 1), 0.0, double(v.size() - 1)));
    return v[i];
}

// Lateness of a 10 ms precise timer over `ms` milliseconds of event loop, in ms.
std::vector<double> timerLateness(int ms) {
    std::vector<double> late;
    QElapsedTimer clock;
    QTimer timer;
    timer.setTimerType(Qt::PreciseTimer);
    timer.setInterval(10);
    qint64 last = 0;
    QObject::connect(&timer, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        late.push_back(std::max(0.0, double(now - last) / 1e6 - 10.0));
        last = now;
    });
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    clock.start();
    timer.start();
    loop.exec();
    return late;
}

void printLateness(const char* label, const std::vector<double>& late) {
    std::printf("%-28s ticks %6zu  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms\n", label, late.size(),
                percentile(late, 50), percentile(late, 99),
                late.empty() ? 0.0 : *std::max_element(late.begin(), late.end()));
}

// Resident memory of this process (VmRSS, VmHWM from /proc/self/status), MiB.
std::pair<double, double> residentMiB() {
    QFile f(QStringLiteral("/proc/self/status"));
    double rss = 0, peak = 0;
    if (f.open(QIODevice::ReadOnly))
        for (const QByteArray& line : f.readAll().split('\n')) {
            const QList<QByteArray> parts = line.simplified().split(' ');
            if (parts.size() < 2) continue;
            if (parts[0] == "VmRSS:") rss = parts[1].toDouble() / 1024;
            if (parts[0] == "VmHWM:") peak = parts[1].toDouble() / 1024;
        }
    return {rss, peak};
}

// After the load: the table catches up with the session file, then what a million rows cost —
// memory, a filter over all of them, a sort, and inspecting the oldest row (read back from the file).
void reportVolume(MainWindow& window, ServerController& server) {
    TrafficPage* page = window.trafficPage();
    TrafficModel* model = page->model();
    server.engine().flushCapture();
    QElapsedTimer wait;
    wait.start();
    const std::uint64_t newest = server.engine().lastCapturedId();
    while (wait.elapsed() < 60000 && model->rowCount() > 0 && model->idAt(model->rowCount() - 1) < newest)
        waitMs(50);
    const double caughtUp = double(wait.elapsed()) / 1000;
    const auto [rss, peak] = residentMiB();
    const QFileInfo file(server.sessionFile());
    std::printf(
        "volume: table rows %d (caught up %.1f s after the load), rows use %.0f MiB; process RSS %.0f MiB "
        "(peak %.0f MiB); session file %.0f MiB\n",
        model->rowCount(), caughtUp, double(model->memoryBytes()) / (1 << 20), rss, peak,
        double(file.size()) / (1 << 20));
    auto timed = [](auto&& f) {
        QElapsedTimer t;
        t.start();
        f();
        return double(t.nsecsElapsed()) / 1e6;
    };
    for (const char* expr : {"status:200", "path:/nope", "-method:GET url:portico"}) {
        const double ms = timed([&] {
            page->setFilterText(QString::fromLatin1(expr));
            page->applyFilter();
        });
        std::printf("filter %-26s %8.0f ms, %d rows shown\n", expr, ms, model->rowCount());
    }
    page->setFilterText({});
    page->applyFilter();
    const double sortMs = timed([&] { model->sort(TrafficModel::Duration, Qt::DescendingOrder); });
    const double backMs = timed([&] { model->sort(TrafficModel::Time, Qt::AscendingOrder); });
    const double inspectMs = timed([&] { page->selectRow(0); });
    std::printf("sort by duration %.0f ms, back to time %.0f ms; inspect the oldest row %.1f ms (%s)\n",
                sortMs, backMs, inspectMs, page->inspector()->exchange() ? "shown" : "NOT shown");
}

// The window on the Traffic tab with capture on (the worst case for the UI thread: every exchange
// comes through the 30 Hz feed), a 10 ms timer, and the load generator at full speed.
int measureResponsiveness(MainWindow& window, ServerController& server, double seconds) {
    window.resize(1280, 800);
    window.show();
    if (qEnvironmentVariableIsEmpty("PORTICO_MEASURE_NO_CAPTURE") && !captureInMemory(server)) return 1;
    window.showTab(qEnvironmentVariable("PORTICO_MEASURE_TAB", "traffic"));
    waitMs(300);
    printLateness("idle (2 s)", timerLateness(2000));

    load::Options o;
    load::RequestSpec spec;
    spec.url = (server.firstHttpUrl() + "api/hello/portico").toStdString();
    o.requests.push_back(spec);
    o.connections = 32;
    o.threads = 1;
    o.duration = std::chrono::milliseconds(qint64(seconds * 1000));
    auto result = std::make_shared<load::Result>();
    const std::uint64_t before = server.counters().requests;
    const double cpuBefore = threadCpuMs();
    QElapsedTimer wall;
    wall.start();
    QThread* thread = QThread::create([o, result] { *result = engine::runLoad(o).result; });
    thread->start();
    std::vector<double> late;
    while (!thread->isFinished()) {
        auto part = timerLateness(500);
        late.insert(late.end(), part.begin(), part.end());
    }
    thread->wait();
    delete thread;
    const double cpu = threadCpuMs() - cpuBefore;
    const double wallMs = double(wall.elapsed());
    const std::uint64_t served = server.counters().requests - before;
    char label[64];
    std::snprintf(label, sizeof label, "under load (%.0f s)", seconds);
    printLateness(label, late);
    std::printf("UI thread CPU: %.0f ms over %.0f ms (%.1f%%)\n", cpu, wallMs, 100.0 * cpu / wallMs);
    std::printf(
        "load: %llu requests served, %.0f req/s; table rows %d (skipped %llu); records captured %llu, "
        "dropped %llu\n",
        static_cast<unsigned long long>(served), double(served) / seconds,
        window.trafficPage()->model()->rowCount(),
        static_cast<unsigned long long>(window.trafficPage()->skipped()),
        static_cast<unsigned long long>(server.engine().capturedRecords()),
        static_cast<unsigned long long>(server.engine().droppedRecords()));
    reportVolume(window, server);
    return 0;
}

// SIGINT (Ctrl+C in the terminal that started it) and SIGTERM (logout, `kill`) close the app like
// its window does: the event loop ends, the server drains, settings are written, exit 0. The
// handler only sets a flag and writes a byte (async-signal-safe); the event loop reads the byte.
// Installed as soon as the QApplication exists: the server answers before the window is built
// (seconds under ASan), and a signal in between must not kill the process with the default action.
int g_quitPipe[2] = {-1, -1};
volatile std::sig_atomic_t g_quitRequested = 0;

void onQuitSignal(int) {
    g_quitRequested = 1;
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_quitPipe[0], &byte, 1);
}

void quitOnSignals(QApplication& app) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_quitPipe) != 0) return;
    auto* notifier = new QSocketNotifier(g_quitPipe[1], QSocketNotifier::Read, &app);
    QObject::connect(notifier, &QSocketNotifier::activated, &app, [] {
        char byte;
        [[maybe_unused]] const auto n = ::read(g_quitPipe[1], &byte, 1);
        QCoreApplication::quit(); // does nothing before exec(); runGui checks g_quitRequested then
    });
    struct sigaction sa {};
    sa.sa_handler = onQuitSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
}

} // namespace

int runGui(int argc, char** argv, const GuiOptions& options) {
    const bool shot = !options.screenshot.empty() || options.measureResponsiveness > 0;
    if (shot && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
        qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    // Without a display Qt's xcb plugin aborts (SIGABRT) with a page of plugin advice; say what to
    // do instead in one line.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
        qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
        std::fprintf(stderr,
                     "portico: no display (DISPLAY and WAYLAND_DISPLAY are unset) for the desktop app; "
                     "serve headless with `portico serve [DIR]` or `portico serve --config FILE`\n");
        return 1;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName("Portico");
    QApplication::setOrganizationName("Portico");
    QApplication::setApplicationVersion(engine::version());
    if (!shot) quitOnSignals(app);

    QTemporaryDir scratch;
    QString project = QString::fromStdString(options.project);
    QSettings settings;
    if (project.isEmpty() && !shot) project = settings.value("lastProject").toString();
    const QString demoDir =
        shot ? scratch.path() + "/demo"
             : QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/portico/demo";
    if (project.isEmpty() || !QFileInfo::exists(project)) project = demoCopy(demoDir);

    ServerController server;
    QString error;
    // A config file the server refuses does not end the start: the demo serves in its place and
    // the window shows the refused file as File › Open would (in the Sites form with its problems
    // on the fields when they are all in vhosts and routes, else a message box). Neither becomes
    // the last project. A screenshot shows the form, or fails when the form cannot show it.
    QString refused;
    if (!server.open(project, &error)) {
        const QString demo = QFileInfo(project).isFile() ? demoCopy(demoDir) : QString();
        QString why;
        if (demo.isEmpty() || !server.open(demo, &why)) {
            if (shot) {
                std::fprintf(stderr, "portico: cannot open %s: %s\n", qPrintable(project), qPrintable(error));
                return 1;
            }
            QMessageBox::critical(nullptr, QObject::tr("Portico"),
                                  QObject::tr("Cannot open %1:\n%2").arg(project, error));
            return 1;
        }
        std::fprintf(stderr, "portico: %s was not applied:\n%s\n", qPrintable(project), qPrintable(error));
        refused = project;
    } else if (!shot) {
        settings.setValue("lastProject", QFileInfo(project).absoluteFilePath());
    }

    MainWindow window(&server);
    if (!refused.isEmpty()) {
        if (!shot) {
            window.openPath(refused);
        } else if (QString why; !window.openDraft(refused, &why)) {
            std::fprintf(stderr, "portico: cannot open %s: %s\n", qPrintable(refused), qPrintable(why));
            return 1;
        }
    }
    if (options.measureResponsiveness > 0)
        return measureResponsiveness(window, server, options.measureResponsiveness);
    if (shot)
        return screenshot(window, server, options, scratch.path() + "/bench-history", !refused.isEmpty());
    if (!options.tab.empty()) window.showTab(QString::fromStdString(options.tab));
    window.show();
    if (g_quitRequested) return 0; // SIGINT/SIGTERM while starting: close like the window would
    return app.exec();
}

} // namespace portico::ui

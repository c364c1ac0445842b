// MainWindow: tabs, menus and shortcuts, drag and drop of folders, listener URLs, request rate and
// capture state.
#include "mainwindow.h"

#include "browser_launch.h"
#include "inspector/inspectorwidget.h"
#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "paused/pausedpage.h"
#include "rules/rulespage.h"
#include "servercontroller.h"
#include "sites/sitespage.h"
#include "traffic/trafficpage.h"

#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDateTime>
#include <QDesktopServices>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QUrl>

#include <portico/engine/engine.h>
#include <portico/tls/local_ca.h>

#include <algorithm>

namespace portico::ui {

MainWindow::MainWindow(ServerController* server, QWidget* parent) : QMainWindow(parent), m_server(server) {
    setWindowTitle(tr("Portico[*]"));
    setAcceptDrops(true);
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_sites = new SitesPage(server);
    m_load = new LoadTestPage(server);
    m_traffic = new TrafficPage(server);
    m_latency = new LatencyPage(server);
    m_rules = new RulesPage(server);
    m_paused = new PausedPage(server->engine());
    m_tabs->addTab(m_sites, tr("Sites"));
    m_tabs->addTab(m_traffic, tr("Traffic"));
    m_tabs->addTab(m_rules, tr("Rules"));
    m_tabs->addTab(m_paused, tr("Paused"));
    // The load test's form, run and history are taller than a small screen (800×500 logical
    // pixels at 2× on 1600×1000): it scrolls there instead of making the window's minimum
    // height exceed the screen.
    m_loadScroll = new QScrollArea;
    m_loadScroll->setObjectName("loadTestScroll");
    m_loadScroll->setWidgetResizable(true);
    m_loadScroll->setFrameShape(QFrame::NoFrame);
    m_loadScroll->setWidget(m_load);
    m_tabs->addTab(m_loadScroll, tr("Load test"));
    m_tabs->addTab(m_latency, tr("Latency"));
    setCentralWidget(m_tabs);
    connect(m_load, &LoadTestPage::runFinished, m_latency, &LatencyPage::addRun);
    connect(m_sites, &SitesPage::notice, this,
            [this](const QString& text) { statusBar()->showMessage(text, 8000); });
    connect(m_traffic, &TrafficPage::notice, this,
            [this](const QString& text) { statusBar()->showMessage(text, 8000); });
    connect(m_rules, &RulesPage::notice, this,
            [this](const QString& text) { statusBar()->showMessage(text, 8000); });
    // The Paused tab's title counts the exchanges waiting there; a new one brings the tab forward.
    connect(m_paused, &PausedPage::countChanged, this, &MainWindow::updatePausedTab);
    connect(m_paused, &PausedPage::exchangePaused, this, [this] {
        m_tabs->setCurrentWidget(m_paused);
        QApplication::alert(this);
    });
    updatePausedTab();
    connect(m_traffic, &TrafficPage::createRuleRequested, this,
            [this](const QString& match, const QString& name) {
                m_tabs->setCurrentWidget(m_rules);
                m_rules->addRuleMatching(match, name);
            });

    m_listeners = new QLabel;
    m_listeners->setObjectName("statusListeners");
    m_listeners->setOpenExternalLinks(true);
    m_listeners->setTextInteractionFlags(Qt::LinksAccessibleByMouse);
    m_rate = new QLabel;
    m_rate->setObjectName("statusRate");
    m_capture = new QLabel;
    m_capture->setObjectName("statusCapture");
    m_capture->setToolTip(tr("Exchanges recorded by the server (`capture:` in the config), listed in the "
                             "Traffic tab"));
    m_websocket = new QLabel;
    m_websocket->setObjectName("statusWebSocket");
    m_websocket->setVisible(false);
    m_interceptStatus = new QLabel;
    m_interceptStatus->setObjectName("statusIntercept");
    statusBar()->addPermanentWidget(m_listeners);
    statusBar()->addPermanentWidget(m_interceptStatus);
    statusBar()->addPermanentWidget(m_rate);
    statusBar()->addPermanentWidget(m_websocket);
    statusBar()->addPermanentWidget(m_capture);
    connect(server, &ServerController::listenersChanged, this, &MainWindow::updateListeners);
    connect(server, &ServerController::interceptChanged, this, &MainWindow::updateIntercept);
    if (const int port = QSettings().value("intercept/port", 8000).toInt(); port > 0 && port < 65536)
        m_interceptPort = std::uint16_t(port);
    m_rateTimer = new QTimer(this);
    m_rateTimer->setInterval(500);
    connect(m_rateTimer, &QTimer::timeout, this, &MainWindow::updateRate);
    m_rateTimer->start();
    updateListeners();
    updateRate();
    buildMenus();
    updateIntercept();

    QSettings settings;
    // The size the user left, or 1280×800; either way no larger than the screen's free area (at
    // QT_SCALE_FACTOR=2 a 1600×1000 screen is 800×500), so the title bar and Apply stay reachable.
    const QRect room = screen()->availableGeometry();
    if (!restoreGeometry(settings.value("window/geometry").toByteArray()))
        resize(QSize(1280, 800).boundedTo(room.size() * 9 / 10).expandedTo(minimumSizeHint()));
    if (width() > room.width() || height() > room.height()) resize(size().boundedTo(room.size()));
    m_traffic->splitter()->restoreState(settings.value("window/trafficSplitter").toByteArray());
    connect(m_tabs, &QTabWidget::currentChanged, this, &MainWindow::updateContextShortcuts);
    updateContextShortcuts();
    // The title's [*]: edits not applied in either the Sites or the Rules tab.
    auto modified = [this] { setWindowModified(m_sites->hasChanges() || m_rules->hasChanges()); };
    connect(m_sites, &SitesPage::changesChanged, this, modified);
    connect(m_rules, &RulesPage::changesChanged, this, modified);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open config…"), QKeySequence::Open, this, &MainWindow::openProject);
    file->addAction(tr("Open &folder…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this,
                    &MainWindow::openFolder);
    m_recent = file->addMenu(tr("Open &recent"));
    updateRecentMenu();
    file->addSeparator();
    // The Rules tab applies and reverts its own edits; every other tab the Sites tab's.
    file->addAction(tr("&Apply and save"), QKeySequence::Save, this, [this] {
        if (m_tabs->currentWidget() == m_rules)
            m_rules->apply();
        else
            m_sites->apply();
    });
    m_revert = file->addAction(tr("&Revert"), QKeySequence(Qt::CTRL | Qt::Key_R), this, [this] {
        if (m_tabs->currentWidget() == m_rules)
            m_rules->revert();
        else
            m_sites->revert();
    });
    file->addSeparator();
    // QKeySequence::Quit has no keys on some platform themes (offscreen, plain X11): say Ctrl+Q.
    file->addAction(tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), this, &QWidget::close);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    // Ctrl+1 … Ctrl+5 stay on the five tabs they always named; Paused has no number of its own.
    int key = 0;
    for (int i = 0; i < m_tabs->count(); ++i) {
        QWidget* page = m_tabs->widget(i);
        if (page == m_paused)
            view->addAction(tr("Paused"), this, [this, page] { m_tabs->setCurrentWidget(page); });
        else
            view->addAction(m_tabs->tabText(i), QKeySequence(Qt::CTRL | (Qt::Key_1 + key++)), this,
                            [this, page] { m_tabs->setCurrentWidget(page); });
    }
    QMenu* traffic = menuBar()->addMenu(tr("&Traffic"));
    auto showTraffic = [this] { m_tabs->setCurrentWidget(m_traffic); };
    traffic->addAction(tr("&Filter"), QKeySequence::Find, this, [this, showTraffic] {
        showTraffic();
        m_traffic->focusFilter();
    });
    traffic->addAction(tr("&Pause / resume"), QKeySequence(Qt::CTRL | Qt::Key_P), m_traffic,
                       &TrafficPage::togglePause);
    traffic->addAction(tr("&Clear"), QKeySequence(Qt::CTRL | Qt::Key_L), m_traffic, &TrafficPage::clearRows);
    traffic->addSeparator();
    InspectorWidget* inspector = m_traffic->inspector();
    traffic->addAction(tr("Copy as c&url"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), inspector,
                       &InspectorWidget::copyAsCurl);
    traffic->addAction(tr("Copy as &Python"), inspector, &InspectorWidget::copyAsPython);
    traffic->addAction(tr("Copy as fe&tch"), inspector, &InspectorWidget::copyAsFetch);
    traffic->addAction(tr("Copy as HTTP&ie"), inspector, &InspectorWidget::copyAsHttpie);
    // Ctrl+R is Resend's on this tab (updateContextShortcuts); the menu shows it there.
    m_resend = traffic->addAction(tr("&Resend"), inspector, &InspectorWidget::resend);
    traffic->addAction(tr("&Edit and resend…"), inspector, &InspectorWidget::editAndResend);
    traffic->addAction(tr("Export &HAR…"), QKeySequence(Qt::CTRL | Qt::Key_E), m_traffic,
                       &TrafficPage::exportHarDialog);
    traffic->addAction(tr("Save capture &as…"), m_traffic, &TrafficPage::saveCaptureDialog);
    QMenu* load = menuBar()->addMenu(tr("&Load test"));
    load->addAction(tr("&Start"), QKeySequence(Qt::CTRL | Qt::Key_T), this, [this] {
        m_tabs->setCurrentWidget(m_loadScroll);
        m_load->start();
    });
    load->addAction(tr("S&top"), QKeySequence(Qt::CTRL | Qt::Key_Period), m_load, &LoadTestPage::stop);
    QMenu* intercept = menuBar()->addMenu(tr("&Intercept"));
    m_interceptAction = intercept->addAction(QString());
    m_interceptAction->setObjectName("interceptAction");
    m_interceptAction->setCheckable(true);
    connect(m_interceptAction, &QAction::triggered, this, &MainWindow::setIntercepting);
    QAction* browser =
        intercept->addAction(tr("&Launch browser through the proxy"), this, &MainWindow::launchBrowser);
    browser->setObjectName("launchBrowserAction");
    browser->setToolTip(tr("Chromium or Chrome with a throw-away profile that trusts the local CA (nothing "
                           "in the system trust store changes)"));
    QAction* terminal =
        intercept->addAction(tr("&Copy terminal setup"), this, &MainWindow::copyTerminalSetup);
    terminal->setObjectName("copyTerminalSetupAction");
    terminal->setToolTip(
        tr("The exports of `portico proxy env`: paste them into a terminal to send its curl, "
           "git, Python and Node through the proxy"));
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&User guide"), QKeySequence::HelpContents, this, &MainWindow::openGuide);
    help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts);
    help->addSeparator();
    help->addAction(tr("&About Portico"), this, &MainWindow::showAbout);
}

QList<QPair<QString, QKeySequence>> MainWindow::shortcuts() const {
    QList<QPair<QString, QKeySequence>> out;
    for (QAction* menuAction : menuBar()->actions()) {
        QMenu* menu = menuAction->menu();
        if (!menu) continue;
        for (QAction* a : menu->actions()) {
            QKeySequence keys = a->shortcut();
            // Ctrl+R belongs to Revert or Resend by tab: list both.
            if (keys.isEmpty() && (a == m_revert || a == m_resend)) keys = QKeySequence(Qt::CTRL | Qt::Key_R);
            if (keys.isEmpty()) continue;
            out.append({QString(menu->title() + " › " + a->text()).remove('&'), keys});
        }
    }
    return out;
}

MainWindow::~MainWindow() {
    // The browsers go with the proxy they were pointed at; their profiles with them.
    for (QProcess* p : browsers()) {
        p->disconnect(this);
        p->terminate();
        if (!p->waitForFinished(3000)) {
            p->kill();
            p->waitForFinished(2000);
        }
        launch::removeProfileDir(p->property("profileDir").toString().toStdString());
    }
}

QList<QProcess*> MainWindow::browsers() const {
    QList<QProcess*> out;
    for (QProcess* p : findChildren<QProcess*>("browser", Qt::FindDirectChildrenOnly))
        if (p->state() != QProcess::NotRunning) out << p;
    return out;
}

void MainWindow::setInterceptPort(std::uint16_t port) {
    if (port == 0) return;
    m_interceptPort = port;
    QSettings().setValue("intercept/port", int(port));
    updateIntercept();
}

bool MainWindow::setIntercepting(bool on) {
    QString error;
    const bool ok = m_server->setIntercept(on, m_interceptPort, &error);
    m_interceptError = ok ? QString() : error;
    if (!ok)
        statusBar()->showMessage(tr("Cannot intercept on 127.0.0.1:%1: %2").arg(m_interceptPort).arg(error),
                                 10000);
    updateIntercept();
    return ok;
}

void MainWindow::updateIntercept() {
    const bool on = m_server->intercepting();
    const std::uint16_t port = on ? m_server->interceptPort() : m_interceptPort;
    if (m_interceptAction) {
        m_interceptAction->setText(tr("&Intercept traffic (proxy on 127.0.0.1:%1)").arg(port));
        const QSignalBlocker block(m_interceptAction);
        m_interceptAction->setChecked(on);
    }
    if (on) {
        m_interceptError.clear();
        m_interceptStatus->setText(QStringLiteral("<span style=\"color:#2e7d32;font-weight:bold\">%1</span>")
                                       .arg(tr("● Intercepting on 127.0.0.1:%1").arg(port).toHtmlEscaped()));
        m_interceptStatus->setToolTip(
            tr("A forward proxy on http://127.0.0.1:%1: point clients at it (Intercept › "
               "Copy terminal setup, Launch browser); HTTPS is decrypted with the local "
               "CA and every exchange is listed in the Traffic tab")
                .arg(port));
    } else if (!m_interceptError.isEmpty()) {
        m_interceptStatus->setText(QStringLiteral("<span style=\"color:#c62828\">%1</span>")
                                       .arg(tr("Intercept off: 127.0.0.1:%1 is not available").arg(port)));
        m_interceptStatus->setToolTip(m_interceptError);
    } else {
        m_interceptStatus->setText(tr("Intercept off"));
        m_interceptStatus->setToolTip(
            tr("Intercept › Intercept traffic starts a forward proxy on 127.0.0.1:%1").arg(port));
    }
}

void MainWindow::launchBrowser() {
    if (!m_server->intercepting() && !setIntercepting(true)) {
        QMessageBox::warning(
            this, tr("Cannot launch the browser"),
            tr("The proxy cannot start on 127.0.0.1:%1:\n%2").arg(m_interceptPort).arg(m_interceptError));
        return;
    }
    std::string why;
    auto prepared =
        launch::prepareChromium({}, m_server->interceptPort(), {}, {}, tls::defaultDataDir(), why);
    if (!prepared) {
        QMessageBox::warning(this, tr("Cannot launch the browser"), QString::fromStdString(why));
        return;
    }
    auto* p = new QProcess(this);
    p->setObjectName("browser");
    const QString profile = QString::fromStdString(prepared->profileDir);
    p->setProperty("profileDir", profile);
    p->setProgram(QString::fromStdString(prepared->program));
    QStringList args;
    for (const auto& a : prepared->args)
        args << QString::fromStdString(a);
    p->setArguments(args);
    // The browser inherits none of the engine's sockets (it would keep the proxy's port bound).
    p->setChildProcessModifier([] { launch::closeInheritedAtExec(); });
    p->setStandardOutputFile(QProcess::nullDevice());
    p->setStandardErrorFile(QProcess::nullDevice());
    connect(p, &QProcess::finished, this, [this, p, profile] {
        launch::removeProfileDir(profile.toStdString());
        statusBar()->showMessage(tr("Browser closed; its profile is removed"), 5000);
        p->deleteLater();
    });
    connect(p, &QProcess::errorOccurred, this, [this, p, profile](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        launch::removeProfileDir(profile.toStdString());
        statusBar()->showMessage(tr("Cannot start %1: %2").arg(p->program(), p->errorString()), 10000);
        p->deleteLater();
    });
    p->start();
    statusBar()->showMessage(tr("Launched %1 through the proxy on 127.0.0.1:%2")
                                 .arg(QFileInfo(p->program()).fileName())
                                 .arg(m_server->interceptPort()),
                             8000);
}

void MainWindow::copyTerminalSetup() {
    const std::uint16_t port = m_server->intercepting() ? m_server->interceptPort() : m_interceptPort;
    std::string why;
    const auto text = launch::proxyEnvText(port, tls::defaultDataDir(), why);
    if (!text) {
        statusBar()->showMessage(tr("Cannot copy the terminal setup: %1").arg(QString::fromStdString(why)),
                                 10000);
        return;
    }
    QGuiApplication::clipboard()->setText(QString::fromStdString(*text));
    statusBar()->showMessage(
        m_server->intercepting()
            ? tr("Copied the terminal setup: paste it into a terminal")
            : tr("Copied the terminal setup (switch Intercept on for the proxy to answer)"),
        8000);
}

void MainWindow::showShortcuts() {
    QString text = QStringLiteral("<table cellspacing=6>");
    for (const auto& [what, keys] : shortcuts())
        text += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                    .arg(keys.toString(QKeySequence::NativeText).toHtmlEscaped(), what.toHtmlEscaped());
    text += tr("<tr><td><b>Space</b></td><td>Traffic table › Pause / resume</td></tr>"
               "<tr><td><b>Ctrl+Return</b></td><td>Load test › Start or stop</td></tr></table>");
    QMessageBox box(QMessageBox::NoIcon, tr("Keyboard shortcuts"), text, QMessageBox::Close, this);
    box.setObjectName("shortcutsBox");
    box.exec();
}

void MainWindow::showAbout() {
    QString text = tr("<p><b>Portico %1</b><br>A desktop dev server and traffic inspector.</p><p>")
                       .arg(QString::fromUtf8(engine::version()));
    text += tr("Qt %1").arg(QString::fromUtf8(qVersion()));
    for (const auto& [name, version] : engine::libraryVersions())
        text += "<br>" + QString::fromStdString(name + " " + version).toHtmlEscaped();
    text += "</p>";
    QMessageBox box(QMessageBox::NoIcon, tr("About Portico"), text, QMessageBox::Close, this);
    box.setObjectName("aboutBox");
    box.exec();
}

// The docs that ship with Portico: installed beside the binary (share/doc/portico), else the
// source tree's docs/ for a build that was not installed.
void MainWindow::openGuide() {
    QString dir = QCoreApplication::applicationDirPath() + "/../share/doc/portico";
    if (!QFileInfo::exists(dir + "/gui.md")) dir = QStringLiteral(PORTICO_DOCS_DIR);
    QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(dir + "/gui.md").absoluteFilePath()));
}

bool MainWindow::showTab(const QString& name) {
    const QString n = name.toLower();
    if (n == "sites")
        m_tabs->setCurrentWidget(m_sites);
    else if (n == "traffic")
        m_tabs->setCurrentWidget(m_traffic);
    else if (n == "rules")
        m_tabs->setCurrentWidget(m_rules);
    else if (n == "paused")
        m_tabs->setCurrentWidget(m_paused);
    else if (n == "inspector") {
        m_tabs->setCurrentWidget(m_traffic);
        const int total = std::max(m_traffic->splitter()->height(), 600); // not laid out before show()
        m_traffic->splitter()->setSizes({total / 3, total - total / 3});
    } else if (n == "load" || n == "loadtest" || n == "load-test")
        m_tabs->setCurrentWidget(m_loadScroll);
    else if (n == "latency")
        m_tabs->setCurrentWidget(m_latency);
    else
        return false;
    return true;
}

// Ctrl+R reverts on the Sites tab and resends on the Traffic tab.
void MainWindow::updateContextShortcuts() {
    const bool traffic = m_tabs->currentWidget() == m_traffic;
    const QKeySequence ctrlR(Qt::CTRL | Qt::Key_R);
    m_revert->setShortcut(traffic ? QKeySequence() : ctrlR);
    m_resend->setShortcut(traffic ? ctrlR : QKeySequence());
}

void MainWindow::openProject() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open config"), m_server->baseDir(),
                                                      tr("Portico config (*.yaml *.yml);;All files (*)"));
    if (!path.isEmpty()) openPath(path);
}

void MainWindow::openFolder() {
    const QString path = QFileDialog::getExistingDirectory(this, tr("Serve folder"), m_server->baseDir());
    if (!path.isEmpty()) openPath(path);
}

void MainWindow::openPath(const QString& path) {
    QString error;
    if (!m_server->open(path, &error)) {
        // A file whose problems are all in vhosts and routes opens in the form with them shown on
        // the fields; anything else (syntax, listeners, an unreadable file) is refused as before.
        if (!openDraft(path, nullptr))
            QMessageBox::warning(this, tr("Cannot open"), tr("%1:\n%2").arg(path, error));
        return; // not a recent or last project until it opens: a start with it would be refused
    }
    QSettings settings;
    QStringList recent = settings.value("recentProjects").toStringList();
    recent.removeAll(path);
    recent.prepend(QFileInfo(path).absoluteFilePath());
    settings.setValue("recentProjects", recent.mid(0, 8));
    settings.setValue("lastProject", QFileInfo(path).absoluteFilePath());
    updateRecentMenu();
}

bool MainWindow::openDraft(const QString& path, QString* why) {
    std::shared_ptr<config::Config> draft;
    std::vector<config::ConfigError> problems;
    if (!m_server->openDraft(path, draft, problems, why)) return false;
    m_sites->openDraft(*draft, problems);
    m_tabs->setCurrentWidget(m_sites);
    return true;
}

void MainWindow::updatePausedTab() {
    const int count = m_paused->count();
    const int tab = m_tabs->indexOf(m_paused);
    m_tabs->setTabText(tab, count ? tr("Paused (%1)").arg(count) : tr("Paused"));
    // Highlighted while something waits there.
    m_tabs->tabBar()->setTabTextColor(tab, count ? QColor("#d35400") : QColor());
    m_tabs->setTabToolTip(
        tab,
        count ? tr("%n exchange(s) paused by breakpoint rules: resume, answer or abort them", nullptr, count)
              : tr("Exchanges paused by a rule's breakpoint action wait here"));
}

void MainWindow::updateRecentMenu() {
    m_recent->clear();
    for (const QString& path : QSettings().value("recentProjects").toStringList())
        m_recent->addAction(path, this, [this, path] { openPath(path); });
    m_recent->setEnabled(!m_recent->isEmpty());
}

void MainWindow::updateListeners() {
    QStringList links;
    for (const QString& url : m_server->urls())
        links << QString("<a href=\"%1\">%1</a>").arg(url.toHtmlEscaped());
    const QStringList exposed = m_server->exposedUrls();
    QString text = links.isEmpty() ? tr("not serving") : links.join("  ");
    if (!exposed.isEmpty())
        text = QString("<span style=\"color:#c62828;font-weight:bold\">%1</span>  ")
                   .arg(tr("⚠ Reachable from the network")) +
               text;
    m_listeners->setText(text);
    m_listeners->setToolTip(
        exposed.isEmpty()
            ? tr("Click to open in the browser")
            : tr("Click to open in the browser.\n%1 %2 on an address other machines can "
                 "reach: they can fetch every file this server serves. Use 127.0.0.1 to keep it local.")
                  .arg(exposed.join(", "), exposed.size() == 1 ? tr("listens") : tr("listen")));
    updateTitle();
}

// "portico.yaml* — Portico" while the Sites or the Rules tab holds edits that are not applied ([*]
// is Qt's placeholder for the modified mark).
void MainWindow::updateTitle() {
    setWindowTitle(m_server->configPath().isEmpty()
                       ? tr("Portico[*]")
                       : tr("%1[*] — Portico").arg(QFileInfo(m_server->configPath()).fileName()));
    setWindowModified(m_sites->hasChanges() || m_rules->hasChanges());
}

void MainWindow::updateRate() {
    const auto c = m_server->live();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const double rate = m_lastMs && c.requests >= m_lastRequests
                            ? double(c.requests - m_lastRequests) * 1000.0 / double(now - m_lastMs)
                            : 0;
    m_lastMs = now;
    m_lastRequests = c.requests;
    m_rate->setText(tr("%1 req/s · %2 requests · %3 open")
                        .arg(QLocale().toString(rate, 'f', 0), QLocale().toString(qulonglong(c.requests)))
                        .arg(c.connectionsOpen));
    if (const auto ws = m_server->webSocketStats(); ws && ws->accepted > 0) {
        // Rooms of `websocket: room` routes: members and messages/s of each, in the tooltip.
        QStringList rooms;
        for (const auto& r : ws->rooms)
            rooms << tr("%1 (%2): %3, %4 msg/s")
                         .arg(QString::fromStdString(r.name), QString::fromStdString(r.route),
                              r.members == 1 ? tr("1 member") : tr("%1 members").arg(r.members),
                              QLocale().toString(r.messagesPerSecond, 'f', 1));
        m_websocket->setText(
            ws->rooms.empty()
                ? tr("WebSocket: %1 open").arg(ws->open)
                : tr("WebSocket: %1 open · %2")
                      .arg(QString::number(ws->open),
                           ws->rooms.size() == 1 ? tr("1 room") : tr("%1 rooms").arg(ws->rooms.size())));
        m_websocket->setToolTip(
            tr("WebSocket sessions open now (live reload included): %1; messages in %2, out %3")
                .arg(ws->open)
                .arg(QLocale().toString(qulonglong(ws->messagesIn)),
                     QLocale().toString(qulonglong(ws->messagesOut))) +
            (rooms.isEmpty() ? QString() : "\n" + rooms.join('\n')));
        m_websocket->setVisible(true);
    }
    const auto cfg = m_server->config();
    if (!cfg || (!cfg->capture.enabled && !m_server->intercepting())) {
        m_capture->setText(tr("capture: off"));
    } else {
        m_capture->setText(
            c.droppedRecords
                ? tr("capture: %1 recorded, %2 dropped")
                      .arg(QLocale().toString(qulonglong(c.capturedRecords)),
                           QLocale().toString(qulonglong(c.droppedRecords)))
                : tr("capture: %1 recorded").arg(QLocale().toString(qulonglong(c.capturedRecords))));
    }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!event->mimeData()->hasUrls()) return;
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile() && QFileInfo(url.toLocalFile()).isDir()) {
            event->acceptProposedAction();
            return;
        }
}

void MainWindow::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile() && QFileInfo(url.toLocalFile()).isDir()) {
            m_tabs->setCurrentWidget(m_sites);
            m_sites->addFolder(url.toLocalFile());
        }
    event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    const bool sites = m_sites->hasChanges(), rules = m_rules->hasChanges();
    if (sites || rules) {
        const QString text = sites && rules
                                 ? tr("The Sites and Rules tabs have changes that are not applied.")
                             : sites ? tr("The Sites tab has changes that are not applied.")
                                     : tr("The Rules tab has changes that are not applied.");
        QMessageBox box(QMessageBox::Question, tr("Unapplied changes"), text, QMessageBox::NoButton, this);
        box.setObjectName("quitBox");
        QPushButton* applyQuit = box.addButton(tr("Apply and quit"), QMessageBox::AcceptRole);
        QPushButton* discard = box.addButton(tr("Discard and quit"), QMessageBox::DestructiveRole);
        box.addButton(QMessageBox::Cancel);
        box.setDefaultButton(applyQuit);
        box.exec();
        // Apply may refuse (errors in the form): then the window stays, the errors in view.
        const bool quit =
            box.clickedButton() == discard || (box.clickedButton() == applyQuit &&
                                               (!sites || m_sites->apply()) && (!rules || m_rules->apply()));
        if (!quit) {
            event->ignore();
            return;
        }
    }
    if (m_load->isRunning()) m_load->stop();
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/trafficSplitter", m_traffic->splitter()->saveState());
    event->accept();
}

} // namespace portico::ui

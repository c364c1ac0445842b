// The main window: Sites, Traffic, Rules, Paused, Load test and Latency tabs over one in-process server,
// and a status bar.
#pragma once

#include <QMainWindow>

#include <cstdint>

class QAction;
class QLabel;
class QProcess;
class QScrollArea;
class QTabWidget;
class QTimer;

namespace portico::ui {

class LatencyPage;
class LoadTestPage;
class PausedPage;
class RulesPage;
class ServerController;
class SitesPage;
class TrafficPage;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(ServerController* server, QWidget* parent = nullptr);
    ~MainWindow() override;

    SitesPage* sitesPage() const { return m_sites; }
    TrafficPage* trafficPage() const { return m_traffic; }
    RulesPage* rulesPage() const { return m_rules; }
    PausedPage* pausedPage() const { return m_paused; }
    LoadTestPage* loadTestPage() const { return m_load; }
    LatencyPage* latencyPage() const { return m_latency; }
    /// Shows the tab called `name` ("sites", "traffic", "rules", "paused", "inspector", "load",
    /// "latency"); false if there is none ("inspector" is the Traffic tab with the inspector given
    /// most of the height).
    bool showTab(const QString& name);
    /// Every menu action with a shortcut, as "Menu › Item" → keys (the Help › Keyboard shortcuts
    /// list, and what tests press).
    QList<QPair<QString, QKeySequence>> shortcuts() const;
    /// Opens a config file or a folder (File › Open, the recent list, the command line). A file the
    /// server refuses for problems in its vhosts and routes opens in the Sites form with the problems
    /// on the fields (SitesPage::openDraft); any other refusal is a message box.
    void openPath(const QString& path);
    /// The draft half of openPath without its message box: when `path` is a config file whose
    /// problems are all in vhosts and routes, shows it in the Sites form with the problems on the
    /// fields and returns true; otherwise returns false with the reason in `why`.
    bool openDraft(const QString& path, QString* why);

    /// The Intercept menu's switch ("Intercept traffic (proxy on 127.0.0.1:PORT)"), checkable.
    QAction* interceptAction() const { return m_interceptAction; }
    /// The proxy's port (QSettings "intercept/port", default 8000); takes effect at the next switch-on.
    std::uint16_t interceptPort() const { return m_interceptPort; }
    void setInterceptPort(std::uint16_t port);
    /// Browsers started by "Launch browser through the proxy" that are still running.
    QList<QProcess*> browsers() const;

public slots:
    /// Intercept › the switch: starts (or stops) the intercepting forward proxy on
    /// 127.0.0.1:interceptPort() in the running engine. When the port is taken the switch stays off
    /// and the status bar says why. Returns whether the proxy is in the state asked for.
    bool setIntercepting(bool on);
    /// Intercept › Launch browser through the proxy: Chromium or Chrome ($PORTICO_BROWSER, else on
    /// PATH) with a throw-away profile, through the proxy (switched on first), trusting the local CA
    /// for that browser only (the launch of `portico proxy chromium`).
    void launchBrowser();
    /// Intercept › Copy terminal setup: the exports of `portico proxy env --port PORT`, to the
    /// clipboard.
    void copyTerminalSetup();
    /// Help menu: the shortcut list, the About box (Portico, Qt and the core's library versions),
    /// the user guide (docs/gui.md as installed, else in the source tree).
    void showShortcuts();
    void showAbout();
    void openGuide();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void openProject();
    void openFolder();
    void updateListeners();
    void updateRate();
    void updateRecentMenu();
    void updateContextShortcuts();
    void updateTitle();
    void updateIntercept();
    /// The Paused tab's title ("Paused (2)") and highlight.
    void updatePausedTab();

    ServerController* m_server;
    QTabWidget* m_tabs = nullptr;
    SitesPage* m_sites = nullptr;
    TrafficPage* m_traffic = nullptr;
    RulesPage* m_rules = nullptr;
    PausedPage* m_paused = nullptr;      ///< exchanges held by breakpoint rules
    QScrollArea* m_loadScroll = nullptr; ///< the Load test tab: m_load, scrolled on small screens
    LoadTestPage* m_load = nullptr;
    LatencyPage* m_latency = nullptr;
    QLabel* m_listeners = nullptr;
    QLabel* m_rate = nullptr;
    QLabel* m_capture = nullptr;
    QLabel* m_websocket = nullptr;       ///< WebSocket sessions and rooms; hidden until the first one
    QLabel* m_interceptStatus = nullptr; ///< the proxy: off, on (port), or why it could not start
    QAction* m_interceptAction = nullptr;
    std::uint16_t m_interceptPort = 8000;
    QString m_interceptError; ///< why the last switch-on failed ("" when it did not)
    QTimer* m_rateTimer = nullptr;
    QMenu* m_recent = nullptr;
    QAction* m_revert = nullptr;
    QAction* m_resend = nullptr;
    std::uint64_t m_lastRequests = 0;
    qint64 m_lastMs = 0;
};

} // namespace portico::ui

// The main window: Sites, Traffic, Load test and Latency tabs over one in-process server, and a status bar.
#pragma once

#include <QMainWindow>

class QLabel;
class QScrollArea;
class QTabWidget;
class QTimer;

namespace portico::ui {

class LatencyPage;
class LoadTestPage;
class ServerController;
class SitesPage;
class TrafficPage;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(ServerController* server, QWidget* parent = nullptr);

    SitesPage* sitesPage() const { return m_sites; }
    TrafficPage* trafficPage() const { return m_traffic; }
    LoadTestPage* loadTestPage() const { return m_load; }
    LatencyPage* latencyPage() const { return m_latency; }
    /// Shows the tab called `name` ("sites", "traffic", "inspector", "load", "latency"); false if there
    /// is none ("inspector" is the Traffic tab with the inspector given most of the height).
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

public slots:
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

    ServerController* m_server;
    QTabWidget* m_tabs = nullptr;
    SitesPage* m_sites = nullptr;
    TrafficPage* m_traffic = nullptr;
    QScrollArea* m_loadScroll = nullptr; ///< the Load test tab: m_load, scrolled on small screens
    LoadTestPage* m_load = nullptr;
    LatencyPage* m_latency = nullptr;
    QLabel* m_listeners = nullptr;
    QLabel* m_rate = nullptr;
    QLabel* m_capture = nullptr;
    QLabel* m_websocket = nullptr; ///< WebSocket sessions and rooms; hidden until the first one
    QTimer* m_rateTimer = nullptr;
    QMenu* m_recent = nullptr;
    QAction* m_revert = nullptr;
    QAction* m_resend = nullptr;
    std::uint64_t m_lastRequests = 0;
    qint64 m_lastMs = 0;
};

} // namespace portico::ui

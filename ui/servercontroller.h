// Owns the in-process server (portico::engine::Engine) and the project file: publish, save, watch.
#pragma once

#include <portico/config/config.h>
#include <portico/config/reader.h>
#include <portico/engine/engine.h>

#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

class QFileSystemWatcher;

namespace portico::ui {

/// Engine numbers for the UI's timers, sampled off the UI thread (see ServerController::live()).
struct LiveStats {
    std::uint64_t requests = 0;
    std::uint64_t connectionsOpen = 0;
    std::uint64_t capturedRecords = 0;
    std::uint64_t droppedRecords = 0;
};

/// The GUI's one handle on the core. Lives on the UI thread; every call returns quickly (publish
/// is an atomic pointer swap, counters are relaxed loads).
class ServerController : public QObject {
    Q_OBJECT

public:
    explicit ServerController(QObject* parent = nullptr);
    ~ServerController() override;

    /// Loads `path` (a YAML file, or a folder to serve without a file) and starts serving it.
    /// When a configured port is taken and `movePortIfTaken`, tries the next ones (in memory only).
    bool open(const QString& path, QString* error, bool movePortIfTaken = true);

    /// A config file that open() refused, read for the form: the config as read (values that did not
    /// read keep their defaults) and every reading and validation error. Only when every error is in
    /// a vhost or route (`vhosts[...]`), which the Sites form can edit; otherwise false with `error`
    /// (unreadable file, YAML syntax, listeners, limits). On success the project's file becomes
    /// `path` (Apply saves there) while the engine keeps serving what it served before.
    bool openDraft(const QString& path, std::shared_ptr<config::Config>& draft,
                   std::vector<config::ConfigError>& errors, QString* error);

    /// Validated snapshot → engine (live, no restart) and, when the project has a file and `save`,
    /// → the file.
    bool apply(std::shared_ptr<const config::Config> config, QString* error, bool save = true);

    void stop();
    /// Copies the capture's session file (the temporary one, or capture.store) to `path`, which
    /// `portico replay`, `har export` and `bench --from` read. False with `error` on failure.
    bool saveCapture(const QString& path, QString* error);
    /// The temporary session file of this app ("" when none could be made).
    QString sessionFile() const { return m_sessionFile; }

    std::shared_ptr<const config::Config> config() const { return m_config; }
    QString configPath() const { return m_configPath; } ///< "" when serving a folder without a file
    QString baseDir() const;                            ///< relative paths in the YAML resolve here
    QStringList urls() const;                           ///< the listener URLs, "http://127.0.0.1:8080/"
    /// The listener URLs whose address is not loopback (0.0.0.0, a LAN address): reachable from
    /// other machines; the window shows a warning while there are any.
    QStringList exposedUrls() const;
    QString firstHttpUrl() const;
    /// Exact, from the engine (takes its mutex: not for timers that run during a load test).
    engine::Counters counters() const { return m_engine.counters(); }
    /// At most kSampleMs old, never blocks: a sampler thread reads the engine so that the UI
    /// thread never waits on the engine's mutex (held by readers that a busy machine may preempt).
    LiveStats live() const;
    static constexpr int kSampleMs = 33;
    /// The engine's latency statistics (overall, per vhost, per route, 1 s series), copied by the
    /// sampler thread about every kReportMs; never blocks on the engine. Null before the first copy.
    std::shared_ptr<const stats::Report> latencyReport() const;
    static constexpr int kReportMs = 1000;
    /// The engine's WebSocket totals and rooms (members, messages/s), copied with the report.
    /// Null before the first copy.
    std::shared_ptr<const ws::Stats> webSocketStats() const;
    engine::Engine& engine() { return m_engine; }

    /// The Intercept switch: a forward proxy listener that intercepts HTTPS with the local CA
    /// (`forward_proxy: {intercept: true}`) on 127.0.0.1:`port`, added to what the engine serves
    /// (never to the project's config or file) with capture on, so its exchanges are in the
    /// Traffic tab. Origins are verified against the system store plus the local CA (the project's
    /// own `tls: auto` sites). Kept across open(), apply() and reloads of the file. False with
    /// `error` (the port is taken, ...) and off when the listener cannot be opened.
    bool setIntercept(bool on, std::uint16_t port, QString* error);
    bool intercepting() const { return m_interceptPort != 0; }
    std::uint16_t interceptPort() const { return m_interceptPort; }

signals:
    void configChanged();    ///< a new snapshot is in force (Apply, or an external edit)
    void listenersChanged(); ///< urls() changed
    void interceptChanged(); ///< the Intercept switch went on or off
    /// The project file changed on disk: reloaded, or refused (message lists the errors).
    void externalChange(const QString& message, bool reloaded);

private:
    void watch();
    void onFileChanged();

    void sample();
    /// What the engine runs for the project's `config`: the config, plus the proxy listener
    /// while intercepting.
    std::shared_ptr<const config::Config> forEngine(std::shared_ptr<const config::Config> config) const;
    bool isProxyEndpoint(const engine::Endpoint& ep) const;

    engine::Engine m_engine;
    std::atomic<std::uint64_t> m_liveRequests{0}, m_liveOpen{0}, m_liveCaptured{0}, m_liveDropped{0};
    std::mutex m_samplerMutex;
    std::condition_variable m_samplerWake;
    bool m_samplerStop = false;
    std::thread m_sampler;
    mutable std::mutex m_reportMutex; ///< guards only the pointer swap below
    std::shared_ptr<const stats::Report> m_report;
    std::shared_ptr<const ws::Stats> m_wsStats;
    std::chrono::steady_clock::time_point m_reportAt{};
    std::shared_ptr<const config::Config> m_config;
    QString m_configPath;
    QString m_folder;
    QString m_sessionFile;
    QByteArray m_lastWritten; ///< what we saved last, so our own writes are not "external"
    QFileSystemWatcher* m_watcher = nullptr;
    std::uint16_t m_interceptPort = 0; ///< 0: not intercepting
};

} // namespace portico::ui

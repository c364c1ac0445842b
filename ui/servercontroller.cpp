// ServerController: engine start/publish/stop, YAML save, and the project file watcher.
#include "servercontroller.h"

#include <portico/config/reader.h>
#include <portico/config/writer.h>
#include <portico/tls/local_ca.h>
#include <portico/validate/load.h>
#include <portico/validate/validate.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QStandardPaths>
#include <QTimer>

#include <cerrno>
#include <csignal>
#include <filesystem>

namespace portico::ui {

namespace {
// The folder of the temporary session files, one per running app ("session-PID-N.sqlite").
QString sessionFolder() {
    return QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + QStringLiteral("/sessions");
}

void removeSessionFile(const QString& path) {
    for (const char* suffix : {"", "-wal", "-shm"})
        QFile::remove(path + QLatin1String(suffix));
}
} // namespace

ServerController::ServerController(QObject* parent)
    : QObject(parent), m_watcher(new QFileSystemWatcher(this)) {
    // The app decides paused exchanges (the Paused tab): configs with breakpoint rules may start.
    m_engine.setBreakpointsEnabled(true);
    // Capture always writes a session file, so every row of the table can be inspected however
    // long ago it arrived: a temporary one per app (removed at exit unless saved; Save capture
    // copies it) when the project names no capture.store. Files of apps that are gone (a crash)
    // are removed here.
    const QString folder = sessionFolder();
    if (QDir().mkpath(folder)) {
        QFile::setPermissions(folder,
                              QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        for (const QString& name :
             QDir(folder).entryList({QStringLiteral("session-*.sqlite")}, QDir::Files)) {
            const qint64 pid = name.section('-', 1, 1).section('.', 0, 0).toLongLong();
            if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
                removeSessionFile(folder + '/' + name);
        }
        // One file per controller (a test makes several in one process): session-PID-N.sqlite.
        static std::atomic<int> serial{0};
        m_sessionFile =
            folder +
            QStringLiteral("/session-%1-%2.sqlite").arg(QCoreApplication::applicationPid()).arg(++serial);
        removeSessionFile(m_sessionFile); // a file of an earlier process with the same pid
        m_engine.setSessionStore(m_sessionFile.toStdString());
    }
    // Editors save by rename, which ends the watch on the old inode: re-arm after each change, and
    // wait a moment so a half-written file is not read.
    connect(m_watcher, &QFileSystemWatcher::fileChanged, this,
            [this] { QTimer::singleShot(100, this, &ServerController::onFileChanged); });
    m_sampler = std::thread([this] {
        std::unique_lock lock(m_samplerMutex);
        while (!m_samplerStop) {
            lock.unlock();
            sample();
            lock.lock();
            m_samplerWake.wait_for(lock, std::chrono::milliseconds(kSampleMs),
                                   [this] { return m_samplerStop; });
        }
    });
}

ServerController::~ServerController() {
    {
        std::lock_guard lock(m_samplerMutex);
        m_samplerStop = true;
    }
    m_samplerWake.notify_all();
    m_sampler.join();
    stop();
    if (!m_sessionFile.isEmpty()) removeSessionFile(m_sessionFile);
}

bool ServerController::saveCapture(const QString& path, QString* error) {
    std::string why;
    QFile::remove(path); // the file dialog asked before overwriting
    if (m_engine.saveCapture(path.toStdString(), why)) return true;
    if (error) *error = QString::fromStdString(why);
    return false;
}

void ServerController::sample() {
    const auto c = m_engine.counters();
    m_liveRequests.store(c.requests, std::memory_order_relaxed);
    m_liveOpen.store(c.connectionsOpen, std::memory_order_relaxed);
    m_liveCaptured.store(m_engine.capturedRecords(), std::memory_order_relaxed);
    m_liveDropped.store(m_engine.droppedRecords(), std::memory_order_relaxed);
    // The report copies one HDR histogram per group: once a second is enough for the Latency tab.
    const auto now = std::chrono::steady_clock::now();
    if (now - m_reportAt >= std::chrono::milliseconds(kReportMs)) {
        m_reportAt = now;
        auto report = std::make_shared<const stats::Report>(m_engine.stats());
        auto ws = std::make_shared<const ws::Stats>(m_engine.webSocketStats());
        std::lock_guard lock(m_reportMutex);
        m_report = std::move(report);
        m_wsStats = std::move(ws);
    }
}

std::shared_ptr<const stats::Report> ServerController::latencyReport() const {
    std::lock_guard lock(m_reportMutex);
    return m_report;
}

std::shared_ptr<const ws::Stats> ServerController::webSocketStats() const {
    std::lock_guard lock(m_reportMutex);
    return m_wsStats;
}

LiveStats ServerController::live() const {
    return {m_liveRequests.load(std::memory_order_relaxed), m_liveOpen.load(std::memory_order_relaxed),
            m_liveCaptured.load(std::memory_order_relaxed), m_liveDropped.load(std::memory_order_relaxed)};
}

QString ServerController::baseDir() const {
    if (!m_configPath.isEmpty()) return QFileInfo(m_configPath).absolutePath();
    return m_folder;
}

bool ServerController::open(const QString& path, QString* error, bool movePortIfTaken) {
    std::shared_ptr<const config::Config> cfg;
    QFileInfo info(path);
    if (info.isDir()) {
        cfg = config::configForDirectory(info.canonicalFilePath().toStdString(), "localhost", 8080);
        m_configPath.clear();
        m_folder = info.canonicalFilePath();
    } else {
        auto result = config::loadConfigFile(path.toStdString());
        if (!result.ok()) {
            QStringList lines;
            for (const auto& e : result.errors)
                lines << QString::fromStdString(e.toString());
            if (error) *error = lines.join('\n');
            return false;
        }
        cfg = result.config;
        m_configPath = info.absoluteFilePath();
        m_folder.clear();
        QFile f(m_configPath);
        if (f.open(QIODevice::ReadOnly)) m_lastWritten = f.readAll();
    }
    m_engine.stop();
    std::string why;
    bool started = m_engine.start(forEngine(cfg), why);
    if (!started && intercepting()) {
        // The new project takes the proxy's port (or the proxy cannot start): the project wins.
        m_interceptPort = 0;
        emit interceptChanged();
        started = m_engine.start(cfg, why);
    }
    // Like `portico serve DIR`: when the port is taken, move on to the next free one (not saved).
    for (int step = 1;
         !started && movePortIfTaken && step < 20 && !cfg->listen.empty() && cfg->listen.front().port != 0;
         ++step) {
        auto retry = std::make_shared<config::Config>(*cfg);
        for (auto& l : retry->listen) // all together, so 8080/8443 become 8081/8444
            if (l.port != 0 && l.port < 65535) l.port = static_cast<std::uint16_t>(l.port + 1);
        cfg = retry;
        started = m_engine.start(forEngine(cfg), why);
    }
    if (!started) {
        if (error) *error = QString::fromStdString(why);
        return false;
    }
    m_config = cfg;
    watch();
    emit configChanged();
    emit listenersChanged();
    return true;
}

bool ServerController::openDraft(const QString& path, std::shared_ptr<config::Config>& draft,
                                 std::vector<config::ConfigError>& errors, QString* error) {
    const QFileInfo info(path);
    QFile f(info.absoluteFilePath());
    if (info.isDir() || !f.open(QIODevice::ReadOnly)) {
        if (error) *error = tr("cannot read %1").arg(path);
        return false;
    }
    const QByteArray text = f.readAll();
    const std::string file = info.absoluteFilePath().toStdString();
    auto read = config::readConfigText(text.toStdString(), file, info.absolutePath().toStdString(), file);
    errors = read.errors;
    for (auto& e : validate::validate(*read.config, read.map))
        errors.push_back(std::move(e));
    const bool formCanFix = !errors.empty() && std::all_of(errors.begin(), errors.end(), [](const auto& e) {
        return std::string_view(e.path).starts_with("vhosts[");
    });
    if (!formCanFix) {
        QStringList lines;
        for (const auto& e : errors)
            lines << QString::fromStdString(e.toString());
        if (error) *error = lines.isEmpty() ? tr("nothing to fix in the form") : lines.join('\n');
        return false;
    }
    draft = read.config;
    m_configPath = info.absoluteFilePath();
    m_folder.clear();
    m_lastWritten = text;
    watch();
    return true;
}

bool ServerController::apply(std::shared_ptr<const config::Config> cfg, QString* error, bool save) {
    std::string why;
    if (!m_engine.publish(forEngine(cfg), why)) {
        if (error) *error = QString::fromStdString(why);
        return false;
    }
    m_config = cfg;
    if (save && !m_configPath.isEmpty()) {
        const std::string text = config::configToYaml(*cfg, baseDir().toStdString());
        m_lastWritten = QByteArray::fromStdString(text);
        if (!config::saveConfigFile(*cfg, m_configPath.toStdString(), why)) {
            if (error) *error = QString::fromStdString(why);
            emit configChanged();
            return false;
        }
        watch();
    }
    emit configChanged();
    emit listenersChanged();
    return true;
}

void ServerController::stop() { m_engine.stop(); }

std::shared_ptr<const config::Config>
ServerController::forEngine(std::shared_ptr<const config::Config> cfg) const {
    if (!cfg || !intercepting()) return cfg;
    auto out = std::make_shared<config::Config>(*cfg);
    config::Listen proxy;
    proxy.host = "127.0.0.1";
    proxy.port = m_interceptPort;
    proxy.forwardProxy = true;
    proxy.proxy.intercept = true;
    // The local CA's own sites (`tls: auto`, this app's HTTPS listeners) verify as origins.
    const auto ca = tls::defaultDataDir() / "ca" / "ca.crt";
    std::error_code ec;
    if (std::filesystem::exists(ca, ec)) proxy.proxy.upstreamCaFile = ca.string();
    out->listen.push_back(proxy);
    out->capture.enabled = true;
    return out;
}

bool ServerController::isProxyEndpoint(const engine::Endpoint& ep) const {
    return intercepting() && ep.port == m_interceptPort && ep.host == "127.0.0.1" && !ep.tls;
}

bool ServerController::setIntercept(bool on, std::uint16_t port, QString* error) {
    if (on && port == 0) {
        if (error) *error = tr("the proxy needs a port");
        return false;
    }
    const std::uint16_t before = m_interceptPort;
    if (on == intercepting() && (!on || port == before)) return true;
    m_interceptPort = on ? port : 0;
    if (m_config && m_engine.running()) {
        // The local CA exists before the listener names it as an origin CA (intercepting creates
        // it anyway).
        if (on) {
            std::string why;
            if (!tls::LocalCa::openOrCreate(tls::defaultDataDir(), why)) {
                m_interceptPort = before;
                if (error) *error = tr("local CA: %1").arg(QString::fromStdString(why));
                return false;
            }
        }
        std::string why;
        if (!m_engine.publish(forEngine(m_config), why)) {
            m_interceptPort = before;
            if (error) *error = QString::fromStdString(why);
            return false;
        }
    }
    emit interceptChanged();
    emit listenersChanged();
    return true;
}

QStringList ServerController::urls() const {
    QStringList out;
    for (const auto& ep : m_engine.endpoints())
        if (!isProxyEndpoint(ep)) out << QString::fromStdString(ep.url());
    return out;
}

QStringList ServerController::exposedUrls() const {
    QStringList out;
    for (const auto& ep : m_engine.endpoints())
        if (!ep.loopback()) out << QString::fromStdString(ep.url());
    return out;
}

QString ServerController::firstHttpUrl() const {
    for (const auto& ep : m_engine.endpoints())
        if (!ep.tls && !isProxyEndpoint(ep)) return QString::fromStdString(ep.url());
    return {};
}

void ServerController::watch() {
    if (!m_watcher->files().isEmpty()) m_watcher->removePaths(m_watcher->files());
    if (!m_configPath.isEmpty() && QFileInfo::exists(m_configPath)) m_watcher->addPath(m_configPath);
}

void ServerController::onFileChanged() {
    watch();
    QFile f(m_configPath);
    if (!f.open(QIODevice::ReadOnly)) return;
    const QByteArray text = f.readAll();
    if (text == m_lastWritten) return;
    m_lastWritten = text;
    const QString name = QFileInfo(m_configPath).fileName();
    auto result = config::loadConfigText(std::string_view(text.constData(), text.size()),
                                         m_configPath.toStdString(), baseDir().toStdString());
    if (!result.ok()) {
        QStringList lines;
        for (const auto& e : result.errors)
            lines << QString::fromStdString(e.toString());
        emit externalChange(tr("%1 changed on disk but has errors; still serving the previous version:\n%2")
                                .arg(name, lines.join('\n')),
                            false);
        return;
    }
    auto cfg = std::const_pointer_cast<config::Config>(result.config);
    cfg->sourcePath = m_configPath.toStdString();
    std::string why;
    if (!m_engine.publish(forEngine(cfg), why)) {
        emit externalChange(
            tr("%1 changed on disk but cannot be applied: %2").arg(name, QString::fromStdString(why)), false);
        return;
    }
    m_config = cfg;
    emit configChanged();
    emit listenersChanged();
    emit externalChange(tr("%1 changed on disk: reloaded.").arg(name), true);
}

} // namespace portico::ui

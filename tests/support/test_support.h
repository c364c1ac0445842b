// Shared helpers for the Qt Test suites: child processes, a `portico serve` runner, raw sockets.
#pragma once

#include <QByteArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

class QProcess;

#include <cstdint>
#include <memory>

namespace portico::test {

/// Built with a sanitizer (the asan and tsan presets): resident-memory bounds do not hold there
/// (shadow memory, ASan's quarantine, TSan's history), so suites skip those checks and say so.
#if defined(__has_feature) // clang
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PORTICO_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(PORTICO_TEST_SANITIZED)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

/// Source tree root, the built `portico` binary and ../shared (see tests/CMakeLists.txt).
QString sourceDir();
QString porticoBinary();
QString sharedDir();
/// The build folder (CMake's binary dir: build/, build/asan/, ...).
QString buildDir();
/// Debian's python with python3-h2 / websockets ("/usr/bin/python3").
QString debianPython();

/// Starts Debian's python on tests/support/SCRIPT with PORT_FILE and `extra` as arguments (the
/// helper servers there bind 127.0.0.1:0 and write their port to PORT_FILE) and waits for the
/// port, at most 10 s. The port, or 0 when the script did not start or wrote none in time (its
/// stderr says why: p.readAllStandardError()).
int startSupportScript(QProcess& p, const QString& script, const QString& portFile,
                       const QStringList& extra = {});

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released); 0 on failure.
/// For command lines and config files that need a number: prefer port 0 where the server takes it.
std::uint16_t freePort();

struct ProcessResult {
    int exitCode = -1; ///< -1 if it crashed or timed out
    bool timedOut = false;
    QByteArray out;
    QByteArray err;
};

/// Runs `program args` to completion (at most `timeoutMs`), feeding `input` on stdin.
ProcessResult runProcess(const QString& program, const QStringList& args, const QByteArray& input = {},
                         int timeoutMs = 30000);
/// The same with `env` as the child's whole environment, in `workingDir`; the child is killed if
/// the test process dies.
ProcessResult runProcessIn(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                           const QString& workingDir, int timeoutMs = 30000);

/// A self-signed EC P-256 certificate (`certPath`) and its key (`keyPath`), PEM, for subject CN
/// `cn`, valid two days, with the subjectAltName `san` when it is not empty
/// ("DNS:localhost,IP:127.0.0.1"). Runs `openssl req -x509`; exitCode 0 on success, else `err`
/// says why.
ProcessResult makeSelfSignedCert(const QString& certPath, const QString& keyPath,
                                 const QString& cn = "localhost", const QString& san = {});

/// What `curl` got: the status (0 if no response), the negotiated version ("1.1", "2"), the body.
struct CurlReply {
    int status = 0;
    QString httpVersion;
    QByteArray body;
    QByteArray err;    ///< curl's stderr (its error message when status is 0)
    int exitCode = -1; ///< curl's exit code (7: could not connect, 60: certificate not trusted, ...)
};

/// Runs `curl -sS --max-time 10 <args...>` (args hold the URL and any options) and returns what it got.
CurlReply curlFetch(const QStringList& args);

/// A `portico serve` child bound to 127.0.0.1 port 0. The port is read from the
/// "Listening on http://HOST:PORT/" line it prints. Killed (SIGTERM, then SIGKILL) on destruction.
class ServerProcess {
public:
    /// Starts `portico serve <args...> --host 127.0.0.1 --port 0` (unless args already contain
    /// --config, in which case the listener comes from the file and the file should use port 0).
    /// `env` adds "NAME=value" entries to the child's environment.
    explicit ServerProcess(const QStringList& args, const QStringList& env = {});
    /// Starts `portico <args...>` exactly as given (nothing added: the subcommand, ports and listen
    /// addresses are the caller's), in `workingDir`, with `env` as its whole environment.
    static std::unique_ptr<ServerProcess> exactly(const QStringList& args, const QProcessEnvironment& env,
                                                  const QString& workingDir);
    ~ServerProcess();
    /// Waits for the listening line; false (with diagnostics in `output()`) on failure.
    bool waitReady(int timeoutMs = 10000);
    std::uint16_t port() const { return port_; }           ///< the first listener printed
    std::uint16_t tlsPort() const { return tlsPort_; }     ///< the first https:// listener (0 if none)
    std::uint16_t plainPort() const { return plainPort_; } ///< the first http:// listener (0 if none)
    QString baseUrl() const;                               ///< "http://127.0.0.1:PORT"
    /// Sends SIGTERM and waits up to `timeoutMs` for exit; returns the exit code, -1 when a signal
    /// ended the process (its number goes into output()), -2 when it is still running (its
    /// threads' stacks go into output() when gdb is installed; the destructor kills it).
    int terminate(int timeoutMs = 10000);
    QByteArray output(); ///< everything printed so far (stdout + stderr)
    qint64 pid() const;

private:
    ServerProcess();
    struct Impl;
    std::unique_ptr<Impl> d_;
    std::uint16_t port_ = 0;
    std::uint16_t tlsPort_ = 0;
    std::uint16_t plainPort_ = 0;
};

/// An HTTPS origin that speaks h2 by ALPN: Portico with `tls: auto` under its own CA (data dir
/// `dir`/origin-data, the CA certificate at `dir`/origin-data/ca/ca.crt), serving `dir`/site with
/// index.html = "from the h2 origin\n". `routes` is YAML appended to the vhost ("    routes:\n..."),
/// `configName` the config file's name in `dir`. Started; the caller checks waitReady().
std::unique_ptr<ServerProcess> startTlsAutoOrigin(const QString& dir, const QString& routes = {},
                                                  const QString& configName = "origin.yaml");

/// Writes the PEM files `pems`, concatenated, to `out` (a CA bundle such as upstream_cacert). False
/// when one cannot be read or `out` cannot be written.
bool writePemBundle(const QString& out, const QStringList& pems);

/// Outcome of a raw exchange.
struct RawReply {
    QByteArray bytes;            ///< everything the server sent
    bool closedByServer = false; ///< the server closed (FIN) or reset within the wait
};

/// Connects to 127.0.0.1:port, sends `request`, then reads until the server closes or no byte
/// arrived for `idleMs`. Keeps our write side open (so we can see whether the server closes).
RawReply rawExchange(std::uint16_t port, const QByteArray& request, int idleMs = 1500);
/// The same for a slow client: the request goes in `pieces`, `pauseMs` apart (for timeouts).
RawReply rawExchangePaced(std::uint16_t port, const QList<QByteArray>& pieces, int pauseMs,
                          int idleMs = 1500);

/// A listener on 127.0.0.1 whose accept queue is full (backlog 0, filled, never accepted): a connect
/// to it neither succeeds nor fails, its SYN is dropped (for connect timeouts). Closed on destruction.
class StuckListener {
public:
    StuckListener();
    ~StuckListener();
    StuckListener(const StuckListener&) = delete;
    StuckListener& operator=(const StuckListener&) = delete;
    std::uint16_t port() const { return port_; } ///< 0 on failure

private:
    int fds_[3] = {-1, -1, -1};
    std::uint16_t port_ = 0;
};

/// TCP sockets on this machine (/proc/net/tcp and tcp6) whose local (Side::Local) or remote port
/// is `port` and whose state is `state` (the hex `st` column: kTimeWait, kCloseWait, ...).
enum class Side { Local, Remote };
inline constexpr int kTimeWait = 0x06, kCloseWait = 0x08;
int tcpSockets(Side side, int port, int state);

/// Status codes of the HTTP/1.x status lines ("HTTP/1.1 NNN ") in `bytes`, in order. Bodies follow
/// heads without a line break, so lines are found anywhere; test bodies must not contain them.
QList<int> statusCodes(const QByteArray& bytes);

} // namespace portico::test

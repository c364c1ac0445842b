// Implementation of the test helpers (QProcess for children, POSIX sockets for raw exchanges).
#include "test_support.h"

#include "raw_client.h"

#include <QFile>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryFile>
#include <QTest>
#include <QThread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace portico::test {

QString sourceDir() { return QStringLiteral(PORTICO_SOURCE_DIR); }
QString porticoBinary() { return QStringLiteral(PORTICO_BINARY); }
QString sharedDir() { return QStringLiteral(PORTICO_SHARED_DIR); }
QString buildDir() { return QStringLiteral(PORTICO_BUILD_DIR); }
QString debianPython() { return QStringLiteral("/usr/bin/python3"); }

int startSupportScript(QProcess& p, const QString& script, const QString& portFile,
                       const QStringList& extra) {
    p.start(debianPython(), QStringList{sourceDir() + "/tests/support/" + script, portFile} + extra);
    if (!p.waitForStarted()) return 0;
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < 10000 && p.state() == QProcess::Running) {
        QFile f(portFile);
        if (f.open(QIODevice::ReadOnly))
            if (const int port = f.readAll().trimmed().toInt()) return port;
        QTest::qWait(20); // events run meanwhile: the process's state and pipes stay current
    }
    return 0;
}

std::uint16_t freePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    std::uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

namespace {
ProcessResult finish(QProcess& p, const QString& program, const QByteArray& input, int timeoutMs) {
    ProcessResult r;
    if (!p.waitForStarted(10000)) {
        r.err = "failed to start " + program.toUtf8();
        return r;
    }
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs)) {
        r.timedOut = true;
        p.kill();
        p.waitForFinished(5000);
    }
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    if (!r.timedOut && p.exitStatus() == QProcess::NormalExit) r.exitCode = p.exitCode();
    return r;
}
} // namespace

ProcessResult runProcess(const QString& program, const QStringList& args, const QByteArray& input,
                         int timeoutMs) {
    QProcess p;
    p.start(program, args);
    return finish(p, program, input, timeoutMs);
}

ProcessResult runProcessIn(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                           const QString& workingDir, int timeoutMs) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(workingDir);
    p.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    p.start(program, args);
    return finish(p, program, {}, timeoutMs);
}

ProcessResult makeSelfSignedCert(const QString& certPath, const QString& keyPath, const QString& cn,
                                 const QString& san) {
    QStringList args{"req",    "-x509", "-newkey", "ec",    "-pkeyopt",  "ec_paramgen_curve:P-256",
                     "-nodes", "-days", "2",       "-subj", "/CN=" + cn, "-keyout",
                     keyPath,  "-out",  certPath};
    if (!san.isEmpty())
        args << "-addext"
             << "subjectAltName=" + san;
    return runProcess("openssl", args);
}

CurlReply curlFetch(const QStringList& args) {
    CurlReply reply;
    QTemporaryFile body;
    if (!body.open()) return reply;
    // The write-out goes to stderr after curl's own messages, so the body file stays byte-exact.
    auto r = runProcess("curl", QStringList{"-sS", "--max-time", "10", "-o", body.fileName(), "-w",
                                            "%{stderr}\n%{http_code} %{http_version}"} +
                                    args);
    const QList<QByteArray> lines = r.err.split('\n');
    const QList<QByteArray> last = lines.isEmpty() ? QList<QByteArray>{} : lines.back().split(' ');
    if (last.size() == 2) {
        reply.status = last[0].toInt();
        reply.httpVersion = QString::fromLatin1(last[1]);
    }
    reply.err = r.err.left(r.err.lastIndexOf('\n')).trimmed();
    reply.body = body.readAll();
    reply.exitCode = r.exitCode;
    return reply;
}

struct ServerProcess::Impl {
    QProcess proc;
    QByteArray out;
};

ServerProcess::ServerProcess(const QStringList& args, const QStringList& env) : d_(std::make_unique<Impl>()) {
    QStringList full{QStringLiteral("serve")};
    full << args;
    if (!args.contains(QStringLiteral("--config"))) {
        if (!args.contains(QStringLiteral("--host")))
            full << QStringLiteral("--host") << QStringLiteral("127.0.0.1");
        if (!args.contains(QStringLiteral("--port"))) full << QStringLiteral("--port") << QStringLiteral("0");
    }
    d_->proc.setProcessChannelMode(QProcess::MergedChannels);
    if (!env.isEmpty()) {
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        for (const QString& kv : env)
            e.insert(kv.section('=', 0, 0), kv.section('=', 1));
        d_->proc.setProcessEnvironment(e);
    }
    // If the test process dies (a crash, a QFATAL), its servers must not outlive it.
    d_->proc.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    d_->proc.start(porticoBinary(), full);
}

ServerProcess::ServerProcess() : d_(std::make_unique<Impl>()) {}

std::unique_ptr<ServerProcess> ServerProcess::exactly(const QStringList& args, const QProcessEnvironment& env,
                                                      const QString& workingDir) {
    std::unique_ptr<ServerProcess> s(new ServerProcess);
    s->d_->proc.setProcessChannelMode(QProcess::MergedChannels);
    s->d_->proc.setProcessEnvironment(env);
    s->d_->proc.setWorkingDirectory(workingDir);
    s->d_->proc.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    s->d_->proc.start(porticoBinary(), args);
    return s;
}

ServerProcess::~ServerProcess() {
    if (d_->proc.state() != QProcess::NotRunning) {
        d_->proc.kill();
        d_->proc.waitForFinished(5000);
    }
}

QByteArray ServerProcess::output() {
    d_->out += d_->proc.readAll();
    return d_->out;
}

qint64 ServerProcess::pid() const { return d_->proc.processId(); }

bool ServerProcess::waitReady(int timeoutMs) {
    static const QRegularExpression re(QStringLiteral("Listening on (https?)://[^ ]*:(\\d+)/"));
    static const QRegularExpression done(QStringLiteral("Press Ctrl\\+C"));
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        const QString text = QString::fromUtf8(output());
        if (done.match(text).hasMatch()) {
            auto it = re.globalMatch(text);
            while (it.hasNext()) {
                auto m = it.next();
                auto p = static_cast<std::uint16_t>(m.captured(2).toUInt());
                if (!port_) port_ = p;
                if (m.captured(1) == QLatin1String("https") && !tlsPort_) tlsPort_ = p;
                if (m.captured(1) == QLatin1String("http") && !plainPort_) plainPort_ = p;
            }
            return port_ != 0;
        }
        if (d_->proc.state() == QProcess::NotRunning) return false;
        d_->proc.waitForReadyRead(100);
    }
    return false;
}

QString ServerProcess::baseUrl() const { return QStringLiteral("http://127.0.0.1:%1").arg(port_); }

int ServerProcess::terminate(int timeoutMs) {
    if (d_->proc.state() != QProcess::NotRunning) {
        ::kill(static_cast<pid_t>(d_->proc.processId()), SIGTERM);
        if (!d_->proc.waitForFinished(timeoutMs)) {
            // Still running: where it is stuck goes into output() (gdb, when installed), so a hang
            // seen once in CI can be explained from its log.
            output();
            QProcess gdb;
            gdb.setProcessChannelMode(QProcess::MergedChannels);
            gdb.start("gdb", {"-batch", "-nx", "-p", QString::number(d_->proc.processId()), "-ex",
                              "thread apply all bt 30"});
            if (gdb.waitForStarted(2000) && gdb.waitForFinished(60000))
                d_->out += "\n--- still running after SIGTERM; threads (gdb):\n" + gdb.readAll();
            else
                d_->out += "\n--- still running after SIGTERM (no gdb for a stack dump)\n";
            return -2;
        }
    }
    output();
    if (d_->proc.exitStatus() == QProcess::NormalExit) return d_->proc.exitCode();
    d_->out += QByteArray("\n--- killed by signal ") + QByteArray::number(d_->proc.exitCode()) + "\n";
    return -1;
}

RawReply rawExchange(std::uint16_t port, const QByteArray& request, int idleMs) {
    return rawExchangePaced(port, {request}, 0, idleMs);
}

RawReply rawExchangePaced(std::uint16_t port, const QList<QByteArray>& pieces, int pauseMs, int idleMs) {
    RawReply reply;
    const int fd = connectLoopback(port);
    if (fd < 0) {
        reply.closedByServer = true;
        return reply;
    }
    for (qsizetype i = 0; i < pieces.size(); ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pauseMs));
        const QByteArray& piece = pieces[i];
        qsizetype sent = 0;
        while (sent < piece.size()) {
            ssize_t n = ::send(fd, piece.constData() + sent, piece.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += n;
        }
    }
    char buf[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        int r = ::poll(&p, 1, idleMs);
        if (r <= 0) break; // idle: connection still open
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            reply.closedByServer = true;
            break;
        }
        reply.bytes.append(buf, n);
    }
    ::close(fd);
    return reply;
}

StuckListener::StuckListener() {
    fds_[0] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fds_[0], reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fds_[0], 0) != 0) return;
    ::getsockname(fds_[0], reinterpret_cast<sockaddr*>(&a), &len);
    for (int i = 1; i < 3; ++i) { // fill the queue: the first completes, the second is left hanging
        fds_[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ::connect(fds_[i], reinterpret_cast<sockaddr*>(&a), sizeof a);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    port_ = ntohs(a.sin_port);
}

StuckListener::~StuckListener() {
    for (int fd : fds_)
        if (fd >= 0) ::close(fd);
}

int tcpSockets(Side side, int port, int state) {
    int n = 0;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        QFile f(table);
        if (!f.open(QIODevice::ReadOnly)) continue;
        f.readLine(); // header
        for (QByteArray line = f.readLine(); !line.isEmpty(); line = f.readLine()) {
            const auto cols = line.simplified().split(' ');
            if (cols.size() < 4) continue;
            const QByteArray& address = cols[side == Side::Local ? 1 : 2];
            const int p = address.mid(address.lastIndexOf(':') + 1).toInt(nullptr, 16);
            if (p == port && cols[3].toInt(nullptr, 16) == state) ++n;
        }
    }
    return n;
}

std::unique_ptr<ServerProcess> startTlsAutoOrigin(const QString& dir, const QString& routes,
                                                  const QString& configName) {
    QDir(dir).mkpath("site");
    QFile index(dir + "/site/index.html");
    if (index.open(QIODevice::WriteOnly)) index.write("from the h2 origin\n");
    index.close();
    QFile cfg(dir + "/" + configName);
    if (cfg.open(QIODevice::WriteOnly))
        cfg.write(
            ("listen: [{address: 127.0.0.1:0, tls: auto}]\nvhosts:\n  - root: site\n" + routes).toUtf8());
    cfg.close();
    return std::make_unique<ServerProcess>(QStringList{"--config", dir + "/" + configName},
                                           QStringList{"PORTICO_DATA_DIR=" + dir + "/origin-data"});
}

bool writePemBundle(const QString& out, const QStringList& pems) {
    QFile bundle(out);
    if (!bundle.open(QIODevice::WriteOnly)) return false;
    for (const QString& f : pems) {
        QFile in(f);
        if (!in.open(QIODevice::ReadOnly)) return false;
        bundle.write(in.readAll());
    }
    return bundle.flush();
}

QList<int> statusCodes(const QByteArray& bytes) {
    QList<int> codes;
    static const QRegularExpression re(QStringLiteral("HTTP/1\\.[01] (\\d{3}) "));
    auto it = re.globalMatch(QString::fromLatin1(bytes));
    while (it.hasNext())
        codes << it.next().captured(1).toInt();
    return codes;
}

} // namespace portico::test

// The engine keeps serving when clients hang up in the middle of a response, in a host process that
// leaves SIGPIPE at its default action (a test, or an application embedding the engine that never
// set SIG_IGN): a write to a socket whose peer is gone must come back as EPIPE, not end the process
// (sendfile and OpenSSL's descriptor writes have no MSG_NOSIGNAL).
#include "raw_client.h"
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <fstream>
#include <string>

#include <sys/socket.h>
#include <unistd.h>

using namespace portico;

namespace {

// Asks for `path`, reads `keep` bytes of the answer, then closes: the server is still writing.
bool hangUpEarly(std::uint16_t port, const std::string& path, std::size_t keep) {
    const int fd = test::connectLoopback(port, 4096);
    if (fd < 0) return false;
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    const bool ok = ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
    char buf[1024];
    std::size_t got = 0;
    while (ok && got < keep) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return ok && got >= keep;
}

} // namespace

class TestEngineSigpipe : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

private slots:
    void initTestCase() {
        std::signal(SIGPIPE, SIG_DFL); // what a host that never thought of it has
        QVERIFY(dir_.isValid());
        std::ofstream(dir_.filePath("big.bin").toStdString(), std::ios::binary)
            << std::string(8 * 1024 * 1024, 'x');
        const std::string yaml =
            "workers: 2\nlisten: [127.0.0.1:0]\nvhosts:\n  - root: " + dir_.path().toStdString() + "\n";
        auto r = config::loadConfigText(yaml, "sigpipe.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
        QVERIFY(port_ != 0);
    }

    // Each client leaves during a large file (sendfile); the process lives and still answers.
    void clientsLeavingDuringAFile() {
        for (int i = 0; i < 40; ++i)
            QVERIFY(hangUpEarly(port_, "/big.bin", 64 * 1024));
        QTest::qWait(200); // the workers meet the closed sockets
        test::RawClient c(port_);
        QVERIFY(c.ok());
        QCOMPARE(c.exchange("GET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n"), 404);
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestEngineSigpipe)
#include "tst_engine_sigpipe.moc"

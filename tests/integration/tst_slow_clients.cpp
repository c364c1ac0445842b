// Slow and hostile HTTP/1.1 clients (issue 9): 1,000 slowloris connections trickling a request head
// one byte per second and 200 slow-body connections trickling a request body do not stop normal
// clients from being served; header_timeout bounds the whole head however slowly it arrives (408,
// then close); body_timeout bounds the gap between body reads (408, then close). Bounded: about
// 12 s, 1,200 sockets, loopback only.
#include "raw_client.h"
#include "test_support.h"

#include <QtTest>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace portico::test;
using Clock = std::chrono::steady_clock;

namespace {

int connectNonBlocking(std::uint16_t port) {
    const int fd = connectLoopback(port);
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

struct Slow {
    int fd = -1;
    QByteArray toSend; // what is left to trickle
    QByteArray got;
    bool closed = false;
};

// Reads what is there without blocking; marks EOF/reset.
void drain(Slow& s) {
    char buf[4096];
    for (;;) {
        const auto n = ::recv(s.fd, buf, sizeof buf, 0);
        if (n > 0) {
            s.got.append(buf, static_cast<int>(n));
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) s.closed = true;
        return;
    }
}

} // namespace

class TestSlowClients : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void slowClientsDoNotStopNormalOnes() {
        QFile f(dir_.filePath("slow.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("workers: 1\nlisten: [\"127.0.0.1:0\"]\n"
                "limits: {header_timeout: 4s, body_timeout: 2s, max_connections_per_worker: 5000}\n"
                "vhosts:\n  - routes:\n      - path: /x\n        respond: {body: fine}\n"
                "      - path: /echo\n        respond: {body: \"{{body}}\"}\n");
        f.close();
        ServerProcess server({"--config", dir_.filePath("slow.yaml")});
        QVERIFY2(server.waitReady(), server.output().constData());

        constexpr int kSlowHeads = 1000, kSlowBodies = 200;
        std::vector<Slow> heads(kSlowHeads), bodies(kSlowBodies);
        const QByteArray head =
            "GET /x HTTP/1.1\r\nHost: localhost\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n";
        for (auto& s : heads) {
            s.fd = connectNonBlocking(server.port());
            QVERIFY(s.fd >= 0);
            s.toSend = head;
        }
        for (auto& s : bodies) {
            s.fd = connectNonBlocking(server.port());
            QVERIFY(s.fd >= 0);
            // The head at once, then a 1,000-byte body a byte per second: never finished in the test.
            const QByteArray h = "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n";
            QCOMPARE(::send(s.fd, h.constData(), h.size(), MSG_NOSIGNAL), static_cast<ssize_t>(h.size()));
            s.toSend = QByteArray(1000, 'b');
        }

        // For 3 s: every slow socket sends one byte per second; a normal client asks every 100 ms.
        int normalOk = 0, normalFailed = 0;
        const auto start = Clock::now();
        auto nextTrickle = start;
        while (Clock::now() - start < std::chrono::seconds(3)) {
            if (Clock::now() >= nextTrickle) {
                for (auto* group : {&heads, &bodies})
                    for (auto& s : *group)
                        if (!s.closed && !s.toSend.isEmpty() &&
                            ::send(s.fd, s.toSend.constData(), 1, MSG_NOSIGNAL) == 1)
                            s.toSend.remove(0, 1);
                nextTrickle += std::chrono::seconds(1);
            }
            RawReply r =
                rawExchange(server.port(), "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 3000);
            if (statusCodes(r.bytes) == QList<int>{200} && r.bytes.endsWith("fine"))
                ++normalOk;
            else
                ++normalFailed;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        QCOMPARE(normalFailed, 0);
        QVERIFY2(normalOk >= 10, qPrintable(QString::number(normalOk)));

        // Nothing was answered yet: the heads are incomplete, the bodies too.
        for (auto& s : heads) {
            drain(s);
            QVERIFY2(s.got.isEmpty() && !s.closed, s.got.constData());
        }
        // Past body_timeout without a byte (their trickle stopped): 408 and close. The heads go on
        // trickling, yet header_timeout (4 s for the whole head, however many bytes come) ends them:
        // 408 and close.
        const auto deadline = Clock::now() + std::chrono::seconds(6);
        auto allClosed = [](const std::vector<Slow>& v) {
            for (const auto& s : v)
                if (!s.closed) return false;
            return true;
        };
        while (Clock::now() < deadline && !(allClosed(heads) && allClosed(bodies))) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (Clock::now() >= nextTrickle) { // the heads keep trickling: only a whole-head bound ends them
                for (auto& s : heads)
                    if (!s.closed && !s.toSend.isEmpty() &&
                        ::send(s.fd, s.toSend.constData(), 1, MSG_NOSIGNAL) == 1)
                        s.toSend.remove(0, 1);
                nextTrickle += std::chrono::seconds(1);
            }
            for (auto* group : {&heads, &bodies})
                for (auto& s : *group)
                    if (!s.closed) drain(s);
        }
        int heads408 = 0, bodies408 = 0;
        for (auto& s : heads)
            heads408 += s.closed && statusCodes(s.got) == QList<int>{408};
        for (auto& s : bodies)
            bodies408 += s.closed && statusCodes(s.got) == QList<int>{408};
        QCOMPARE(heads408, kSlowHeads);
        QCOMPARE(bodies408, kSlowBodies);
        for (auto* group : {&heads, &bodies})
            for (auto& s : *group)
                ::close(s.fd);
        // And the server is still fine.
        RawReply r = rawExchange(server.port(), "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QCOMPARE(server.terminate(), 0);
    }
};

QTEST_GUILESS_MAIN(TestSlowClients)
#include "tst_slow_clients.moc"

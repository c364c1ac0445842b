// Invalid Host and :authority values (RFC 9110 §7.2, RFC 3986 §3.2.2-3.2.3): a port without a host,
// a port out of range or not digits, a broken IPv6 literal. HTTP/1.1 gets 400 and the connection
// is closed as for any bad request; HTTP/2 gets 400 on the stream, the connection goes on; nothing
// is forwarded to the upstream either way. Valid forms (empty Host, "[::1]:8080") still pass.
#include "raw_client.h"
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QtTest>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;

namespace {

// An upstream that never answers but counts the connections made to it.
class CountingUpstream {
public:
    CountingUpstream() { fd_ = test::listenLoopback(port_, 64, SOCK_NONBLOCK); }
    ~CountingUpstream() {
        for (int c : accepted_)
            ::close(c);
        ::close(fd_);
    }
    std::uint16_t port() const { return port_; }
    int connections() {
        for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;)
            accepted_.push_back(c);
        return static_cast<int>(accepted_.size());
    }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::vector<int> accepted_;
};

const char* const kBad[] = {":", ":80", ":99999", "x:abc", "x:65536", "x:1:2", "[::1", "[::1]x", "u@x"};

} // namespace

class TestBadAuthority : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    CountingUpstream upstream_;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY(upstream_.port());
        const std::string yaml = "listen: ['127.0.0.1:0']\nvhosts:\n  - default: true\n    routes:\n"
                                 "      - path: /ok\n        respond: {body: ok}\n"
                                 "      - path: /up/*\n        proxy: {upstream: 'http://127.0.0.1:" +
                                 std::to_string(upstream_.port()) + "', response_timeout: 300ms}\n";
        auto r = config::loadConfigText(yaml, "t.yaml", dir_.path().toStdString());
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    void http1InvalidHostIs400AndCloses() {
        for (const char* host : kBad) {
            const QByteArray req = QByteArray("GET /up/x HTTP/1.1\r\nHost: ") + host + "\r\n\r\n";
            auto reply = test::rawExchange(port_, req);
            QVERIFY2(reply.bytes.startsWith("HTTP/1.1 400 "), (host + (": " + reply.bytes)).constData());
            QVERIFY2(reply.closedByServer, host);
        }
        // Also in the absolute-form target, where the target's authority wins over Host.
        auto reply = test::rawExchange(port_, "GET http://x:99999/up/x HTTP/1.1\r\nHost: x\r\n\r\n");
        QVERIFY2(reply.bytes.startsWith("HTTP/1.1 400 "), reply.bytes.constData());
        QCOMPARE(upstream_.connections(), 0);
    }

    void http1ValidHostsStillServed() {
        for (const char* host :
             {"", "a", "a:", "a:8080", "127.0.0.1:0", "[::1]", "[::1]:65535", "x.test:1"}) {
            const QByteArray req = QByteArray("GET /ok HTTP/1.1\r\nHost: ") + host + "\r\n\r\n";
            auto reply = test::rawExchange(port_, req, 500);
            QVERIFY2(reply.bytes.startsWith("HTTP/1.1 200 "), (host + (": " + reply.bytes)).constData());
        }
    }

    // The same values as :authority and as a Host field over h2c: 400 on the stream, the connection
    // serves the next stream.
    void http2InvalidAuthorityIs400OnTheStream() {
        QTemporaryFile f(dir_.filePath("XXXXXX.py"));
        QVERIFY(f.open());
        f.write(R"PY(
import os, socket, sys, h2.connection, h2.events, h2.config
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=10)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False,
                                                         normalize_outbound_headers=False))
c.initiate_connection(); s.sendall(c.data_to_send())
status = {}
def get(headers):
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, headers, end_stream=True); s.sendall(c.data_to_send())
    while sid not in status:
        data = s.recv(65536)
        if not data: return "closed"
        for e in c.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived): status[e.stream_id] = dict(e.headers)[b":status"].decode()
            if isinstance(e, h2.events.StreamReset): status[e.stream_id] = "reset"
        s.sendall(c.data_to_send())
    return status[sid]
for bad in sys.argv[1:]:
    print("authority", bad, get([(":method", "GET"), (":path", "/up/x"), (":scheme", "http"), (":authority", bad)]))
    print("host", bad, get([(":method", "GET"), (":path", "/up/x"), (":scheme", "http"), ("host", bad)]))
print("after", get([(":method", "GET"), (":path", "/ok"), (":scheme", "http"), (":authority", "[::1]:8080")]))
)PY");
        f.close();
        QStringList args{f.fileName()};
        for (const char* bad : kBad)
            args << bad;
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(port_));
        p.setProcessEnvironment(env);
        p.start(test::debianPython(), args);
        QVERIFY(p.waitForFinished(30000));
        const QByteArray out = p.readAllStandardOutput();
        const QByteArray err = p.readAllStandardError();
        for (const char* bad : kBad) {
            QVERIFY2(out.contains(QByteArray("authority ") + bad + " 400\n"), (out + err).constData());
            QVERIFY2(out.contains(QByteArray("host ") + bad + " 400\n"), (out + err).constData());
        }
        QVERIFY2(out.contains("after 200\n"), (out + err).constData());
        QCOMPARE(upstream_.connections(), 0);
    }
};

QTEST_GUILESS_MAIN(TestBadAuthority)
#include "tst_bad_authority.moc"

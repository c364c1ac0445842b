// TLS listeners and HTTP/2 over the wire with real clients: curl (h2 by ALPN, h2c with prior
// knowledge, HTTP/1.1 over TLS), nghttp, h2load, openssl s_client, Python's h2 for frame-level
// cases, and the H2-01/H2-02 abuse cases of ../shared/cases (tools/h2probe.py).
#include "test_support.h"

#include <QCryptographicHash>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {
struct Reply {
    int status = 0;
    QString version; // curl's %{http_version}: "1.1", "2"
    QByteArray headers;
    QByteArray body;
    QByteArray err;
};

Reply curl(const QString& url, const QStringList& extra = {}) {
    QTemporaryFile body;
    body.open();
    QTemporaryFile head;
    head.open();
    auto r = runProcess("curl", QStringList{"-s", "-S", "--max-time", "10", "-D", head.fileName(), "-o",
                                            body.fileName(), "-w", "%{http_code} %{http_version}"} +
                                    extra + QStringList{url});
    Reply out;
    const QStringList w = QString::fromLatin1(r.out).split(' ');
    out.status = w.value(0).toInt();
    out.version = w.value(1);
    out.headers = head.readAll();
    out.body = body.readAll();
    out.err = r.err;
    return out;
}

QString headerValue(const QByteArray& head, const QByteArray& name) {
    for (const QByteArray& line : head.split('\n'))
        if (line.toLower().startsWith(name.toLower() + ":"))
            return QString::fromLatin1(line.mid(name.size() + 1).trimmed());
    return {};
}

bool makeCert(const QString& dir, const QString& stem, const QString& cn, const QString& san) {
    return makeSelfSignedCert(dir + "/" + stem + ".crt", dir + "/" + stem + ".key", cn, san).exitCode == 0;
}
} // namespace

class TestHttp2Tls : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> server_;
    QString https_; // "https://localhost:PORT"
    QString h2c_;   // "http://127.0.0.1:PORT"
    QString ca_;    // the certificate clients trust
    QByteArray big_;

    void write(const QString& rel, const QByteArray& bytes) {
        QDir().mkpath(QFileInfo(tmp_.filePath(rel)).absolutePath());
        QFile f(tmp_.filePath(rel));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    }
    QStringList trust() const { return {"--cacert", ca_}; }
    QString resolve() const { return QStringLiteral("localhost:%1:127.0.0.1").arg(server_->tlsPort()); }

    // Runs a Python h2 script with PORT/TLS in the environment; returns its stdout.
    QByteArray python(const QByteArray& script, bool tls, std::uint16_t port = 0,
                      const QStringList& extraEnv = {}) {
        QTemporaryFile f(tmp_.filePath("XXXXXX.py"));
        f.setAutoRemove(false);
        f.open();
        f.write(script);
        f.close();
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        if (port == 0) port = tls ? server_->tlsPort() : server_->plainPort();
        env.insert("PORT", QString::number(port));
        env.insert("TLS", tls ? "1" : "0");
        for (const QString& kv : extraEnv)
            env.insert(kv.section('=', 0, 0), kv.section('=', 1));
        p.setProcessEnvironment(env);
        p.start(debianPython(), {f.fileName()});
        p.waitForFinished(30000);
        const QByteArray err = p.readAllStandardError();
        if (!err.isEmpty()) qWarning() << err;
        return p.readAllStandardOutput();
    }

private slots:
    void initTestCase() {
        QVERIFY(makeCert(tmp_.path(), "local", "localhost", "DNS:localhost,IP:127.0.0.1"));
        QVERIFY(makeCert(tmp_.path(), "other", "other.test", "DNS:other.test"));
        ca_ = tmp_.filePath("local.crt");
        write("site/index.html", "<!doctype html><title>h2</title><p>hello over h2</p>\n");
        write("site/a.txt", "hello\n");
        big_.resize(1 << 20);
        for (int i = 0; i < big_.size(); ++i)
            big_[i] = char((i * 131 + 7) & 0xff);
        write("site/big.bin", big_);
        write("portico.yaml", R"(listen:
  - 127.0.0.1:0
  - address: 127.0.0.1:0
    tls: {cert: local.crt, key: local.key}
limits: {max_body_bytes: 64KiB, max_header_bytes: 8KiB}
vhosts:
  - names: [localhost, 127.0.0.1]
    default: true
    root: site
    routes:
      - path: /hello
        respond: {body: "hello {{method}}\n"}
      - path: /echo
        methods: [POST, PUT]
        respond: {body: "{{body}}"}
      - path: /slow
        respond: {body: "late\n", latency: 200ms}
      - path: /slower
        respond: {body: "later\n", latency: 1500ms}
      - path: /old
        redirect: {to: /new, status: 308}
      - path: /only-post
        methods: [POST]
        respond: {body: "posted\n"}
  - names: [other.test]
    tls: {cert: other.crt, key: other.key}
    routes:
      - path: /hello
        respond: {body: "other vhost\n"}
)");
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        QVERIFY(server_->tlsPort() != 0 && server_->plainPort() != 0);
        https_ = QStringLiteral("https://localhost:%1").arg(server_->tlsPort());
        h2c_ = QStringLiteral("http://127.0.0.1:%1").arg(server_->plainPort());
    }

    void alpnPicksH2() {
        auto r = curl(https_ + "/a.txt", trust() + QStringList{"--resolve", resolve()});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.version, QString("2"));
        QCOMPARE(r.body, QByteArray("hello\n"));
        // HTTP/1.1 over TLS when the client offers only that.
        auto h1 = curl(https_ + "/a.txt", trust() + QStringList{"--resolve", resolve(), "--http1.1"});
        QCOMPARE(h1.status, 200);
        QCOMPARE(h1.version, QString("1.1"));
        QCOMPARE(h1.body, QByteArray("hello\n"));
    }

    void h2cPriorKnowledge() {
        auto r = curl(h2c_ + "/hello", {"--http2-prior-knowledge"});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.version, QString("2"));
        QCOMPARE(r.body, QByteArray("hello GET\n"));
        // The same listener still speaks HTTP/1.1.
        auto h1 = curl(h2c_ + "/hello");
        QCOMPARE(h1.version, QString("1.1"));
        QCOMPARE(h1.body, QByteArray("hello GET\n"));
    }

    void sniChoosesVhostCertificate() {
        auto r = curl(QStringLiteral("https://other.test:%1/hello").arg(server_->tlsPort()),
                      {"--cacert", tmp_.filePath("other.crt"), "--resolve",
                       QStringLiteral("other.test:%1:127.0.0.1").arg(server_->tlsPort())});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("other vhost\n"));
        // An unknown name gets the listener's certificate, which the client then rejects.
        auto bad = curl(QStringLiteral("https://unknown.test:%1/hello").arg(server_->tlsPort()),
                        {"--cacert", tmp_.filePath("other.crt"), "--resolve",
                         QStringLiteral("unknown.test:%1:127.0.0.1").arg(server_->tlsPort())});
        QCOMPARE(bad.status, 0);
    }

    void oldTlsVersionsRefused_data() {
        QTest::addColumn<QString>("flag");
        QTest::addColumn<bool>("accepted");
        QTest::newRow("TLS 1.0") << "-tls1" << false;
        QTest::newRow("TLS 1.1") << "-tls1_1" << false;
        QTest::newRow("TLS 1.2") << "-tls1_2" << true;
        QTest::newRow("TLS 1.3") << "-tls1_3" << true;
    }
    void oldTlsVersionsRefused() {
        QFETCH(QString, flag);
        QFETCH(bool, accepted);
        // -cipher @SECLEVEL=0 lets the client offer the old versions at all (Debian's default
        // security level would refuse them on the client side, proving nothing about the server).
        auto r = runProcess("openssl",
                            {"s_client", "-connect", QStringLiteral("127.0.0.1:%1").arg(server_->tlsPort()),
                             flag, "-cipher", "DEFAULT:@SECLEVEL=0", "-alpn", "h2,http/1.1"},
                            "Q\n", 10000);
        const QByteArray all = r.out + r.err;
        if (accepted) {
            QVERIFY2(all.contains("ALPN protocol: h2"), all.constData());
        } else {
            QVERIFY2(!all.contains("ALPN protocol"), all.constData());
            QVERIFY2(all.contains("alert protocol version") || all.contains("no protocols available") ||
                         all.contains("unsupported protocol"),
                     all.constData());
        }
    }

    // The server's preference (SSL_OP_CIPHER_SERVER_PREFERENCE) puts AES-128-GCM first in both
    // versions, against a client that offers AES-256-GCM first (openssl's default order); a client
    // that offers only AES-256-GCM still gets it.
    void aes128GcmPreferred_data() {
        QTest::addColumn<QStringList>("offer");
        QTest::addColumn<QString>("expected");
        QTest::newRow("TLS 1.3, default offer") << QStringList{"-tls1_3"} << "TLS_AES_128_GCM_SHA256";
        QTest::newRow("TLS 1.3, AES-256 only")
            << QStringList{"-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384"} << "TLS_AES_256_GCM_SHA384";
        QTest::newRow("TLS 1.2, default offer") << QStringList{"-tls1_2"} << "ECDHE-ECDSA-AES128-GCM-SHA256";
    }
    void aes128GcmPreferred() {
        QFETCH(QStringList, offer);
        QFETCH(QString, expected);
        auto r = runProcess(
            "openssl",
            QStringList{"s_client", "-connect", QStringLiteral("127.0.0.1:%1").arg(server_->tlsPort())} +
                offer,
            "Q\n", 10000);
        const QByteArray all = r.out + r.err;
        QVERIFY2(all.contains(("Cipher is " + expected).toUtf8()), all.constData());
    }

    void sessionResumption_data() {
        QTest::addColumn<QString>("flag");
        QTest::newRow("TLS 1.3 ticket") << "-tls1_3";
        QTest::newRow("TLS 1.2 ticket") << "-tls1_2";
    }
    void sessionResumption() {
        QFETCH(QString, flag);
        const QString sess = tmp_.filePath("session" + flag + ".pem");
        const QString at = QStringLiteral("127.0.0.1:%1").arg(server_->tlsPort());
        // s_client reads the ticket while it waits for stdin; "Q" after a moment ends it.
        auto run = [&](const QStringList& extra) {
            QProcess p;
            p.start("sh", {"-c", "sleep 1; echo Q"});
            QProcess c;
            p.setStandardOutputProcess(&c);
            c.start("openssl", QStringList{"s_client", "-connect", at, flag} + extra);
            p.waitForFinished(5000);
            c.waitForFinished(10000);
            return c.readAllStandardOutput();
        };
        const QByteArray first = run({"-sess_out", sess});
        QVERIFY2(first.contains("New, TLSv1."), first.constData());
        const QByteArray second = run({"-sess_in", sess});
        QVERIFY2(second.contains("Reused, TLSv1."), second.constData());
    }

    void routeActionsOverH2_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("header"); // "name: value" that must be present, or ""
        QTest::newRow("static") << "/a.txt" << QStringList{} << 200 << QByteArray("hello\n")
                                << "content-type: text/plain; charset=utf-8";
        QTest::newRow("range") << "/a.txt" << QStringList{"-H", "Range: bytes=1-3"} << 206
                               << QByteArray("ell") << "content-range: bytes 1-3/6";
        QTest::newRow("unsatisfiable range")
            << "/a.txt" << QStringList{"-H", "Range: bytes=10-"} << 416
            << QByteArray("416 Range Not Satisfiable\n") << "content-range: bytes */6";
        QTest::newRow("respond") << "/hello" << QStringList{} << 200 << QByteArray("hello GET\n") << "";
        QTest::newRow("request body") << "/echo" << QStringList{"--data-binary", "ping over h2"} << 200
                                      << QByteArray("ping over h2") << "";
        QTest::newRow("redirect") << "/old" << QStringList{} << 308 << QByteArray() << "location: /new";
        QTest::newRow("404") << "/nope" << QStringList{} << 404 << QByteArray("404 Not Found\n") << "";
        QTest::newRow("405") << "/only-post" << QStringList{} << 405 << QByteArray()
                             << "allow: POST, OPTIONS";
        QTest::newRow("413") << "/echo" << QStringList{"--data-binary", QString(70000, 'x')} << 413
                             << QByteArray() << "";
        QTest::newRow("latency") << "/slow" << QStringList{} << 200 << QByteArray("late\n") << "";
    }
    void routeActionsOverH2() {
        QFETCH(QString, path);
        QFETCH(QStringList, extra);
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(QString, header);
        for (bool tls : {true, false}) {
            auto r = tls ? curl(https_ + path, trust() + QStringList{"--resolve", resolve()} + extra)
                         : curl(h2c_ + path, QStringList{"--http2-prior-knowledge"} + extra);
            QCOMPARE(r.version, QString("2"));
            QCOMPARE(r.status, status);
            if (!body.isEmpty()) QCOMPARE(r.body, body);
            if (!header.isEmpty()) {
                const QString name = header.section(':', 0, 0);
                QCOMPARE(headerValue(r.headers, name.toLatin1()), header.section(':', 1).trimmed());
            }
            // RFC 9113 §8.2.2: no connection-specific fields in HTTP/2 responses.
            QVERIFY(headerValue(r.headers, "connection").isEmpty());
        }
    }

    void conditionalAndHeadOverH2() {
        auto first = curl(https_ + "/a.txt", trust() + QStringList{"--resolve", resolve()});
        const QString etag = headerValue(first.headers, "etag");
        QVERIFY(!etag.isEmpty());
        auto again = curl(https_ + "/a.txt",
                          trust() + QStringList{"--resolve", resolve(), "-H", "If-None-Match: " + etag});
        QCOMPARE(again.status, 304);
        QVERIFY(again.body.isEmpty());
        auto head = curl(https_ + "/a.txt", trust() + QStringList{"--resolve", resolve(), "-I"});
        QCOMPARE(head.status, 200);
        QCOMPARE(headerValue(head.headers, "content-length"), QString("6"));
    }

    void largeFileIdenticalOverTls() {
        for (const QStringList& mode : {QStringList{}, QStringList{"--http1.1"}}) {
            auto r = curl(https_ + "/big.bin", trust() + QStringList{"--resolve", resolve()} + mode);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.body.size(), big_.size());
            QVERIFY(r.body == big_);
        }
        auto c = curl(h2c_ + "/big.bin", {"--http2-prior-knowledge"});
        QVERIFY(c.body == big_);
    }

    void nghttpMultiplexes() {
        // Four requests on one connection, each its own stream.
        auto r = runProcess("nghttp", {"-v", "-n", "-m", "4", h2c_ + "/a.txt"}, {}, 15000);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.count(":status: 200"), 4);
        QVERIFY(r.out.contains("stream_id=7"));
    }

    void h2loadAllSucceed_data() {
        QTest::addColumn<bool>("tls");
        QTest::newRow("h2 over TLS") << true;
        QTest::newRow("h2c") << false;
    }
    void h2loadAllSucceed() {
        QFETCH(bool, tls);
        const QString url =
            tls ? QStringLiteral("https://127.0.0.1:%1/hello").arg(server_->tlsPort()) : h2c_ + "/hello";
        auto r = runProcess("h2load", {"-n", "5000", "-c", "8", "-m", "16", url}, {}, 60000);
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("5000 total, 5000 started, 5000 done, 5000 succeeded, 0 failed"),
                 r.out.constData());
    }

    void trailersAndBodyFramesWithPythonH2() {
        // A request body in several DATA frames followed by trailers (RFC 9113 §8.1).
        const QByteArray script = R"PY(
import os, socket, ssl, h2.connection, h2.events, h2.config
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
if os.environ["TLS"] == "1":
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"]); s = ctx.wrap_socket(s, server_hostname="localhost")
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection(); s.sendall(c.data_to_send())
sid = c.get_next_available_stream_id()
c.send_headers(sid, [(":method", "POST"), (":path", "/echo"), (":scheme", "https"), (":authority", "localhost"), ("te", "trailers")])
c.send_data(sid, b"part1-"); c.send_data(sid, b"part2")
c.send_headers(sid, [("x-checksum", "abc")], end_stream=True)
s.sendall(c.data_to_send())
body, status, done = b"", None, False
while not done:
    data = s.recv(65536)
    if not data: break
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ResponseReceived): status = dict(e.headers)[b":status"]
        if isinstance(e, h2.events.DataReceived): body += e.data; c.acknowledge_received_data(len(e.data), sid)
        if isinstance(e, h2.events.StreamEnded): done = True
    s.sendall(c.data_to_send())
print(status.decode(), body.decode())
)PY";
        QCOMPARE(python(script, false).trimmed(), QByteArray("200 part1-part2"));
        QCOMPARE(python(script, true).trimmed(), QByteArray("200 part1-part2"));
    }

    // The server's SETTINGS (RFC 9113 §6.5.2) carry the documented defaults: a stream window above
    // 64 KiB, a bound on concurrent streams and on the header list, and SETTINGS_NO_RFC7540_PRIORITIES
    // = 1 (RFC 9218 §2.1: priorities come from the `priority` field, not the deprecated tree).
    void serverSettings() {
        const QByteArray script = R"PY(
import os, socket, ssl, h2.connection, h2.events, h2.config
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["h2"]); s = ctx.wrap_socket(s, server_hostname="localhost")
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection(); s.sendall(c.data_to_send())
while True:
    for e in c.receive_data(s.recv(65536)):
        if isinstance(e, h2.events.RemoteSettingsChanged):
            print(" ".join("%d=%d" % (k, v.new_value) for k, v in sorted(e.changed_settings.items()))); raise SystemExit(0)
)PY";
        QMap<int, qint64> got;
        for (const QByteArray& kv : python(script, true).trimmed().split(' '))
            got.insert(kv.split('=').value(0).toInt(), kv.split('=').value(1).toLongLong());
        QVERIFY2(got.size() >= 4, qPrintable(QStringLiteral("settings: %1").arg(got.size())));
        QCOMPARE(got.value(0x9, -1), 1);                // SETTINGS_NO_RFC7540_PRIORITIES
        QVERIFY(got.value(0x4, 0) > 65535);             // SETTINGS_INITIAL_WINDOW_SIZE
        QVERIFY(got.value(0x3, 0) > 0);                 // SETTINGS_MAX_CONCURRENT_STREAMS
        QCOMPARE(got.value(0x6, -1), qint64(8 * 1024)); // SETTINGS_MAX_HEADER_LIST_SIZE = max_header_bytes
    }

    // A client that sends half a TLS record and pauses leaves OpenSSL holding a partial record. The
    // connection must wait for the socket, not count those bytes as readable input and spin: the
    // server's CPU time over a 1.5 s pause stays near zero (a spin burns the whole pause), then the
    // rest of the record arrives and the request is answered. HTTP/1.1 and HTTP/2 over TLS.
    void partialTlsRecordDoesNotSpin_data() {
        QTest::addColumn<QString>("alpn");
        QTest::newRow("http/1.1") << "http/1.1";
        QTest::newRow("h2") << "h2";
    }
    void partialTlsRecordDoesNotSpin() {
        QFETCH(QString, alpn);
        const QByteArray script = R"PY(
import os, socket, ssl, time
alpn, pid = os.environ["ALPN"], os.environ["SERVER_PID"]
def cpu():  # the server's user + system time, in clock ticks
    f = open("/proc/%s/stat" % pid).read().rsplit(chr(41), 1)[1].split()
    return int(f[11]) + int(f[12])
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols([alpn])
raw = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
def feed():
    d = raw.recv(65536)
    if not d: raise SystemExit("server closed")
    inc.write(d)
while True:
    try:
        tls.do_handshake(); break
    except ssl.SSLWantReadError:
        raw.sendall(out.read()); feed()
raw.sendall(out.read())
assert tls.selected_alpn_protocol() == alpn, tls.selected_alpn_protocol()
if alpn == "h2":
    import h2.connection, h2.config, h2.events
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, [(":method", "GET"), (":path", "/hello"), (":scheme", "https"), (":authority", "localhost")], end_stream=True)
    tls.write(c.data_to_send())
else:
    tls.write(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
record = out.read()
raw.sendall(record[: len(record) // 2])
time.sleep(0.3)  # the half record has been read by now
before = cpu(); time.sleep(1.5); spent = cpu() - before
raw.sendall(record[len(record) // 2 :])
got = b""
while True:
    feed()
    try:
        while True: got += tls.read(65536)
    except ssl.SSLWantReadError:
        pass
    if alpn == "h2":
        for e in c.receive_data(got):
            if isinstance(e, h2.events.ResponseReceived): print("status", dict(e.headers)[b":status"].decode(), "cpu", spent); raise SystemExit(0)
        got = b""
        tls.write(c.data_to_send()); raw.sendall(out.read())
    elif b"\r\n\r\n" in got:
        print("status", got.split(b" ")[1].decode(), "cpu", spent); raise SystemExit(0)
)PY";
        const QList<QByteArray> words =
            python(script, true, 0, {"ALPN=" + alpn, "SERVER_PID=" + QString::number(server_->pid())})
                .trimmed()
                .split(' ');
        QCOMPARE(words.size(), 4);
        QCOMPARE(words[1], QByteArray("200"));
        const long ticks = words[3].toLong();
        const long perSecond = sysconf(_SC_CLK_TCK);
        // 1.5 s of spinning is ~150 ticks; a waiting server uses ~0 (allow 0.3 s for noise).
        QVERIFY2(ticks * 10 < 3 * perSecond,
                 qPrintable(QStringLiteral("server CPU during the pause: %1 ticks").arg(ticks)));
    }

    // limits.idle_timeout holds for HTTP/2 connections too (1 s here): with no stream open for
    // ~300 ms the connection still serves a second request; after 2.5 s the server has closed it.
    void idleTimeoutBothSidesOverH2() {
        write("idle.yaml", "listen: [127.0.0.1:0]\nlimits: {idle_timeout: 1s}\n"
                           "vhosts:\n  - routes:\n      - path: /hello\n        respond: {body: \"hi\"}\n");
        ServerProcess s({"--config", tmp_.filePath("idle.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        const QByteArray script = R"PY(
import os, socket, time, h2.connection, h2.events, h2.config
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection(); s.sendall(c.data_to_send())
def get():
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "GET"), (":path", "/hello"), (":scheme", "http"), (":authority", "t")], end_stream=True)
    s.sendall(c.data_to_send())
    status, body = None, b""
    while True:
        data = s.recv(65536)
        if not data: return "closed"
        for e in c.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived): status = dict(e.headers)[b":status"].decode()
            if isinstance(e, h2.events.DataReceived): body += e.data
            if isinstance(e, h2.events.StreamEnded) and e.stream_id == sid:
                s.sendall(c.data_to_send()); return status + " " + body.decode()
        s.sendall(c.data_to_send())
print("first", get())
time.sleep(0.3)
print("under", get())
time.sleep(2.5)
s.settimeout(1)
try:
    frames = []
    while True:
        data = s.recv(65536)
        if not data: break
        frames += [type(e).__name__ for e in c.receive_data(data)]
    print("over closed", "goaway" if "ConnectionTerminated" in frames else "no-goaway")
except socket.timeout:
    print("over open")
)PY";
        const QByteArray out = python(script, false, s.port());
        QVERIFY2(out.contains("first 200 hi\n"), out.constData());
        QVERIFY2(out.contains("under 200 hi\n"), out.constData());
        // Closed with a GOAWAY(NO_ERROR) first (RFC 9113 §6.8), as an idle pooled upstream is.
        QVERIFY2(out.contains("over closed goaway\n"), out.constData());
        QCOMPARE(s.terminate(), 0);
    }

    // limits.body_timeout over HTTP/2 is per stream: a POST whose body stops arriving gets 408 on
    // its stream while the connection and another stream go on; one whose pieces come closer
    // together than the bound (but take longer in all) is served; a GET waiting for a mock
    // latency longer than body_timeout is not cut.
    void bodyTimeoutPerStreamOverH2() {
        write("bodytimeout.yaml",
              "listen: [127.0.0.1:0]\nlimits: {body_timeout: 1s, idle_timeout: 30s}\n"
              "vhosts:\n  - routes:\n      - path: /echo\n        respond: {body: \"got it\"}\n"
              "      - path: /slow\n        respond: {body: \"slow\", latency: 1500ms}\n");
        ServerProcess s({"--config", tmp_.filePath("bodytimeout.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        const QByteArray script = R"PY(
import os, socket, time, h2.connection, h2.events, h2.config
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=10)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection(); s.sendall(c.data_to_send())
status, ended = {}, set()
def pump(until):
    while not until():
        data = s.recv(65536)
        if not data: print("closed"); return False
        for e in c.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived): status[e.stream_id] = dict(e.headers)[b":status"].decode()
            if isinstance(e, h2.events.StreamEnded): ended.add(e.stream_id)
            if isinstance(e, h2.events.StreamReset): ended.add(e.stream_id)
        s.sendall(c.data_to_send())
    return True
def req(method, path, end):
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", method), (":path", path), (":scheme", "http"), (":authority", "t")], end_stream=end)
    s.sendall(c.data_to_send()); return sid
stalled = req("POST", "/echo", False)
c.send_data(stalled, b"part"); s.sendall(c.data_to_send())
t0 = time.time()
pump(lambda: stalled in status)
print("stalled", status.get(stalled), "after %.1f" % (time.time() - t0))
other = req("GET", "/echo", True)
pump(lambda: other in ended)
print("other", status.get(other))
paced = req("POST", "/echo", False)
for i in range(6):
    time.sleep(0.3); c.send_data(paced, b"x"); s.sendall(c.data_to_send())
c.end_stream(paced); s.sendall(c.data_to_send())
pump(lambda: paced in ended)
print("paced", status.get(paced))
slow = req("GET", "/slow", True)
pump(lambda: slow in ended)
print("slow", status.get(slow))
)PY";
        const QByteArray out = python(script, false, s.port());
        QVERIFY2(out.contains("stalled 408 after"), out.constData());
        const double after = out.mid(out.indexOf("after ") + 6).split('\n').first().toDouble();
        QVERIFY2(after >= 0.9 && after < 4.0, out.constData()); // 1 s bound, 250 ms tick
        QVERIFY2(out.contains("other 200\n"), out.constData());
        QVERIFY2(out.contains("paced 200\n"), out.constData());
        QVERIFY2(out.contains("slow 200\n"), out.constData());
        QVERIFY2(!out.contains("closed"), out.constData());
        QCOMPARE(s.terminate(), 0);
    }

    void oversizedHeaderListGets431() {
        // HPACK bomb (h2probe hpack-bomb): the decoded list exceeds max_header_bytes → 431 on that
        // stream, the connection survives.
        auto r = runProbe("hpack-bomb", "2000");
        QVERIFY2(r.contains(":status 431"), r.constData());
    }

    void abuseGetsEnhanceYourCalm_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("count");
        QTest::newRow("H2-01 rapid reset") << "rapid-reset"
                                           << "20000";
        QTest::newRow("H2-02 continuation flood") << "continuation"
                                                  << "5000";
        QTest::newRow("H2-02 empty continuations") << "continuation0"
                                                   << "100000";
        QTest::newRow("PING flood") << "ping-flood"
                                    << "100000";
        QTest::newRow("SETTINGS flood") << "settings-flood"
                                        << "100000";
        QTest::newRow("MadeYouReset: server-sent resets") << "made-you-reset"
                                                          << "20000";
    }
    void abuseGetsEnhanceYourCalm() {
        QFETCH(QString, mode);
        QFETCH(QString, count);
        auto r = runProbe(mode, count);
        QVERIFY2(r.contains("GOAWAY error_code=11"), r.constData()); // ENHANCE_YOUR_CALM
        QVERIFY2(r.contains("end: server closed the connection"), r.constData());
        // Others are still served.
        auto ok = curl(h2c_ + "/hello", {"--http2-prior-knowledge"});
        QCOMPARE(ok.status, 200);
    }

    // Ten connections open 128 streams each for a 1 MiB file with a zero flow-control window:
    // the server answers the heads, buffers none of the bodies, and serves others meanwhile.
    void zeroWindowStallIsBounded() {
        const qint64 before = rssKiB(server_->pid());
        QVERIFY(before > 0);
        std::vector<std::unique_ptr<QProcess>> probes;
        for (int i = 0; i < 10; ++i) {
            auto p = std::make_unique<QProcess>();
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert("PORT", QString::number(server_->plainPort()));
            env.insert("PATH_", "/big.bin");
            p->setProcessEnvironment(env);
            p->start(debianPython(), {sourceDir() + "/tests/support/cases/h2probe.py", "stall", "128"});
            QVERIFY(p->waitForStarted());
            probes.push_back(std::move(p));
        }
        QTest::qWait(1500); // the probes hold their connections for 3 s after sending
        auto ok = curl(h2c_ + "/hello", {"--http2-prior-knowledge"});
        QCOMPARE(ok.status, 200);
        const qint64 during = rssKiB(server_->pid());
        QVERIFY2(during - before < 32 * 1024,
                 qPrintable(QString("RSS %1 -> %2 KiB").arg(before).arg(during)));
        for (auto& p : probes) {
            QVERIFY(p->waitForFinished(30000));
            const QByteArray out = p->readAll();
            QVERIFY2(out.contains("'HEADERS': 128"), out.constData()); // every head, no body
            QVERIFY2(!out.contains("'DATA'"), out.constData());
        }
    }

    // The TLS handshake runs in the front door under header_timeout: a client that connects and
    // says nothing, or stops inside its ClientHello, is closed once the bound passes; one that is
    // mid-handshake when the server stops does not hold the drain up (it is closed at once, as an
    // idle connection is). Then a full handshake still picks HTTP/1.1 or h2 by ALPN.
    void stalledHandshakeIsClosed() {
        write("stall.yaml", "listen: [{address: 127.0.0.1:0, tls: {cert: local.crt, key: local.key}}]\n"
                            "limits: {header_timeout: 1s, drain_timeout: 30s}\n"
                            "vhosts:\n  - routes:\n      - path: /hello\n        respond: {body: \"hi\"}\n");
        ServerProcess s({"--config", tmp_.filePath("stall.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        QVERIFY(rawExchange(s.port(), QByteArray(), 5000).closedByServer);
        // A TLS record header announcing a ClientHello of 512 bytes, and only 5 of them.
        QVERIFY(rawExchange(s.port(), QByteArray::fromHex("16030102000100020000"), 5000).closedByServer);
        for (const char* version : {"--http1.1", "--http2"}) {
            auto r = curl(QStringLiteral("https://localhost:%1/hello").arg(s.port()),
                          trust() + QStringList{version, "--resolve",
                                                QStringLiteral("localhost:%1:127.0.0.1").arg(s.port())});
            QCOMPARE(r.status, 200);
            QCOMPARE(r.version, QString(version).endsWith('2') ? QString("2") : QString("1.1"));
        }
        QCOMPARE(s.terminate(), 0);
        // With a long header_timeout, a handshake in progress when the server stops is closed at
        // once: terminate() gives up after 10 s, the drain bound here is 30 s.
        write("stall2.yaml", "listen: [{address: 127.0.0.1:0, tls: {cert: local.crt, key: local.key}}]\n"
                             "limits: {header_timeout: 60s, drain_timeout: 30s}\n"
                             "vhosts:\n  - routes:\n      - path: /hello\n        respond: {body: \"hi\"}\n");
        ServerProcess draining({"--config", tmp_.filePath("stall2.yaml")});
        QVERIFY2(draining.waitReady(), draining.output().constData());
        const int pending = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        QVERIFY(pending >= 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(draining.port());
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::connect(pending, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
        const QByteArray partial = QByteArray::fromHex("16030102000100020000");
        QCOMPARE(::send(pending, partial.constData(), partial.size(), MSG_NOSIGNAL), ssize_t(partial.size()));
        QTest::qWait(300); // accepted and inside the handshake
        const int stopped = draining.terminate();
        ::close(pending);
        QCOMPARE(stopped, 0);
    }

    void garbageHandshakeIsCountedAndSurvived() {
        auto r = rawExchange(server_->tlsPort(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1000);
        QVERIFY(r.closedByServer);
        QTRY_VERIFY_WITH_TIMEOUT(server_->output().contains("TLS handshake with 127.0.0.1 failed"), 5000);
        auto ok = curl(https_ + "/a.txt", trust() + QStringList{"--resolve", resolve()});
        QCOMPARE(ok.status, 200);
    }

    void gracefulGoawayOnShutdown() {
        // A slow stream in flight when the server is told to stop still completes, and the client
        // is told with GOAWAY(NO_ERROR).
        QProcess client;
        client.start("nghttp", {"-v", "-n", h2c_ + "/slower"});
        QVERIFY(client.waitForStarted());
        QTest::qWait(700); // the request is in flight (answered after 1.5 s) on a busy machine too
        ::kill(static_cast<pid_t>(server_->pid()), SIGTERM);
        QVERIFY(client.waitForFinished(10000));
        const QByteArray out = client.readAllStandardOutput();
        QVERIFY2(out.contains(":status: 200"), out.constData());
        QVERIFY2(out.contains("recv GOAWAY frame") && out.contains("error_code=NO_ERROR"), out.constData());
        QCOMPARE(server_->terminate(), 0);
    }

private:
    static qint64 rssKiB(qint64 pid) {
        QFile f(QStringLiteral("/proc/%1/status").arg(pid));
        if (!f.open(QIODevice::ReadOnly)) return -1;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').first().toLongLong();
        return -1;
    }

    QByteArray runProbe(const QString& mode, const QString& n) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(server_->plainPort()));
        p.setProcessEnvironment(env);
        p.start(debianPython(), {sourceDir() + "/tests/support/cases/h2probe.py", mode, n});
        p.waitForFinished(60000);
        return p.readAllStandardOutput() + p.readAllStandardError();
    }
};

QTEST_GUILESS_MAIN(TestHttp2Tls)
#include "tst_http2_tls.moc"

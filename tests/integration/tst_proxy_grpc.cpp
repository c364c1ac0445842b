// gRPC passthrough (`grpc:` routes, gRPC over HTTP/2): a python3-grpcio client → portico (h2c) →
// a python3-grpcio server (tests/support/grpc_upstream.py). The four call kinds, metadata and
// proxy fields, error statuses with details, Trailers-Only, deadlines (the client's and the
// route's cap), cancellation reaching the upstream, 8 MiB messages, an unreachable upstream.
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

class TestProxyGrpc : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0, deadPort_ = 0;
    std::unique_ptr<ServerProcess> server_;

    // Runs one scenario of grpc_client.py; "ok" on success, else what went wrong.
    QByteArray call(const QString& scenario, const QString& authority = {}) {
        QStringList args{sourceDir() + "/tests/support/grpc_client.py",
                         QStringLiteral("127.0.0.1:%1").arg(server_->port()), scenario};
        if (!authority.isEmpty()) args << authority;
        auto r = runProcess(debianPython(), args, {}, 60000);
        if (r.out.trimmed() != "ok") qWarning("%s", r.err.constData()); // grpc's own logging
        return r.out.trimmed();
    }

private slots:
    void initTestCase() {
        if (runProcess(debianPython(), {"-c", "import grpc"}).exitCode != 0)
            QSKIP("python3-grpcio is not installed (installers/dev.sh installs it)");
        const QString portFile = tmp_.filePath("grpc.port");
        upstreamPort_ = startSupportScript(upstream_, "grpc_upstream.py", portFile);
        QVERIFY2(upstreamPort_, upstream_.readAllStandardError().constData());
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        deadPort_ = ntohs(a.sin_port);
        ::close(fd);
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [127.0.0.1:0]
limits: {max_body_bytes: 64MiB}
vhosts:
  - names: [127.0.0.1]
    default: true
    routes:
      - path: /test.Echo/*
        grpc: h2c://127.0.0.1:%1
  - names: [capped.test]
    routes:
      - path: /test.Echo/*
        grpc: {upstream: h2c://127.0.0.1:%1, grpc_timeout_max: 300ms}
  - names: [dead.test]
    routes:
      - path: /test.Echo/*
        grpc: 127.0.0.1:%2
)")
                      .arg(upstreamPort_)
                      .arg(deadPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    void unaryAnd8MiBMessages() { QCOMPARE(call("unary"), QByteArray("ok")); }
    void metadataAndProxyFields() { QCOMPARE(call("metadata"), QByteArray("ok")); }
    void serverStreamingAfterHalfClose() { QCOMPARE(call("server_stream"), QByteArray("ok")); }
    void clientStreaming() { QCOMPARE(call("client_stream"), QByteArray("ok")); }
    void bidirectionalPingPong() { QCOMPARE(call("bidi"), QByteArray("ok")); }
    void errorStatusWithDetails() { QCOMPARE(call("error"), QByteArray("ok")); }
    void trailersOnlyIsOneHeadersFrame() { QCOMPARE(call("trailers_only"), QByteArray("ok")); }
    void clientDeadline() { QCOMPARE(call("deadline"), QByteArray("ok")); }
    void routeCapsGrpcTimeout() { QCOMPARE(call("deadline_capped", "capped.test"), QByteArray("ok")); }
    void callUnderGrpcTimeoutCapCompletes() {
        QCOMPARE(call("deadline_capped_under", "capped.test"), QByteArray("ok"));
    }
    void cancellationReachesUpstream() { QCOMPARE(call("cancel"), QByteArray("ok")); }
    void unreachableUpstreamIsUnavailable() { QCOMPARE(call("unavailable", "dead.test"), QByteArray("ok")); }
};

QTEST_GUILESS_MAIN(TestProxyGrpc)
#include "tst_proxy_grpc.moc"

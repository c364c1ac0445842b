// The gRPC passthrough cases of the case bank (../shared/cases/README.md, GRP-01, GRP-03, GRP-05),
// run as the bank runs them: its own probe (tests/support/cases/grpcprobe.py, a copy) as the
// upstream server and as the client, the client aimed at `portico serve` with a `grpc:` route.
// Each check is the bank's "Expected" line for that case.
#include "test_support.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

class TestCasesGrpc : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    std::unique_ptr<ServerProcess> server_;
    QString target_;

    QString probe() const { return sourceDir() + "/tests/support/cases/grpcprobe.py"; }
    // The probe's client output (stdout) for MODE [ARG] through Portico.
    QString run(const QString& mode, const QString& arg = {}) {
        QStringList args{probe(), mode, target_};
        if (!arg.isEmpty()) args << arg;
        auto r = runProcess(debianPython(), args, {}, 90000);
        return QString::fromUtf8(r.out);
    }
    static double elapsed(const QString& out) {
        const qsizetype at = out.lastIndexOf("elapsed ");
        return at < 0 ? -1 : out.mid(at + 8).section('s', 0, 0).toDouble();
    }

private slots:
    void initTestCase() {
        if (runProcess(debianPython(), {"-c", "import grpc"}).exitCode != 0)
            QSKIP("python3-grpcio is not installed (installers/dev.sh installs it)");
        // The probe's server takes a fixed port: find a free one.
        const int port = freePort();
        QVERIFY(port);
        upstream_.setProcessChannelMode(QProcess::MergedChannels);
        upstream_.start(debianPython(), {probe(), "server", QString::number(port)});
        QVERIFY(upstream_.waitForStarted());
        QByteArray said;
        QTRY_VERIFY_WITH_TIMEOUT((said += upstream_.readAll()).contains("grpcprobe server on"), 15000);
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral("listen: [127.0.0.1:0]\nlimits: {max_body_bytes: 64MiB}\n"
                                 "vhosts:\n  - names: [127.0.0.1]\n    default: true\n    routes:\n"
                                 "      - location: /probe.P/\n        grpc: h2c://127.0.0.1:%1\n")
                      .arg(port)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        target_ = QStringLiteral("127.0.0.1:%1").arg(server_->port());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    // GRP-01: a Trailers-Only error (one HEADERS frame with grpc-status) arrives as sent.
    void grp01TrailersOnly() {
        const QString out = run("trailers-only");
        QVERIFY2(out.contains("RPC ended: StatusCode.NOT_FOUND 'probe-not-found'"), qPrintable(out));
    }

    // GRP-03: the client's 1 s deadline ends a 5 s call with DEADLINE_EXCEEDED at about 1 s (the
    // bank's direct run: 1.00 s; here well before the handler's 5 s); a call longer than any
    // default timeout but within its deadline completes.
    void grp03DeadlineHonoured() {
        const QString out = run("deadline", "5");
        QVERIFY2(out.contains("StatusCode.DEADLINE_EXCEEDED"), qPrintable(out));
        const double t = elapsed(out);
        QVERIFY2(t >= 0.9 && t < 4.0, qPrintable(out));
    }
    void grp03LongCallNotCut() {
        const QString out = run("long", "3");
        QVERIFY2(out.contains("b'done'"), qPrintable(out));
    }

    // GRP-05: 100 KiB and 8 MiB unary echoes come back identical (flow control across the hop).
    void grp05LargeMessages() {
        for (const QString& mib : {QStringLiteral("0.1"), QStringLiteral("8")}) {
            const QString out = run("large", mib);
            QVERIFY2(out.contains("identical"), qPrintable(mib + " MiB: " + out));
        }
    }

    // The probe's other two modes: a client's cancel reaches the upstream handler; replies sent
    // after the client half-closed still arrive.
    void cancelReachesUpstream() {
        const QString out = run("cancel");
        QVERIFY2(out.contains("server side: cancelled after"), qPrintable(out));
    }
    void halfClosedStreamKeepsReceiving() {
        const QString out = run("halfclose");
        QCOMPARE(out.count("reply: after-half-close"), 5);
        QVERIFY2(out.contains("status OK"), qPrintable(out));
    }
};

QTEST_GUILESS_MAIN(TestCasesGrpc)
#include "tst_cases_grpc.moc"

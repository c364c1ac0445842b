// `tls: auto` end to end: `portico serve DIR --https-port`, the local development CA created in
// $PORTICO_DATA_DIR, leaves issued on demand only for names the config serves, and curl trusting
// nothing but the exported CA (no -k anywhere).
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
struct Fetch {
    int status = 0;
    QString version;
    QByteArray body;
    int exitCode = -1;
};

Fetch fetch(const QString& url, const QStringList& extra) {
    QTemporaryFile body;
    body.open();
    auto r = runProcess("curl", QStringList{"-s", "--max-time", "10", "-o", body.fileName(), "-w",
                                            "%{http_code} %{http_version}"} +
                                    extra + QStringList{url});
    Fetch f;
    const QStringList w = QString::fromLatin1(r.out).split(' ');
    f.status = w.value(0).toInt();
    f.version = w.value(1);
    f.body = body.readAll();
    f.exitCode = r.exitCode;
    return f;
}
} // namespace

class TestTlsAuto : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QString data_; // PORTICO_DATA_DIR of the servers below

    QStringList env() const { return {"PORTICO_DATA_DIR=" + data_}; }
    void write(const QString& rel, const QByteArray& bytes) {
        QDir().mkpath(QFileInfo(tmp_.filePath(rel)).absolutePath());
        QFile f(tmp_.filePath(rel));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    }
    QString exportCa() {
        QProcess p;
        auto e = QProcessEnvironment::systemEnvironment();
        e.insert("PORTICO_DATA_DIR", data_);
        p.setProcessEnvironment(e);
        const QString out = tmp_.filePath("exported-ca.pem");
        p.start(porticoBinary(), {"cert", "export", out});
        if (!p.waitForFinished(20000) || p.exitCode() != 0) return {};
        return out;
    }

private slots:
    void initTestCase() {
        data_ = tmp_.filePath("data");
        write("site/index.html", "<!doctype html><p>secure hello</p>\n");
    }

    void serveFolderOverHttpsTrustingOnlyTheExportedCa() {
        ServerProcess server({tmp_.filePath("site"), "--https-port", "0"}, env());
        QVERIFY2(server.waitReady(), server.output().constData());
        QVERIFY(server.tlsPort() != 0);
        QVERIFY(server.output().contains("local development CA"));
        // Created on first use, private key 0600.
        QFileInfo key(data_ + "/ca/ca.key");
        QVERIFY(key.exists());
        QCOMPARE(key.permissions() &
                     (QFile::ReadGroup | QFile::ReadOther | QFile::WriteGroup | QFile::WriteOther),
                 QFile::Permissions());
        const QString ca = exportCa();
        QVERIFY(!ca.isEmpty());
        for (const QString& host : {QStringLiteral("localhost"), QStringLiteral("127.0.0.1")}) {
            auto f = fetch(QStringLiteral("https://%1:%2/").arg(host).arg(server.tlsPort()),
                           {"--cacert", ca, "--resolve",
                            QStringLiteral("localhost:%1:127.0.0.1").arg(server.tlsPort())});
            QCOMPARE(f.status, 200);
            QCOMPARE(f.version, QString("2"));
            // Served as a folder: the page comes with the live-reload script (on by default).
            QVERIFY2(f.body.startsWith("<!doctype html><p>secure hello</p>\n"), f.body.constData());
            QCOMPARE(f.body.count("<script data-portico-live-reload>"), 1);
        }
        // Without the CA the same request fails verification (curl exit 60).
        auto untrusted =
            fetch(QStringLiteral("https://localhost:%1/").arg(server.tlsPort()),
                  {"--resolve", QStringLiteral("localhost:%1:127.0.0.1").arg(server.tlsPort()), "--capath",
                   tmp_.filePath("empty"), "--cacert", tmp_.filePath("site/index.html")});
        QVERIFY(untrusted.exitCode != 0);
    }

    void leavesOnlyForServedNames() {
        write("auto.yaml", R"(listen:
  - {address: 127.0.0.1:0, tls: auto}
vhosts:
  - names: [app.test, "*.app.test"]
    root: site
)");
        ServerProcess server({"--config", tmp_.filePath("auto.yaml")}, env());
        QVERIFY2(server.waitReady(), server.output().constData());
        const QString ca = exportCa();
        QVERIFY(!ca.isEmpty());
        auto at = [&](const QString& name) {
            return fetch(QStringLiteral("https://%1:%2/").arg(name).arg(server.tlsPort()),
                         {"--cacert", ca, "--resolve",
                          QStringLiteral("%1:%2:127.0.0.1").arg(name).arg(server.tlsPort())});
        };
        QCOMPARE(at("app.test").status, 200);
        QCOMPARE(at("api.app.test").status, 200); // the wildcard name, issued for the exact name
        QVERIFY(QFileInfo::exists(data_ + "/certs/app.test.pem"));
        QVERIFY(QFileInfo::exists(data_ + "/certs/api.app.test.pem"));
        // A name the config doesn't serve: no leaf is issued, the client sees a name mismatch.
        auto foreign = at("bank.example");
        QCOMPARE(foreign.status, 0);
        QCOMPARE(foreign.exitCode, 60);
        QVERIFY(!QFileInfo::exists(data_ + "/certs/bank.example.pem"));
    }

    void ownCertificateFromTheCommandLine() {
        auto gen = makeSelfSignedCert(tmp_.filePath("own.crt"), tmp_.filePath("own.key"), "localhost",
                                      "DNS:localhost");
        QCOMPARE(gen.exitCode, 0);
        ServerProcess server({tmp_.filePath("site"), "--https-port", "0", "--cert", tmp_.filePath("own.crt"),
                              "--key", tmp_.filePath("own.key")},
                             env());
        QVERIFY2(server.waitReady(), server.output().constData());
        QVERIFY(!server.output().contains("local development CA"));
        auto f = fetch(QStringLiteral("https://localhost:%1/").arg(server.tlsPort()),
                       {"--cacert", tmp_.filePath("own.crt"), "--resolve",
                        QStringLiteral("localhost:%1:127.0.0.1").arg(server.tlsPort())});
        QCOMPARE(f.status, 200);
    }

    void mismatchedKeyRefused() {
        auto a = runProcess("openssl", {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                                        "-out", tmp_.filePath("other.key")});
        QCOMPARE(a.exitCode, 0);
        // On the command line: exit 1 and a message naming the key file.
        auto r = runProcess(porticoBinary(),
                            {"serve", tmp_.filePath("site"), "--port", "0", "--https-port", "0", "--cert",
                             tmp_.filePath("own.crt"), "--key", tmp_.filePath("other.key")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("other.key") && r.err.contains("does not match"), r.err.constData());
        // --cert without --key is a usage error.
        auto u = runProcess(porticoBinary(), {"serve", tmp_.filePath("site"), "--https-port", "0", "--cert",
                                              tmp_.filePath("own.crt")});
        QCOMPARE(u.exitCode, 2);
        // In a config: refused whole, located at the cert key.
        write("bad.yaml", "listen:\n  - address: 127.0.0.1:0\n    tls: {cert: own.crt, key: other.key}\n"
                          "vhosts:\n  - root: site\n");
        auto c = runProcess(porticoBinary(), {"serve", "--config", tmp_.filePath("bad.yaml"), "--test"});
        QCOMPARE(c.exitCode, 1);
        QVERIFY2(c.err.contains("bad.yaml:3:") && c.err.contains("does not match"), c.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestTlsAuto)
#include "tst_tls_auto.moc"

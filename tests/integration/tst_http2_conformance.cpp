// RFC 9113 stream-state rules on h2c and on h2 over TLS, with frames built by hand
// (tests/support/h2_frames.py): frames on streams the client reset or ended, HEADERS below an
// opened id, PRIORITY on stream 0 or on itself, DATA on a half-closed (remote) stream, an invalid
// preface. Legitimate sequences (a body right behind its HEADERS, trailers, PRIORITY for another
// stream) keep working.
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;

class TestHttp2Conformance : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t plain_ = 0, tls_ = 0;
    QMap<QString, QString> results_[2]; // [tls]: case → "FRAMES / END"

    QMap<QString, QString> probe(bool tls) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(tls ? tls_ : plain_));
        env.insert("TLS", tls ? "1" : "0");
        p.setProcessEnvironment(env);
        p.start(test::debianPython(), {test::sourceDir() + "/tests/support/h2_frames.py"});
        p.waitForFinished(90000);
        const QByteArray err = p.readAllStandardError();
        if (!err.isEmpty()) qWarning() << err;
        QMap<QString, QString> out;
        for (const QString& line :
             QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
            const auto arrow = line.indexOf(" -> ");
            if (arrow > 0) out[line.left(arrow)] = line.mid(arrow + 4);
        }
        return out;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("PORTICO_DATA_DIR", dir_.filePath("data").toUtf8());
        auto r = config::loadConfigText("listen: ['127.0.0.1:0', {address: '127.0.0.1:0', tls: auto}]\n"
                                        "vhosts:\n  - routes:\n"
                                        "      - path: /ok\n        respond: {body: ok}\n"
                                        "      - path: /slow\n        respond: {body: slow, latency: 2s}\n",
                                        "h2.yaml", dir_.path().toStdString());
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        for (const auto& ep : engine_.endpoints())
            (ep.tls ? tls_ : plain_) = ep.port;
        QVERIFY(plain_ && tls_);
        results_[0] = probe(false);
        results_[1] = probe(true);
    }

    void rules_data() {
        QTest::addColumn<bool>("tls");
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("expect"); // a regular expression over "FRAMES / END"
        // A connection error: GOAWAY with the code (when the socket delivered it before the close).
        auto connError = [](int code) {
            return QString("^(HEADERS\\(\\d+\\) )?(GOAWAY\\(\\d+,%1\\) )?/ (closed|reset)$").arg(code);
        };
        const QList<std::pair<const char*, QString>> cases{
            {"post-body", "^HEADERS\\(1\\) / open$"},
            {"trailers", "^HEADERS\\(1\\) / open$"},
            {"priority-other", "^HEADERS\\(1\\) / open$"},
            // Stream error STREAM_CLOSED (5); a connection error would also conform.
            {"data-after-rst", "^(RST_STREAM\\(1,5\\) / open|(GOAWAY\\(1,5\\) )?/ (closed|reset))$"},
            {"headers-after-rst", connError(5)},
            {"data-after-close", connError(5)},
            {"data-half-closed", "^(RST_STREAM\\(1,5\\) .*|(GOAWAY\\(1,5\\) )?/ (closed|reset))$"},
            {"lower-stream-id", connError(1)},
            {"priority-self-open", "^(RST_STREAM\\(1,1\\) / open|(GOAWAY\\(\\d+,1\\) )?/ (closed|reset))$"},
            {"priority-self-idle", connError(1)},
            {"priority-stream-0", connError(1)},
            {"bad-preface", connError(1)},
        };
        for (bool tls : {false, true})
            for (const auto& [name, expect] : cases)
                QTest::newRow(qPrintable(QString(tls ? "h2 " : "h2c ") + name))
                    << tls << QString(name) << expect;
    }
    void rules() {
        QFETCH(bool, tls);
        QFETCH(QString, name);
        QFETCH(QString, expect);
        QVERIFY2(results_[tls].contains(name), qPrintable("no result for " + name));
        const QString got = results_[tls][name];
        QVERIFY2(QRegularExpression(expect).match(got).hasMatch(), qPrintable(name + " -> " + got));
        // Never an HTTP/1.1 answer to an HTTP/2 client.
        QVERIFY2(!got.contains("HTTP/1.x"), qPrintable(got));
    }
};

QTEST_GUILESS_MAIN(TestHttp2Conformance)
#include "tst_http2_conformance.moc"

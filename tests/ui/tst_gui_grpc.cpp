// The inspector on a real gRPC call: a python3-grpcio client → the in-process server of the desktop
// app (`grpc:` route with a descriptor set written by protoc) → tests/support/grpc_upstream.py. The
// record's Messages tab lists both messages decoded to JSON with the route's descriptor set, the
// selected one in full below; without the descriptor set the same record reads as raw protobuf
// fields; the General section shows the gRPC status. PORTICO_DOCS_IMAGES=DIR saves the inspector
// as DIR/gui-inspector-grpc.png (the picture in docs/gui.md).
#include "inspector/inspectorwidget.h"
#include "servercontroller.h"
#include "test_support.h"

#include <portico/validate/load.h>

#include <QPlainTextEdit>
#include <QProcess>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

using namespace portico;
using portico::ui::InspectorWidget;
using portico::ui::ServerController;

class TestGuiGrpc : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QProcess m_upstream;
    int m_upstreamPort = 0;

    bool writeConfig(bool withDescriptorSet) {
        QFile f(m_dir.filePath("portico.yaml"));
        if (!f.open(QIODevice::WriteOnly)) return false;
        f.write(QStringLiteral("listen: [127.0.0.1:0]\nworkers: 1\ncapture: true\nvhosts:\n  - routes:\n"
                               "      - path: /test.Echo/*\n        grpc: {upstream: h2c://127.0.0.1:%1%2}\n")
                    .arg(m_upstreamPort)
                    .arg(withDescriptorSet ? ", descriptor_set: echo.pb" : "")
                    .toUtf8());
        return true;
    }

    // One real call through `server`, and its record.
    std::optional<capture::Exchange> protoCall(ServerController& server) {
        const QString url = server.firstHttpUrl(); // "http://127.0.0.1:PORT/"
        const QString hostPort = url.mid(7, url.size() - 8);
        auto r = test::runProcess(test::debianPython(),
                                  {test::sourceDir() + "/tests/support/grpc_client.py", hostPort, "proto"},
                                  {}, 60000);
        if (r.out.trimmed() != "ok") {
            qWarning("%s %s", r.out.constData(), r.err.constData());
            return std::nullopt;
        }
        for (int i = 0; i < 200; ++i) {
            server.engine().flushCapture();
            for (auto& e : server.engine().recentExchanges(0, 1000))
                if (e.protocol == capture::Protocol::Grpc) return e;
            QTest::qWait(20);
        }
        return std::nullopt;
    }

private slots:
    void initTestCase() {
        if (test::runProcess(test::debianPython(), {"-c", "import grpc"}).exitCode != 0)
            QSKIP("python3-grpcio is not installed (installers/dev.sh installs it)");
        auto r = test::runProcess("protoc",
                                  {"-I" + test::sourceDir() + "/tests/support", "--include_imports",
                                   "--descriptor_set_out=" + m_dir.filePath("echo.pb"), "grpc_test.proto"});
        if (r.exitCode == -1)
            QSKIP("protoc is not installed (protobuf-compiler; installers/dev.sh installs it)");
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QString portFile = m_dir.filePath("grpc.port");
        m_upstreamPort = test::startSupportScript(m_upstream, "grpc_upstream.py", portFile);
        QVERIFY2(m_upstreamPort, m_upstream.readAllStandardError().constData());
    }
    void cleanupTestCase() {
        m_upstream.kill();
        m_upstream.waitForFinished();
    }

    void inspectorShowsDecodedGrpcMessages() {
        QVERIFY(writeConfig(true));
        ServerController server;
        QString error;
        QVERIFY2(server.open(m_dir.filePath("portico.yaml"), &error, false), qPrintable(error));
        const auto e = protoCall(server);
        QVERIFY(e);
        InspectorWidget inspector(&server);
        inspector.resize(1000, 640);
        inspector.showExchange(*e);
        QTabWidget* tabs = inspector.tabs();
        const int tab = tabs->indexOf(inspector.messagesPage());
        QVERIFY(tabs->isTabVisible(tab));
        QCOMPARE(tabs->tabText(tab), QString("Messages (2)"));
        QTableWidget* table = inspector.messagesTable();
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->horizontalHeaderItem(2)->text(), QString("Compressed"));
        QVERIFY(table->item(0, 1)->text().contains("client"));
        QVERIFY(table->item(1, 1)->text().contains("upstream"));
        QCOMPARE(table->item(0, 2)->text(), QString("no"));
        QCOMPARE(table->item(0, 3)->text(), QString("19 B"));
        const QString json = "{\"text\":\"hello\",\"n\":42,\"inner\":{\"label\":\"x\",\"values\":[1,2,3]}}";
        QCOMPARE(table->item(0, 4)->text(), json);
        QCOMPARE(table->item(1, 4)->text(), json);
        // The selected message in full: its type and the JSON indented.
        table->selectRow(1);
        const QString detail = inspector.messageDetail()->toPlainText();
        QVERIFY2(detail.startsWith("JSON · 19 of 19 bytes kept"), qPrintable(detail));
        QVERIFY2(detail.endsWith(
                     "test.EchoMessage\n{\n  \"text\": \"hello\",\n  \"n\": 42,\n  \"inner\": {\n    "
                     "\"label\": \"x\",\n    \"values\": [\n      1,\n      2,\n      3\n    ]\n  }\n}"),
                 qPrintable(detail));
        // The gRPC status in the General section.
        const auto found =
            inspector.headersTree()->findItems("gRPC status", Qt::MatchRecursive | Qt::MatchExactly);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0]->text(1), QString("0"));
        if (const QByteArray docs = qgetenv("PORTICO_DOCS_IMAGES"); !docs.isEmpty()) {
            tabs->setCurrentIndex(tab);
            table->selectRow(0);
            inspector.show();
            QVERIFY(QTest::qWaitForWindowExposed(&inspector));
            QVERIFY(inspector.grab().save(QString::fromLocal8Bit(docs) + "/gui-inspector-grpc.png"));
        }
    }

    void withoutADescriptorSetTheFieldsAreRaw() {
        QVERIFY(writeConfig(false));
        ServerController server;
        QString error;
        QVERIFY2(server.open(m_dir.filePath("portico.yaml"), &error, false), qPrintable(error));
        const auto e = protoCall(server);
        QVERIFY(e);
        InspectorWidget inspector(&server);
        inspector.showExchange(*e);
        QTableWidget* table = inspector.messagesTable();
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(0, 4)->text(),
                 QString("1: \"hello\" · 2: 42 · 3 { ·   1: \"x\" ·   2: \"\\001\\002\\003\" · }"));
        table->selectRow(0);
        QVERIFY(inspector.messageDetail()->toPlainText().startsWith("raw protobuf · 19 of 19 bytes kept"));
        QVERIFY(inspector.messageDetail()->toPlainText().contains("3 {\n  1: \"x\"\n"));
    }
};

QTEST_MAIN(TestGuiGrpc)
#include "tst_gui_grpc.moc"

// The Traffic tab and the inspector against a real in-process server with capture on: the model
// fills in batches from the engine's window, the filter narrows it and reports parse errors, the
// inspector shows headers, body and the timeline of a real exchange, copy as curl, resend and
// edit-and-resend with their comparison, HAR export, the row bound and follow-the-bottom scrolling.
#include "inspector/bodyview.h"
#include "inspector/editresenddialog.h"
#include "inspector/inspectorwidget.h"
#include "inspector/timelinewidget.h"
#include "servercontroller.h"
#include "test_support.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include <portico/capture/replay.h>
#include <portico/load/runner.h>

#include <QAction>
#include <QApplication>
#include <QBuffer>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

using namespace portico;
using portico::ui::InspectorWidget;
using portico::ui::ServerController;
using portico::ui::TimelineWidget;
using portico::ui::TrafficModel;
using portico::ui::TrafficPage;

class TestGuiTraffic : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;

    // `count` real HTTP/1.1 requests from the load generator (its own threads), then the capture
    // rings drained so the engine's window holds them all.
    void send(const QString& path, std::uint64_t count,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
        load::Options o;
        load::RequestSpec spec;
        spec.url = (m_server->firstHttpUrl() + path.mid(1)).toStdString();
        spec.headers = std::move(headers);
        o.requests.push_back(spec);
        o.connections = 2;
        o.threads = 1;
        o.count = count;
        const load::Result r = load::run(o);
        QCOMPARE(r.requests.completed, count);
        m_server->engine().flushCapture();
    }

    // Polls until the page has read `rows` rows (the feed timer runs too while QTRY waits).
    void feed(TrafficPage& page, int rows) {
        QTRY_VERIFY_WITH_TIMEOUT((page.poll(), int(page.model()->totalRows()) >= rows), 5000);
        QCOMPARE(int(page.model()->totalRows()), rows);
    }

    int rowWithPath(const TrafficModel* model, const std::string& path) {
        for (int r = model->rowCount() - 1; r >= 0; --r)
            if (model->rowAt(r)->target == path) return r;
        return -1;
    }

private slots:
    void initTestCase() {
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\nworkers: 2\ncapture: true\nvhosts:\n  - routes:\n"
                "      - path: /hello\n        name: hello\n        respond: {body: hi}\n"
                "      - path: /json\n        respond:\n          headers: {Content-Type: application/json}\n"
                "          body: '{\"a\":1,\"list\":[1,2]}'\n"
                "      - path: /echo\n        respond: {body: 'x={{header.x-test}}'}\n"
                "      - path: /slow\n        respond: {body: slow, latency: 300ms}\n");
        f.close();
    }

    void init() {
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(m_dir.path() + "/portico.yaml", &error, false), qPrintable(error));
        QVERIFY(m_server->config()->capture.enabled);
    }

    void cleanup() { m_server.reset(); }

    void modelInsertsInBatches() {
        send("/hello", 120);
        send("/nope", 30);
        // All 150 are in the engine's window before the page reads: reads of at most 50 give
        // exactly three inserts (one per batch, not one per row).
        TrafficPage page(m_server.get());
        page.setBatchLimit(50);
        QSignalSpy inserted(page.model(), &QAbstractItemModel::rowsInserted);
        feed(page, 150);
        QCOMPARE(page.model()->rowCount(), 150);
        QCOMPARE(inserted.count(), 3);
        for (const auto& args : inserted)
            QCOMPARE(args.at(2).toInt() - args.at(1).toInt() + 1, 50);

        const TrafficModel* m = page.model();
        const auto first = m_server->engine().exchange(m->idAt(0));
        QVERIFY(first);
        QCOMPARE(m->data(m->index(0, TrafficModel::Method)).toString(), QString("GET"));
        QCOMPARE(m->data(m->index(0, TrafficModel::Path)).toString(), QString("/hello"));
        QCOMPARE(m->data(m->index(0, TrafficModel::Status)).toInt(), 200);
        QCOMPARE(m->data(m->index(0, TrafficModel::Protocol)).toString(), QString("HTTP/1.1"));
        QCOMPARE(m->data(m->index(0, TrafficModel::Host)).toString(),
                 QString::fromStdString(first->authority));
        QCOMPARE(m->data(m->index(0, TrafficModel::Route)).toString(), QString::fromStdString(first->route));
        QCOMPARE(m->data(m->index(0, TrafficModel::Size)).toString(), QString("2 B"));
        QVERIFY(m->data(m->index(0, TrafficModel::Duration)).toString().endsWith(" ms"));
        QCOMPARE(m->data(m->index(149, TrafficModel::Path)).toString(), QString("/nope"));
        QCOMPARE(m->data(m->index(149, TrafficModel::Status)).toInt(), 404);
        // Ids increase with the rows.
        for (int r = 1; r < 150; ++r)
            QVERIFY(m->idAt(r) > m->idAt(r - 1));
    }

    void filterNarrowsAndReportsErrors() {
        TrafficPage page(m_server.get());
        send("/hello", 40);
        send("/nope", 12);
        feed(page, 52);
        page.setFilterText("status:>=400");
        QCOMPARE(page.filterError(), QString());
        QCOMPARE(page.model()->rowCount(), 12);
        for (int r = 0; r < 12; ++r)
            QCOMPARE(page.model()->data(page.model()->index(r, TrafficModel::Status)).toInt(), 404);
        page.setFilterText("path:/hello method:GET");
        QCOMPARE(page.model()->rowCount(), 40);
        page.setFilterText("-path:/hello");
        QCOMPARE(page.model()->rowCount(), 12);

        page.setFilterText("stauts:>=400");
        QVERIFY2(page.filterError().contains("unknown key"), qPrintable(page.filterError()));
        QVERIFY(page.findChild<QLabel*>("trafficFilterError")->isVisibleTo(&page));
        QCOMPARE(page.model()->rowCount(), 12); // the last good filter stays in force

        // New rows go through the filter too.
        page.setFilterText("status:404");
        send("/nope", 5);
        send("/hello", 5);
        feed(page, 62);
        QCOMPARE(page.model()->rowCount(), 17);
        page.setFilterText("");
        QCOMPARE(page.filterError(), QString());
        QCOMPARE(page.model()->rowCount(), 62);
    }

    // The filter box keeps its width while counts grow and while an error shows (issue: it moved
    // under the cursor as rows arrived).
    void filterBoxKeepsItsWidth() {
        TrafficPage page(m_server.get());
        page.resize(1200, 700);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        auto* box = page.findChild<QLineEdit*>("trafficFilter");
        QVERIFY(box);
        const int width = box->width();
        QVERIFY2(width >= box->fontMetrics().averageCharWidth() * 24, qPrintable(QString::number(width)));
        send("/hello", 3);
        feed(page, 3);
        QApplication::processEvents();
        QCOMPARE(box->width(), width);
        page.setFilterText("status:>=400");
        QApplication::processEvents();
        QVERIFY(page.findChild<QLabel*>("trafficCount")->text().contains("0 of 3"));
        QCOMPARE(box->width(), width);
        page.setFilterText("stauts:>=400 and a long tail of words to make the error message wide");
        QApplication::processEvents();
        QVERIFY(page.findChild<QLabel*>("trafficFilterError")->isVisible());
        QCOMPARE(box->width(), width);
    }

    void inspectorShowsHeadersBodyAndTimeline() {
        TrafficPage page(m_server.get());
        send("/json", 3);
        feed(page, 3);
        page.selectRow(1);
        const auto& shown = page.inspector()->exchange();
        QVERIFY(shown);
        QCOMPARE(shown->id, page.model()->idAt(1));
        const auto e = m_server->engine().exchange(shown->id);
        QVERIFY(e);

        // Headers: request and response sections hold the exchange's fields.
        QTreeWidget* tree = page.inspector()->headersTree();
        QTreeWidgetItem* request = nullptr;
        QTreeWidgetItem* response = nullptr;
        for (int i = 0; i < tree->topLevelItemCount(); ++i) {
            if (tree->topLevelItem(i)->text(0).startsWith("Request headers")) request = tree->topLevelItem(i);
            if (tree->topLevelItem(i)->text(0).startsWith("Response headers"))
                response = tree->topLevelItem(i);
        }
        QVERIFY(request && response);
        QCOMPARE(request->childCount(), int(e->requestHeaders.size()));
        QCOMPARE(response->childCount(), int(e->responseHeaders.size()));
        auto value = [](QTreeWidgetItem* section, const QString& name) {
            for (int i = 0; i < section->childCount(); ++i)
                if (section->child(i)->text(0).compare(name, Qt::CaseInsensitive) == 0)
                    return section->child(i)->text(1);
            return QString();
        };
        QCOMPARE(value(request, "Host"), QString::fromStdString(e->authority));
        QCOMPARE(value(response, "Content-Type"), QString("application/json"));

        // Body: JSON, pretty-printed.
        QCOMPARE(page.inspector()->responseBody()->effectiveMode(), ui::BodyView::Json);
        QVERIFY(page.inspector()->responseBody()->shownText().contains("\"list\": [\n"));
        page.inspector()->responseBody()->setMode(ui::BodyView::Hex);
        QVERIFY(page.inspector()->responseBody()->shownText().startsWith("00000000  7b 22 61 22"));

        // Timeline: one segment per phase present, ending at the phase's own timestamp.
        const auto& segments = page.inspector()->timeline()->segments();
        std::vector<capture::Phase> expected;
        for (const capture::Phase p : capture::kTimelineOrder) {
            if (e->at(p) < 0) continue;
            if (e->streamId > 1 && (p == capture::Phase::Accepted || p == capture::Phase::TlsDone)) continue;
            expected.push_back(p);
        }
        QCOMPARE(segments.size(), expected.size());
        QVERIFY(segments.size() >= 4); // request headers, body done, route matched, response ...
        for (std::size_t i = 0; i < segments.size(); ++i) {
            QCOMPARE(segments[i].phase, expected[i]);
            QCOMPARE(segments[i].endNs, e->at(expected[i]));
            if (i > 0) QCOMPARE(segments[i].startNs, segments[i - 1].endNs);
        }
        QCOMPARE(segments.back().endNs - segments.front().startNs >= 0, true);
        QVERIFY(!page.inspector()->timeline()->grab().isNull());
    }

    void copyAsCurlPutsTheCommandOnTheClipboard() {
        TrafficPage page(m_server.get());
        send("/json", 1);
        feed(page, 1);
        page.selectRow(0);
        QApplication::clipboard()->clear();
        page.inspector()->copyAsCurl();
        const QString text = QApplication::clipboard()->text();
        QCOMPARE(text, QString::fromStdString(capture::toCurl(*page.inspector()->exchange())));
        QVERIFY2(text.startsWith("curl ") && text.contains(m_server->firstHttpUrl() + "json"),
                 qPrintable(text));
    }

    // Copies of an https exchange to this server's `tls: auto` listener name the local CA, so they
    // run as copied: curl with --cacert, the Python script with cafile=. Both are run here.
    void copiesOfHttpsExchangesRunAsCopied() {
        QTemporaryDir dir;
        const QByteArray oldData = qgetenv("PORTICO_DATA_DIR");
        qputenv("PORTICO_DATA_DIR", dir.filePath("data").toUtf8());
        QFile f(dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            "listen: [127.0.0.1:0, {address: 127.0.0.1:0, tls: auto}]\ncapture: true\nvhosts:\n"
            "  - routes:\n      - path: /echo\n        respond: {body: 'x={{header.x-test}} {{body}}'}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(dir.path() + "/portico.yaml", &error, false), qPrintable(error));
        std::uint16_t tlsPort = 0;
        for (const auto& ep : m_server->engine().endpoints())
            if (ep.tls) tlsPort = ep.port;
        QVERIFY(tlsPort);
        TrafficPage page(m_server.get());
        const QString url = QString("https://127.0.0.1:%1/echo").arg(tlsPort);
        auto sent = test::runProcess("curl", {"-sk", url, "-H", "X-Test: it's", "--data-binary", "a\x01b"});
        QCOMPARE(sent.exitCode, 0);
        m_server->engine().flushCapture();
        feed(page, 1);
        page.selectRow(0);
        QCOMPARE(page.inspector()->exchange()->scheme, std::string("https"));

        page.inspector()->copyAsCurl();
        const QString curlText = QApplication::clipboard()->text();
        QVERIFY2(curlText.contains("--cacert '" + dir.filePath("data") + "/ca/ca.crt'"),
                 qPrintable(curlText));
        auto viaCurl = test::runProcess("sh", {"-c", curlText + " -s -S"});
        QVERIFY2(viaCurl.exitCode == 0, viaCurl.err.constData()); // verified against the CA, no -k
        QCOMPARE(viaCurl.out, sent.out);

        page.inspector()->copyAsPython();
        const QString script = QApplication::clipboard()->text();
        QVERIFY2(script.contains("cafile="), qPrintable(script));
        auto viaPython = test::runProcess("/usr/bin/python3", {"-c", script});
        QVERIFY2(viaPython.exitCode == 0, viaPython.err.constData());
        QCOMPARE(viaPython.out, "200 OK\n" + sent.out + "\n");
        if (oldData.isNull())
            qunsetenv("PORTICO_DATA_DIR");
        else
            qputenv("PORTICO_DATA_DIR", oldData);
    }

    void resendProducesANewExchangeAndAComparison() {
        TrafficPage page(m_server.get());
        send("/echo", 1, {{"X-Test", "a"}});
        feed(page, 1);
        page.selectRow(0);
        const std::uint64_t originalId = page.inspector()->exchange()->id;
        QCOMPARE(page.inspector()->exchange()->responseBody, std::string("x=a"));

        // Plain resend: same answer.
        QSignalSpy finished(page.inspector(), &InspectorWidget::resendFinished);
        QVERIFY(page.inspector()->resend());
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.first().first().toBool(), true);
        QVERIFY(page.inspector()->lastResend()->ok());
        QCOMPARE(page.inspector()->lastResend()->exchange.status, 200);
        QVERIFY(page.inspector()->lastResend()->differences.empty());
        QVERIFY(page.findChild<QLabel*>("inspectorCompareSummary")->text().contains("same status"));

        // Edit and resend with another header value: the body differs, and the comparison says so.
        capture::ReplayOptions edit;
        edit.headers.push_back({"X-Test", "b"});
        finished.clear();
        QVERIFY(page.inspector()->resendWith(edit));
        QVERIFY(finished.wait(10000));
        const auto& r = *page.inspector()->lastResend();
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchange.responseBody, std::string("x=b"));
        bool bodyDiffers = false;
        for (const auto& d : r.differences)
            if (d.what == "body")
                bodyDiffers = d.before == "3 bytes, at byte 2: a" && d.after == "3 bytes, at byte 2: b";
        QVERIFY(bodyDiffers);
        auto table = page.findChild<QTableWidget*>("inspectorCompare");
        QCOMPARE(table->rowCount(), int(r.differences.size()));

        // Both resends reached the server and were captured as new exchanges (ids follow the
        // collector's drain order, which need not be the send order across workers).
        m_server->engine().flushCapture();
        feed(page, 3);
        QStringList bodies;
        for (int row = 1; row < 3; ++row) {
            QVERIFY(page.model()->idAt(row) > originalId);
            QCOMPARE(page.model()->rowAt(row)->target, std::string("/echo"));
            const auto resent = m_server->engine().exchange(page.model()->idAt(row));
            QVERIFY(resent);
            bodies << QString::fromStdString(resent->responseBody);
        }
        bodies.sort();
        QCOMPARE(bodies, QStringList({"x=a", "x=b"}));
    }

    // A mock with latency is published before its response is written (kIncomplete); the row is
    // re-read until the engine completes it, so its duration includes the latency.
    void completesIncompleteRows() {
        TrafficPage page(m_server.get());
        load::Options o;
        load::RequestSpec spec;
        spec.url = (m_server->firstHttpUrl() + "slow").toStdString();
        o.requests.push_back(spec);
        o.connections = 1;
        o.count = 1;
        std::unique_ptr<QThread> client(QThread::create([o] { load::run(o); }));
        client->start();
        // The record arrives while the response is still waiting for its latency.
        QTRY_VERIFY_WITH_TIMEOUT(
            (m_server->engine().flushCapture(), page.poll(), page.model()->rowCount() == 1), 5000);
        QVERIFY(page.model()->rowAt(0)->flags & capture::kIncomplete);
        QVERIFY(client->wait(5000));
        QTRY_VERIFY_WITH_TIMEOUT((m_server->engine().flushCapture(), page.poll(),
                                  !(page.model()->rowAt(0)->flags & capture::kIncomplete)),
                                 5000);
        const auto e = m_server->engine().exchange(page.model()->idAt(0));
        QVERIFY(e);
        QVERIFY(!(e->flags & capture::kIncomplete));
        QVERIFY(!(page.model()->rowAt(0)->flags & capture::kIncomplete));
        QVERIFY2(page.model()->rowAt(0)->durationNs >= 300'000'000,
                 qPrintable(QString::number(page.model()->rowAt(0)->durationNs)));
        QCOMPARE(page.model()->rowAt(0)->durationNs, e->durationNs());
        QCOMPARE(page.model()->data(page.model()->index(0, TrafficModel::Duration)).toString(),
                 ui::formatDuration(e->durationNs()));
    }

    // The dialog's edits become replay overrides: removed headers are sent empty (dropped by
    // replay), changed and new ones replace them; a line without ':' disables Send. Sent for real.
    void editAndResendDialogBuildsTheRequest() {
        TrafficPage page(m_server.get());
        send("/echo", 1, {{"X-Test", "a"}, {"X-Gone", "1"}});
        feed(page, 1);
        page.selectRow(0);
        const capture::Exchange original = *page.inspector()->exchange();
        ui::EditResendDialog dialog(original, page.inspector()->resendTarget());
        auto headers = dialog.findChild<QPlainTextEdit*>("editHeaders");
        QVERIFY(headers->toPlainText().contains("X-Gone: 1"));
        headers->setPlainText("X-Test: c\nnot a header");
        QPushButton* sendButton = nullptr;
        for (auto* b : dialog.findChildren<QPushButton*>())
            if (b->text() == "Send") sendButton = b;
        QVERIFY(sendButton);
        QVERIFY(!sendButton->isEnabled());
        QVERIFY(dialog.findChild<QLabel*>("editError")->text().contains("line 2"));
        headers->setPlainText("X-Test: c\nX-New: 2");
        QVERIFY(sendButton->isEnabled());
        dialog.findChild<QComboBox*>("editMethod")->setCurrentText("PUT");
        dialog.findChild<QPlainTextEdit*>("editBody")->setPlainText("payload");
        const capture::ReplayOptions o = dialog.options();
        QCOMPARE(o.method.value_or(""), std::string("PUT"));
        QCOMPARE(o.body.value_or(""), std::string("payload"));
        auto value = [&o](const std::string& name) -> std::optional<std::string> {
            std::optional<std::string> v;
            for (const auto& h : o.headers)
                if (QString::fromStdString(h.name).compare(QString::fromStdString(name),
                                                           Qt::CaseInsensitive) == 0)
                    v = h.value;
            return v;
        };
        QCOMPARE(value("X-Gone").value_or("?"), std::string(""));
        QCOMPARE(value("X-Test").value_or("?"), std::string("c"));
        QCOMPARE(value("X-New").value_or("?"), std::string("2"));

        QSignalSpy finished(page.inspector(), &InspectorWidget::resendFinished);
        QVERIFY(page.inspector()->resendWith(o));
        QVERIFY(finished.wait(10000));
        const auto& r = *page.inspector()->lastResend();
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchange.method, std::string("PUT"));
        QCOMPARE(r.exchange.responseBody, std::string("x=c"));
        QVERIFY(!r.exchange.requestHeader("x-new").empty());
        QVERIFY(r.exchange.requestHeader("x-gone").empty());
    }

    // Unedited, the dialog resends the same request (one Host, the body's Content-Length) and gets
    // the same answer; a body edit gets a new Content-Length; the URL and Host are editable.
    void editAndResendSendsWhatTheDialogShows() {
        TrafficPage page(m_server.get());
        {
            load::Options o;
            load::RequestSpec spec;
            spec.url = (m_server->firstHttpUrl() + "echo").toStdString();
            spec.method = "POST";
            spec.body = "abc";
            spec.headers = {{"X-Test", "a"}, {"Content-Type", "text/plain"}};
            o.requests.push_back(spec);
            o.connections = 1;
            o.count = 1;
            QCOMPARE(load::run(o).requests.completed, std::uint64_t(1));
            m_server->engine().flushCapture();
        }
        feed(page, 1);
        page.selectRow(0);
        const capture::Exchange original = *page.inspector()->exchange();
        QCOMPARE(original.status, 200);
        auto resend = [&](ui::EditResendDialog& dialog) -> capture::ReplayResult {
            QSignalSpy finished(page.inspector(), &InspectorWidget::resendFinished);
            if (!page.inspector()->resendWith(dialog.options()) || !finished.wait(10000)) return {};
            return *page.inspector()->lastResend();
        };
        auto count = [](const capture::Exchange& e, const char* name) {
            int n = 0;
            for (const auto& h : e.requestHeaders)
                n += QString::fromStdString(h.name).compare(name, Qt::CaseInsensitive) == 0;
            return n;
        };
        {
            ui::EditResendDialog dialog(original, page.inspector()->resendTarget());
            auto headers = dialog.findChild<QPlainTextEdit*>("editHeaders")->toPlainText();
            QVERIFY2(headers.contains("Host: ") && headers.contains("Content-Length: 3"),
                     qPrintable(headers));
            QCOMPARE(dialog.findChild<QLineEdit*>("editUrl")->text(),
                     page.inspector()->resendTarget() + "/echo");
            const auto r = resend(dialog);
            QVERIFY2(r.ok(), r.error.c_str());
            QCOMPARE(r.exchange.status, 200);
            QCOMPARE(r.exchange.responseBody, std::string("x=a"));
            QVERIFY2(r.differences.empty(), r.differences.empty() ? "" : r.differences.front().what.c_str());
            QCOMPARE(count(r.exchange, "host"), 1);
            QCOMPARE(count(r.exchange, "content-length"), 1);
        }
        {
            ui::EditResendDialog dialog(original, page.inspector()->resendTarget());
            dialog.findChild<QPlainTextEdit*>("editBody")->setPlainText("abcdef");
            const auto r = resend(dialog);
            QVERIFY2(r.ok(), r.error.c_str());
            QCOMPARE(r.exchange.status, 200);
            QCOMPARE(count(r.exchange, "content-length"), 1);
            QCOMPARE(r.exchange.requestHeader("content-length"), std::string_view("6"));
        }
        {
            ui::EditResendDialog dialog(original, page.inspector()->resendTarget());
            auto url = dialog.findChild<QLineEdit*>("editUrl");
            url->setText("ftp://nowhere/");
            QPushButton* sendButton = nullptr;
            for (auto* b : dialog.findChildren<QPushButton*>())
                if (b->text() == "Send") sendButton = b;
            QVERIFY(sendButton && !sendButton->isEnabled());
            QVERIFY(dialog.findChild<QLabel*>("editError")->text().startsWith("URL:"));
            url->setText(page.inspector()->resendTarget() + "/hello?x=1");
            QVERIFY(sendButton->isEnabled());
            auto headers = dialog.findChild<QPlainTextEdit*>("editHeaders");
            headers->setPlainText(
                headers->toPlainText().replace(QRegularExpression("Host: [^\n]*"), "Host: other.localhost"));
            dialog.findChild<QComboBox*>("editMethod")->setCurrentText("GET");
            dialog.findChild<QPlainTextEdit*>("editBody")->setPlainText("");
            const auto r = resend(dialog);
            QVERIFY2(r.ok(), r.error.c_str());
            QCOMPARE(r.exchange.target, std::string("/hello?x=1"));
            QCOMPARE(r.exchange.responseBody, std::string("hi"));
            QCOMPARE(r.exchange.requestHeader("host"), std::string_view("other.localhost"));
            QCOMPARE(count(r.exchange, "host"), 1);
        }
    }

    // Every row can be inspected: with an in-memory window of 20 records, the 40 rows all stay
    // and each one's details (body included) come back from the session file.
    void rowsPastTheWindowAreInspectable() {
        QTemporaryDir dir;
        QFile f(dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\ncapture: {max_records: 20}\nvhosts:\n  - routes:\n"
                "      - path: /hello\n        respond: {body: hi}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(dir.path() + "/portico.yaml", &error, false), qPrintable(error));
        QVERIFY(QFileInfo::exists(m_server->sessionFile()));
        QCOMPARE(QFileInfo(m_server->sessionFile()).permissions() &
                     (QFileDevice::ReadOther | QFileDevice::ReadGroup),
                 QFileDevice::Permissions());
        {
            TrafficPage page(m_server.get());
            send("/hello", 10);
            feed(page, 10);
            page.selectRow(0);
            const std::uint64_t selected = page.model()->idAt(0);
            QCOMPARE(page.inspector()->exchange()->id, selected);
            send("/hello", 30);
            QTRY_VERIFY_WITH_TIMEOUT(
                (page.poll(), page.model()->idAt(page.model()->rowCount() - 1) == selected + 39), 5000);
            QCOMPARE(page.model()->totalRows(), std::size_t(40));
            QCOMPARE(page.inspector()->exchange()->id, selected); // still the same exchange
            page.selectRow(1);
            page.selectRow(0);
            QCOMPARE(page.inspector()->exchange()->id, selected);
            QCOMPARE(page.inspector()->exchange()->responseBody, std::string("hi"));
            for (int row = 0; row < page.model()->rowCount(); ++row) {
                auto e = m_server->engine().exchange(page.model()->idAt(row));
                QVERIFY2(
                    e && e->responseBody == "hi",
                    qPrintable(QString("row %1 (#%2) has no details").arg(row).arg(page.model()->idAt(row))));
            }
        }
        const QString file = m_server->sessionFile();
        m_server.reset(); // the temporary session goes with the app
        QVERIFY(!QFileInfo::exists(file));
        QVERIFY(!QFileInfo::exists(file + "-wal"));
    }

    // Rows and details leave together: when the session file passes capture.store_max_bytes its
    // oldest records go, their rows go with them, and a selected row that leaves clears the
    // inspector with a message instead of the selection sliding to another exchange.
    void evictedRowsLeaveWithTheirDetails() {
        QTemporaryDir dir;
        QFile f(dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\ncapture: {max_records: 20, store_max_bytes: 1MiB}\nvhosts:\n"
                "  - routes:\n      - path: /big\n        respond: {body: " +
                QByteArray(4000, 'b') + "}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(dir.path() + "/portico.yaml", &error, false), qPrintable(error));
        TrafficPage page(m_server.get());
        send("/big", 10);
        feed(page, 10);
        page.selectRow(0);
        const std::uint64_t selected = page.model()->idAt(0);
        QCOMPARE(page.inspector()->exchange()->id, selected);
        // About 8 KB per record in the file: 300 records are twice the cap. Eviction is checked
        // about once a second.
        send("/big", 150);
        QTest::qWait(1100);
        send("/big", 150);
        QTRY_VERIFY_WITH_TIMEOUT((page.poll(), page.model()->idAt(0) > selected), 5000);
        const std::uint64_t oldest = m_server->engine().oldestCapturedId();
        QVERIFY(oldest > selected);
        QVERIFY2(page.model()->totalRows() < 300, qPrintable(QString::number(page.model()->totalRows())));
        QCOMPARE(page.model()->idAt(0), oldest);
        for (int row = 0; row < page.model()->rowCount(); ++row)
            QVERIFY2(
                m_server->engine().exchange(page.model()->idAt(row)),
                qPrintable(QString("row %1 (#%2) has no details").arg(row).arg(page.model()->idAt(row))));
        QVERIFY(!page.inspector()->exchange()); // not another exchange
        QVERIFY(!page.view()->selectionModel()->currentIndex().isValid());
        const QString message = page.inspector()->findChild<QLabel*>("inspectorSummary")->text();
        QVERIFY2(message.contains(QString("#%1 has left the capture").arg(selected)), qPrintable(message));
    }

    // First start: an empty table with capture on says how to fill it (the server's own URL); the
    // hint goes with the first row.
    void emptyTableSaysHowToFillIt() {
        TrafficPage page(m_server.get());
        auto hint = page.findChild<QLabel*>("trafficEmptyHint");
        QVERIFY(hint);
        QVERIFY(!hint->isHidden());
        QVERIFY2(hint->text().contains(m_server->firstHttpUrl()), qPrintable(hint->text()));
        send("/hello", 1);
        feed(page, 1);
        QVERIFY(hint->isHidden());
        page.clearRows();
        QVERIFY(!hint->isHidden());
    }

    // 4xx and 5xx rows are coloured, and readable: WCAG AA's 4.5:1 against both row colours.
    void errorRowsAreReadable() {
        TrafficPage page(m_server.get());
        send("/nope", 1);
        feed(page, 1);
        auto luminance = [](const QColor& c) {
            auto lin = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
            return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF());
        };
        auto contrast = [&](const QColor& a, const QColor& b) {
            const double x = luminance(a), y = luminance(b);
            return (std::max(x, y) + 0.05) / (std::min(x, y) + 0.05);
        };
        const QColor fg = page.model()
                              ->data(page.model()->index(0, TrafficModel::Status), Qt::ForegroundRole)
                              .value<QBrush>()
                              .color();
        QVERIFY(fg != page.view()->palette().color(QPalette::Text)); // it is marked
        for (auto role : {QPalette::Base, QPalette::AlternateBase}) {
            const double ratio = contrast(fg, page.view()->palette().color(role));
            QVERIFY2(ratio >= 4.5, qPrintable(QString("%1:1 on %2").arg(ratio).arg(int(role))));
        }
    }

    // Sorting: a header click orders the rows by that column (ties by capture order), the
    // selected exchange stays selected, new and completed rows are merged into the order, and
    // Time puts capture order back (descending: newest on top).
    void columnsSort() {
        TrafficPage page(m_server.get());
        send("/hello", 3);
        send("/nope", 2);
        send("/json", 1);
        feed(page, 6);
        TrafficModel* m = page.model();
        const int jsonRow = rowWithPath(m, "/json");
        page.selectRow(jsonRow);
        const std::uint64_t selected = m->idAt(jsonRow);
        QHeaderView* header = page.view()->horizontalHeader();
        QVERIFY(header->sectionsClickable());
        QTest::mouseClick(
            header->viewport(), Qt::LeftButton, {},
            QPoint(header->sectionViewportPosition(TrafficModel::Status) + 5, header->height() / 2));
        QCOMPARE(m->sortColumn(), int(TrafficModel::Status));
        auto statuses = [m] {
            QList<int> out;
            for (int r = 0; r < m->rowCount(); ++r)
                out << m->data(m->index(r, TrafficModel::Status)).toInt();
            return out;
        };
        QCOMPARE(statuses(), (QList<int>{200, 200, 200, 200, 404, 404}));
        // The selection followed its exchange, and the inspector did not change.
        QCOMPARE(m->idAt(page.view()->selectionModel()->currentIndex().row()), selected);
        QCOMPARE(page.inspector()->exchange()->id, selected);
        // Ties keep capture order.
        for (int r = 1; r < m->rowCount(); ++r)
            if (statuses()[r] == statuses()[r - 1]) QVERIFY(m->idAt(r) > m->idAt(r - 1));
        // Descending, and rows that arrive are merged into it.
        QTest::mouseClick(
            header->viewport(), Qt::LeftButton, {},
            QPoint(header->sectionViewportPosition(TrafficModel::Status) + 5, header->height() / 2));
        QCOMPARE(m->sortOrder(), Qt::DescendingOrder);
        send("/nope", 1);
        send("/hello", 1);
        feed(page, 8);
        QCOMPARE(statuses(), (QList<int>{404, 404, 404, 200, 200, 200, 200, 200}));
        QCOMPARE(m->idAt(page.view()->selectionModel()->currentIndex().row()), selected);
        // By duration: a slow response completes later and moves to its place.
        m->sort(TrafficModel::Duration, Qt::DescendingOrder);
        send("/slow", 1);
        QTRY_VERIFY_WITH_TIMEOUT((page.poll(), m->totalRows() == 9 && m->rowAt(0) &&
                                                   m->rowAt(0)->target == "/slow" &&
                                                   !(m->rowAt(0)->flags & capture::kIncomplete)),
                                 5000);
        for (int r = 1; r < m->rowCount(); ++r)
            QVERIFY(m->rowAt(r - 1)->durationNs >= m->rowAt(r)->durationNs);
        // Time descending: newest first; new rows go on top.
        m->sort(TrafficModel::Time, Qt::DescendingOrder);
        for (int r = 1; r < m->rowCount(); ++r)
            QVERIFY(m->idAt(r - 1) > m->idAt(r));
        send("/hello", 1);
        feed(page, 10);
        QCOMPARE(m->idAt(0), m_server->engine().lastCapturedId());
        QCOMPARE(m->rowOfId(selected), page.view()->selectionModel()->currentIndex().row());
        // A filter keeps the order.
        page.setFilterText("status:200");
        page.applyFilter();
        for (int r = 1; r < m->rowCount(); ++r)
            QVERIFY(m->idAt(r - 1) > m->idAt(r));
    }

    // One exchange, one total: the row, the timeline footer and the HAR line say the same; phases
    // in words; the raw clock column only on request.
    void oneTotalAndPhasesInWords() {
        TrafficPage page(m_server.get());
        send("/hello", 1);
        feed(page, 1);
        page.selectRow(0);
        const capture::Exchange e = *page.inspector()->exchange();
        const QString total = ui::formatDuration(e.durationNs());
        QCOMPARE(page.model()->data(page.model()->index(0, TrafficModel::Duration)).toString(), total);
        QString harLine;
        for (auto* label : page.inspector()->findChildren<QLabel*>())
            if (label->text().startsWith("HAR timings:")) harLine = label->text();
        QVERIFY2(harLine.endsWith("total " + total), qPrintable(harLine + " vs " + total));
        auto phases = page.inspector()->findChild<QTableWidget*>("inspectorPhases");
        QVERIFY(phases && phases->rowCount() >= 3);
        int headersRow = -1;
        for (int r = 0; r < phases->rowCount(); ++r)
            if (phases->item(r, 0)->text() == "Request headers read") headersRow = r;
        QVERIFY(headersRow >= 0);
        for (int r = 0; r < phases->rowCount(); ++r)
            QVERIFY2(!phases->item(r, 0)->text().contains('_'), qPrintable(phases->item(r, 0)->text()));
        QVERIFY(phases->isColumnHidden(3));
        page.inspector()->findChild<QCheckBox*>("inspectorRawClock")->setChecked(true);
        QVERIFY(!phases->isColumnHidden(3));
        QCOMPARE(phases->item(headersRow, 3)->text(), QString::number(e.at(capture::Phase::RequestHeaders)));
    }

    // The table's context menu: copy the URL, filter by this host or route (the selection stays
    // on the exchange, in view), and its actions reach the inspector's.
    void contextMenuActsOnTheRow() {
        TrafficPage page(m_server.get());
        send("/hello", 3);
        send("/json", 1);
        feed(page, 4);
        const int row = rowWithPath(page.model(), "/hello");
        QVERIFY(row >= 0);
        page.selectRow(row);
        const std::uint64_t id = page.model()->idAt(row);
        std::unique_ptr<QMenu> menu(page.contextMenuFor(row));
        auto action = [&menu](const char* name) { return menu->findChild<QAction*>(name); };
        for (const char* name :
             {"copyUrl", "copyCurl", "copyPython", "resend", "filterHost", "filterRoute", "exportSelected"})
            QVERIFY2(action(name), name);
        QApplication::clipboard()->clear();
        action("copyUrl")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), m_server->firstHttpUrl() + "hello");
        action("filterRoute")->trigger();
        QCOMPARE(page.findChild<QLineEdit*>("trafficFilter")->text(), QString("route:hello"));
        QVERIFY(page.filterError().isEmpty());
        QCOMPARE(page.model()->rowCount(), 3);
        QCOMPARE(page.inspector()->exchange()->id, id); // still the same exchange, selected
        QCOMPARE(page.model()->idAt(page.view()->selectionModel()->currentIndex().row()), id);
        action("filterHost")->trigger();
        QCOMPARE(page.model()->rowCount(), 4);
    }

    // A refused exchange (no request line was read) offers no resend.
    void refusedExchangeCannotBeResent() {
        InspectorWidget inspector(m_server.get());
        capture::Exchange e;
        e.id = 3;
        e.status = 400;
        e.set(capture::Phase::RequestHeaders, 1'000'000);
        inspector.showExchange(e);
        QVERIFY(!inspector.findChild<QPushButton*>("inspectorResend")->isEnabled());
        e.method = "GET";
        e.target = "/hello";
        inspector.showExchange(e);
        QVERIFY(inspector.findChild<QPushButton*>("inspectorResend")->isEnabled());
    }

    // WebSocket records carry messages (the ws capture fills them); the tab appears only then.
    void inspectorListsWebSocketMessages() {
        InspectorWidget inspector(m_server.get());
        capture::Exchange e;
        e.id = 7;
        e.protocol = capture::Protocol::WebSocket;
        e.method = "GET";
        e.target = "/ws";
        e.status = 101;
        e.set(capture::Phase::RequestHeaders, 1'000'000);
        e.messages.push_back({3'000'000, true, 1, "hello", 5});
        e.messages.push_back({4'500'000, false, 2, std::string("\x01\x02", 2), 300});
        inspector.showExchange(e);
        auto table = inspector.findChild<QTableWidget*>("inspectorMessages");
        QTabWidget* tabs = inspector.tabs();
        QWidget* page = inspector.messagesPage();
        QVERIFY(page->isAncestorOf(table));
        QVERIFY(tabs->isTabVisible(tabs->indexOf(page)));
        QCOMPARE(tabs->tabText(tabs->indexOf(page)), QString("Messages (2)"));
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(0, 0)->text(), QString("2.00 ms"));
        QVERIFY(table->item(0, 1)->text().contains("client"));
        QCOMPARE(table->item(0, 2)->text(), QString("text"));
        QCOMPARE(table->item(0, 4)->text(), QString("hello"));
        QCOMPARE(table->item(1, 2)->text(), QString("binary"));
        QCOMPARE(table->item(1, 3)->text(), QString("300 B"));
        QVERIFY(table->item(1, 4)->text().contains("01 02") && table->item(1, 4)->text().endsWith("…"));
        QVERIFY(table->item(1, 1)->text().contains("server"));
        // A `ws: true` tunnel's session: the peer is the upstream; permessage-deflate is shown.
        e.set(capture::Phase::UpstreamConnected, 1'500'000);
        e.messages[1].compressed = true;
        inspector.showExchange(e);
        QVERIFY(table->item(1, 1)->text().contains("upstream"));
        QCOMPARE(table->item(1, 2)->text(), QString("binary (deflate)"));
        QCOMPARE(table->item(0, 2)->text(), QString("text"));
        e.messages.clear();
        inspector.showExchange(e);
        QVERIFY(!tabs->isTabVisible(tabs->indexOf(page)));
    }

    void bodyViewPicksTheModeFromTheContentType() {
        QImage image(3, 2, QImage::Format_RGB32);
        image.fill(Qt::red);
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        QVERIFY(image.save(&buffer, "PNG"));
        ui::BodyView view;
        view.setBody(png.toStdString(), std::uint64_t(png.size()), "image/png");
        QCOMPARE(view.effectiveMode(), ui::BodyView::Image);
        QVERIFY(view.findChild<QLabel*>("bodyInfo")->text().contains("3×2"));
        view.setBody("{\"a\":[1]}", 9, "application/json; charset=utf-8");
        QCOMPARE(view.effectiveMode(), ui::BodyView::Json);
        QCOMPARE(view.shownText(), QString("{\n  \"a\": [\n    1\n  ]\n}"));
        view.setBody("{\"a\":[1", 40, "application/json"); // a prefix: not complete JSON
        QCOMPARE(view.effectiveMode(), ui::BodyView::Text);
        view.setBody(std::string("\x00\x01\x02", 3), 3, "application/octet-stream");
        QCOMPARE(view.effectiveMode(), ui::BodyView::Hex);
        QVERIFY(view.shownText().startsWith("00000000  00 01 02"));
        QVERIFY(view.findChild<QLabel*>("bodyInfo")->text().contains("3 bytes"));
    }

    void exportsHar() {
        TrafficPage page(m_server.get());
        send("/hello", 7);
        send("/nope", 3);
        feed(page, 10);
        page.setFilterText("status:404");
        const QString path = m_dir.path() + "/out.har";
        QString error;
        QCOMPARE(page.exportHar(path, true, &error), 3);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        QCOMPARE(entries.size(), 3);
        for (const auto& entry : entries)
            QCOMPARE(entry.toObject()["response"].toObject()["status"].toInt(), 404);
    }

    void keepsAtMostMaxRows() {
        TrafficPage page(m_server.get());
        page.model()->setMaxRows(100);
        page.setBatchLimit(40);
        send("/hello", 150);
        QTRY_VERIFY_WITH_TIMEOUT((page.poll(), page.model()->idAt(page.model()->rowCount() - 1) ==
                                                   m_server->engine().recentExchanges(0, 1000).back().id),
                                 5000);
        QCOMPARE(page.model()->rowCount(), 100);
        QCOMPARE(page.model()->totalRows(), std::size_t(100));
        QCOMPARE(page.model()->idAt(99) - page.model()->idAt(0), std::uint64_t(99));
    }

    void followsTheBottomUntilScrolledUp() {
        TrafficPage page(m_server.get());
        page.resize(900, 600);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        send("/hello", 200);
        feed(page, 200);
        QScrollBar* bar = page.view()->verticalScrollBar();
        QTRY_VERIFY(bar->maximum() > 0);
        QTRY_COMPARE(bar->value(), bar->maximum());
        QVERIFY(page.isFollowing());

        bar->setValue(0); // the user scrolls up: new rows no longer move the view
        QVERIFY(!page.isFollowing());
        send("/hello", 50);
        feed(page, 250);
        QCoreApplication::processEvents();
        QCOMPARE(bar->value(), 0);

        bar->setValue(bar->maximum()); // back at the bottom: following again
        QVERIFY(page.isFollowing());
        send("/hello", 50);
        feed(page, 300);
        QTRY_COMPARE(bar->value(), bar->maximum());

        // Pause: nothing new comes in until resumed.
        page.setPaused(true);
        send("/hello", 10);
        QTest::qWait(100);
        page.poll();
        QCOMPARE(int(page.model()->totalRows()), 300);
        page.setPaused(false);
        feed(page, 310);
        page.clearRows();
        QCOMPARE(page.model()->rowCount(), 0);
        page.poll(); // cleared rows do not come back
        QCOMPARE(page.model()->rowCount(), 0);
    }
};

QTEST_MAIN(TestGuiTraffic)
#include "tst_gui_traffic.moc"

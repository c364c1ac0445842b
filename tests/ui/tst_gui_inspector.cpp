// The inspector as a new user met it, against a real in-process server with capture on: HTTP/2
// header fields shown as on the wire (lower-case, pseudo-header fields first, HPACK-decoded sizes)
// while HTTP/1.1 heads stay as received; Compare saying "no differences" and showing a text body
// difference as a unified diff (JSON re-indented first), with the line diff's own checks; Copy as
// fetch and Copy as HTTPie (quoting, method, URL, body), run as copied where the tool is here;
// closing the inspector cancels a resend that is still waiting; the rules that changed an exchange
// and its header fields before them.
#include "inspector/inspectorwidget.h"
#include "inspector/textdiff.h"
#include "servercontroller.h"
#include "test_support.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include <portico/capture/replay.h>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProcessEnvironment>
#include <QPushButton>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QTreeWidget>
#include <QtTest>

using namespace portico;
using portico::ui::InspectorWidget;
using portico::ui::ServerController;
using portico::ui::TrafficPage;

namespace {

QTreeWidgetItem* sectionStarting(QTreeWidget* tree, const QString& prefix) {
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0).startsWith(prefix)) return tree->topLevelItem(i);
    return nullptr;
}

QStringList names(QTreeWidgetItem* section) {
    QStringList out;
    for (int i = 0; i < section->childCount(); ++i)
        out << section->child(i)->text(0);
    return out;
}

QString valueOf(QTreeWidgetItem* section, const QString& name) {
    for (int i = 0; i < section->childCount(); ++i)
        if (section->child(i)->text(0) == name) return section->child(i)->text(1);
    return QString();
}

// HPACK-decoded size of the shown fields: name and value bytes of each.
std::uint64_t fieldBytes(QTreeWidgetItem* section) {
    std::uint64_t n = 0;
    for (int i = 0; i < section->childCount(); ++i)
        n += section->child(i)->text(0).toUtf8().size() + section->child(i)->text(1).toUtf8().size();
    return n;
}

// Applies a unified diff (as unifiedDiff writes it) to `a`: the property every diff must have.
std::string applyDiff(const std::string& a, const std::string& diff) {
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < a.size();) {
        const auto eol = a.find('\n', at);
        const std::size_t end = eol == std::string::npos ? a.size() : eol + 1;
        lines.push_back(a.substr(at, end - at));
        at = end;
    }
    std::vector<std::string> out;
    std::size_t next = 0; // next line of `a` not yet copied
    std::size_t at = 0;
    std::string last; // the previous diff line's text (for "\ No newline")
    auto dropNewline = [&](std::vector<std::string>& v) {
        if (!v.empty() && !v.back().empty() && v.back().back() == '\n') v.back().pop_back();
    };
    while (at < diff.size()) {
        const auto eol = diff.find('\n', at);
        const std::string line = diff.substr(at, eol - at);
        at = eol + 1;
        if (line.starts_with("---") || line.starts_with("+++")) continue;
        if (line.starts_with("@@ -")) {
            std::size_t start = std::stoul(line.substr(4));
            const auto comma = line.find(',');
            const auto space = line.find(' ', 4);
            const bool empty = comma < space && line.substr(comma + 1, space - comma - 1) == "0";
            const std::size_t from = empty ? start : start - 1;
            while (next < from)
                out.push_back(lines[next++]);
            continue;
        }
        if (line.starts_with("\\ No newline")) {
            if (last.starts_with('+') || last.starts_with(' ')) dropNewline(out);
            continue;
        }
        last = line;
        if (line.starts_with(' ')) {
            out.push_back(lines[next++]);
        } else if (line.starts_with('-')) {
            ++next;
        } else if (line.starts_with('+')) {
            out.push_back(line.substr(1) + "\n");
        }
    }
    while (next < lines.size())
        out.push_back(lines[next++]);
    std::string r;
    for (const auto& l : out)
        r += l;
    return r;
}

} // namespace

class TestGuiInspector : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;

    void feed(TrafficPage& page, int rows) {
        m_server->engine().flushCapture();
        QTRY_VERIFY_WITH_TIMEOUT((page.poll(), int(page.model()->totalRows()) >= rows), 5000);
        QCOMPARE(int(page.model()->totalRows()), rows);
    }

    QString url(const QString& path) const { return m_server->firstHttpUrl() + path.mid(1); }

private slots:
    void initTestCase() {
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [127.0.0.1:0]\nworkers: 1\ncapture: true\nvhosts:\n  - routes:\n"
                "      - path: /json\n        respond:\n"
                "          headers: {Content-Type: application/json, X-Mixed-Case: Value}\n"
                "          body: '{\"a\":1,\"who\":\"{{header.x-test}}\",\"list\":[1,2]}'\n"
                "      - path: /echo\n        respond: {body: 'x={{header.x-test}} {{body}}'}\n");
        f.close();
    }

    void init() {
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(m_dir.path() + "/portico.yaml", &error, false), qPrintable(error));
    }

    void cleanup() { m_server.reset(); }

    // ---- 1. HTTP/2 header fields as on the wire ----

    void http2HeadersAreShownAsOnTheWire() {
        TrafficPage page(m_server.get());
        auto sent = test::runProcess("curl", {"-s", "--http2-prior-knowledge", "-H", "X-Test: Someone", "-H",
                                              "Accept: */*", url("/json?q=1")});
        QCOMPARE(sent.exitCode, 0);
        feed(page, 1);
        page.selectRow(0);
        const auto& e = page.inspector()->exchange();
        QVERIFY(e);
        QCOMPARE(int(e->protocol), int(capture::Protocol::Http2));

        QTreeWidget* tree = page.inspector()->headersTree();
        QTreeWidgetItem* request = sectionStarting(tree, "Request headers");
        QTreeWidgetItem* response = sectionStarting(tree, "Response headers");
        QVERIFY(request && response);

        // Request: the four pseudo-header fields first, in RFC 9113 §8.3.1's order, then the rest,
        // every name lower-case.
        const QStringList req = names(request);
        QVERIFY2(req.size() > 4, qPrintable(req.join(',')));
        QCOMPARE(req.mid(0, 4), QStringList({":method", ":scheme", ":authority", ":path"}));
        QCOMPARE(valueOf(request, ":method"), QString("GET"));
        QCOMPARE(valueOf(request, ":scheme"), QString("http"));
        QCOMPARE(valueOf(request, ":authority"), QString::fromStdString(e->authority));
        QCOMPARE(valueOf(request, ":path"), QString("/json?q=1"));
        QCOMPARE(valueOf(request, "x-test"), QString("Someone"));
        for (const QString& n : req)
            QVERIFY2(n == n.toLower(), qPrintable(n));
        QVERIFY(!req.mid(4).join(',').contains(':'));

        // Response: :status first, lower-case names (the route's "X-Mixed-Case" went out as
        // x-mixed-case), the date sent with it.
        const QStringList res = names(response);
        QCOMPARE(res.value(0), QString(":status"));
        QCOMPARE(valueOf(response, ":status"), QString("200"));
        QCOMPARE(valueOf(response, "content-type"), QString("application/json"));
        QCOMPARE(valueOf(response, "x-mixed-case"), QString("Value"));
        QVERIFY(!valueOf(response, "date").isEmpty());
        for (const QString& n : res)
            QVERIFY2(n == n.toLower(), qPrintable(n));

        // Sizes: the captured HPACK-decoded sizes (name and value bytes of every field shown),
        // labelled so.
        QCOMPARE(e->requestHeadersSize, fieldBytes(request));
        QCOMPARE(e->responseHeadersSize, fieldBytes(response));
        QCOMPARE(request->text(0), QString("Request headers (%1, %2 HPACK-decoded)")
                                       .arg(req.size())
                                       .arg(ui::formatBytes(e->requestHeadersSize)));
        QCOMPARE(response->text(0), QString("Response headers (%1, %2 HPACK-decoded)")
                                        .arg(res.size())
                                        .arg(ui::formatBytes(e->responseHeadersSize)));
    }

    void http1HeadsStayAsReceived() {
        TrafficPage page(m_server.get());
        auto sent = test::runProcess("curl", {"-s", "-H", "X-Test: Someone", url("/json")});
        QCOMPARE(sent.exitCode, 0);
        feed(page, 1);
        page.selectRow(0);
        const auto& e = page.inspector()->exchange();
        QVERIFY(e);
        QCOMPARE(int(e->protocol), int(capture::Protocol::Http1));
        QTreeWidget* tree = page.inspector()->headersTree();
        QTreeWidgetItem* request = sectionStarting(tree, "Request headers");
        QTreeWidgetItem* response = sectionStarting(tree, "Response headers");
        QVERIFY(request && response);
        QStringList expected;
        for (const auto& h : e->requestHeaders)
            expected << QString::fromStdString(h.name);
        QCOMPARE(names(request), expected);
        QVERIFY(expected.contains("Host") && expected.contains("X-Test"));
        QVERIFY(names(response).contains("X-Mixed-Case"));
        QVERIFY(!names(response).join(',').contains(':'));
        QCOMPARE(request->text(0), QString("Request headers (%1, %2)")
                                       .arg(e->requestHeaders.size())
                                       .arg(ui::formatBytes(e->requestHeadersSize)));
        QVERIFY(!response->text(0).contains("HPACK"));
    }

    // A gRPC record (or an imported one) may lack :status or carry pseudo-header fields in its
    // lists out of order; they are built or moved to the front.
    void pseudoHeadersAreBuiltOrReordered() {
        capture::Exchange e;
        e.protocol = capture::Protocol::Grpc;
        e.httpVersion = 20;
        e.method = "POST";
        e.scheme = "https";
        e.authority = "localhost:8443";
        e.target = "/pkg.Svc/Call";
        e.status = 200;
        e.requestHeaders = {
            {"Content-Type", "application/grpc"}, {":path", "/pkg.Svc/Call"}, {"te", "trailers"}};
        e.responseHeaders = {{"content-type", "application/grpc"}};
        e.responseTrailers = {{"Grpc-Status", "0"}};
        auto pairs = [](const std::vector<capture::Header>& hs) {
            QStringList out;
            for (const auto& h : hs)
                out << QString::fromStdString(h.name + "=" + h.value);
            return out;
        };
        QCOMPARE(pairs(InspectorWidget::requestHeadersAsSent(e)),
                 QStringList({":method=POST", ":scheme=https", ":authority=localhost:8443",
                              ":path=/pkg.Svc/Call", "content-type=application/grpc", "te=trailers"}));
        QCOMPARE(pairs(InspectorWidget::responseHeadersAsSent(e)),
                 QStringList({":status=200", "content-type=application/grpc"}));
        InspectorWidget inspector(nullptr);
        inspector.showExchange(e);
        QTreeWidgetItem* trailers = sectionStarting(inspector.headersTree(), "Response trailers");
        QVERIFY(trailers);
        QCOMPARE(names(trailers), QStringList({"grpc-status"}));
        // No size recorded (an imported record): the count alone, no "0 B".
        QCOMPARE(sectionStarting(inspector.headersTree(), "Request headers")->text(0),
                 QString("Request headers (6)"));

        // A Host field instead of :authority: no :authority is made up.
        e.requestHeaders = {{"host", "localhost:8443"}};
        QCOMPARE(
            pairs(InspectorWidget::requestHeadersAsSent(e)),
            QStringList({":method=POST", ":scheme=https", ":path=/pkg.Svc/Call", "host=localhost:8443"}));
        // No response: no :status.
        e.status = 0;
        e.responseHeaders.clear();
        QVERIFY(InspectorWidget::responseHeadersAsSent(e).empty());
        // HTTP/1.1: as received, untouched.
        e.protocol = capture::Protocol::Http1;
        e.httpVersion = 11;
        e.requestHeaders = {{"Host", "a"}, {"X-Y", "z"}};
        QCOMPARE(pairs(InspectorWidget::requestHeadersAsSent(e)), QStringList({"Host=a", "X-Y=z"}));
    }

    // Rules that changed an exchange: named in General, and a "Changed by rules" tab diffs the
    // fields before them with the fields as sent; neither for an exchange no rule changed.
    void rulesLineAndChangedHeaders() {
        capture::Exchange e;
        e.method = "GET";
        e.scheme = "http";
        e.authority = "localhost:8080";
        e.target = "/api";
        e.status = 200;
        e.requestHeaders = {{"Host", "localhost:8080"}, {"Authorization", "Bearer x"}};
        // As sent: Date and Content-Length, which the connection writes, are not in the original.
        e.responseHeaders = {{"Date", "Mon, 07 Dec 2026 13:00:00 GMT"},
                             {"Content-Type", "text/plain"},
                             {"Content-Length", "5"}};
        e.rules = {"add-auth", "strip cookies"};
        e.originalRequestFields = "Host: localhost:8080\r\nCookie: a=1\r\n";
        e.originalResponseFields = "Content-Type: text/plain\r\nX-Powered-By: php\r\n";
        InspectorWidget inspector(nullptr);
        inspector.showExchange(e);
        QTreeWidgetItem* general = sectionStarting(inspector.headersTree(), "General");
        QVERIFY(general);
        QCOMPARE(valueOf(general, "Rules"), QString("add-auth, strip cookies"));
        QTabWidget* tabs = inspector.tabs();
        const int tab = tabs->indexOf(inspector.rulesDiff());
        QVERIFY(tab >= 0);
        QVERIFY(tabs->isTabVisible(tab));
        QCOMPARE(tabs->tabText(tab), QString("Changed by rules"));
        const QString diff = inspector.rulesDiff()->toPlainText();
        QVERIFY2(diff.contains("--- request headers before rules\n+++ request headers as sent\n"),
                 qPrintable(diff));
        QVERIFY2(diff.contains("\n-cookie: a=1\n+authorization: Bearer x\n"), qPrintable(diff));
        QVERIFY2(diff.contains("--- response headers before rules\n"), qPrintable(diff));
        QVERIFY2(diff.contains("\n-x-powered-by: php\n"), qPrintable(diff));
        QVERIFY2(!diff.contains("date") && !diff.contains("content-length"), qPrintable(diff));
        QVERIFY(!diff.contains("+content-type")); // unchanged lines are context only
        // The request alone changed: its diff only.
        e.originalResponseFields.clear();
        QVERIFY(!InspectorWidget::rulesDiffText(e).contains("response headers"));

        // Rules that matched but left the fields as they were: said so, not an empty tab.
        e.originalRequestFields = "Host: localhost:8080\r\nAuthorization: Bearer x\r\n";
        QCOMPARE(InspectorWidget::rulesDiffText(e), QString("request headers: no differences\n"));

        // No rules: no line, no tab.
        capture::Exchange plain = e;
        plain.id = 2;
        plain.rules.clear();
        plain.originalRequestFields.clear();
        inspector.showExchange(plain);
        QCOMPARE(valueOf(sectionStarting(inspector.headersTree(), "General"), "Rules"), QString());
        QVERIFY(!tabs->isTabVisible(tab));
        QVERIFY(inspector.rulesDiff()->toPlainText().isEmpty());
    }

    // A replace_body: the tab also diffs each body the rules rewrote, before them and as sent (JSON
    // re-indented first), with a note when the bodies are the capture's prefixes or too long to
    // show whole; binary bodies are counted, not diffed. Shown even when no field changed.
    void rulesDiffShowsBodyChanges() {
        capture::Exchange e;
        e.method = "POST";
        e.scheme = "http";
        e.authority = "localhost:8080";
        e.target = "/up/echo";
        e.status = 200;
        e.requestHeaders = {{"Host", "localhost:8080"}};
        e.responseHeaders = {{"Content-Type", "text/plain"}};
        e.rules = {"request secret", "ids"};
        e.originalRequestBody = "a=1\nsecret=hunter2\nb=2\n";
        e.requestBody = "a=1\nsecret=[redacted]\nb=2\n";
        e.requestBodySize = e.requestBody.size();
        e.originalResponseBody = "{\"user\":\"a\",\"id\":42}";
        e.responseBody = "{\"user\":\"a\",\"id\":\"ID[42]\"}";
        e.responseBodySize = e.responseBody.size();
        InspectorWidget inspector(nullptr);
        inspector.showExchange(e);
        QTabWidget* tabs = inspector.tabs();
        QVERIFY(tabs->isTabVisible(tabs->indexOf(inspector.rulesDiff())));
        const QString diff = inspector.rulesDiff()->toPlainText();
        QVERIFY2(diff.contains("--- request body before rules\n+++ request body as sent\n"),
                 qPrintable(diff));
        QVERIFY2(diff.contains("\n a=1\n-secret=hunter2\n+secret=[redacted]\n b=2\n"), qPrintable(diff));
        QVERIFY2(diff.contains("--- response body before rules\n+++ response body as sent\n"),
                 qPrintable(diff));
        QVERIFY2(diff.contains("\n   \"user\": \"a\",\n-  \"id\": 42\n+  \"id\": \"ID[42]\"\n"),
                 qPrintable(diff));
        QVERIFY2(!diff.contains("headers") && !diff.contains("note") && !diff.contains("prefix"),
                 qPrintable(diff));
        // The request's comes before the response's.
        QVERIFY(diff.indexOf("request body") < diff.indexOf("response body"));

        // Cut by the capture (kOriginalBodyTruncated, or the sent body a prefix): said so.
        e.flags = capture::kOriginalBodyTruncated;
        QVERIFY(InspectorWidget::rulesDiffText(e).contains(
            "request body: the captured prefixes compared (capture.body_bytes)\n"));
        e.flags = 0;
        e.responseBodySize = 5000;
        QString text = InspectorWidget::rulesDiffText(e);
        QVERIFY2(text.contains("response body: the captured prefixes compared"), qPrintable(text));
        QVERIFY2(!text.contains("request body: the captured"), qPrintable(text));

        // Long bodies: the first 1000 lines of each compared, with a note; the change past them is
        // not shown.
        std::string before, after;
        for (int i = 0; i < 3000; ++i) {
            before += "line " + std::to_string(i) + (i == 2 || i == 2500 ? " id=7\n" : "\n");
            after += "line " + std::to_string(i) + (i == 2 || i == 2500 ? " ID[7]\n" : "\n");
        }
        e.originalResponseBody = before;
        e.responseBody = after;
        e.responseBodySize = after.size();
        text = InspectorWidget::rulesDiffText(e);
        QVERIFY2(
            text.contains("response body: long, the first 1000 lines (at most 64 KiB) of each compared\n"),
            qPrintable(text.left(2000)));
        QVERIFY2(text.contains("-line 2 id=7\n+line 2 ID[7]\n"), qPrintable(text.left(2000)));
        QVERIFY(!text.contains("line 2500"));

        // Binary: counted, not diffed.
        e.originalResponseBody = std::string("\x00\x01id=42", 7);
        e.responseBody = std::string("\x00\x01ID[42]", 8);
        e.responseBodySize = 8;
        text = InspectorWidget::rulesDiffText(e);
        QVERIFY2(
            text.contains("response body: binary, not compared (7 bytes captured before rules, 8 as sent)\n"),
            qPrintable(text));

        // Nothing before the rules: no body part (and no tab when nothing else changed).
        e.originalRequestBody.clear();
        e.originalResponseBody.clear();
        QVERIFY(InspectorWidget::rulesDiffText(e).isEmpty());
    }

    // ---- 2. Compare ----

    void textDiffIsUnified() {
        using ui::unifiedDiff;
        QVERIFY(unifiedDiff("a\nb\n", "a\nb\n").same);
        QVERIFY(unifiedDiff("", "").same);
        QCOMPARE(QString::fromStdString(
                     unifiedDiff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nfive\n6\n7\n8\n").text),
                 QString("--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"));
        // An insertion at the top: the empty old range names line 0.
        QCOMPARE(QString::fromStdString(unifiedDiff("x\n", "new\nx\n", "A", "B", 0).text),
                 QString("--- A\n+++ B\n@@ -0,0 +1 @@\n+new\n"));
        // A last line without a newline, as diff prints it.
        QCOMPARE(QString::fromStdString(unifiedDiff("a\nb", "a\nc", "a", "b", 1).text),
                 QString("--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
                         "\\ No newline at end of file\n"));
        // Changes far apart: two hunks; close together: one.
        std::string a, b, c;
        for (int i = 1; i <= 20; ++i) {
            a += std::to_string(i) + "\n";
            b += (i == 2 || i == 18 ? "x" : std::to_string(i)) + "\n";
            c += (i == 2 || i == 7 ? "x" : std::to_string(i)) + "\n";
        }
        const auto two = unifiedDiff(a, b);
        QCOMPARE(QString::fromStdString(two.text).count("@@ -"), 2);
        QCOMPARE(two.added, std::size_t(2));
        QCOMPARE(two.removed, std::size_t(2));
        QVERIFY(two.text.find("@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n") != std::string::npos);
        QVERIFY(two.text.find("@@ -15,6 +15,6 @@\n") != std::string::npos);
        QCOMPARE(QString::fromStdString(unifiedDiff(a, c).text).count("@@ -"), 1);
        // Too many lines to diff: refused, the caller summarises.
        std::string big1, big2;
        for (int i = 0; i < 2001; ++i) {
            big1 += std::to_string(i) + "\n";
            big2 += std::to_string(i + 1) + "\n";
        }
        QVERIFY(!unifiedDiff(big1, big2).ok);
        QVERIFY(unifiedDiff(big1, big2, "a", "b", 3, 3000).ok);
        // Long texts with a small change still diff: only the differing middle counts.
        QVERIFY(unifiedDiff(big1, big1 + "tail\n").ok);

        // Random edits: the diff, applied to the first text, gives the second.
        QRandomGenerator rng(2026);
        for (int round = 0; round < 200; ++round) {
            std::string x, y;
            const int lines = int(rng.bounded(12));
            for (int i = 0; i < lines; ++i) {
                const std::string line(1, char('a' + rng.bounded(4)));
                x += line + "\n";
                const int what = int(rng.bounded(5));
                if (what == 0) continue;                                               // removed
                if (what == 1) y += std::string(1, char('a' + rng.bounded(4))) + "\n"; // changed
                y += line + "\n";
                if (what == 2) y += "n\n"; // added
            }
            if (rng.bounded(3) == 0 && !x.empty()) x.pop_back(); // no final newline
            if (rng.bounded(3) == 0 && !y.empty()) y.pop_back();
            const auto d = unifiedDiff(x, y, "a", "b", rng.bounded(4));
            QVERIFY(d.ok);
            QCOMPARE(d.same, x == y);
            QCOMPARE(applyDiff(x, d.text), y);
        }
    }

    void compareSaysNoDifferencesAndDiffsBodies() {
        TrafficPage page(m_server.get());
        auto sent = test::runProcess("curl", {"-s", "-H", "X-Test: a", url("/json")});
        QCOMPARE(sent.exitCode, 0);
        QCOMPARE(sent.out, QByteArray(R"({"a":1,"who":"a","list":[1,2]})"));
        feed(page, 1);
        page.selectRow(0);
        InspectorWidget* inspector = page.inspector();

        QSignalSpy finished(inspector, &InspectorWidget::resendFinished);
        QVERIFY(inspector->resend());
        QVERIFY(finished.wait(10000));
        QVERIFY(inspector->lastResend()->differences.empty());
        const QString summary = page.findChild<QLabel*>("inspectorCompareSummary")->text();
        QVERIFY2(summary.contains("no differences"), qPrintable(summary));
        QVERIFY(inspector->compareDiff()->toPlainText().isEmpty());
        QVERIFY(inspector->compareDiff()->isHidden());

        capture::ReplayOptions edit;
        edit.headers.push_back({"X-Test", "b"});
        finished.clear();
        QVERIFY(inspector->resendWith(edit));
        QVERIFY(finished.wait(10000));
        QVERIFY(inspector->lastResend()->ok());
        const QString diff = inspector->compareDiff()->toPlainText();
        // The one-line JSON bodies, re-indented, differ by one line.
        QCOMPARE(diff,
                 QString("--- original (30 bytes)\n+++ resent (30 bytes)\n@@ -1,6 +1,6 @@\n {\n   \"a\": 1,\n"
                         "-  \"who\": \"a\",\n+  \"who\": \"b\",\n   \"list\": [\n     1,\n     2\n"));
        QVERIFY(!inspector->compareDiff()->isHidden());
        auto table = page.findChild<QTableWidget*>("inspectorCompare");
        bool bodyRow = false;
        for (int row = 0; row < table->rowCount(); ++row)
            if (table->item(row, 0)->text() == "body") {
                bodyRow = true;
                QCOMPARE(table->item(row, 1)->text(), QString("30 bytes · diff below"));
                QVERIFY(!table->item(row, 2)->text().contains("at byte"));
            }
        QVERIFY(bodyRow);
    }

    // GET /json on 127.0.0.1: what the resend tests send to a listener that never answers.
    static capture::Exchange getJson() {
        capture::Exchange e;
        e.method = "GET";
        e.scheme = "http";
        e.authority = "127.0.0.1";
        e.target = "/json";
        e.requestHeaders = {{"Host", "127.0.0.1"}};
        return e;
    }

    // Closing the inspector while a resend waits (here for a connect that never completes, 10 s
    // allowed) cancels it instead of waiting for its timeout.
    void closingCancelsAResend() {
        test::StuckListener stuck;
        QVERIFY(stuck.port());
        const capture::Exchange e = getJson();
        auto inspector = std::make_unique<InspectorWidget>(nullptr);
        inspector->showExchange(e);
        capture::ReplayOptions to;
        to.baseUrl = "http://127.0.0.1:" + std::to_string(stuck.port());
        QVERIFY(inspector->resendWith(to));
        QVERIFY(inspector->isResending());
        QTest::qWait(300);
        QVERIFY(inspector->isResending());
        QElapsedTimer closing;
        closing.start();
        inspector.reset();
        QVERIFY2(closing.elapsed() < 2000, qPrintable(QString::number(closing.elapsed())));
    }

    // While a resend waits, the Resend button reads "Cancel resend" and ends it at once; the
    // Compare tab says so, and the button resends again afterwards.
    void resendButtonCancelsAWaitingResend() {
        test::StuckListener stuck;
        QVERIFY(stuck.port());
        const capture::Exchange e = getJson();
        InspectorWidget inspector(nullptr);
        inspector.showExchange(e);
        auto* button = inspector.findChild<QPushButton*>("inspectorResend");
        QVERIFY(button);
        capture::ReplayOptions to;
        to.baseUrl = "http://127.0.0.1:" + std::to_string(stuck.port());
        QSignalSpy finished(&inspector, &InspectorWidget::resendFinished);
        QVERIFY(inspector.resendWith(to));
        QCOMPARE(button->text(), QString("Cancel resend"));
        QVERIFY(button->isEnabled());
        QTest::qWait(200);
        QVERIFY(inspector.isResending());
        QElapsedTimer waited;
        waited.start();
        QTest::mouseClick(button, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 3000);
        QVERIFY2(waited.elapsed() < 3000,
                 qPrintable(QString::number(waited.elapsed()))); // not the 10 s timeout
        QCOMPARE(finished.front().front().toBool(), false);
        QVERIFY(!inspector.isResending());
        QCOMPARE(inspector.lastResend()->error, std::string("cancelled"));
        auto* summary = inspector.findChild<QLabel*>("inspectorCompareSummary");
        QVERIFY(summary);
        QVERIFY2(summary->text().contains("cancelled"), qPrintable(summary->text()));
        QCOMPARE(button->text(), QString("Resend"));
    }

    void binaryBodiesKeepTheByteSummary() {
        capture::Exchange a, b;
        a.responseBody = std::string("\x89PNG\r\n\x1a\n\0\0", 10);
        b.responseBody = std::string("\x89PNG\r\n\x1a\n\0\1", 10);
        a.responseBodySize = b.responseBodySize = 10;
        QVERIFY(InspectorWidget::bodyDiff(a, b).isEmpty());
        a.responseBody = "plain\ntext\n";
        b.responseBody = "plain\ntest\n";
        a.responseBodySize = b.responseBodySize = 11;
        QCOMPARE(
            InspectorWidget::bodyDiff(a, b),
            QString(
                "--- original (11 bytes)\n+++ resent (11 bytes)\n@@ -1,2 +1,2 @@\n plain\n-text\n+test\n"));
        // Captured prefixes say so.
        b.responseBodySize = 4000;
        QVERIFY(InspectorWidget::bodyDiff(a, b).contains("+++ resent (4000 bytes, first 11 captured)"));
    }

    // ---- 3. Copy as fetch, Copy as HTTPie ----

    void copiesAsFetchAndHttpie() {
        capture::Exchange e;
        e.method = "PUT";
        e.scheme = "http";
        e.authority = "127.0.0.1:8080";
        e.target = "/items/1?x=a%20b";
        e.requestHeaders = {{"Host", "127.0.0.1:8080"},
                            {"Content-Length", "99"},
                            {"X-Quote", "it's \"q\" \\ back"},
                            {"X-Line", "one\ntwo"},
                            {"X-Eq", "=x"},
                            {"X-Empty", ""},
                            {"Content-Type", "application/json"}};
        e.requestBody = "{\"msg\": \"it's\",\n \"q\": \"\\\"\"}";

        const std::string js = capture::toFetch(e);
        QCOMPARE(QString::fromStdString(js),
                 QString("fetch(\"http://127.0.0.1:8080/items/1?x=a%20b\", {\n"
                         "  method: \"PUT\",\n"
                         "  headers: {\n"
                         "    \"X-Quote\": \"it's \\\"q\\\" \\\\ back\",\n"
                         "    \"X-Line\": \"one\\ntwo\",\n"
                         "    \"X-Eq\": \"=x\",\n"
                         "    \"X-Empty\": \"\",\n"
                         "    \"Content-Type\": \"application/json\",\n"
                         "  },\n"
                         "  body: \"{\\\"msg\\\": \\\"it's\\\",\\n \\\"q\\\": \\\"\\\\\\\"\\\"}\",\n"
                         "}).then(async (response) => {\n"
                         "  console.log(response.status, response.statusText);\n"
                         "  console.log(await response.text());\n"
                         "});\n"));

        const std::string http = capture::toHttpie(e);
        QCOMPARE(QString::fromStdString(http),
                 QString("http --raw '{\"msg\": \"it'\\''s\",\n \"q\": \"\\\"\"}' 'PUT' "
                         "'http://127.0.0.1:8080/items/1?x=a%20b' 'X-Quote:it'\\''s \"q\" \\ back' "
                         "'X-Line:one\ntwo' 'X-Eq:\\=x' 'X-Empty;' 'Content-Type:application/json'"));
        // The shell hands HTTPie exactly these arguments (a stand-in `http` prints its argv).
        QTemporaryDir bin;
        QFile fake(bin.filePath("http"));
        QVERIFY(fake.open(QIODevice::WriteOnly));
        fake.write("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\ncat\n");
        fake.close();
        fake.setPermissions(fake.permissions() | QFileDevice::ExeOwner);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PATH", bin.path() + ":" + env.value("PATH"));
        auto argv = test::runProcessIn("sh", {"-c", QString::fromStdString(http)}, env, bin.path());
        QCOMPARE(argv.exitCode, 0);
        QCOMPARE(argv.out.split('\0'),
                 QByteArrayList({"--raw", QByteArray::fromStdString(e.requestBody), "PUT",
                                 "http://127.0.0.1:8080/items/1?x=a%20b", "X-Quote:it's \"q\" \\ back",
                                 "X-Line:one\ntwo", "X-Eq:\\=x", "X-Empty;", "Content-Type:application/json",
                                 ""}));
        // A binary body goes through printf on stdin.
        e.requestBody = std::string("a\0b\xff", 4);
        const std::string binary = capture::toHttpie(e);
        QVERIFY2(binary.starts_with("printf '\\141\\000\\142\\377' | http 'PUT' "), binary.c_str());
        argv = test::runProcessIn("sh", {"-c", QString::fromStdString(binary)}, env, bin.path());
        QVERIFY(argv.out.endsWith(QByteArray("\0", 1) + QByteArray::fromStdString(e.requestBody)));
        const std::string jsBinary = capture::toFetch(e);
        QVERIFY2(jsBinary.find("  body: new Uint8Array([97,0,98,255]),\n") != std::string::npos,
                 jsBinary.c_str());

        // A GET body: fetch refuses one, so it is left out with a word why.
        e.method = "GET";
        const std::string get = capture::toFetch(e);
        QVERIFY(
            get.starts_with("// The captured request had a body of 4 bytes; fetch() sends none with GET.\n"));
        QVERIFY(get.find("body:") == std::string::npos);

        // https to Portico's own CA: HTTPie verifies against it, Node is told how.
        e.scheme = "https";
        e.requestBody.clear();
        QVERIFY(
            capture::toHttpie(e, {}, "/d/ca.crt").starts_with("http --verify='/d/ca.crt' 'GET' 'https://"));
        QVERIFY(capture::toFetch(e, {}, "/d/ca.crt")
                    .starts_with("// Node does not trust Portico's local CA by "
                                 "default: run with\n// NODE_EXTRA_CA_CERTS='/d/ca.crt' "
                                 "node FILE.js\n"));
        QVERIFY(capture::toFetch(e).starts_with("fetch(\"https://"));
    }

    // The actions: the inspector's "Copy as…" menu and the row's context menu put the same text
    // on the clipboard; the fetch copy runs in Node (when installed) and gets the same answer.
    void copyActionsPutTheTextOnTheClipboard() {
        TrafficPage page(m_server.get());
        auto sent = test::runProcess("curl", {"-s", "-X", "POST", "-H", "X-Test: it's \"quoted\"",
                                              "--data-binary", "line1\nline2", url("/echo")});
        QCOMPARE(sent.exitCode, 0);
        feed(page, 1);
        page.selectRow(0);
        const capture::Exchange e = *page.inspector()->exchange();
        auto more = page.findChild<QToolButton*>("inspectorCopyMore");
        QVERIFY(more && more->isEnabled());
        QApplication::clipboard()->clear();
        more->menu()->findChild<QAction*>("inspectorCopyFetch")->trigger();
        const QString js = QApplication::clipboard()->text();
        QCOMPARE(js, QString::fromStdString(capture::toFetch(e)));
        more->menu()->findChild<QAction*>("inspectorCopyHttpie")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), QString::fromStdString(capture::toHttpie(e)));
        std::unique_ptr<QMenu> menu(page.contextMenuFor(0));
        QApplication::clipboard()->clear();
        menu->findChild<QAction*>("copyFetch")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), js);
        menu->findChild<QAction*>("copyHttpie")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), QString::fromStdString(capture::toHttpie(e)));

        const QString node = QStandardPaths::findExecutable("node");
        if (node.isEmpty()) QSKIP("node is not installed: the fetch copy was checked as text only");
        auto run = test::runProcess(node, {"-e", js});
        if (run.err.contains("fetch is not defined")) QSKIP("this Node has no fetch (before 18)");
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QCOMPARE(run.out, "200 OK\n" + sent.out + "\n");
    }
};

QTEST_MAIN(TestGuiInspector)
#include "tst_gui_inspector.moc"

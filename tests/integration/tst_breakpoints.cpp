// Breakpoints (a rule's `breakpoint` action) through the engine facade, with curl and nghttp over
// loopback: an exchange pauses (request stage: before its route's action or upstream; response
// stage: before a local answer is returned), is listed with its request, and is resumed as it was
// or as edited, answered with the user's response, aborted (reset or close), or resumed unchanged
// after its timeout — each said in the record's rule list. A paused exchange holds only itself:
// other requests (HTTP/1.1 connections, HTTP/2 streams of the same connection) go on, and several
// paused exchanges are decided independently. A headless engine refuses the config at load.
// Upstream: tests/support/upstream.py (/echo answers the request it got as JSON).
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>

using namespace portico;
using Decision = rules::BreakpointDecision;

namespace {
// A client running while the test drives the engine.
struct Client {
    QProcess p;
    void start(const QStringList& args) {
        p.setProgram("curl");
        p.setArguments(QStringList{"-sS", "--max-time", "20", "-w", "\n%{http_code}"} + args);
        p.start();
    }
    // Waits for the end: stdout's last line is the status, the rest the body.
    bool finish(int ms = 15000) { return p.waitForFinished(ms); }
    int status() {
        const QByteArray out = p.readAllStandardOutput();
        const qsizetype nl = out.lastIndexOf('\n');
        body_ = out.left(nl);
        return out.mid(nl + 1).toInt();
    }
    QByteArray body() const { return body_; }
    QByteArray body_;
    ~Client() {
        if (p.state() != QProcess::NotRunning) {
            p.kill();
            p.waitForFinished(3000);
        }
    }
};
} // namespace

class TestBreakpoints : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    QString url(const QString& path) const {
        return QStringLiteral("http://127.0.0.1:%1%2").arg(port_).arg(path);
    }

    std::shared_ptr<const config::Config> load(const QString& yaml, QString* errors = nullptr) {
        const QString path = tmp_.filePath("bp.yaml");
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return nullptr;
        f.write(yaml.toUtf8());
        f.close();
        auto r = config::loadConfigFile(path.toStdString());
        if (!r.ok()) {
            QString all;
            for (const auto& e : r.errors)
                all += QString::fromStdString(e.toString()) + "\n";
            if (errors) *errors = all;
            qWarning().noquote() << all;
            return nullptr;
        }
        return r.config;
    }

    QString config() const {
        return QStringLiteral(R"(listen: [{address: 127.0.0.1:0}]
workers: 1
capture: {enabled: true}
rules:
  - name: hold api
    match: "path:/echo/pause"
    actions: [{set_header: {X-Ruled: "yes"}}, {breakpoint: {timeout: 60s}}]
  - name: hold local
    match: "path:/local/pause"
    actions: [{breakpoint: {}}]
  - name: quick
    match: "path:/echo/quick"
    actions: [{breakpoint: {timeout: 1s}}]
  - name: hold answer
    stage: response
    match: "path:/local/answer"
    actions: [{set_header: {X-Answer-Rule: "1"}}, {breakpoint: {timeout: 60s}}]
  - name: hold upstream answer
    stage: response
    match: "path:/echo/answer status:200"
    actions: [{set_header: {X-Upstream-Rule: "1"}}, {breakpoint: {timeout: 60s}}]
vhosts:
  - routes:
      - path: /echo/*
        proxy: {upstream: http://127.0.0.1:%1}
      - path: /local/*
        respond: {status: 200, body: "local answer\n"}
)")
            .arg(upstreamPort_);
    }

    // Waits until `n` exchanges are paused; returns them.
    std::vector<rules::PausedExchange> waitPaused(std::size_t n) {
        std::vector<rules::PausedExchange> list;
        for (int i = 0; i < 300; ++i) {
            list = engine_.pausedExchanges();
            if (list.size() >= n) return list;
            QTest::qWait(20);
        }
        return list;
    }

    // The newest record since the current test function started (init()) whose target contains
    // `path`, once the collector has it.
    std::uint64_t since_ = 0;
    std::optional<capture::Exchange> record(const QString& path) {
        for (int i = 0; i < 250; ++i) {
            engine_.flushCapture();
            auto all = engine_.recentExchanges(since_, 1000);
            for (auto it = all.rbegin(); it != all.rend(); ++it)
                if (QString::fromStdString(it->target).contains(path)) return engine_.exchange(it->id);
            QTest::qWait(20);
        }
        return std::nullopt;
    }
    static QString rulesOf(const capture::Exchange& e) {
        QStringList out;
        for (const auto& r : e.rules)
            out << QString::fromStdString(r);
        return out.join('\n');
    }

private slots:
    void initTestCase() {
        upstreamPort_ = test::startSupportScript(upstream_, "upstream.py", tmp_.filePath("upstream.port"));
        QVERIFY(upstreamPort_ > 0);
        auto cfg = load(config());
        QVERIFY(cfg);
        engine_.setBreakpointsEnabled(true);
        std::string error;
        QVERIFY2(engine_.start(cfg, error), error.c_str());
        port_ = engine_.endpoints().at(0).port;
    }
    void cleanupTestCase() {
        engine_.stop();
        upstream_.kill();
        upstream_.waitForFinished(3000);
    }
    void init() {
        engine_.flushCapture();
        since_ = engine_.lastCapturedId();
    }
    void cleanup() {
        // Nothing stays paused from one test to the next.
        engine_.decideAllPaused(Decision{});
    }

    void headlessEngineRefusesBreakpoints() {
        auto cfg = load(config());
        QVERIFY(cfg);
        engine::Engine headless;
        std::string error;
        QVERIFY(!headless.start(cfg, error));
        const QString e = QString::fromStdString(error);
        // Each breakpoint action, with the file, line and column of the action.
        QCOMPARE(e.count("needs the desktop app's Paused queue"), 5);
        QVERIFY2(e.contains(QRegularExpression(
                     R"(bp\.yaml:7:\d+: rules\[0\]\.actions\[1\]: breakpoint \(rule 'hold api'\))")),
                 qPrintable(e));
        QVERIFY(!headless.running());
        QCOMPARE(QString::fromStdString(engine::Engine::breakpointsRefused(*cfg)), e);
    }

    // `portico serve` has no Paused queue: it refuses the config at start, with each breakpoint's place.
    void headlessServeRefusesBreakpoints() {
        QVERIFY(load(config()));
        const auto r = test::runProcess(test::porticoBinary(),
                                        {"serve", "--config", tmp_.filePath("bp.yaml")}, {}, 20000);
        QCOMPARE(r.exitCode, 1);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(
            err.contains(QRegularExpression(
                R"(bp\.yaml:7:\d+: rules\[0\]\.actions\[1\]: breakpoint \(rule 'hold api'\) needs the desktop app's Paused queue)")),
            qPrintable(err));
        QVERIFY2(err.contains("portico gui"), qPrintable(err));
        // The config test says the same.
        const auto t =
            test::runProcess(test::porticoBinary(), {"serve", "--config", tmp_.filePath("bp.yaml"), "-t"});
        QCOMPARE(t.exitCode, 1);
        QVERIFY2(QString::fromUtf8(t.err).contains("needs the desktop app's Paused queue"),
                 t.err.constData());
    }

    void pausedRequestIsListedAndResumedUnchanged_data() {
        QTest::addColumn<QString>("mode");
        QTest::newRow("h1") << "--http1.1";
        QTest::newRow("h2c") << "--http2-prior-knowledge";
    }
    void pausedRequestIsListedAndResumedUnchanged() {
        QFETCH(QString, mode);
        Client c;
        c.start({mode, url("/echo/pause?x=1")});
        const auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        const rules::PausedExchange& e = list[0];
        QCOMPARE(e.stage, config::Rule::Stage::Request);
        QCOMPARE(e.rule, std::string("hold api"));
        QCOMPARE(e.httpVersion, mode == "--http1.1" ? 1 : 2);
        QCOMPARE(e.request.method, std::string("GET"));
        QCOMPARE(e.request.target, std::string("/echo/pause?x=1"));
        QCOMPARE(e.url(), QStringLiteral("http://127.0.0.1:%1/echo/pause?x=1").arg(port_).toStdString());
        // The request as the rules before the breakpoint left it.
        QVERIFY(std::any_of(e.request.headers.begin(), e.request.headers.end(),
                            [](const auto& h) { return h.first == "X-Ruled" && h.second == "yes"; }));
        QCOMPARE(e.timeout, std::chrono::nanoseconds(std::chrono::seconds(60)));
        // Still paused a moment later: nothing came back.
        QTest::qWait(300);
        QCOMPARE(c.p.state(), QProcess::Running);
        std::string error;
        QVERIFY2(engine_.decidePaused(e.id, Decision{}, &error), error.c_str());
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 200);
        const auto echo = QJsonDocument::fromJson(c.body()).object();
        QCOMPARE(echo["path"].toString(), QString("/echo/pause?x=1"));
        QVERIFY(engine_.pausedExchanges().empty());
        // Decided once: a second decision is refused.
        QVERIFY(!engine_.decidePaused(e.id, Decision{}, &error));
        QVERIFY(QString::fromStdString(error).contains("no longer paused"));
        auto rec = record("/echo/pause");
        QVERIFY(rec);
        QVERIFY2(rulesOf(*rec).contains("hold api: breakpoint (resumed)"), qPrintable(rulesOf(*rec)));
        QCOMPARE(rec->status, 200);
    }

    void editedRequestGoesOn_data() { pausedRequestIsListedAndResumedUnchanged_data(); }
    void editedRequestGoesOn() {
        QFETCH(QString, mode);
        Client c;
        c.start({mode, "-H", "X-Drop: me", url("/echo/pause")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        Decision d;
        rules::PausedMessage m = list[0].request;
        m.method = "POST";
        m.target = "/echo/pause/edited?y=2";
        std::erase_if(m.headers, [](const auto& h) { return h.first == "X-Drop" || h.first == "x-drop"; });
        m.headers.emplace_back("X-Edited", "1");
        m.body = "edited body";
        d.edited = m;
        std::string error;
        QVERIFY2(engine_.decidePaused(list[0].id, d, &error), error.c_str());
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 200);
        const auto echo = QJsonDocument::fromJson(c.body()).object();
        QCOMPARE(echo["method"].toString(), QString("POST"));
        QCOMPARE(echo["path"].toString(), QString("/echo/pause/edited?y=2"));
        QCOMPARE(echo["body"].toString(), QString("edited body"));
        bool edited = false, dropped = true;
        for (const auto& h : echo["headers"].toArray()) {
            const QString name = h.toArray()[0].toString().toLower();
            edited = edited || (name == "x-edited" && h.toArray()[1].toString() == "1");
            dropped = dropped && name != "x-drop";
        }
        QVERIFY(edited);
        QVERIFY(dropped);
        auto rec = record("/edited");
        QVERIFY(rec);
        const QString rules = rulesOf(*rec);
        QVERIFY2(rules.contains("hold api: breakpoint (resumed with changes: method was GET, URL was"),
                 qPrintable(rules));
        QVERIFY2(rules.contains("headers, body)"), qPrintable(rules));
        // The original and the changed request are both in the record.
        QVERIFY(
            QString::fromStdString(rec->originalRequestFields).contains("X-Drop: me", Qt::CaseInsensitive));
        QCOMPARE(rec->method, std::string("POST"));
    }

    void respondAnswersWithoutTheUpstream_data() { pausedRequestIsListedAndResumedUnchanged_data(); }
    void respondAnswersWithoutTheUpstream() {
        QFETCH(QString, mode);
        Client c;
        c.start({mode, "-i", url("/echo/pause")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        Decision d;
        d.kind = Decision::Kind::Respond;
        d.response.status = 418;
        d.response.headers = {{"Content-Type", "text/plain"}, {"X-Mock", "yes"}};
        d.response.body = "short and stout\n";
        std::string error;
        QVERIFY2(engine_.decidePaused(list[0].id, d, &error), error.c_str());
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 418);
        QVERIFY(c.body().contains("short and stout"));
        QVERIFY(c.body().toLower().contains("x-mock: yes"));
        QVERIFY(!c.body().contains("/echo")); // the upstream was not asked
        auto rec = record("/echo/pause");
        QVERIFY(rec);
        QVERIFY(rulesOf(*rec).contains("hold api: breakpoint (answered here)"));
        QCOMPARE(rec->status, 418);
    }

    void malformedDecisionsAreRefusedAndTheExchangeStaysPaused() {
        Client c;
        c.start({"--http1.1", url("/echo/pause")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        std::string error;
        Decision bad;
        bad.kind = Decision::Kind::Respond;
        for (int status : {99, 101, 600}) { // an interim 1xx is not an answer
            bad.response.status = status;
            QVERIFY(!engine_.decidePaused(list[0].id, bad, &error));
            QVERIFY2(QString::fromStdString(error).contains("200..599"), error.c_str());
        }
        // The framing is the server's: a written Content-Length or Transfer-Encoding would desync.
        bad.response.status = 200;
        for (const char* name : {"Content-Length", "transfer-encoding", "Connection", "Keep-Alive"}) {
            bad.response.headers = {{name, "9"}};
            QVERIFY(!engine_.decidePaused(list[0].id, bad, &error));
            QVERIFY2(QString::fromStdString(error).contains("written by the server"), error.c_str());
        }
        Decision edit;
        edit.edited = list[0].request;
        edit.edited->target = "no-slash";
        QVERIFY(!engine_.decidePaused(list[0].id, edit, &error));
        edit.edited = list[0].request;
        edit.edited->headers.emplace_back("X-Bad", "a\r\nInjected: 1");
        QVERIFY(!engine_.decidePaused(list[0].id, edit, &error));
        QVERIFY(QString::fromStdString(error).contains("CR, LF"));
        QCOMPARE(engine_.pausedExchanges().size(), std::size_t(1));
        QVERIFY2(engine_.decidePaused(list[0].id, Decision{}, &error), error.c_str());
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 200);
    }

    void abort_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<int>("how");
        QTest::addColumn<int>("curlExit");
        // curl: 56 receive failure (reset), 52 empty reply (closed), 92 HTTP/2 stream error.
        QTest::newRow("h1 reset") << "--http1.1" << int(Decision::Abort::Reset) << 56;
        QTest::newRow("h1 close") << "--http1.1" << int(Decision::Abort::Close) << 52;
        QTest::newRow("h2c reset") << "--http2-prior-knowledge" << int(Decision::Abort::Reset) << 92;
    }
    void abort() {
        QFETCH(QString, mode);
        QFETCH(int, how);
        QFETCH(int, curlExit);
        Client c;
        c.start({mode, url("/local/pause")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        Decision d;
        d.kind = Decision::Kind::Abort;
        d.abort = static_cast<Decision::Abort>(how);
        QVERIFY(engine_.decidePaused(list[0].id, d));
        QVERIFY(c.finish());
        QCOMPARE(c.p.exitCode(), curlExit);
        auto rec = record("/local/pause");
        QVERIFY(rec);
        QVERIFY2(rulesOf(*rec).contains(how == int(Decision::Abort::Close)
                                            ? "hold local: breakpoint (aborted: close)"
                                            : "hold local: breakpoint (aborted: reset)"),
                 qPrintable(rulesOf(*rec)));
    }

    void timeoutResumesUnchanged() {
        Client c;
        c.start({"--http1.1", url("/echo/quick")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        QCOMPARE(list[0].timeout, std::chrono::nanoseconds(std::chrono::seconds(1)));
        // Nobody decides: after its second it goes on by itself.
        QVERIFY(c.finish(10000));
        QCOMPARE(c.status(), 200);
        QVERIFY(engine_.pausedExchanges().empty());
        auto rec = record("/echo/quick");
        QVERIFY(rec);
        QVERIFY2(rulesOf(*rec).contains("quick: breakpoint (resumed unchanged after the 1s timeout)"),
                 qPrintable(rulesOf(*rec)));
        QVERIFY(rec->durationNs() >= 900'000'000);
    }

    void severalPausedAreIndependent() {
        Client a, b, other;
        a.start({"--http1.1", url("/echo/pause?who=a")});
        QCOMPARE(waitPaused(1).size(), std::size_t(1));
        b.start({"--http2-prior-knowledge", url("/echo/pause?who=b")});
        auto list = waitPaused(2);
        QCOMPARE(list.size(), std::size_t(2));
        // The worker goes on meanwhile.
        other.start({"--http1.1", url("/local/free")});
        QVERIFY(other.finish());
        QCOMPARE(other.status(), 200);
        // Deciding b leaves a paused.
        const auto bId = list[0].request.target.ends_with("who=b") ? list[0].id : list[1].id;
        QVERIFY(engine_.decidePaused(bId, Decision{}));
        QVERIFY(b.finish());
        QCOMPARE(b.status(), 200);
        QCOMPARE(a.p.state(), QProcess::Running);
        list = engine_.pausedExchanges();
        QCOMPARE(list.size(), std::size_t(1));
        QVERIFY(list[0].request.target.ends_with("who=a"));
        QCOMPARE(engine_.decideAllPaused(Decision{}), std::size_t(1));
        QVERIFY(a.finish());
        QCOMPARE(a.status(), 200);
    }

    // nghttp on one h2c connection: /local/free completes while /echo/pause is held on its stream.
    void onlyTheStreamWaits() {
        QProcess n;
        n.start("nghttp", {"-n", "-s", "-m", "1", url("/echo/pause"), url("/local/free")});
        QVERIFY(n.waitForStarted());
        QCOMPARE(waitPaused(1).size(), std::size_t(1));
        // Let the other stream finish; it cannot end the process while its sibling is held.
        QTest::qWait(500);
        QCOMPARE(n.state(), QProcess::Running);
        const auto rec = record("/local/free");
        QVERIFY(rec);
        QCOMPARE(rec->status, 200);
        QCOMPARE(engine_.decideAllPaused(Decision{}), std::size_t(1));
        QVERIFY(n.waitForFinished(10000));
        QCOMPARE(n.exitCode(), 0);
    }

    void clientThatLeavesIsTakenOffTheList_data() { pausedRequestIsListedAndResumedUnchanged_data(); }
    void clientThatLeavesIsTakenOffTheList() {
        QFETCH(QString, mode);
        Client c;
        c.start({mode, "--max-time", "1", "-d", "charge the card", url("/echo/pause")});
        QCOMPARE(waitPaused(1).size(), std::size_t(1));
        QVERIFY(c.finish());
        // curl resets its stream (HTTP/2) or closes its connection (HTTP/1.1) at its deadline: the
        // exchange is gone from the queue, and nothing is sent on for it.
        QTRY_VERIFY_WITH_TIMEOUT(engine_.pausedExchanges().empty(), 5000);
    }

    void responseStageEditsTheAnswer_data() { pausedRequestIsListedAndResumedUnchanged_data(); }
    void responseStageEditsTheAnswer() {
        QFETCH(QString, mode);
        Client c;
        c.start({mode, "-i", url("/local/answer")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        const rules::PausedExchange& e = list[0];
        QCOMPARE(e.stage, config::Rule::Stage::Response);
        QVERIFY(e.response);
        QCOMPARE(e.response->status, 200);
        QCOMPARE(e.response->body, std::string("local answer\n"));
        // The response-stage rule's own change is there before the pause.
        QVERIFY(std::any_of(e.response->headers.begin(), e.response->headers.end(),
                            [](const auto& h) { return h.first == "X-Answer-Rule"; }));
        Decision d;
        rules::PausedMessage m = *e.response;
        m.status = 201;
        m.body = "changed answer\n";
        d.edited = m;
        QVERIFY(engine_.decidePaused(e.id, d));
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 201);
        QVERIFY(c.body().contains("changed answer"));
        QVERIFY(c.body().toLower().contains("x-answer-rule: 1"));
        auto rec = record("/local/answer");
        QVERIFY(rec);
        QVERIFY2(
            rulesOf(*rec).contains("hold answer: breakpoint (resumed with changes: status was 200, body)"),
            qPrintable(rulesOf(*rec)));
        QCOMPARE(QString::fromStdString(rec->originalResponseBody), QString("local answer\n"));
    }

    // An upstream's answer pauses whole, after the response-stage rules, before it is returned.
    void upstreamAnswerPauses_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("decision");
        QTest::newRow("h1 edit") << "--http1.1"
                                 << "edit";
        QTest::newRow("h2c edit") << "--http2-prior-knowledge"
                                  << "edit";
        QTest::newRow("h1 unchanged") << "--http1.1"
                                      << "resume";
        QTest::newRow("h2c unchanged") << "--http2-prior-knowledge"
                                       << "resume";
        QTest::newRow("h1 reset") << "--http1.1"
                                  << "reset";
        QTest::newRow("h2c reset") << "--http2-prior-knowledge"
                                   << "reset";
    }
    void upstreamAnswerPauses() {
        QFETCH(QString, mode);
        QFETCH(QString, decision);
        Client c;
        c.start({mode, "-i", url("/echo/answer")});
        auto list = waitPaused(1);
        QCOMPARE(list.size(), std::size_t(1));
        const rules::PausedExchange& e = list[0];
        QCOMPARE(e.stage, config::Rule::Stage::Response);
        QCOMPARE(e.rule, std::string("hold upstream answer"));
        QVERIFY(e.response);
        QCOMPARE(e.response->status, 200);
        QVERIFY(QByteArray::fromStdString(e.response->body).contains("\"path\": \"/echo/answer\""));
        QVERIFY(std::any_of(e.response->headers.begin(), e.response->headers.end(), [](const auto& h) {
            return QString::fromStdString(h.first).toLower() == "x-upstream-rule";
        }));
        QCOMPARE(e.request.method, std::string("GET"));
        QCOMPARE(e.request.target, std::string("/echo/answer"));
        // Held: nothing of the answer reached the client yet.
        QTest::qWait(300);
        QCOMPARE(c.p.state(), QProcess::Running);
        Decision d;
        if (decision == "edit") {
            rules::PausedMessage m = *e.response;
            m.status = 202;
            m.body = "edited upstream answer\n";
            m.headers.emplace_back("X-Edited", "yes");
            d.edited = m;
        } else if (decision == "reset") {
            d.kind = Decision::Kind::Abort;
        }
        QVERIFY(engine_.decidePaused(e.id, d));
        QVERIFY(c.finish());
        auto rec = record("/echo/answer");
        QVERIFY(rec);
        const QString rules = rulesOf(*rec);
        if (decision == "reset") {
            QCOMPARE(c.p.exitCode(), mode == "--http1.1" ? 56 : 92);
            QVERIFY2(rules.contains("hold upstream answer: breakpoint (aborted: reset)"), qPrintable(rules));
            return;
        }
        const int status = c.status();
        if (decision == "edit") {
            QCOMPARE(status, 202);
            QVERIFY(c.body().contains("edited upstream answer"));
            QVERIFY(c.body().toLower().contains("x-edited: yes"));
            QVERIFY(!c.body().contains("/echo/answer"));
            QVERIFY2(
                rules.contains(
                    "hold upstream answer: breakpoint (resumed with changes: status was 200, headers, body)"),
                qPrintable(rules));
            QVERIFY(QByteArray::fromStdString(rec->originalResponseBody).contains("/echo/answer"));
            QCOMPARE(rec->status, 202);
        } else {
            QCOMPARE(status, 200);
            QVERIFY(c.body().contains("\"path\": \"/echo/answer\""));
            QVERIFY(c.body().toLower().contains("x-upstream-rule: 1"));
            QVERIFY2(rules.contains("hold upstream answer: breakpoint (resumed)"), qPrintable(rules));
        }
    }

    // Intercepted HTTPS (a forward proxy with `intercept: true`, curl -x over HTTP/1.1 and HTTP/2
    // inside the tunnel): the request pauses before the origin sees it and goes on edited; the
    // origin's answer pauses before the client gets it.
    void interceptedExchangesPause_data() {
        QTest::addColumn<QString>("mode");
        QTest::newRow("http/1.1") << "--http1.1";
        QTest::newRow("h2") << "--http2";
    }
    void interceptedExchangesPause() {
        QFETCH(QString, mode);
        QTemporaryDir dir;
        auto origin =
            test::startTlsAutoOrigin(dir.path(), "    routes:\n"
                                                 "      - path: /echo\n"
                                                 "        respond: {body: \"x-rule={{header.x-rule}}\"}\n");
        QVERIFY2(origin->waitReady(), origin->output().constData());
        QFile cfgFile(dir.filePath("proxy.yaml"));
        QVERIFY(cfgFile.open(QIODevice::WriteOnly));
        cfgFile.write(R"(listen:
  - address: 127.0.0.1:0
    forward_proxy: {intercept: true, upstream_cacert: origin-data/ca/ca.crt}
workers: 1
capture: {enabled: true}
vhosts:
  - root: site
rules:
  - name: hold request
    match: "path:/echo -header:x-answer"
    actions: [{breakpoint: {timeout: 60s}}]
  - name: hold answer
    stage: response
    match: "path:/echo header:x-answer status:200"
    actions: [{breakpoint: {timeout: 60s}}]
)");
        cfgFile.close();
        auto loaded = config::loadConfigFile(dir.filePath("proxy.yaml").toStdString());
        QVERIFY(loaded.ok());
        // The proxy's local CA (its leaves for the origin's name) under this test's folder.
        qputenv("PORTICO_DATA_DIR", dir.filePath("proxy-data").toUtf8());
        engine::Engine proxy;
        proxy.setBreakpointsEnabled(true);
        std::string error;
        QVERIFY2(proxy.start(loaded.config, error), error.c_str());
        qunsetenv("PORTICO_DATA_DIR");
        const QString proxyUrl = QStringLiteral("http://127.0.0.1:%1").arg(proxy.endpoints().at(0).port);
        const QString echo = QStringLiteral("https://127.0.0.1:%1/echo").arg(origin->port());
        const QStringList via{mode, "-i", "-x", proxyUrl, "--cacert", dir.filePath("proxy-data/ca/ca.crt")};
        auto waitIn = [&](engine::Engine& e) {
            std::vector<rules::PausedExchange> list;
            for (int i = 0; i < 300 && list.empty(); ++i) {
                list = e.pausedExchanges();
                if (list.empty()) QTest::qWait(20);
            }
            return list;
        };

        Client a;
        a.start(via + QStringList{echo});
        auto list = waitIn(proxy);
        QCOMPARE(list.size(), std::size_t(1));
        QCOMPARE(list[0].stage, config::Rule::Stage::Request);
        QCOMPARE(list[0].httpVersion, mode == "--http2" ? 2 : 1);
        QCOMPARE(list[0].scheme, std::string("https"));
        Decision d;
        d.edited = list[0].request;
        d.edited->headers.emplace_back("X-Rule", "edited at the breakpoint");
        QVERIFY(proxy.decidePaused(list[0].id, d));
        QVERIFY(a.finish());
        QCOMPARE(a.status(), 200);
        QVERIFY2(a.body().endsWith("x-rule=edited at the breakpoint"), a.body().constData());

        Client b;
        b.start(via + QStringList{"-H", "X-Answer: 1", echo});
        list = waitIn(proxy);
        QCOMPARE(list.size(), std::size_t(1));
        QCOMPARE(list[0].stage, config::Rule::Stage::Response);
        QVERIFY(list[0].response);
        QCOMPARE(list[0].response->body, std::string("x-rule="));
        Decision r;
        r.kind = Decision::Kind::Respond;
        r.response.status = 299;
        r.response.body = "answered at the breakpoint";
        QVERIFY(proxy.decidePaused(list[0].id, r));
        QVERIFY(b.finish());
        QCOMPARE(b.status(), 299);
        QVERIFY2(b.body().endsWith("answered at the breakpoint"), b.body().constData());
        proxy.stop();
    }

    void turningBreakpointsOffResumesThePaused() {
        Client c;
        c.start({"--http1.1", url("/echo/pause")});
        QCOMPARE(waitPaused(1).size(), std::size_t(1));
        engine_.setBreakpointsEnabled(false);
        QVERIFY(c.finish());
        QCOMPARE(c.status(), 200);
        engine_.setBreakpointsEnabled(true);
    }
};

QTEST_GUILESS_MAIN(TestBreakpoints)
#include "tst_breakpoints.moc"

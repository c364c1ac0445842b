// The rule action `replace_body` (rules/rules.h) against a running `portico serve`, with curl over
// HTTP/1.1 and h2c: a response-stage rewrite of local answers (a `respond` body, a static file) and
// of reverse-proxied answers (with and without the upstream's Content-Length; $1 groups; the
// Content-Length sent is the new body's), a request-stage rewrite the upstream sees, and what
// passes unchanged: a body over limits.max_rewrite_body (announced or found out mid-way), a gzip
// body, a gRPC body, a request body that streams. Records name the rules and say why a body was
// left alone (`portico har export`). The upstream is a small Python server written by the test
// (its /echo answers the request body it received).
#include "test_support.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
constexpr char kUpstream[] = R"PY(import gzip, http.server, socketserver, sys, urllib.parse


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, data, ctype="text/plain", extra=(), chunked=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Transfer-Encoding" if chunked else "Content-Length",
                         "chunked" if chunked else str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if not chunked:
            self.wfile.write(data)
            return
        for i in range(0, len(data), 1000):
            piece = data[i:i + 1000]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    def body(self):
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            n = int(self.headers.get("Content-Length", "0") or 0)
            return self.rfile.read(n) if n else b""
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                break
            out += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        return out

    def handle_any(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        body = self.body()
        text = b"user id=42, then id=7; no id=x\n"
        if u.path == "/text":
            self.send(200, text)
        elif u.path == "/text-chunked":
            self.send(200, text, chunked=True)
        elif u.path == "/big":
            n = int(q["n"][0])
            self.send(200, (b"id=1 " * (n // 5 + 1))[:n], chunked="chunked" in q)
        elif u.path == "/gzip":
            self.send(200, gzip.compress(b"id=42 " * 10, mtime=0), extra=[("Content-Encoding", "gzip")])
        elif u.path == "/grpc":
            self.send(200, b"\x00\x00\x00\x00\x05id=42", ctype="application/grpc")
        elif u.path == "/echo":
            self.send(200, body, ctype="application/octet-stream",
                      extra=[("X-Got-Length", self.headers.get("Content-Length", "none"))])
        else:
            self.send(404, b"none\n")

    do_GET = do_POST = do_PUT = do_HEAD = handle_any


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


s = S(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
)PY";

// The value of field `name` (lower-case) in a head curl -i printed, "" when absent.
QByteArray field(const QByteArray& reply, const QByteArray& name) {
    const QByteArray head = reply.left(reply.indexOf("\r\n\r\n")).toLower();
    const int at = head.indexOf("\r\n" + name + ":");
    if (at < 0) return {};
    const int from = at + 2 + name.size() + 1;
    return head.mid(from, head.indexOf("\r\n", from) - from).trimmed();
}
QByteArray bodyOf(const QByteArray& reply) { return reply.mid(reply.indexOf("\r\n\r\n") + 4); }
} // namespace

class TestRulesBody : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0;
    std::unique_ptr<ServerProcess> server_;

    QString url(const QString& path) const { return server_->baseUrl() + path; }
    static QStringList mode(const QString& m) {
        return m == "h2" ? QStringList{"--http2-prior-knowledge"} : QStringList{"--http1.1"};
    }
    // curl -i: the head and the body in `body` (field(), bodyOf()).
    CurlReply fetch(const QString& m, const QStringList& args) {
        return curlFetch(mode(m) + QStringList{"-i"} + args);
    }

private slots:
    void initTestCase() {
        QFile script(tmp_.filePath("upstream.py"));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(kUpstream);
        script.close();
        upstream_.start(debianPython(), {script.fileName(), tmp_.filePath("upstream.port")});
        QVERIFY(upstream_.waitForStarted());
        QElapsedTimer waited;
        waited.start();
        while (upstreamPort_ == 0 && waited.elapsed() < 10000) {
            QFile f(tmp_.filePath("upstream.port"));
            if (f.open(QIODevice::ReadOnly)) upstreamPort_ = f.readAll().trimmed().toInt();
            if (upstreamPort_ == 0) QTest::qWait(20);
        }
        QVERIFY2(upstreamPort_ > 0, upstream_.readAllStandardError().constData());
        QVERIFY(QDir().mkpath(tmp_.filePath("site/local")));
        QFile small(tmp_.filePath("site/local/file.txt"));
        QVERIFY(small.open(QIODevice::WriteOnly));
        small.write("a world of files\n");
        small.close();
        QFile big(tmp_.filePath("site/local/big.txt"));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.write(QByteArray(5000, 'w') + "world\n");
        big.close();
        QFile cfg(tmp_.filePath("body.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [{address: 127.0.0.1:0}]
workers: 1
limits: {max_rewrite_body: 4096}
rules:
  - name: request secret
    match: "path:/up/echo"
    actions: [{replace_body: {regex: 'secret=\w+', with: 'secret=[redacted]'}}]
  - name: ids
    stage: response
    match: "path:/up/"
    actions: [{replace_body: {regex: 'id=(\d+)', with: 'ID[$1]'}}]
  - name: local
    stage: response
    match: "path:/local/ status:200"
    actions: [{set_header: {X-Local: "1"}}, {replace_body: {regex: world, with: rules}}]
vhosts:
  - root: site
    routes:
      - path: /local/hello
        respond: {body: "hello world\n"}
      - path: /up/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /up}
)")
                      .arg(upstreamPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("body.yaml"), "--record", tmp_.filePath("rec.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    void protocols_data() {
        QTest::addColumn<QString>("m");
        QTest::newRow("http/1.1") << "h1";
        QTest::newRow("h2c") << "h2";
    }

    // What Portico answers itself: a `respond` body and a small static file are rewritten (with
    // their new length); a file over max_rewrite_body is sent as it is.
    void localAnswersAreRewritten_data() { protocols_data(); }
    void localAnswersAreRewritten() {
        QFETCH(QString, m);
        auto r = fetch(m, {url("/local/hello?rec=local-" + m)});
        QCOMPARE(r.status, 200);
        QCOMPARE(bodyOf(r.body), QByteArray("hello rules\n"));
        QCOMPARE(field(r.body, "content-length"), QByteArray("12"));
        QCOMPARE(field(r.body, "x-local"), QByteArray("1")); // the rule's other action
        r = fetch(m, {url("/local/file.txt?rec=file-" + m)});
        QCOMPARE(r.status, 200);
        QCOMPARE(bodyOf(r.body), QByteArray("a rules of files\n"));
        QCOMPARE(field(r.body, "content-length"), QByteArray("17"));
        r = fetch(m, {url("/local/big.txt?rec=local-big-" + m)});
        QCOMPARE(r.status, 200);
        QCOMPARE(bodyOf(r.body), QByteArray(5000, 'w') + "world\n");
        QCOMPARE(field(r.body, "content-length"), QByteArray("5006"));
    }

    // An upstream's answer: gathered, rewritten ($1 groups) and sent with its new Content-Length,
    // whether the upstream sent a length or chunks.
    void proxiedAnswersAreRewritten_data() { protocols_data(); }
    void proxiedAnswersAreRewritten() {
        QFETCH(QString, m);
        const QByteArray expected = "user ID[42], then ID[7]; no id=x\n";
        for (const QString& path : {"/up/text?rec=proxied-" + m, QString("/up/text-chunked")}) {
            auto r = fetch(m, {url(path)});
            QVERIFY2(r.status == 200, r.err.constData());
            QCOMPARE(bodyOf(r.body), expected);
            QCOMPARE(field(r.body, "content-length"), QByteArray::number(expected.size()));
            QVERIFY2(field(r.body, "transfer-encoding").isEmpty(), r.body.constData());
        }
        // Under the limit without a length: rewritten (400 × "id=1 " → "ID[1] ", 2400 bytes).
        auto r = fetch(m, {url("/up/big?n=2000&chunked=1")});
        QCOMPARE(r.status, 200);
        QCOMPARE(bodyOf(r.body), QByteArray("ID[1] ").repeated(400));
        QCOMPARE(field(r.body, "content-length"), QByteArray("2400"));
    }

    // Over max_rewrite_body (4096 here), said by the upstream's Content-Length or found out while
    // gathering a chunked body, or a result that would be over it: the body passes unchanged.
    void aBodyOverTheLimitPassesUnchanged_data() { protocols_data(); }
    void aBodyOverTheLimitPassesUnchanged() {
        QFETCH(QString, m);
        // (4000 bytes of "id=1 " would be 4800 rewritten.)
        for (const QString& query :
             {"n=6000&rec=big-" + m, QString("n=6000&chunked=1&rec=bigchunked-") + m, QString("n=4000")}) {
            const int n = query.section('&', 0, 0).mid(2).toInt();
            auto r = curlFetch(mode(m) + QStringList{url("/up/big?" + query)});
            QCOMPARE(r.status, 200);
            QCOMPARE(r.body.size(), n);
            QCOMPARE(r.body, QByteArray("id=1 ").repeated(n / 5 + 1).left(n));
        }
    }

    // A compressed body is never rewritten: it arrives intact (curl decodes it).
    void aGzipBodyPassesUnchanged_data() { protocols_data(); }
    void aGzipBodyPassesUnchanged() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"--compressed", url("/up/gzip?rec=gzip-" + m)});
        QVERIFY2(r.status == 200, r.err.constData());
        QCOMPARE(r.body, QByteArray("id=42 ").repeated(10));
    }

    // Neither is a gRPC body (content-type application/grpc).
    void aGrpcBodyPassesUnchanged() {
        auto r = curlFetch({"--http1.1", url("/up/grpc?rec=grpc")});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("\x00\x00\x00\x00\x05id=42", 10));
    }

    // A request body is rewritten before the upstream sees it, with the new Content-Length: one
    // that came with its head, and one of a declared length that would have streamed (over h2c,
    // and over HTTP/1.1 after "Expect: 100-continue"), which the rule's path makes the session read
    // whole first.
    void theUpstreamSeesTheRewrittenRequestBody_data() {
        QTest::addColumn<QString>("m");
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<QString>("marker");
        QTest::newRow("http/1.1") << "h1" << QStringList{"-H", "Expect:"} << "request-h1";
        QTest::newRow("http/1.1 100-continue")
            << "h1" << QStringList{"-H", "Expect: 100-continue"} << "request-continue";
        QTest::newRow("h2c") << "h2" << QStringList{} << "request-h2";
    }
    void theUpstreamSeesTheRewrittenRequestBody() {
        QFETCH(QString, m);
        QFETCH(QStringList, extra);
        QFETCH(QString, marker);
        auto r = fetch(
            m, extra + QStringList{"--data-binary", "a=1&secret=hunter2&b=2", url("/up/echo?rec=" + marker)});
        QCOMPARE(r.status, 200);
        QByteArray reply = r.body;
        if (reply.startsWith("HTTP/1.1 100 ")) reply = bodyOf(reply); // the interim answer's head first
        QCOMPARE(bodyOf(reply), QByteArray("a=1&secret=[redacted]&b=2"));
        QCOMPARE(field(reply, "x-got-length"), QByteArray("25"));
    }

    // A body whose length is not declared (chunked, or HTTP/2 without content-length) streams
    // upstream as it arrives: it is not rewritten (the record says so, below).
    void aStreamedRequestBodyIsNotRewritten() {
        auto r = runProcess("curl",
                            mode("h2") + QStringList{"-sS", "-i", "--max-time", "10", "-X", "POST", "-T", "-",
                                                     url("/up/echo?rec=streamed")},
                            "secret=hunter2");
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.out.startsWith("HTTP/2 200"), r.out.constData());
        QCOMPARE(bodyOf(r.out), QByteArray("secret=hunter2"));
    }

    // Last (it stops the server): records name the rules, say why a body was left alone, and keep
    // the bodies as sent and, for a body a rule rewrote, as it was before (`_portico.original`).
    void recordsNameTheRulesAndWhy() {
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto run = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        auto entry = [&](const QString& marker) {
            for (const auto& e : entries)
                if (e.toObject()["request"].toObject()["url"].toString().endsWith("rec=" + marker))
                    return e.toObject();
            return QJsonObject();
        };
        auto names = [&](const QString& marker) {
            QStringList out;
            for (const auto& n : entry(marker)["_portico"].toObject()["rules"].toArray())
                out << n.toString();
            return out;
        };
        auto original = [&](const QString& marker) {
            return entry(marker)["_portico"].toObject()["original"].toObject();
        };
        for (const QString m : {"h1", "h2"}) {
            QCOMPARE(names("local-" + m), QStringList{"local"});
            // A local answer's body before the rule: a `respond` body and a static file.
            QCOMPARE(original("local-" + m)["responseBody"].toString(), QString("hello world\n"));
            QCOMPARE(entry("local-" + m)["response"].toObject()["content"].toObject()["text"].toString(),
                     QString("hello rules\n"));
            QCOMPARE(original("file-" + m)["responseBody"].toString(), QString("a world of files\n"));
            QVERIFY(!original("local-" + m).contains("requestBody"));
            QCOMPARE(names("local-big-" + m),
                     (QStringList{"local",
                                  "local: replace_body skipped (body over max_rewrite_body, 4096 bytes)"}));
            QCOMPARE(names("proxied-" + m), QStringList{"ids"});
            const QJsonObject proxied = entry("proxied-" + m);
            QCOMPARE(proxied["response"].toObject()["content"].toObject()["text"].toString(),
                     QString("user ID[42], then ID[7]; no id=x\n"));
            QCOMPARE(original("proxied-" + m)["responseBody"].toString(),
                     QString("user id=42, then id=7; no id=x\n"));
            // Left alone (over the limit, compressed): nothing kept from before.
            for (const QString& untouched : {"big-" + m, "bigchunked-" + m, "gzip-" + m, "local-big-" + m})
                QVERIFY2(!original(untouched).contains("responseBody"), qPrintable(untouched));
            QCOMPARE(
                names("big-" + m),
                (QStringList{"ids", "ids: replace_body skipped (body over max_rewrite_body, 4096 bytes)"}));
            QCOMPARE(
                names("bigchunked-" + m),
                (QStringList{"ids", "ids: replace_body skipped (body over max_rewrite_body, 4096 bytes)"}));
            QCOMPARE(
                names("gzip-" + m),
                (QStringList{"ids", "ids: replace_body skipped (compressed body (Content-Encoding: gzip))"}));
        }
        QCOMPARE(names("grpc"), (QStringList{"ids", "ids: replace_body skipped (gRPC message)"}));
        for (const QString marker : {"request-h1", "request-continue", "request-h2"}) {
            QCOMPARE(names(marker), (QStringList{"request secret", "ids"}));
            QCOMPARE(entry(marker)["request"].toObject()["postData"].toObject()["text"].toString(),
                     QString("a=1&secret=[redacted]&b=2"));
            // The body as the client sent it; the echoed answer had no id to rewrite.
            QCOMPARE(original(marker)["requestBody"].toString(), QString("a=1&secret=hunter2&b=2"));
            QVERIFY(!original(marker).contains("responseBody"));
        }
        QCOMPARE(names("streamed"),
                 (QStringList{"request secret: replace_body skipped (streamed request body)", "ids"}));
        QVERIFY(!original("streamed").contains("requestBody"));
    }
};

QTEST_MAIN(TestRulesBody)
#include "tst_rules_body.moc"

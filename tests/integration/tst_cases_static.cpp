// The static-file and location cases of ../shared/cases (PTH-01, PTH-05, PTH-06, RNG-03, CND-01,
// HED-01, MIM-01, LOC-02) over the wire, with the fixture docroot the cases describe.
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
struct Reply {
    int status = 0;
    QByteArray headers;
    QByteArray body;
};
// One curl request; -D - gives the head, the body goes to a file.
Reply get(const QString& url, const QStringList& extra = {}) {
    QTemporaryFile body;
    body.open();
    auto r = runProcess(
        "curl", QStringList{"-s", "--path-as-is", "--max-time", "10", "-D", "-", "-o", body.fileName()} +
                    extra + QStringList{url});
    Reply out;
    out.headers = r.out;
    auto m = QRegularExpression("^HTTP/1\\.1 (\\d{3})").match(QString::fromLatin1(r.out));
    out.status = m.hasMatch() ? m.captured(1).toInt() : 0;
    out.body = body.readAll();
    return out;
}
QString headerValue(const QByteArray& head, const QByteArray& name) {
    for (const QByteArray& line : head.split('\n'))
        if (line.toLower().startsWith(name.toLower() + ":"))
            return QString::fromLatin1(line.mid(name.size() + 1).trimmed());
    return {};
}
} // namespace

class TestCasesStatic : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> server_;
    QString url_;

    void write(const QString& rel, const QByteArray& bytes) {
        QDir().mkpath(QFileInfo(tmp_.filePath(rel)).absolutePath());
        QFile f(tmp_.filePath(rel));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    }

private slots:
    void initTestCase() {
        // The fixture of ../shared/cases/README.md, under a temporary folder instead of /srv/t.
        write("root/a.txt", "hello\n");
        QByteArray big(1048576, '\0');
        for (int i = 0; i < big.size(); ++i)
            big[i] = char((i * 131 + 7) & 0xff);
        write("root/big.bin", big);
        write("outside/secret.txt", "secret\n");
        write("root/.env", "TOKEN=1\n");
        write("root/app.mjs", "export const x = 1;\n");
        write("root/mod.wasm", QByteArray("\0asm\1\0\0\0", 8));
        write("root/nobody.html", "<!doctype html><title>t</title><h1>no body tag</h1>\n");
        write("root/sub/keep", "");
        write("root/x.unknownext", "?");
        QVERIFY(QFile::link(tmp_.filePath("outside"), tmp_.filePath("root/out")));
        QVERIFY(QFile::link(tmp_.filePath("root/a.txt"), tmp_.filePath("root/inside-link.txt")));
        server_ = std::make_unique<ServerProcess>(QStringList{tmp_.filePath("root")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        url_ = server_->baseUrl();
    }

    void pth01_encodedDotsAndSlashes_data() {
        QTest::addColumn<QString>("path");
        for (const char* p :
             {"/%2e%2e/outside/secret.txt", "/..%2foutside%2fsecret.txt", "/sub/%2e%2e%2f%2e%2e%2foutside/",
              "/%2E%2e/outside/", "/sub%2f..%2f..%2foutside%2fsecret.txt"})
            QTest::newRow(p) << QString::fromLatin1(p);
    }
    void pth01_encodedDotsAndSlashes() {
        QFETCH(QString, path);
        Reply r = get(url_ + path);
        QVERIFY2(r.status == 400 || r.status == 404 || r.status == 403,
                 qPrintable(QString::number(r.status)));
        QVERIFY(!r.body.contains("secret"));
    }

    void pth05_nulByte() {
        for (const char* p : {"/a.txt%00.png", "/%00", "/sub/%00/../a.txt"}) {
            Reply r = get(url_ + p);
            QVERIFY2(r.status == 400 || r.status == 404, p);
            QVERIFY(!r.body.contains("hello"));
        }
        RawReply raw =
            rawExchange(server_->port(), QByteArray("GET /a.txt\0.png HTTP/1.1\r\nHost: t\r\n\r\n", 37));
        QCOMPARE(statusCodes(raw.bytes), QList<int>{400});
        QCOMPARE(get(url_ + "/a.txt").status, 200); // still alive
    }

    void pth06_symlinkLeavingRoot() {
        QVERIFY(QList<int>({403, 404}).contains(get(url_ + "/out/secret.txt").status));
        QVERIFY(QList<int>({403, 404}).contains(get(url_ + "/out/").status));
        Reply inside = get(url_ + "/inside-link.txt"); // a link that stays inside keeps working
        QCOMPARE(inside.status, 200);
        QCOMPARE(inside.body, QByteArray("hello\n"));
    }

    void dotfilesAreNotServed() { QCOMPARE(get(url_ + "/.env").status, 404); }

    void rng03_ranges_data() {
        QTest::addColumn<QString>("range");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("contentRange");
        QTest::newRow("6-") << "bytes=6-" << 416 << "bytes */6";
        QTest::newRow("100-200") << "bytes=100-200" << 416 << "bytes */6";
        QTest::newRow("-0") << "bytes=-0" << 416 << "bytes */6";
        QTest::newRow("3-1 ignored") << "bytes=3-1" << 200 << "";
        QTest::newRow("abc ignored") << "bytes=abc" << 200 << "";
        QTest::newRow("unknown unit") << "items=0-1" << 200 << "";
        QTest::newRow("suffix") << "bytes=-2" << 206 << "bytes 4-5/6";
        QTest::newRow("open-ended") << "bytes=1-" << 206 << "bytes 1-5/6";
    }
    void rng03_ranges() {
        QFETCH(QString, range);
        QFETCH(int, status);
        QFETCH(QString, contentRange);
        Reply r = get(url_ + "/a.txt", {"-H", "Range: " + range});
        QCOMPARE(r.status, status);
        QCOMPARE(headerValue(r.headers, "Content-Range"), contentRange);
        if (status == 200) QCOMPARE(r.body, QByteArray("hello\n"));
        if (status != 416) QCOMPARE(headerValue(r.headers, "Accept-Ranges"), QString("bytes"));
    }
    void rng03_multipart() {
        Reply r = get(url_ + "/a.txt", {"-H", "Range: bytes=0-0,-1"});
        QCOMPARE(r.status, 206);
        QVERIFY(headerValue(r.headers, "Content-Type").startsWith("multipart/byteranges; boundary="));
        QVERIFY(r.body.contains("Content-Range: bytes 0-0/6\r\n\r\nh\r\n"));
        QVERIFY(r.body.contains("Content-Range: bytes 5-5/6\r\n\r\n\n\r\n"));
    }

    void cnd01_inmBeatsIms() {
        const QString etag = headerValue(get(url_ + "/a.txt", {"-I"}).headers, "ETag");
        QVERIFY(etag.startsWith('"'));
        Reply miss = get(url_ + "/a.txt", {"-H", "If-None-Match: \"nope\"", "-H",
                                           "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT"});
        QCOMPARE(miss.status, 200);
        Reply hit = get(url_ + "/a.txt", {"-H", "If-None-Match: " + etag, "-H",
                                          "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT"});
        QCOMPARE(hit.status, 304);
        QCOMPARE(headerValue(hit.headers, "ETag"), etag);
        QVERIFY(hit.body.isEmpty());
    }

    void hed01_headThenGet() {
        RawReply r = rawExchange(server_->port(), "HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt "
                                                  "HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        int second = r.bytes.indexOf("\r\n\r\n") + 4;
        QByteArray head = r.bytes.left(second);
        QVERIFY(head.contains("Content-Length: 1048576\r\n"));
        QVERIFY(head.contains("ETag: ") && head.contains("Last-Modified: ") &&
                head.contains("Content-Type: "));
        QVERIFY2(r.bytes.mid(second).startsWith("HTTP/1.1 200"), r.bytes.mid(second, 40).constData());
        QVERIFY(r.bytes.endsWith("hello\n"));
    }

    void bigFileBodyIsExact() { // sendfile path
        Reply r = get(url_ + "/big.bin");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), 1048576);
        QCOMPARE(r.body.at(1000), char((1000 * 131 + 7) & 0xff));
    }

    void mim01_contentTypes_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("type");
        QTest::newRow("mjs") << "/app.mjs"
                             << "text/javascript";
        QTest::newRow("wasm") << "/mod.wasm"
                              << "application/wasm";
        QTest::newRow("txt") << "/a.txt"
                             << "text/plain";
        QTest::newRow("html") << "/nobody.html"
                              << "text/html";
        QTest::newRow("unknown") << "/x.unknownext"
                                 << "application/octet-stream";
    }
    void mim01_contentTypes() {
        QFETCH(QString, path);
        QFETCH(QString, type);
        Reply r = get(url_ + path, {"-I"});
        QVERIFY2(headerValue(r.headers, "Content-Type").startsWith(type), r.headers.constData());
        if (type == "application/octet-stream")
            QCOMPARE(headerValue(r.headers, "X-Content-Type-Options"), QString("nosniff"));
    }

    void loc02_nginxLocationPrecedence() {
        QTemporaryDir dir;
        QFile f(dir.filePath("loc.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"(listen: ["127.0.0.1:0"]
vhosts:
  - routes:
      - {location: "= /", respond: {body: A}}
      - {location: "/", respond: {body: B}}
      - {location: "/coffee", respond: {body: C}}
      - {location: "^~ /images/", respond: {body: D}}
      - {location: "~* \\.(png|jpg)$", respond: {body: E}}
      - {location: "/docs/", respond: {body: F}}
      - {location: "~ ^/docs/.*\\.md$", respond: {body: G}}
)");
        f.close();
        ServerProcess s({"--config", dir.filePath("loc.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        const QList<QPair<QString, QByteArray>> expected = {{"/", "A"},
                                                            {"/x", "B"},
                                                            {"/coffee", "C"},
                                                            {"/coffeebar", "C"},
                                                            {"/images/a.png", "D"},
                                                            {"/x/a.png", "E"},
                                                            {"/IMAGES/a.png", "E"},
                                                            {"/docs/a.md", "G"},
                                                            {"/docs/a.txt", "F"}};
        for (const auto& [path, letter] : expected)
            QCOMPARE(get(s.baseUrl() + path).body, letter);
    }

    void cleanupTestCase() { QCOMPARE(server_->terminate(), 0); }
};

QTEST_GUILESS_MAIN(TestCasesStatic)
#include "tst_cases_static.moc"

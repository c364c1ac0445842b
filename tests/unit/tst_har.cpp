// HAR 1.2: export rules (case HAR-01), import of Chrome / Firefox / HTTP Toolkit / mitmproxy
// files, positioned errors for corrupt files, and a lossless export → import round trip.
#include "test_support.h"

#include <portico/capture/har.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

#include <limits>

using namespace portico;
using capture::Exchange;
using capture::Phase;

namespace {
std::string fixture(const char* name) {
    QFile f(test::sourceDir() + "/tests/data/har/" + name);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

// A first exchange on a TLS connection, a second one reusing it, an unfinished one, a binary one.
std::vector<Exchange> sample() {
    std::vector<Exchange> v;
    Exchange a;
    a.id = 1;
    a.connectionId = (1ull << 48) | 7;
    a.streamId = 1;
    a.protocol = capture::Protocol::Http1;
    a.tlsVersion = "TLSv1.3";
    a.alpn = "http/1.1";
    a.client = "127.0.0.1:50000";
    a.localPort = 8443;
    a.vhost = "localhost";
    a.route = "/api/*";
    a.method = "POST";
    a.scheme = "https";
    a.authority = "localhost:8443";
    a.target = "/api/items?x=1&y=%20z";
    a.requestHeaders = {
        {"Host", "localhost:8443"}, {"Content-Type", "application/json"}, {"Cookie", "sid=1; t=2"}};
    a.requestBody = "{\"name\":\"é\"}";
    a.requestBodySize = a.requestBody.size();
    a.requestHeadersSize = 120;
    a.status = 201;
    a.responseHeaders = {{"Content-Type", "application/json"},
                         {"Set-Cookie", "sid=3; Path=/; HttpOnly"},
                         {"Location", "/api/items/7"}};
    a.responseBody = "{\"id\":7}";
    a.responseBodySize = a.responseBody.size();
    a.responseHeadersSize = 98;
    a.startedUnixNs = 1'772'000'000'123'456'789;
    const std::int64_t t0 = 5'000'000'000;
    a.set(Phase::Accepted, t0);
    a.set(Phase::TlsDone, t0 + 1'500'000);
    a.set(Phase::RequestHeaders, t0 + 1'800'000);
    a.set(Phase::RequestBodyDone, t0 + 1'900'000);
    a.set(Phase::RouteMatched, t0 + 1'910'000);
    a.set(Phase::ResponseFirstByte, t0 + 2'400'000);
    a.set(Phase::ResponseDone, t0 + 2'450'000);
    v.push_back(a);
    Exchange b = a;
    b.id = 2;
    b.streamId = 2; // same connection, reused
    b.method = "GET";
    b.target = "/img.bin";
    b.requestBody.clear();
    b.requestBodySize = 0;
    b.responseHeaders = {{"Content-Type", "application/octet-stream"}, {"X-Odd", "caf\xe9"}}; // not UTF-8
    b.responseBody = std::string("\x89PNG\0\x01\xff", 7);
    b.responseBodySize = 1000; // a prefix only
    b.flags = capture::kResponseBodyTruncated;
    for (auto& p : b.phases)
        if (p >= 0) p += 10'000'000;
    v.push_back(b);
    Exchange c = b;
    c.id = 3;
    c.streamId = 3;
    c.status = 0;
    c.error = "connection closed before the response was sent";
    c.responseHeaders.clear();
    c.responseBody.clear();
    c.responseBodySize = 0;
    c.flags = capture::kIncomplete;
    c.set(Phase::ResponseFirstByte, -1);
    c.set(Phase::ResponseDone, -1);
    v.push_back(c);
    return v;
}
} // namespace

class TestHar : public QObject {
    Q_OBJECT
private slots:
    // HAR's parts add up to the exchange's total rounded once (the table, the timeline and the
    // HAR line show one number), not to a sum of parts rounded one by one.
    void timingsAddUpToTheTotal() {
        capture::Exchange e;
        e.set(capture::Phase::RequestHeaders, 1'000'000);
        e.set(capture::Phase::RequestBodyDone, 1'000'499);   // +0.499 µs
        e.set(capture::Phase::ResponseFirstByte, 1'070'999); // +70.5 µs later
        e.set(capture::Phase::ResponseDone, 1'108'499);      // +37.5 µs later
        const capture::HarTimings t = capture::harTimings(e);
        const double total = std::round(double(e.durationNs()) / 1000.0) / 1000.0; // 0.108 ms
        QCOMPARE(t.send + t.wait + t.receive, total);
        QCOMPARE(t.total(), total);
        // Rounded one by one they would be 0.000 + 0.071 + 0.038 = 0.109 ms.
        QCOMPARE(t.wait, 0.071);
        QCOMPARE(t.receive, 0.037);
    }

    void exportFollowsHar01() {
        const std::string text = capture::toHar(sample());
        QVERIFY(capture::isUtf8(text));
        QJsonParseError err;
        auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &err);
        QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
        QJsonObject log = doc.object()["log"].toObject();
        QCOMPARE(log["version"].toString(), QString("1.2"));
        QVERIFY(log["creator"].toObject().contains("name"));
        QJsonArray entries = log["entries"].toArray();
        QCOMPARE(entries.size(), 3);
        for (int i = 0; i < entries.size(); ++i) {
            QJsonObject e = entries[i].toObject();
            for (auto k : {"startedDateTime", "time", "request", "response", "cache", "timings"})
                QVERIFY2(e.contains(k), k);
            for (auto k : {"method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize",
                           "bodySize"})
                QVERIFY2(e["request"].toObject().contains(k), k);
            for (auto k : {"status", "statusText", "httpVersion", "cookies", "headers", "content",
                           "redirectURL", "headersSize", "bodySize"})
                QVERIFY2(e["response"].toObject().contains(k), k);
            QVERIFY(e["response"].toObject()["content"].toObject().contains("mimeType"));
            QJsonObject t = e["timings"].toObject();
            for (auto k : {"send", "wait", "receive"})
                QVERIFY2(t.contains(k) && t[k].toDouble() >= 0, k);
            double total = 0;
            for (auto k : {"blocked", "dns", "connect", "ssl"})
                QVERIFY2(t[k].toDouble() == -1 || t[k].toDouble() >= 0, k);
            for (auto k : {"blocked", "dns", "connect", "send", "wait", "receive"})
                if (t[k].toDouble() > 0) total += t[k].toDouble();
            QVERIFY2(std::abs(e["time"].toDouble() - total) < 0.0011, qPrintable(QString::number(total)));
        }
        // First exchange of the TLS connection: connect = ssl = the handshake (1.5 ms).
        QJsonObject t0 = entries[0].toObject()["timings"].toObject();
        QCOMPARE(t0["ssl"].toDouble(), 1.5);
        QCOMPARE(t0["connect"].toDouble(), 1.5);
        QCOMPARE(t0["send"].toDouble(), 0.1);
        QCOMPARE(t0["wait"].toDouble(), 0.5);
        QCOMPARE(t0["receive"].toDouble(), 0.05);
        // Reused connection: not applicable, -1 (not 0, not -1000).
        QJsonObject t1 = entries[1].toObject()["timings"].toObject();
        QCOMPARE(t1["connect"].toDouble(), -1.0);
        QCOMPARE(t1["ssl"].toDouble(), -1.0);
        QCOMPARE(t1["dns"].toDouble(), -1.0);
        // Binary body → base64; cookies and query parsed; redirectURL from Location.
        QJsonObject c1 = entries[1].toObject()["response"].toObject()["content"].toObject();
        QCOMPARE(c1["encoding"].toString(), QString("base64"));
        QCOMPARE(QByteArray::fromBase64(c1["text"].toString().toLatin1()),
                 QByteArray("\x89PNG\0\x01\xff", 7));
        QCOMPARE(c1["size"].toInt(), 1000);
        QJsonObject r0 = entries[0].toObject()["request"].toObject();
        QCOMPARE(r0["cookies"].toArray().size(), 2);
        QCOMPARE(r0["queryString"].toArray()[1].toObject()["value"].toString(), QString(" z"));
        QCOMPARE(r0["postData"].toObject()["text"].toString(), QString::fromUtf8("{\"name\":\"é\"}"));
        QCOMPARE(entries[0].toObject()["response"].toObject()["redirectURL"].toString(),
                 QString("/api/items/7"));
        QVERIFY(entries[0]
                    .toObject()["response"]
                    .toObject()["cookies"]
                    .toArray()[0]
                    .toObject()["httpOnly"]
                    .toBool());
        // The unfinished one: no response, still valid timings.
        QCOMPARE(entries[2].toObject()["response"].toObject()["status"].toInt(), 0);
        QCOMPARE(entries[2].toObject()["_portico"].toObject()["error"].toString(),
                 QString("connection closed before the response was sent"));
    }

    void exportValidatorFromCase() {
        // The validator of ../shared/cases HAR-01, run on our output.
        QTemporaryDir dir;
        const QString path = dir.filePath("export.har");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(capture::toHar(sample())));
        f.close();
        const QByteArray script = R"PY(
import json, sys
for e in json.load(open(sys.argv[1]))["log"]["entries"]:
    t = e["timings"]
    assert all(k in t and t[k] >= 0 for k in ("send", "wait", "receive")), t
    assert all(t.get(k, -1) == -1 or t[k] >= 0 for k in ("blocked", "dns", "connect", "ssl")), t
    total = sum(t[k] for k in ("blocked", "dns", "connect", "send", "wait", "receive") if t.get(k, -1) > 0)
    assert abs(e["time"] - total) < 1.0, (e["time"], total)
print("ok")
)PY";
        auto r = test::runProcess("python3", {"-", path}, script);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.trimmed(), QByteArray("ok"));
    }

    void roundTripIsLossless() {
        const auto before = sample();
        auto imported = capture::fromHar(capture::toHar(before));
        QVERIFY2(imported.ok(), imported.error.c_str());
        QCOMPARE(imported.exchanges.size(), before.size());
        for (std::size_t i = 0; i < before.size(); ++i) {
            const Exchange& a = before[i];
            const Exchange& b = imported.exchanges[i];
            QCOMPARE(b.method, a.method);
            QCOMPARE(b.url(), a.url());
            QCOMPARE(b.httpVersion, a.httpVersion);
            QCOMPARE(b.status, a.status);
            QVERIFY(b.requestHeaders == a.requestHeaders);
            if (i != 1)
                QVERIFY(b.responseHeaders == a.responseHeaders); // entry 1 has a non-UTF-8 header value
            QCOMPARE(b.requestBody, a.requestBody);
            QCOMPARE(b.responseBody, a.responseBody);
            QCOMPARE(b.requestBodySize, a.requestBodySize);
            QCOMPARE(b.responseBodySize, a.responseBodySize);
            QCOMPARE(b.requestHeadersSize, a.requestHeadersSize);
            QCOMPARE(b.responseHeadersSize, a.responseHeadersSize);
            QCOMPARE(b.startedUnixNs, a.startedUnixNs);
            QVERIFY(b.phases == a.phases);
            QCOMPARE(b.connectionId, a.connectionId);
            QCOMPARE(b.streamId, a.streamId);
            QCOMPARE(b.vhost, a.vhost);
            QCOMPARE(b.route, a.route);
            QCOMPARE(b.tlsVersion, a.tlsVersion);
            QCOMPARE(b.error, a.error);
            QCOMPARE(b.flags, a.flags);
        }
        // A second export of the import is identical (ids are the store's to assign; entry 1's
        // non-UTF-8 header byte became U+FFFD in the UTF-8 file).
        auto again = imported.exchanges;
        for (std::size_t i = 0; i < again.size(); ++i)
            again[i].id = before[i].id;
        QCOMPARE(capture::toHar({again[0], again[2]}), capture::toHar({before[0], before[2]}));
    }

    // The rules that changed an exchange and its fields and bodies before them: `_portico.rules`
    // (names in order) and `_portico.original` (HAR header objects; bodies as text, or base64 with
    // `...BodyEncoding`), each left out when empty.
    void rulesAndOriginalsRoundTrip() {
        auto before = sample();
        before[0].rules = {"add-auth", "strip cookies"};
        before[0].originalRequestFields = "Host: localhost:8443\r\nCookie: sid=1; t=2\r\n";
        before[0].originalResponseFields = "Content-Type: text/plain\r\nX-Powered-By: php\r\n";
        before[1].rules = {"only-request"};
        before[1].originalRequestFields = "Host: localhost:8443\r\n";
        // Bodies a replace_body rewrote: text as it is, other bytes base64 with an encoding field.
        before[0].originalRequestBody = "a=1&secret=hunter2\n";
        before[0].originalResponseBody = std::string("\x00\x01id=42\xff", 8);
        before[1].originalResponseBody = "user id=42\n";
        const std::string har = capture::toHar(before);
        const QJsonArray entries = QJsonDocument::fromJson(QByteArray::fromStdString(har))
                                       .object()["log"]
                                       .toObject()["entries"]
                                       .toArray();
        QCOMPARE(entries.size(), 3);
        const QJsonObject p0 = entries[0].toObject()["_portico"].toObject();
        QCOMPARE(p0["rules"].toArray(), QJsonArray({"add-auth", "strip cookies"}));
        const QJsonObject original = p0["original"].toObject();
        QCOMPARE(original["requestHeaders"].toArray().size(), 2);
        QCOMPARE(original["requestHeaders"].toArray()[1].toObject()["name"].toString(), QString("Cookie"));
        QCOMPARE(original["requestHeaders"].toArray()[1].toObject()["value"].toString(),
                 QString("sid=1; t=2"));
        QCOMPARE(original["responseHeaders"].toArray()[1].toObject()["value"].toString(), QString("php"));
        QCOMPARE(original["requestBody"].toString(), QString("a=1&secret=hunter2\n"));
        QVERIFY(!original.contains("requestBodyEncoding"));
        QCOMPARE(original["responseBody"].toString(), QString("AAFpZD00Mv8="));
        QCOMPARE(original["responseBodyEncoding"].toString(), QString("base64"));
        const QJsonObject original1 = entries[1].toObject()["_portico"].toObject()["original"].toObject();
        QCOMPARE(original1["responseBody"].toString(), QString("user id=42\n"));
        QVERIFY(!original1.contains("requestBody") && !original1.contains("responseBodyEncoding"));
        QVERIFY(
            !entries[1].toObject()["_portico"].toObject()["original"].toObject().contains("responseHeaders"));
        const QJsonObject p2 = entries[2].toObject()["_portico"].toObject();
        QVERIFY(!p2.contains("rules") && !p2.contains("original"));

        auto imported = capture::fromHar(har);
        QVERIFY2(imported.ok(), imported.error.c_str());
        QCOMPARE(imported.exchanges.size(), before.size());
        for (std::size_t i = 0; i < before.size(); ++i) {
            QCOMPARE(imported.exchanges[i].rules, before[i].rules);
            QCOMPARE(imported.exchanges[i].originalRequestFields, before[i].originalRequestFields);
            QCOMPARE(imported.exchanges[i].originalResponseFields, before[i].originalResponseFields);
            QCOMPARE(imported.exchanges[i].originalRequestBody, before[i].originalRequestBody);
            QCOMPARE(imported.exchanges[i].originalResponseBody, before[i].originalResponseBody);
        }
    }

    void importBrowsersAndProxies_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("entries");
        QTest::newRow("chrome") << "chrome.har" << 2;
        QTest::newRow("firefox") << "firefox.har" << 2;
        QTest::newRow("httptoolkit") << "httptoolkit.har" << 1;
        QTest::newRow("mitmproxy") << "mitmproxy.har" << 2;
        QTest::newRow("HAR-01 minimal") << "har01-minimal.har" << 1;
    }
    void importBrowsersAndProxies() {
        QFETCH(QString, file);
        QFETCH(int, entries);
        const std::string text = fixture(file.toUtf8().constData());
        QVERIFY(!text.empty());
        auto r = capture::fromHar(text);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(static_cast<int>(r.exchanges.size()), entries);
        for (const auto& e : r.exchanges) {
            QVERIFY(e.flags & capture::kImported);
            QVERIFY(!e.method.empty());
            QVERIFY(e.startedUnixNs > 0);
            // The timeline never runs backwards.
            std::int64_t last = -1;
            for (auto p : e.phases)
                if (p >= 0) {
                    QVERIFY(p >= last);
                    last = p;
                }
        }
    }

    void importDetails() {
        auto chrome = capture::fromHar(fixture("chrome.har"));
        QCOMPARE(chrome.exchanges[1].protocol, capture::Protocol::Http2);
        QCOMPARE(chrome.exchanges[1].responseBody, std::string("\x89PNG\r\n\x1a\n", 8));
        QCOMPARE(chrome.exchanges[1].authority, std::string("localhost:8443"));
        QCOMPARE(chrome.exchanges[1].target, std::string("/logo.png?v=2&size=small"));
        QCOMPARE(chrome.exchanges[0].connectionId, std::uint64_t(48211));
        // send 0.05 ms, wait 1.9, receive 0.25 after blocked 0.81 + connect 0.402.
        const Exchange& c0 = chrome.exchanges[0];
        QCOMPARE(c0.between(Phase::RequestHeaders, Phase::ResponseFirstByte), std::int64_t(1'950'000));
        QCOMPARE(c0.between(Phase::ResponseFirstByte, Phase::ResponseDone), std::int64_t(250'000));

        auto firefox = capture::fromHar(fixture("firefox.har"));
        const Exchange& f0 = firefox.exchanges[0];
        QCOMPARE(f0.method, std::string("POST"));
        QCOMPARE(f0.status, 201);
        QCOMPARE(f0.requestBody, std::string("{\"name\":\"x\"}"));
        // 10:20:30.012+01:00 is 09:20:30.012Z.
        QCOMPARE(f0.startedUnixNs % (24ll * 3600 * 1'000'000'000),
                 std::int64_t((9 * 3600 + 20 * 60 + 30) * 1'000'000'000ll + 12'000'000));
        // "timings": {} (a cache hit): a warning, phases shown as n/a.
        const Exchange& f1 = firefox.exchanges[1];
        QCOMPARE(f1.at(Phase::ResponseFirstByte), std::int64_t(-1));
        QVERIFY(std::any_of(firefox.warnings.begin(), firefox.warnings.end(), [](const std::string& w) {
            return w.find("entries[1].timings") != std::string::npos;
        }));

        auto toolkit = capture::fromHar(fixture("httptoolkit.har"));
        QCOMPARE(toolkit.exchanges[0].requestBody, std::string("\0\x01\x02\xff", 4));
        QCOMPARE(toolkit.exchanges[0].status, 204);

        // mitmproxy: "-1000" (the bug of mitmproxy#3627) is read as not applicable.
        auto mitm = capture::fromHar(fixture("mitmproxy.har"));
        QCOMPARE(mitm.exchanges[0].protocol, capture::Protocol::Http2);
        QVERIFY(mitm.exchanges[0].at(Phase::TlsDone) >= 0);
        QCOMPARE(mitm.exchanges[1].at(Phase::TlsDone), std::int64_t(-1));
        QCOMPARE(mitm.exchanges[1].at(Phase::RequestHeaders), mitm.exchanges[1].startedUnixNs);

        auto minimal = capture::fromHar(fixture("har01-minimal.har"));
        QCOMPARE(minimal.exchanges[0].status, 200);
        QCOMPARE(minimal.exchanges[0].at(Phase::ResponseDone), minimal.exchanges[0].startedUnixNs); // time 0
    }

    // Both sides of the startedDateTime range (±9×10⁹ s around 1970, inside what int64 nanoseconds
    // hold): a date just inside is read to the second, one just outside is a warning and 1970.
    void startedDateTimeRangeBothSides() {
        auto started = [](const char* date, std::size_t& warnings) {
            const std::string text =
                std::string("{\"log\": {\"version\": \"1.2\", \"entries\": [{\"startedDateTime\": \"") +
                date +
                "\", \"time\": 0, \"request\": {\"method\": \"GET\", \"url\": "
                "\"http://localhost/\", \"headers\": []}, \"response\": {\"status\": 200, "
                "\"headers\": [], \"content\": {\"size\": 0}}}]}}";
            auto r = capture::fromHar(text);
            warnings = r.warnings.size();
            return r.ok() && r.exchanges.size() == 1 ? r.exchanges[0].startedUnixNs : std::int64_t(-1);
        };
        std::size_t usual = 0, w = 0; // the entry's other warnings (no timings)
        QCOMPARE(started("2026-12-02T00:00:00Z", usual), std::int64_t(1'796'169'600) * 1'000'000'000);
        QCOMPARE(started("2255-03-14T15:59:59Z", w), std::int64_t(8'999'999'999) * 1'000'000'000);
        QCOMPARE(w, usual);
        QCOMPARE(started("2255-03-14T16:00:01Z", w), std::int64_t(0));
        QCOMPARE(w, usual + 1);
        QCOMPARE(started("1684-10-19T08:00:01Z", w), std::int64_t(-8'999'999'999) * 1'000'000'000);
        QCOMPARE(w, usual);
        QCOMPARE(started("1684-10-19T07:59:59Z", w), std::int64_t(0));
        QCOMPARE(w, usual + 1);
    }

    // Numbers no HAR writer produces (found by the har_import fuzz target under UBSan: converting
    // 1e107 to an integer, or summing huge timings, is undefined behaviour). Sizes out of range read
    // as "unknown" like -1, a status as 0, Portico's fields as absent; times saturate.
    void outOfRangeNumbersReadAsUnknown() {
        // (Plain string literals: moc misreads a raw string that ends in a parenthesis.)
        const std::string text =
            "{\"log\": {\"version\": \"1.2\", \"entries\": [{\n"
            "            \"startedDateTime\": \"2255-01-01T00:00:00Z\", \"time\": 1e300,\n"
            "            \"request\": {\"method\": \"POST\", \"url\": \"http://localhost/x\", \"headers\": "
            "[],\n"
            "                        \"postData\": {\"text\": \"abc\"}, \"bodySize\": 1e107, "
            "\"headersSize\": 1e30},\n"
            "            \"response\": {\"status\": 1e20, \"headers\": [], \"headersSize\": 1e19,\n"
            "                         \"content\": {\"text\": \"hello\", \"size\": -1e300}},\n"
            "            \"timings\": {\"blocked\": 1e300, \"dns\": 1e300, \"connect\": 1e300, \"ssl\": 1,\n"
            "                        \"send\": 1e300, \"wait\": 1e300, \"receive\": 1e300},\n"
            "            \"_portico\": {\"flags\": 1e12, \"connectionId\": 1e40, \"streamId\": 5e9, "
            "\"localPort\": 70000},\n"
            "            \"_webSocketMessages\": [{\"type\": \"send\", \"time\": 1e300, \"opcode\": 1, "
            "\"data\": \"x\", \"_size\": 1e200}]\n"
            "        }]}}";
        auto r = capture::fromHar(text);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchanges.size(), std::size_t(1));
        const Exchange& e = r.exchanges[0];
        QCOMPARE(e.requestBodySize, std::uint64_t(3));
        QCOMPARE(e.requestHeadersSize, std::uint64_t(0));
        QCOMPARE(e.status, 0);
        QCOMPARE(e.responseBodySize, std::uint64_t(5));
        QCOMPARE(e.flags, std::uint32_t(0));
        QCOMPARE(e.connectionId, std::uint64_t(0));
        QCOMPARE(e.streamId, std::uint32_t(0));
        QCOMPARE(e.localPort, std::uint16_t(0));
        QCOMPARE(e.messages.size(), std::size_t(1));
        QCOMPARE(e.messages[0].size, std::uint64_t(1));
        constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
        QCOMPARE(e.at(Phase::ResponseDone), kMax);
        // And it exports again.
        QVERIFY(capture::fromHar(capture::toHar(r.exchanges)).ok());
        // Portico's exact phases are integers; a double there is ignored, not converted.
        auto p =
            capture::fromHar("{\"log\": {\"entries\": [{\"request\": {\"url\": \"http://x/\"}, \"_portico\": "
                             "{\"phasesNs\": {\"request_headers\": 1e107, \"response_done\": 5}}}]}}");
        QVERIFY2(p.ok(), p.error.c_str());
        QCOMPARE(p.exchanges[0].at(Phase::RequestHeaders), std::int64_t(-1));
        QCOMPARE(p.exchanges[0].at(Phase::ResponseDone), std::int64_t(5));
    }

    // An empty method reads as GET, like a missing one, which is also what the export writes for an
    // exchange without one: the round trip keeps it (found by the har_import fuzz target).
    void emptyMethodReadsAsGet() {
        auto r = capture::fromHar(
            "{\"log\": {\"entries\": [{\"request\": {\"method\": \"\", \"url\": \"http://x/\"}}]}}");
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchanges[0].method, std::string("GET"));
        auto again = capture::fromHar(capture::toHar(r.exchanges));
        QCOMPARE(again.exchanges[0].method, std::string("GET"));
    }

    void corruptFilesGetPositionedErrors_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("truncated") << QByteArray::fromStdString(fixture("truncated.har"))
                                   << "22:44 (byte 700): syntax error";
        QTest::newRow("double comma")
            << QByteArray("{\"log\": {\"version\": \"1.2\",, }}") << "1:27 (byte 26): syntax error";
        QTest::newRow("second line") << QByteArray("{\"log\":\n  {\"entries\": [}]}}")
                                     << "2:16 (byte 23): syntax error";
        QTest::newRow("empty") << QByteArray("") << "1:1 (byte 0): syntax error";
        QTest::newRow("not har") << QByteArray("{\"entries\": []}") << "log: missing: not a HAR file";
        QTest::newRow("entries type")
            << QByteArray("{\"log\": {\"entries\": 5}}") << "log.entries: expected an array";
        QTest::newRow("no url") << QByteArray("{\"log\": {\"entries\": [{\"request\": {}}]}}")
                                << "log.entries[0].request.url: missing";
        QTest::newRow("headers type")
            << QByteArray(
                   "{\"log\": {\"entries\": [{\"request\": {\"url\": \"http://x/\", \"headers\": 3}}]}}")
            << "log.entries[0].request.headers: expected an array";
        auto portico = [](const char* member) {
            return QByteArray("{\"log\": {\"entries\": [{\"request\": {\"url\": \"http://x/\"}, "
                              "\"_portico\": {") +
                   member + "}}]}}";
        };
        QTest::newRow("rules type") << portico("\"rules\": 5")
                                    << "log.entries[0]._portico.rules: expected an array";
        QTest::newRow("rule name type")
            << portico("\"rules\": [\"a\", {}]") << "log.entries[0]._portico.rules[1]: expected a string";
        QTest::newRow("original type")
            << portico("\"original\": \"x\"") << "log.entries[0]._portico.original: expected an object";
        QTest::newRow("original headers type")
            << portico("\"original\": {\"responseHeaders\": true}")
            << "log.entries[0]._portico.original.responseHeaders: expected an array";
        QTest::newRow("original body type")
            << portico("\"original\": {\"responseBody\": 5}")
            << "log.entries[0]._portico.original.responseBody: expected a string";
        QTest::newRow("original body not base64")
            << portico("\"original\": {\"responseBody\": \"a%b\", \"responseBodyEncoding\": \"base64\"}")
            << "log.entries[0]._portico.original.responseBody: not base64";
        QTest::newRow("original body encoding")
            << portico("\"original\": {\"requestBody\": \"x\", \"requestBodyEncoding\": \"hex\"}")
            << "log.entries[0]._portico.original.requestBodyEncoding: expected \"base64\"";
    }
    void corruptFilesGetPositionedErrors() {
        QFETCH(QByteArray, text);
        QFETCH(QString, error);
        auto r = capture::fromHar(text.toStdString());
        QVERIFY(!r.ok());
        QVERIFY(r.exchanges.empty());
        QVERIFY2(QString::fromStdString(r.error).startsWith(error), r.error.c_str());
    }

    // A response body marked base64 that is not: a warning naming the entry and field, the text
    // kept; content.mimeType comes back as the Content-Type when the entry lists none.
    void badBase64AndMimeType() {
        auto r = capture::fromHar(fixture("bad-base64.har"));
        QCOMPARE(r.exchanges.size(), std::size_t(1));
        QCOMPARE(r.exchanges[0].responseBody, std::string("hello"));
        QVERIFY2(std::any_of(r.warnings.begin(), r.warnings.end(),
                             [](const std::string& w) {
                                 return w.find("entries[0].response.content: bad base64") !=
                                        std::string::npos;
                             }),
                 r.warnings.empty() ? "no warning" : r.warnings.front().c_str());
        QCOMPARE(std::string(r.exchanges[0].responseHeader("content-type")), std::string("application/json"));
        const std::string back = capture::toHar(r.exchanges);
        QVERIFY2(back.find("\"mimeType\": \"application/json\"") != std::string::npos, back.c_str());
    }

    void base64() {
        std::string out;
        for (std::string s : {std::string(""), std::string("a"), std::string("ab"), std::string("abc"),
                              std::string("\0\xff\x10", 3)}) {
            QVERIFY(capture::base64Decode(capture::base64Encode(s), out));
            QCOMPARE(out, s);
        }
        QCOMPARE(capture::base64Encode("hello"), std::string("aGVsbG8="));
        QVERIFY(!capture::base64Decode("a$b", out));
        // Text that only uses the alphabet is not base64: a length that leaves one character
        // over, stray bits in the last one, padding in the middle or too much of it.
        for (const char* bad : {"hello", "abcde", "aGVsbG9=", "aG=VsbG8", "aGVsbG8===", "YQ=x"})
            QVERIFY2(!capture::base64Decode(bad, out), bad);
        for (const char* hello : {"aGVsbG8=", "aGVsbG8", "aGVs bG8=\n"}) { // padded, unpadded, wrapped
            QVERIFY2(capture::base64Decode(hello, out), hello);
            QCOMPARE(out, std::string("hello"));
        }
        QVERIFY(capture::base64Decode("-_8=", out)); // the URL alphabet (RFC 4648 §5)
        QCOMPARE(out, std::string("\xfb\xff"));
        QVERIFY(capture::isUtf8("h\xc3\xa9"));
        QVERIFY(!capture::isUtf8("caf\xe9"));
        QVERIFY(!capture::isUtf8("\xed\xa0\x80")); // a surrogate
    }
};

QTEST_GUILESS_MAIN(TestHar)
#include "tst_har.moc"

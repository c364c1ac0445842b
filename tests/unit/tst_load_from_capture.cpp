// load::requestsFromCapture: recorded exchanges become weighted request specs (replay as load).
#include <portico/load/from_capture.h>

#include <QtTest>

using namespace portico;

namespace {

capture::Exchange make(std::uint64_t id, std::string method, std::string target,
                       std::vector<capture::Header> headers = {}, std::string body = {}) {
    capture::Exchange e;
    e.id = id;
    e.method = std::move(method);
    e.target = std::move(target);
    e.scheme = "http";
    e.authority = "localhost:8080";
    e.requestHeaders = std::move(headers);
    e.requestBody = std::move(body);
    e.requestBodySize = e.requestBody.size();
    return e;
}

bool hasField(const load::RequestSpec& s, const std::string& name) {
    for (const auto& [n, v] : s.headers)
        if (n == name) return true;
    return false;
}

} // namespace

class TestLoadFromCapture : public QObject {
    Q_OBJECT
private slots:
    void identicalRequestsShareOneWeightedSpec() {
        std::vector<capture::Exchange> rec{
            make(1, "GET", "/a"), make(2, "GET", "/b?x=1"), make(3, "GET", "/a"),
            make(4, "POST", "/a", {{"Content-Type", "text/plain"}}, "hi"), make(5, "GET", "/a")};
        auto r = load::requestsFromCapture(rec, "http://127.0.0.1:9000/");
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.used, std::size_t(5));
        QCOMPARE(r.skipped, std::size_t(0));
        QCOMPARE(r.requests.size(), std::size_t(3));
        QCOMPARE(r.requests[0].url, std::string("http://127.0.0.1:9000/a"));
        QCOMPARE(r.requests[0].weight, 3u);
        QCOMPARE(r.requests[1].url, std::string("http://127.0.0.1:9000/b?x=1"));
        QCOMPARE(r.requests[1].weight, 1u);
        QCOMPARE(r.requests[2].method, std::string("POST"));
        QCOMPARE(r.requests[2].body, std::string("hi"));
        QVERIFY(hasField(r.requests[2], "Content-Type"));
        std::string error;
        load::Options o;
        o.requests = r.requests;
        o.count = 10;
        QVERIFY2(load::validate(o, error), error.c_str());
    }

    void basePathPrefixesTheTarget() {
        auto r = load::requestsFromCapture({make(1, "GET", "/a?q")}, "http://[::1]:81/v2");
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests[0].url, std::string("http://[::1]:81/v2/a?q"));
    }

    void connectionFieldsAreDroppedAndCookiesJoined() {
        auto r = load::requestsFromCapture({make(1, "GET", "/",
                                                 {{"Host", "old:1"},
                                                  {"Connection", "keep-alive, X-Hop"},
                                                  {"X-Hop", "1"},
                                                  {"Keep-Alive", "5"},
                                                  {"Content-Length", "0"},
                                                  {"Transfer-Encoding", "chunked"},
                                                  {"TE", "trailers"},
                                                  {"Upgrade", "h2c"},
                                                  {"Proxy-Authorization", "x"},
                                                  {"Expect", "100-continue"},
                                                  {":path", "/"},
                                                  {"cookie", "a=1"},
                                                  {"Accept", "*/*"},
                                                  {"cookie", "b=2"}})},
                                           "http://127.0.0.1:9");
        QVERIFY2(r.ok(), r.error.c_str());
        const auto& h = r.requests[0].headers;
        QCOMPARE(h.size(), std::size_t(2));
        QCOMPARE(h[0], (std::pair<std::string, std::string>("Accept", "*/*")));
        QCOMPARE(h[1], (std::pair<std::string, std::string>("cookie", "a=1; b=2")));
    }

    void unusableRecordsAreSkippedWithAReason() {
        auto ws = make(1, "GET", "/ws");
        ws.protocol = capture::Protocol::WebSocket;
        auto cut = make(2, "POST", "/up", {}, "partial");
        cut.flags |= capture::kRequestBodyTruncated;
        cut.requestBodySize = 1 << 20;
        auto star = make(3, "OPTIONS", "*");
        auto r = load::requestsFromCapture({ws, cut, star, make(4, "GET", "/ok")}, "http://127.0.0.1:9");
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.used, std::size_t(1));
        QCOMPARE(r.skipped, std::size_t(3));
        QCOMPARE(r.skippedReasons[0], std::string("#1 GET /ws: WebSocket session"));
        QCOMPARE(r.skippedReasons[1], std::string("#2 POST /up: request body captured only in part"));
        // Nothing left: an error.
        r = load::requestsFromCapture({ws, cut}, "http://127.0.0.1:9");
        QVERIFY(!r.ok());
        QCOMPARE(r.error, std::string("none of the 2 recorded exchanges can be sent as a request"));
        QCOMPARE(load::requestsFromCapture({}, "").error, std::string("the recording holds no exchanges"));
    }

    void recordedOriginUsedWithoutBaseButMustBeOne() {
        auto r = load::requestsFromCapture({make(1, "GET", "/a"), make(2, "GET", "/b")}, "");
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests[1].url, std::string("http://localhost:8080/b"));
        auto other = make(3, "GET", "/c");
        other.authority = "api.test";
        r = load::requestsFromCapture({make(1, "GET", "/a"), other}, "");
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("several origins") != std::string::npos, r.error.c_str());
        QVERIFY(!load::requestsFromCapture({make(1, "GET", "/a")}, "ftp://x/").ok());
        QVERIFY(!load::requestsFromCapture({make(1, "GET", "/a")}, "http://127.0.0.1:9/?q=1").ok());
    }
};

QTEST_GUILESS_MAIN(TestLoadFromCapture)
#include "tst_load_from_capture.moc"

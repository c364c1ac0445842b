// Capture building blocks: live histograms against exact percentiles, the ring's drop counting
// under a flood, the collector's drain pace, slot encoding (binary-safe, bounded, with the rules
// that changed an exchange and its original fields and bodies), those in the session file, and the
// filter language.
#include "capture/collector.h"
#include "capture/hooks.h"
#include "capture/recorder.h"
#include "test_support.h"

#include <portico/capture/filter.h>
#include <portico/capture/store.h>
#include <portico/stats/live.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

using namespace portico;

namespace {
// Nearest-rank percentile of sorted samples (the definition Histogram documents).
std::uint64_t exactPercentile(const std::vector<std::uint64_t>& sorted, double p) {
    if (p <= 0) return sorted.front();
    // p × N / 100 exactly: p is given with at most two decimals, so scale to integers.
    const auto scaled = static_cast<std::uint64_t>(std::llround(p * 100.0)) * sorted.size(); // p·N·100
    const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>((scaled + 9999) / 10000));
    return sorted[rank - 1];
}

capture::Exchange roundTrip(capture::Recorder& rec,
                            const std::function<void(capture::SlotWriter&, capture::SlotHead*)>& fill) {
    capture::SlotHead* h = rec.reserve(0);
    if (!h) return {};
    capture::SlotWriter w(h, rec.ring()->payload(h), rec.ring()->payloadBytes());
    fill(w, h);
    w.finish();
    rec.publish(1);
    capture::Exchange out;
    rec.ringForReader()->drain(
        [&](const capture::SlotHead& sh, const char* p) { out = capture::decodeSlot(sh, p); }, 1);
    return out;
}
} // namespace

class TestCaptureCore : public QObject {
    Q_OBJECT
private slots:
    void liveHistogramMatchesExactPercentiles() {
        std::mt19937_64 rng(42);
        std::lognormal_distribution<double> dist(std::log(200'000.0), 1.2); // ~200 µs median, long tail
        std::vector<std::uint64_t> samples;
        stats::LiveHistogram parts[4];
        for (int i = 0; i < 200'000; ++i) {
            auto v = static_cast<std::uint64_t>(std::clamp(dist(rng), 1000.0, 3.0e12));
            samples.push_back(v);
            parts[i % 4].record(v, v > 5'000'000, false);
        }
        std::sort(samples.begin(), samples.end());
        stats::Histogram merged;
        stats::BucketCounts counts;
        std::uint64_t errors = 0;
        for (auto& p : parts) {
            p.addTo(merged);
            p.addCounts(counts);
            errors += p.errors();
        }
        QCOMPARE(merged.count(), std::uint64_t(samples.size()));
        QCOMPARE(errors, std::uint64_t(std::count_if(samples.begin(), samples.end(),
                                                     [](auto v) { return v > 5'000'000; })));
        stats::SparseCounts sparse;
        for (std::size_t i = 0; i < counts.size(); ++i)
            if (counts[i]) sparse.emplace_back(static_cast<std::uint32_t>(i), counts[i]);
        for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
            const std::uint64_t exact = exactPercentile(samples, p);
            const std::uint64_t fromHist = merged.valueAtPercentile(p);
            const std::uint64_t fromCounts = stats::percentileOf(counts, p);
            QCOMPARE(stats::percentileOf(sparse, p), fromCounts);
            const double bound =
                static_cast<double>(exact) * (1.0 + stats::Histogram::kRelativePrecision) + 1.0;
            QVERIFY2(fromHist >= exact && static_cast<double>(fromHist) <= bound,
                     qPrintable(QString("p%1: exact %2 histogram %3").arg(p).arg(exact).arg(fromHist)));
            QVERIFY2(fromCounts >= exact && static_cast<double>(fromCounts) <= bound,
                     qPrintable(QString("p%1: exact %2 counts %3").arg(p).arg(exact).arg(fromCounts)));
        }
    }

    void slotEncodingIsBinarySafe() {
        capture::Recorder rec(3);
        rec.ensureRings(16, 4096);
        const std::string body("\0\x01\xff\r\n binary", 12);
        auto e = roundTrip(rec, [&](capture::SlotWriter& w, capture::SlotHead* h) {
            h->status = 201;
            h->phases[static_cast<int>(capture::Phase::RequestHeaders)] = 123;
            for (auto s : {"TLSv1.3", "h2", "127.0.0.1:8443", "TLSv1.2", "http/1.1", "127.0.0.1:5000", "site",
                           "/api/*", "POST", "https", "localhost", "/api/x?y=1", ""})
                w.str(s);
            auto l = w.beginList();
            w.pair(l, "Content-Type", "application/octet-stream");
            w.pair(l, "X-Bin", std::string("a\0b", 3));
            w.beginList();
            l = w.beginList();
            w.pair(l, ":status", "201");
            w.str("add-auth\nstrip cookies");
            w.str("X-Bin: a\r\n");
            w.str("");
            w.str(body);
            w.str("ok");
            h->requestBodySize = body.size();
            h->responseBodySize = 2;
        });
        QCOMPARE(e.status, 201);
        QCOMPARE(e.method, std::string("POST"));
        QCOMPARE(e.target, std::string("/api/x?y=1"));
        QCOMPARE(e.tlsVersion, std::string("TLSv1.3"));
        QCOMPARE(e.upstreamAddress, std::string("127.0.0.1:8443"));
        QCOMPARE(e.upstreamTlsVersion, std::string("TLSv1.2"));
        QCOMPARE(e.upstreamAlpn, std::string("http/1.1"));
        QCOMPARE(e.client, std::string("127.0.0.1:5000"));
        QCOMPARE(e.requestHeaders.size(), std::size_t(2));
        QCOMPARE(e.requestHeaders[1].value, std::string("a\0b", 3));
        QCOMPARE(e.responseHeaders.size(), std::size_t(1));
        QCOMPARE(e.rules, std::vector<std::string>({"add-auth", "strip cookies"}));
        QCOMPARE(e.originalRequestFields, std::string("X-Bin: a\r\n"));
        QCOMPARE(e.originalResponseFields, std::string());
        QCOMPARE(e.requestBody, body);
        QCOMPARE(e.responseBody, std::string("ok"));
        QCOMPARE(e.at(capture::Phase::RequestHeaders), std::int64_t(123));
        QCOMPARE(e.at(capture::Phase::ResponseDone), std::int64_t(-1));
        QCOMPARE(e.flags & capture::kRequestBodyTruncated, 0u);
    }

    void slotEncodingIsBounded() {
        capture::Recorder rec(0);
        rec.ensureRings(16, 1024); // the smallest record_bytes
        const std::string big(5000, 'x');
        auto e = roundTrip(rec, [&](capture::SlotWriter& w, capture::SlotHead* h) {
            for (int i = 0; i < 10; ++i)
                w.str(i == 8 ? std::string_view(big) : std::string_view("v"));
            auto l = w.beginList();
            for (int i = 0; i < 50; ++i)
                w.pair(l, "X-Header", big.substr(0, 100));
            w.beginList();
            w.beginList();
            w.str("");
            w.str("");
            w.str("");
            w.str(big);
            w.str(big);
            h->requestBodySize = big.size();
            h->responseBodySize = big.size();
        });
        QVERIFY(e.flags & capture::kHeadersTruncated);
        QVERIFY(e.target.size() < 1024);
        QVERIFY(e.requestHeaders.size() < 50);
        QVERIFY(e.flags & capture::kRequestBodyTruncated);
        QVERIFY(e.requestBody.size() < big.size());
    }

    // What the connection hands over (ExchangeInput) through the ring: the rules that changed the
    // exchange and the header fields before them. An original field block that does not fit is
    // left out whole (kHeadersTruncated), never cut inside a line, and the bodies still follow.
    void recordCarriesRulesAndOriginals() {
        capture::Recorder rec(0);
        rec.ensureRings(16, 1024);
        capture::ConnCapture cc;
        cc.rec = &rec;
        cc.cfg.bodyBytes = 64;
        const http::Header fields[] = {{"Host", "localhost"}, {"Authorization", "Bearer x"}};
        http::Request req;
        req.methodToken = "GET";
        req.target = "/api";
        req.host = "localhost";
        req.headers = fields;
        http::Response res;
        res.status = 200;
        res.setBody("hello");
        capture::ExchangeInput in;
        in.req = &req;
        in.res = &res;
        in.responseHead = "HTTP/1.1 200 OK\r\nX-Sent: 1\r\n";
        in.rules = "add-auth\nstrip-cookie";
        in.originalRequestFields = "Host: localhost\r\nCookie: a=1\r\n";
        in.originalResponseFields = "X-Powered-By: php\r\n";
        auto record = [&]() -> capture::Exchange {
            if (!capture::writeRecord(cc, 0, in)) return {};
            rec.publish(1);
            capture::Exchange out;
            rec.ringForReader()->drain(
                [&](const capture::SlotHead& sh, const char* p) { out = capture::decodeSlot(sh, p); }, 1);
            return out;
        };
        capture::Exchange e = record();
        QCOMPARE(e.rules, std::vector<std::string>({"add-auth", "strip-cookie"}));
        QCOMPARE(e.originalRequestFields, std::string(in.originalRequestFields));
        QCOMPARE(e.originalResponseFields, std::string(in.originalResponseFields));
        QCOMPARE(e.requestHeaders.size(), std::size_t(2));
        QCOMPARE(e.responseHeaders.size(), std::size_t(1));
        QCOMPARE(e.responseBody, std::string("hello"));
        QCOMPARE(e.flags & capture::kHeadersTruncated, 0u);

        // None: no rules, no originals.
        in.rules = {};
        in.originalRequestFields = {};
        in.originalResponseFields = {};
        e = record();
        QVERIFY(e.rules.empty());
        QVERIFY(e.originalRequestFields.empty() && e.originalResponseFields.empty());

        // An original block larger than the record: left out, the rest kept.
        const std::string big = "X-Big: " + std::string(2000, 'x') + "\r\n";
        in.rules = "big";
        in.originalRequestFields = big;
        in.originalResponseFields = "X-Small: 1\r\n";
        e = record();
        QVERIFY(e.flags & capture::kHeadersTruncated);
        QCOMPARE(e.rules, std::vector<std::string>({"big"}));
        QVERIFY(e.originalRequestFields.empty());
        QCOMPARE(e.originalResponseFields, std::string("X-Small: 1\r\n"));
        QCOMPARE(e.responseBody, std::string("hello"));
    }

    // The bodies before a replace_body (ExchangeInput::originalRequestBody, ...) through the ring:
    // prefixes of at most capture.body_bytes (kOriginalBodyTruncated when cut), after the bodies
    // as sent, which keep their room first; a record without them has neither flag nor bytes.
    void recordCarriesOriginalBodies() {
        capture::Recorder rec(0);
        rec.ensureRings(16, 1024);
        capture::ConnCapture cc;
        cc.rec = &rec;
        cc.cfg.bodyBytes = 64;
        const http::Header fields[] = {{"Host", "localhost"}};
        http::Request req;
        req.methodToken = "POST";
        req.target = "/up/echo";
        req.host = "localhost";
        req.headers = fields;
        req.body = "a=1&secret=[redacted]";
        http::Response res;
        res.status = 200;
        res.setBody("user ID[42]");
        capture::ExchangeInput in;
        in.req = &req;
        in.res = &res;
        in.responseHead = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n";
        in.requestBodySize = req.body.size();
        in.responseBodySize = 11;
        in.rules = "request secret\nids";
        in.originalRequestBody = "a=1&secret=hunter2";
        const std::string longOriginal = "user id=42 " + std::string(100, 'x'); // over body_bytes
        in.originalResponseBody = longOriginal;
        auto record = [&]() -> capture::Exchange {
            if (!capture::writeRecord(cc, 0, in)) return {};
            rec.publish(1);
            capture::Exchange out;
            rec.ringForReader()->drain(
                [&](const capture::SlotHead& sh, const char* p) { out = capture::decodeSlot(sh, p); }, 1);
            return out;
        };
        capture::Exchange e = record();
        QCOMPARE(e.requestBody, std::string("a=1&secret=[redacted]"));
        QCOMPARE(e.responseBody, std::string("user ID[42]"));
        QCOMPARE(e.originalRequestBody, std::string("a=1&secret=hunter2"));
        QCOMPARE(e.originalResponseBody, longOriginal.substr(0, 64)); // cut at capture.body_bytes
        QVERIFY(e.flags & capture::kOriginalBodyTruncated);
        QCOMPARE(e.flags & (capture::kHeadersTruncated | capture::kRequestBodyTruncated |
                            capture::kResponseBodyTruncated),
                 0u);

        // Under the limit: whole, not flagged; only one side: the other "".
        in.originalRequestBody = {};
        in.originalResponseBody = "user id=42";
        e = record();
        QVERIFY(e.originalRequestBody.empty());
        QCOMPARE(e.originalResponseBody, std::string("user id=42"));
        QCOMPARE(e.flags & capture::kOriginalBodyTruncated, 0u);

        // None: no bytes, no flag.
        in.originalResponseBody = {};
        e = record();
        QVERIFY(e.originalRequestBody.empty() && e.originalResponseBody.empty());
        QCOMPARE(e.flags & capture::kOriginalBodyTruncated, 0u);
        QCOMPARE(e.responseBody, std::string("user ID[42]"));

        // A record too small for all four: the bodies as sent are kept whole, the originals get
        // what is left (prefixes, flagged).
        cc.cfg.bodyBytes = 4096;
        const std::string sentRequest(100, 'q'), sentResponse(400, 'r');
        const std::string beforeRequest(400, 'Q'), beforeResponse(400, 'R');
        req.body = sentRequest;
        res.setBody(sentResponse);
        in.requestBodySize = sentRequest.size();
        in.responseBodySize = sentResponse.size();
        in.originalRequestBody = beforeRequest;
        in.originalResponseBody = beforeResponse;
        e = record();
        QCOMPARE(e.requestBody, sentRequest);
        QCOMPARE(e.responseBody, sentResponse);
        QVERIFY(e.flags & capture::kOriginalBodyTruncated);
        QVERIFY(e.originalRequestBody.size() < beforeRequest.size());
        QVERIFY(beforeRequest.starts_with(e.originalRequestBody));
        QVERIFY(beforeResponse.starts_with(e.originalResponseBody));
        QCOMPARE(e.flags & (capture::kRequestBodyTruncated | capture::kResponseBodyTruncated), 0u);
    }

    // The session file keeps the rules and the original field blocks ...
    void storeKeepsRulesAndOriginals() {
        QTemporaryDir dir;
        std::string error;
        auto store = capture::Store::open(dir.filePath("session.db").toStdString(), error);
        QVERIFY2(store, error.c_str());
        capture::Exchange a;
        a.method = "GET";
        a.target = "/a";
        a.rules = {"add-auth", "strip cookies"};
        a.originalRequestFields = "Host: x\r\nCookie: a=1\r\n";
        a.originalResponseFields = std::string("X-Bin: \x01\xff\r\n");
        capture::Exchange b;
        b.method = "GET";
        b.target = "/b"; // untouched by rules
        std::vector<capture::Exchange> add{a, b};
        QVERIFY2(store->append(add), store->error().c_str());
        QVERIFY(store->commit());
        const auto rows = store->load();
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(rows[0].rules, a.rules);
        QCOMPARE(rows[0].originalRequestFields, a.originalRequestFields);
        QCOMPARE(rows[0].originalResponseFields, a.originalResponseFields);
        QVERIFY(rows[1].rules.empty());
        QVERIFY(rows[1].originalRequestFields.empty() && rows[1].originalResponseFields.empty());
        // ... also when read without bodies (the Traffic list's load).
        const auto light = store->load(0, 10, false);
        QCOMPARE(light.size(), std::size_t(2));
        QCOMPARE(light[0].rules, a.rules);
        QCOMPARE(light[0].originalRequestFields, a.originalRequestFields);
    }

    // ... and a file from before those columns opens: its rows have none, new rows keep theirs.
    void storeFromBeforeRulesMigrates() {
        QTemporaryDir dir;
        const QString path = dir.filePath("old.db");
        const QByteArray sql =
            "CREATE TABLE portico_session (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO portico_session VALUES ('format', 'portico-capture-1');"
            "CREATE TABLE exchanges (id INTEGER PRIMARY KEY, started_unix_ns INTEGER NOT NULL,"
            " connection_id INTEGER, stream_id INTEGER, protocol INTEGER, http_version INTEGER,"
            " tls_version TEXT, alpn TEXT, client TEXT, local_port INTEGER, vhost TEXT, route TEXT,"
            " method TEXT, scheme TEXT, authority TEXT, target TEXT, status INTEGER, error TEXT,"
            " flags INTEGER, request_headers BLOB, request_trailers BLOB, request_body BLOB,"
            " request_body_size INTEGER, request_headers_size INTEGER, response_headers BLOB,"
            " response_body BLOB, response_body_size INTEGER, response_headers_size INTEGER,"
            " accepted_ns INTEGER, tls_done_ns INTEGER, request_headers_ns INTEGER,"
            " request_body_done_ns INTEGER, route_matched_ns INTEGER, upstream_connected_ns INTEGER,"
            " upstream_first_byte_ns INTEGER, response_first_byte_ns INTEGER, response_done_ns INTEGER,"
            " message_count INTEGER, messages BLOB, response_trailers BLOB, source INTEGER,"
            " client_process TEXT, upstream_address TEXT, upstream_tls_version TEXT, upstream_alpn TEXT,"
            " upstream_resolved_ns INTEGER, upstream_tcp_connected_ns INTEGER,"
            " upstream_request_sent_ns INTEGER);"
            "INSERT INTO exchanges (id, started_unix_ns, protocol, method, target, status, upstream_alpn) "
            "VALUES (7, 1000, 0, 'GET', '/old', 200, 'h2');";
        auto r = test::runProcess("sqlite3", {path}, sql);
        QCOMPARE(r.exitCode, 0);
        std::string error;
        auto store = capture::Store::open(path.toStdString(), error);
        QVERIFY2(store, error.c_str());
        auto rows = store->load();
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].target, std::string("/old"));
        QCOMPARE(rows[0].upstreamAlpn, std::string("h2"));
        QVERIFY(rows[0].rules.empty());
        QVERIFY(rows[0].originalRequestFields.empty() && rows[0].originalResponseFields.empty());
        capture::Exchange e;
        e.target = "/new";
        e.rules = {"r1"};
        e.originalResponseFields = "Server: x\r\n";
        std::vector<capture::Exchange> add{e};
        QVERIFY2(store->append(add), store->error().c_str());
        QVERIFY(store->commit());
        rows = store->load(7);
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].rules, e.rules);
        QCOMPARE(rows[0].originalResponseFields, e.originalResponseFields);
    }

    // The session file keeps the bodies before a replace_body (binary-safe); a load without
    // bodies leaves them out as it does the bodies as sent.
    void storeKeepsOriginalBodies() {
        QTemporaryDir dir;
        std::string error;
        auto store = capture::Store::open(dir.filePath("session.db").toStdString(), error);
        QVERIFY2(store, error.c_str());
        capture::Exchange a;
        a.method = "POST";
        a.target = "/a";
        a.rules = {"ids"};
        a.requestBody = "a=1&secret=[redacted]";
        a.responseBody = "user ID[42]";
        a.originalRequestBody = "a=1&secret=hunter2";
        a.originalResponseBody = std::string("user id=42\0\xff", 12);
        a.flags = capture::kOriginalBodyTruncated;
        capture::Exchange b;
        b.method = "GET";
        b.target = "/b";
        std::vector<capture::Exchange> add{a, b};
        QVERIFY2(store->append(add), store->error().c_str());
        QVERIFY(store->commit());
        const auto rows = store->load();
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(rows[0].originalRequestBody, a.originalRequestBody);
        QCOMPARE(rows[0].originalResponseBody, a.originalResponseBody);
        QCOMPARE(rows[0].flags, a.flags);
        QCOMPARE(rows[0].responseBody, a.responseBody);
        QVERIFY(rows[1].originalRequestBody.empty() && rows[1].originalResponseBody.empty());
        const auto light = store->load(0, 10, false);
        QCOMPARE(light.size(), std::size_t(2));
        QVERIFY(light[0].originalRequestBody.empty() && light[0].originalResponseBody.empty());
        QCOMPARE(light[0].rules, a.rules); // the other columns keep their places
        QCOMPARE(light[0].target, a.target);
        const auto one = store->get(rows[0].id);
        QVERIFY(one);
        QCOMPARE(one->originalResponseBody, a.originalResponseBody);
    }

    // A file from before the original body columns (it has the rules and the original fields)
    // opens: its rows keep what they had and have no original bodies; new rows keep theirs.
    void storeFromBeforeOriginalBodiesMigrates() {
        QTemporaryDir dir;
        const QString path = dir.filePath("old.db");
        const QByteArray sql =
            "CREATE TABLE portico_session (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO portico_session VALUES ('format', 'portico-capture-1');"
            "CREATE TABLE exchanges (id INTEGER PRIMARY KEY, started_unix_ns INTEGER NOT NULL,"
            " connection_id INTEGER, stream_id INTEGER, protocol INTEGER, http_version INTEGER,"
            " tls_version TEXT, alpn TEXT, client TEXT, local_port INTEGER, vhost TEXT, route TEXT,"
            " method TEXT, scheme TEXT, authority TEXT, target TEXT, status INTEGER, error TEXT,"
            " flags INTEGER, request_headers BLOB, request_trailers BLOB, request_body BLOB,"
            " request_body_size INTEGER, request_headers_size INTEGER, response_headers BLOB,"
            " response_body BLOB, response_body_size INTEGER, response_headers_size INTEGER,"
            " accepted_ns INTEGER, tls_done_ns INTEGER, request_headers_ns INTEGER,"
            " request_body_done_ns INTEGER, route_matched_ns INTEGER, upstream_connected_ns INTEGER,"
            " upstream_first_byte_ns INTEGER, response_first_byte_ns INTEGER, response_done_ns INTEGER,"
            " message_count INTEGER, messages BLOB, response_trailers BLOB, source INTEGER,"
            " client_process TEXT, upstream_address TEXT, upstream_tls_version TEXT, upstream_alpn TEXT,"
            " upstream_resolved_ns INTEGER, upstream_tcp_connected_ns INTEGER,"
            " upstream_request_sent_ns INTEGER, rules TEXT, original_request_fields BLOB,"
            " original_response_fields BLOB);"
            "INSERT INTO exchanges (id, started_unix_ns, protocol, method, target, status, rules,"
            " original_response_fields, response_body) "
            "VALUES (7, 1000, 0, 'GET', '/old', 200, 'r0', 'Server: y' || char(13, 10), 'sent');";
        auto r = test::runProcess("sqlite3", {path}, sql);
        QCOMPARE(r.exitCode, 0);
        std::string error;
        auto store = capture::Store::open(path.toStdString(), error);
        QVERIFY2(store, error.c_str());
        auto rows = store->load();
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].target, std::string("/old"));
        QCOMPARE(rows[0].rules, std::vector<std::string>{"r0"});
        QCOMPARE(rows[0].originalResponseFields, std::string("Server: y\r\n"));
        QCOMPARE(rows[0].responseBody, std::string("sent"));
        QVERIFY(rows[0].originalRequestBody.empty() && rows[0].originalResponseBody.empty());
        capture::Exchange e;
        e.target = "/new";
        e.rules = {"r1"};
        e.originalRequestBody = "secret=hunter2";
        e.originalResponseBody = "id=42";
        std::vector<capture::Exchange> add{e};
        QVERIFY2(store->append(add), store->error().c_str());
        QVERIFY(store->commit());
        rows = store->load(7);
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].originalRequestBody, e.originalRequestBody);
        QCOMPARE(rows[0].originalResponseBody, e.originalResponseBody);
    }

    void ringCountsDropsUnderFlood() {
        // A producer far faster than the consumer: every record is either delivered (in order) or
        // counted as dropped; statistics count all of them.
        capture::Recorder rec(1);
        rec.ensureRings(64, 1024);
        constexpr std::uint64_t kRecords = 200'000;
        std::atomic<bool> done{false};
        std::uint64_t delivered = 0, lastSeq = 0;
        bool ordered = true;
        std::thread consumer([&] {
            for (int rounds = 0; rounds < 100000; ++rounds) {
                const bool finished = done.load();
                rec.ringForReader()->drain(
                    [&](const capture::SlotHead& h, const char*) {
                        if (h.seq <= lastSeq) ordered = false;
                        lastSeq = h.seq;
                        ++delivered;
                    },
                    16);
                if (finished && rec.ringForReader()->drain([](auto&, auto) {}, 0) == 0 &&
                    delivered + rec.dropped() >= kRecords)
                    break;
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
        });
        for (std::uint64_t i = 0; i < kRecords; ++i) {
            rec.stats.overall.record(1000 + i, false, false);
            if (capture::SlotHead* h = rec.reserve(0)) {
                capture::SlotWriter w(h, rec.ring()->payload(h), rec.ring()->payloadBytes());
                w.str("GET");
                w.finish();
                rec.publish(1);
            }
        }
        done = true;
        consumer.join();
        QVERIFY(ordered);
        QVERIFY2(rec.dropped() > 0, "the flood should overflow a 64-slot ring");
        QVERIFY(delivered > 0);
        QCOMPARE(delivered + rec.dropped(), kRecords);
        QCOMPARE(rec.stats.overall.count(), kRecords);
    }

    // The collector's wait before its next drain follows the traffic (a quarter of the fullest
    // ring at the rate the last interval showed), within 1..50 ms and at most twice the wait before.
    void collectorWaitFollowsTheTraffic() {
        using std::chrono::milliseconds, std::chrono::nanoseconds, std::chrono::microseconds;
        using C = capture::Collector;
        QCOMPARE(C::nextWait(0, milliseconds(50)), nanoseconds(milliseconds(50)));            // idle
        QCOMPARE(C::nextWait(std::nan(""), milliseconds(50)), nanoseconds(milliseconds(50))); // no share
        QCOMPARE(C::nextWait(0.01, milliseconds(50)), nanoseconds(milliseconds(50)));         // slow: the cap
        // 1,000 records of a 1,024-record ring in 50 ms → a quarter of the ring in 12.8 ms.
        QCOMPARE(C::nextWait(1000.0 / 1024, milliseconds(50)), nanoseconds(microseconds(12800)));
        QCOMPARE(C::nextWait(0.5, milliseconds(10)), nanoseconds(milliseconds(5)));
        QCOMPARE(C::nextWait(1.0, milliseconds(2)), nanoseconds(milliseconds(1))); // the floor
        QCOMPARE(C::nextWait(1.0, nanoseconds(0)), nanoseconds(milliseconds(1)));
        // After a short wait, a quiet interval lengthens the next one by at most twice.
        QCOMPARE(C::nextWait(0, milliseconds(2), milliseconds(2)), nanoseconds(milliseconds(4)));
        QCOMPARE(C::nextWait(0.01, milliseconds(2), milliseconds(2)), nanoseconds(milliseconds(4)));
        QCOMPARE(C::nextWait(0, milliseconds(40), milliseconds(40)), nanoseconds(milliseconds(50)));
        QCOMPARE(C::nextWait(0, milliseconds(1), microseconds(100)), nanoseconds(milliseconds(1)));
    }

    // A worker that fills its ring in less than the collector's longest wait loses no more than
    // the first interval's overflow: the collector drains sooner as the rate rises. 64 slots,
    // 16 records every 2 ms (8,000 a second) for 0.5 s: a fixed 50 ms wait keeps 64 of every 400
    // (84 % dropped); the adapted wait and the wake-up at half full keep nearly all (none here).
    void collectorKeepsUpWithAFillingRing() {
        capture::Recorder rec(0);
        rec.ensureRings(64, 1024);
        config::Capture cfg;
        cfg.enabled = true;
        capture::Collector collector(cfg, nullptr);
        collector.start({&rec});
        constexpr int kBursts = 250, kPerBurst = 16;
        auto next = std::chrono::steady_clock::now();
        for (int b = 0; b < kBursts; ++b) {
            for (int i = 0; i < kPerBurst; ++i) {
                rec.stats.overall.record(1000, false, false);
                if (capture::SlotHead* h = rec.reserve(0)) {
                    h->startedUnixNs = 1;
                    capture::SlotWriter w(h, rec.ring()->payload(h), rec.ring()->payloadBytes());
                    w.str("GET");
                    w.finish();
                    rec.publish(1);
                }
            }
            next += std::chrono::milliseconds(2);
            std::this_thread::sleep_until(next);
        }
        collector.stop();
        const std::uint64_t total = kBursts * kPerBurst;
        QCOMPARE(collector.captured() + rec.dropped(), total);
        QVERIFY2(rec.dropped() * 100 < total * 25,
                 qPrintable(QString("dropped %1 of %2").arg(rec.dropped()).arg(total)));
    }

    // The session file is written on a thread of its own: while another connection holds the
    // file's write lock (as a commit that checkpoints the WAL holds the writer for up to half a
    // second on a busy disk), the collector still takes records from the rings into the window.
    // Before, the drain waited inside the append until SQLite's busy timeout (2 s) failed it.
    void drainsDoNotWaitForTheSessionFile() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("session.db").toStdString();
        std::string error;
        auto store = capture::Store::open(path, error);
        QVERIFY2(store, error.c_str());
        capture::Recorder rec(0);
        rec.ensureRings(64, 1024);
        config::Capture cfg;
        cfg.enabled = true;
        capture::Collector collector(cfg, std::move(store));
        collector.start({&rec});
        QStringList names; // the writer's thread is named for top -H, perf and gdb
        for (const QString& tid : QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            QFile comm("/proc/self/task/" + tid + "/comm");
            if (comm.open(QIODevice::ReadOnly)) names << QString::fromUtf8(comm.readAll()).trimmed();
        }
        QVERIFY2(names.contains("portico-store"), qPrintable(names.join(", ")));
        auto publish = [&](int n) {
            for (int i = 0; i < n; ++i) {
                capture::SlotHead* h = rec.reserve(0);
                QVERIFY(h);
                h->startedUnixNs = 1;
                capture::SlotWriter w(h, rec.ring()->payload(h), rec.ring()->payloadBytes());
                w.str("GET");
                w.finish();
                rec.publish(1);
            }
        };
        auto waitCaptured = [&](std::uint64_t n) {
            for (int i = 0; i < 1000 && collector.captured() < n; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return collector.captured() >= n;
        };
        publish(1);
        collector.drainNow(); // committed: the file is in WAL mode with one record
        auto blocker = capture::Store::open(path, error);
        QVERIFY2(blocker, error.c_str());
        QVERIFY(blocker->setMeta("test", "holds the write lock")); // an open write transaction
        publish(10);
        QVERIFY(waitCaptured(11)); // the writer now waits for the lock with these
        publish(20);
        QVERIFY(waitCaptured(31));
        QVERIFY2(collector.storeError().empty(), collector.storeError().c_str()); // not given up on
        QCOMPARE(collector.recent(0, 100).size(), std::size_t(31));
        QVERIFY(blocker->commit());
        blocker.reset();
        collector.drainNow();
        QVERIFY2(collector.storeError().empty(), collector.storeError().c_str());
        collector.stop();
        auto reader = capture::Store::openReadOnly(path, error);
        QVERIFY2(reader, error.c_str());
        QCOMPARE(reader->count(), std::uint64_t(31));
        QCOMPARE(reader->meta("test"), std::string("holds the write lock"));
    }

    // A second connection's passive checkpoint copies committed pages from the -wal file into the
    // session file itself, so the writer's own checkpoints find little left to copy (the
    // collector runs these on their own thread).
    void checkpointFromAnotherConnection() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("session.db").toStdString();
        std::string error;
        auto writer = capture::Store::open(path, error);
        QVERIFY2(writer, error.c_str());
        std::vector<capture::Exchange> rows(200);
        for (auto& e : rows) {
            e.target = "/x";
            e.responseBody.assign(1000, 'b');
        }
        QVERIFY(writer->append(rows));
        QVERIFY(writer->commit());
        const qint64 before = QFileInfo(dir.filePath("session.db")).size(); // all still in the -wal file
        auto checkpointer = capture::Store::openForCheckpoints(path, error);
        QVERIFY2(checkpointer, error.c_str());
        QVERIFY(checkpointer->checkpoint());
        QVERIFY2(QFileInfo(dir.filePath("session.db")).size() > before + 200 * 1000,
                 qPrintable(QString::number(QFileInfo(dir.filePath("session.db")).size())));
        auto reader = capture::Store::openReadOnly(path, error);
        QVERIFY2(reader, error.c_str());
        QCOMPARE(reader->count(), std::uint64_t(200));
        QVERIFY(!capture::Store::openForCheckpoints(dir.filePath("missing.db").toStdString(), error));
        QVERIFY(error.find("missing.db") != std::string::npos);
    }

    // Whole records (WebSocket sessions) go through their own bounded ring: a full ring drops the
    // record and counts it, never blocks; the consumer gets them in order.
    void fullRecordRingIsBounded() {
        capture::Recorder rec(1);
        rec.ensureRings(16, 4096); // full-record ring: max(64, 16 / 4) = 64 slots
        std::size_t accepted = 0;
        for (int i = 0; i < 100; ++i) {
            auto e = std::make_unique<capture::Exchange>();
            e->target = "/s" + std::to_string(i);
            if (rec.publishFull(rec.newFullKey(), true, std::move(e))) ++accepted;
        }
        QCOMPARE(accepted, std::size_t(64));
        QCOMPARE(rec.dropped(), std::uint64_t(36));
        std::vector<std::string> seen;
        rec.fullForReader()->drain([&](capture::FullRecord&& r) { seen.push_back(r.record->target); });
        QCOMPARE(seen.size(), std::size_t(64));
        QCOMPARE(seen.front(), std::string("/s0"));
        QCOMPARE(seen.back(), std::string("/s63"));
        // Room again once drained.
        QVERIFY(rec.publishFull(rec.newFullKey(), false, std::make_unique<capture::Exchange>()));
    }

    void workerStatsGroups() {
        capture::WorkerStats s;
        auto* a = s.group("site", "/api");
        auto* b = s.group("site", "(static)");
        QVERIFY(a != b);
        QCOMPARE(s.group("site", "/api"), a);
        a->hist.record(2000, false, true);
        QCOMPARE(s.groupCount(), std::size_t(2));
        QCOMPARE(s.groupAt(0).hist.clientErrors(), std::uint64_t(1));
    }

    void filter_data() {
        QTest::addColumn<QString>("expr");
        QTest::addColumn<bool>("matches");
        QTest::newRow("empty") << "" << true;
        QTest::newRow("status eq") << "status:404" << true;
        QTest::newRow("status ge") << "status:>=400" << true;
        QTest::newRow("status lt") << "status:<400" << false;
        QTest::newRow("status class") << "status:4xx" << true;
        QTest::newRow("status ne") << "status:!404" << false;
        QTest::newRow("method") << "method:post" << true;
        QTest::newRow("method list") << "method:GET,HEAD" << false;
        QTest::newRow("path prefix") << "path:/api" << true;
        QTest::newRow("path not query") << "path:/api/items?x" << false;
        QTest::newRow("host") << "host:localhost" << true;
        QTest::newRow("and") << "status:>=400 method:POST path:/api host:localhost" << true;
        QTest::newRow("and fails") << "status:>=400 method:GET" << false;
        QTest::newRow("negation") << "-method:POST" << false;
        QTest::newRow("word") << "items" << true;
        QTest::newRow("quoted") << "header:\"content-type=json\"" << true;
        QTest::newRow("route") << "route:/api/*" << true;
        QTest::newRow("protocol") << "protocol:h2" << false;
        QTest::newRow("error no") << "error:no" << true;
        QTest::newRow("rule") << "rule:auth" << true;
        QTest::newRow("rule case") << "rule:STRIP" << true;
        QTest::newRow("rule quoted") << "rule:\"strip cookies\"" << true;
        QTest::newRow("rule other") << "rule:cache" << false;
        QTest::newRow("rule negated") << "-rule:auth" << false;
        QTest::newRow("rule negated other") << "-rule:cache" << true;
    }
    void filter() {
        QFETCH(QString, expr);
        QFETCH(bool, matches);
        capture::Exchange e;
        e.method = "POST";
        e.status = 404;
        e.scheme = "http";
        e.authority = "localhost:8080";
        e.target = "/api/items?x=1";
        e.route = "/api/*";
        e.requestHeaders = {{"Content-Type", "application/json"}};
        e.rules = {"Add-Auth", "strip cookies"};
        std::string error;
        auto f = capture::Filter::parse(expr.toStdString(), error);
        QVERIFY2(f, error.c_str());
        QCOMPARE(f->matches(e), matches);
    }

    // An exchange no rule changed: `rule:` never matches it, `-rule:` always does; `rule:` needs
    // the full record (the Traffic list's rows do not carry the names).
    void filterRuleWithoutRules() {
        capture::Exchange e;
        std::string error;
        auto f = capture::Filter::parse("rule:auth", error);
        QVERIFY2(f, error.c_str());
        QVERIFY(!f->matches(e));
        QVERIFY(f->readsHeaders());
        f = capture::Filter::parse("-rule:auth", error);
        QVERIFY2(f, error.c_str());
        QVERIFY(f->matches(e));
        QVERIFY(!capture::Filter::parse("rule:", error));
    }

    void filterErrors() {
        std::string error;
        QVERIFY(!capture::Filter::parse("method:GET stauts:200", error));
        QCOMPARE(error, std::string("column 12: unknown key 'stauts' (did you mean 'status'?)"));
        QVERIFY(!capture::Filter::parse("status:abc", error));
        QVERIFY(error.starts_with("column 1: status: expected a number"));
        QVERIFY(!capture::Filter::parse("path:\"/a", error));
        QCOMPARE(error, std::string("column 6: unterminated quote"));
    }
};

QTEST_GUILESS_MAIN(TestCaptureCore)
#include "tst_capture_core.moc"

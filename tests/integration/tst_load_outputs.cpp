// The load generator's outputs for CI and for several machines, against `portico serve` on
// loopback: per-request breakdown, one-second latency intervals, the wall-clock start barrier,
// thresholds and their exit code, three generators started with --start-at then merged, and the
// drill-down sample of exchanges (Result::samples).
#include "test_support.h"

#include <portico/capture/session_file.h>
#include <portico/http/ascii.h>
#include <portico/load/merge.h>
#include <portico/load/runner.h>
#include <portico/load/thresholds.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <numeric>
#include <set>

using namespace portico;
using namespace std::chrono_literals;

namespace {

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

load::RequestSpec spec(const QString& url, unsigned weight = 1) {
    load::RequestSpec r;
    r.url = url.toStdString();
    r.weight = weight;
    return r;
}

// A server recording to DB (in `dir`, which has portico.yaml) under two runs made by `make(base URL, h2)`,
// HTTP/1.1 then HTTP/2, each with samples; then the server's records. Fails the test on a
// failed run or an unreadable session file.
void recordedRuns(const QTemporaryDir& dir, const QString& dbName, std::vector<load::Result>& runs,
                  std::vector<capture::Exchange>& exchanges,
                  const std::function<load::Options(const QString&, bool)>& make) {
    const QString db = dir.filePath(dbName);
    test::ServerProcess recording({"--config", dir.filePath("portico.yaml"), "--no-reload", "--record", db});
    QVERIFY2(recording.waitReady(), recording.output().constData());
    for (bool h2 : {false, true}) {
        auto r = load::run(make(recording.baseUrl(), h2));
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(!r.samples.empty());
        runs.push_back(std::move(r));
    }
    QCOMPARE(recording.terminate(), 0);
    std::string error;
    exchanges = capture::loadSessionFile(db.toStdString(), error);
    QVERIFY2(error.empty(), error.c_str());
}

// What every sample must satisfy whatever the run: "" or what is wrong with samples[i].
QString sampleProblem(const load::Result& r, std::size_t i) {
    const auto& x = r.samples[i];
    const QString at = QStringLiteral("samples[%1] (request %2, connection %3, sequence %4): ")
                           .arg(i)
                           .arg(x.request)
                           .arg(x.connection)
                           .arg(x.sequence);
    if (x.request >= r.options.requests.size()) return at + "request index out of range";
    if (x.connection >= r.options.connections) return at + "connection out of range";
    if (x.localPort == 0) return at + "no local port";
    if (x.sentNs < x.intendedNs) return at + "sent before intended";
    if (x.doneNs < x.sentNs) return at + "done before sent";
    if (x.intendedNs < 0) return at + "intended before the end of the warm-up";
    if (r.options.model() == load::Model::Closed && x.sentNs != x.intendedNs)
        return at + "closed model: intended != sent";
    const auto span = static_cast<std::uint64_t>(x.doneNs - x.intendedNs);
    if ((x.latencyNs > span ? x.latencyNs - span : span - x.latencyNs) > 1000)
        return at + QStringLiteral("latency %1 != done - intended %2").arg(x.latencyNs).arg(span);
    if (x.failure > 3) return at + "unknown failure kind";
    if (x.failure == 0 && (x.status < 100 || x.status > 599)) return at + "completed without a status";
    if (x.failure != 0 && x.status != 0) return at + "failed with a status";
    if (x.failure == 0 && x.firstByteNs < 0) return at + "completed without a first byte";
    if (x.firstByteNs >= 0 && (x.firstByteNs < x.sentNs || x.firstByteNs > x.doneNs))
        return at + "first byte outside sent..done";
    if (x.doneNs > r.measured.count()) return at + "done after the end of the measured run";
    if (i > 0 && r.samples[i - 1].doneNs > x.doneNs) return at + "not sorted by doneNs";
    for (std::size_t j = 0; j < i; ++j)
        if (r.samples[j] == x) return at + "listed twice";
    return {};
}

// The sample's own consistency, plus: without reconnects (`reconnects` false) one local port per
// connection and one connection per port; with them (a new port each time), (port, sequence)
// still names one request of a connection. On one connection's port a later request (higher
// sequence) was not sent earlier.
void checkSamples(const load::Result& r, bool reconnects) {
    QVERIFY(!r.samples.empty());
    std::map<std::uint32_t, std::set<std::uint16_t>> portsOf;
    std::map<std::uint16_t, std::set<std::uint32_t>> connectionsOf;
    // (connection, port, sequence) → sent
    std::map<std::tuple<std::uint32_t, std::uint16_t, std::uint32_t>, std::int64_t> sentAt;
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
        const QString problem = sampleProblem(r, i);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const auto& x = r.samples[i];
        portsOf[x.connection].insert(x.localPort);
        connectionsOf[x.localPort].insert(x.connection);
        QVERIFY2(sentAt.emplace(std::tuple{x.connection, x.localPort, x.sequence}, x.sentNs).second,
                 "two samples with the same connection, local port and sequence");
    }
    if (!reconnects) {
        for (const auto& [port, conns] : connectionsOf)
            QVERIFY2(conns.size() == 1,
                     qPrintable(QStringLiteral("port %1 on %2 connections").arg(port).arg(conns.size())));
        for (const auto& [conn, ports] : portsOf)
            QVERIFY2(ports.size() == 1,
                     qPrintable(QStringLiteral("connection %1 had %2 ports").arg(conn).arg(ports.size())));
    }
    for (auto it = sentAt.begin(); it != sentAt.end(); ++it) {
        const auto next = std::next(it);
        if (next != sentAt.end() && std::get<0>(next->first) == std::get<0>(it->first) &&
            std::get<1>(next->first) == std::get<1>(it->first))
            QVERIFY2(next->second >= it->second, "a later request on a connection was sent earlier");
    }
}

} // namespace

class TestLoadOutputs : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<test::ServerProcess> server_;

    QString url(const char* path) const { return server_->baseUrl() + path; }

private slots:
    void initTestCase() {
        qputenv("PORTICO_DATA_DIR", dir_.filePath("data").toUtf8());
        writeFile(dir_.filePath("portico.yaml"),
                  "listen: [\"127.0.0.1:0\"]\n"
                  "vhosts:\n"
                  "  - routes:\n"
                  "      - path: /fast\n"
                  "        respond: {body: fast}\n"
                  "      - path: /slow\n"
                  "        respond: {body: slow, latency: 5ms}\n"
                  "      - path: /drop\n"
                  "        respond: {body: x, drop_rate: 1}\n"
                  "      - path: /big\n"
                  "        respond: {file: big.bin, headers: {X-Kind: big}}\n");
        writeFile(dir_.filePath("big.bin"), QByteArray(300'000, 'b')); // spans several reads
        server_ = std::make_unique<test::ServerProcess>(
            QStringList{"--config", dir_.filePath("portico.yaml"), "--no-reload"});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        if (server_) QCOMPARE(server_->terminate(), 0);
    }

    // Three kinds by weight: each kind's counts, statuses and latency are its own, and they add up
    // to the totals; the text summary has the table.
    void byRequestAddsUp() {
        load::Options o;
        o.requests = {spec(url("/fast"), 3), spec(url("/missing"), 1), spec(url("/slow"), 1)};
        o.connections = 4;
        o.count = 2000;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.byRequest.size(), std::size_t(3));
        std::uint64_t started = 0, completed = 0, latencies = 0;
        for (const auto& k : r.byRequest) {
            started += k.requests.started;
            completed += k.requests.completed;
            QVERIFY(k.latency);
            QCOMPARE(k.latency->count(), k.requests.completed);
            latencies += k.latency->count();
            QVERIFY(k.requests.completed > 0);
        }
        QCOMPARE(started, r.requests.started);
        QCOMPARE(completed, r.requests.completed);
        QCOMPARE(latencies, r.latency->count());
        // Kinds are drawn by weight (3:1:1): shares within 5 points (binomial sd ≈ 1.1 points).
        const double n = double(r.requests.started + r.warmup.started);
        const double shares[] = {0.6, 0.2, 0.2};
        for (std::size_t i = 0; i < 3; ++i) {
            const double share = double(r.byRequest[i].requests.started) / double(r.requests.started);
            QVERIFY2(std::abs(share - shares[i]) < 0.05,
                     qPrintable(QString("kind %1: %2 of %3").arg(i).arg(share).arg(n)));
        }
        QCOMPARE(r.byRequest[0].statuses.size(), std::size_t(1));
        QCOMPARE(r.byRequest[0].statuses.at(200), r.byRequest[0].requests.completed);
        QCOMPARE(r.byRequest[1].statuses.at(404), r.byRequest[1].requests.completed);
        QCOMPARE(r.statuses.at(404), r.byRequest[1].requests.completed);
        // Weight 3 of 5: about 60 % (2000 draws: ±5 % is > 4 standard deviations).
        const double share = double(r.byRequest[0].requests.started) / double(r.requests.started);
        QVERIFY2(share > 0.55 && share < 0.65, qPrintable(QString::number(share)));
        // The 5 ms route is the slow one, the others are not.
        QVERIFY(r.byRequest[2].latency->valueAtPercentile(50) >= 5'000'000);
        QVERIFY(r.byRequest[0].latency->valueAtPercentile(50) < 5'000'000);
        const auto text = QString::fromStdString(load::summaryText(r));
        QVERIFY2(text.contains("By request") && text.contains("GET /missing") && text.contains("404:"),
                 qPrintable(text));
    }

    // One kind: byRequest is the totals.
    void byRequestSingleKind() {
        load::Options o;
        o.requests = {spec(url("/fast"))};
        o.count = 300;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.byRequest.size(), std::size_t(1));
        QCOMPARE(r.byRequest[0].requests.completed, r.requests.completed);
        QCOMPARE(r.byRequest[0].latency->valueAtPercentile(99), r.latency->valueAtPercentile(99));
        QVERIFY(!QString::fromStdString(load::summaryText(r)).contains("By request"));
    }

    // One histogram per second of the measured run; together they are the run's latency.
    void latencyIntervals() {
        load::Options o;
        o.requests = {spec(url("/slow"))};
        o.connections = 2;
        o.duration = 2500ms;
        o.warmup = 200ms;
        o.latencyIntervals = true;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.intervals.size(), std::size_t(3));
        std::uint64_t total = 0, max = 0;
        for (std::size_t i = 0; i < r.intervals.size(); ++i) {
            const auto& iv = r.intervals[i];
            QCOMPARE(iv.start, std::chrono::nanoseconds(std::chrono::seconds(i)));
            QVERIFY(iv.count() > 100); // 2 connections × ~190 responses of 5 ms per second
            QVERIFY(iv.maxNs >= iv.buckets.back().lowestNs && iv.maxNs <= iv.buckets.back().highestNs);
            total += iv.count();
            max = std::max(max, iv.maxNs);
        }
        QCOMPARE(r.intervals[0].length, std::chrono::nanoseconds(1s));
        QVERIFY(r.intervals[2].length <= std::chrono::nanoseconds(1s));
        QCOMPARE(total, r.latency->count());
        QCOMPARE(max, r.latency->max());
        // Off by default.
        o.latencyIntervals = false;
        o.duration = 300ms;
        QVERIFY(load::run(o).intervals.empty());
    }

    // The run waits for its start time, then measures from it.
    void startBarrier() {
        load::Options o;
        o.requests = {spec(url("/fast"))};
        o.count = 50;
        const auto before = std::chrono::system_clock::now();
        o.startAt = before + 1500ms;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY2(r.startedAt >= o.startAt, load::isoTime(r.startedAt).c_str());
        QVERIFY2(r.startedAt < o.startAt + 1s, load::isoTime(r.startedAt).c_str());
        // Too far ahead is refused at once.
        o.startAt = std::chrono::system_clock::now() + std::chrono::hours(25);
        auto refused = load::run(o);
        QVERIFY(!refused.ok());
        QVERIFY2(QString::fromStdString(refused.error).contains("24 hours"), refused.error.c_str());
    }

    // --threshold: met → 0, breached → 3 with the line and the JSON outcome, malformed → 2.
    void thresholdsExitCode() {
        const QString json = dir_.filePath("thresholds.json");
        auto met = test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-n", "300", "--no-save",
                                                            "--threshold", "p99<10s", "--threshold",
                                                            "errors<1%", "--threshold", "status:2xx>=99%"});
        QVERIFY2(met.exitCode == 0, met.out + met.err);
        QVERIFY2(met.out.contains("Thresholds:") && met.out.contains("met       p99<10s"),
                 met.out.constData());
        auto breached = test::runProcess(test::porticoBinary(),
                                         {"bench", url("/slow"), "-n", "50", "--no-save", "--threshold",
                                          "p50<1ms", "--threshold", "rps>0", "--json", json});
        QCOMPARE(breached.exitCode, 3);
        QVERIFY2(breached.out.contains("BREACHED  p50<1ms"), breached.out.constData());
        QVERIFY2(breached.out.contains("met       rps>0"), breached.out.constData());
        const auto t = readJson(json)["thresholds"].toArray();
        QCOMPARE(t.size(), 2);
        QCOMPARE(t[0].toObject()["expr"].toString(), QStringLiteral("p50<1ms"));
        QCOMPARE(t[0].toObject()["ok"].toBool(), false);
        QVERIFY(t[0].toObject()["value"].toDouble() >= 5e6);
        QCOMPARE(t[0].toObject()["unit"].toString(), QStringLiteral("ns"));
        QCOMPARE(t[1].toObject()["ok"].toBool(), true);
        auto malformed = test::runProcess(test::porticoBinary(),
                                          {"bench", url("/fast"), "-n", "5", "--threshold", "p99<fast"});
        QCOMPARE(malformed.exitCode, 2);
        QVERIFY2(malformed.err.contains("threshold 'p99<fast'"), malformed.err.constData());
        // A run that could not take place keeps exit 1, thresholds or not.
        auto refused = test::runProcess(test::porticoBinary(), {"bench", "http://127.0.0.1:9/", "-n", "5",
                                                                "--no-save", "--threshold", "rps>1"});
        QCOMPARE(refused.exitCode, 1);
    }

    // A normal run keeps a sample: each entry consistent (times, latency as recorded, request,
    // status, connection and port); every second of the run and the histogram's range covered.
    void samplesNormalRun() {
        load::Options o;
        o.requests = {spec(url("/fast"))};
        o.connections = 4;
        o.threads = 2;
        o.pipeline = 2;
        o.duration = 2200ms;
        o.warmup = 100ms;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests.failed, std::uint64_t(0));
        checkSamples(r, false);
        if (QTest::currentTestFailed()) return;
        std::set<std::int64_t> seconds;
        for (const auto& x : r.samples) {
            QCOMPARE(x.status, 200);
            QCOMPARE(x.failure, std::uint8_t(0));
            QVERIFY(x.latencyNs >= r.latency->min() && x.latencyNs <= r.latency->max());
            seconds.insert(x.doneNs / 1'000'000'000);
        }
        QVERIFY2(seconds.count(0) && seconds.count(1) && seconds.count(2),
                 qPrintable(QStringLiteral("seconds covered: %1").arg(seconds.size())));
        // The slowest request of the run is in the sample (the only one in its top bin is kept).
        const auto slowest =
            std::max_element(r.samples.begin(), r.samples.end(),
                             [](const auto& a, const auto& b) { return a.latencyNs < b.latencyNs; });
        QCOMPARE(load::latencySampleBin(slowest->latencyNs), load::latencySampleBin(r.latency->max()));
        // Bounded: far fewer than the requests.
        QVERIFY(r.samples.size() <= load::kSampleBins * 4 + 4 * 4);
        QVERIFY(r.requests.completed > 10 * r.samples.size());

        // Open model: intended ≤ sent, the latency from the intended time.
        o.rate = 2000;
        o.duration = 600ms;
        auto open = load::run(o);
        QVERIFY2(open.ok(), open.error.c_str());
        checkSamples(open, false);
    }

    // Each sample names its server-side record: a server recording its exchanges has one whose
    // client port is the sample's localPort and whose index on the connection is the sequence
    // (HTTP/1.1: streamId = sequence + 1; HTTP/2: stream id = 2 × sequence + 1), with the same
    // target and status, and the response fields the sample kept are the ones that record says
    // were sent (HTTP/1.1 also for /big, whose body spans reads after its head was parsed;
    // HTTP/2 decides at the head whether a request is sampled, so every sample has them).
    void samplesFindServerRecords() {
        std::vector<load::Result> runs;
        std::vector<capture::Exchange> exchanges;
        recordedRuns(dir_, "record.db", runs, exchanges, [](const QString& base, bool h2) {
            load::Options o;
            o.requests = {spec(base + "/fast", 3), spec(base + "/slow", 1), spec(base + "/big", 1)};
            o.connections = 3;
            o.count = 300;
            o.warmup = 50ms;
            if (h2) {
                o.protocol = load::Protocol::Http2;
                o.streams = 4;
            } else {
                o.pipeline = 2;
            }
            return o;
        });
        if (QTest::currentTestFailed()) return;
        // Records by (client port, stream id): a port may come back in the other run.
        std::multimap<std::pair<std::uint16_t, std::uint32_t>, const capture::Exchange*> byKey;
        for (const auto& e : exchanges) {
            const auto colon = e.client.rfind(':');
            QVERIFY(colon != std::string::npos);
            byKey.emplace(
                std::pair{static_cast<std::uint16_t>(std::stoi(e.client.substr(colon + 1))), e.streamId}, &e);
        }
        for (std::size_t run = 0; run < runs.size(); ++run) {
            const auto& r = runs[run];
            std::size_t found = 0, withFields = 0;
            std::set<std::string> kinds; // of the samples with fields
            // Fields as (lower-case name, value), sorted: HTTP/2 names are lower-case on the wire.
            auto canonical = [](const auto& fields) {
                std::vector<std::pair<std::string, std::string>> out;
                for (const auto& f : fields) {
                    std::string name = f.first;
                    for (auto& c : name)
                        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                    out.emplace_back(name, f.second);
                }
                std::sort(out.begin(), out.end());
                return out;
            };
            for (const auto& x : r.samples) {
                const std::uint32_t id = run == 1 ? 2 * x.sequence + 1 : x.sequence + 1;
                static const char* const kPaths[] = {"/fast", "/slow", "/big"};
                const std::string path = kPaths[x.request];
                const auto [from, to] = byKey.equal_range({x.localPort, id});
                const capture::Exchange* record = nullptr;
                for (auto k = from; k != to; ++k)
                    if (k->second->target == path && k->second->status == x.status &&
                        k->second->httpVersion == (run == 1 ? 20 : 11))
                        record = k->second;
                const bool match = record != nullptr;
                QVERIFY2(match, qPrintable(QStringLiteral(
                                               "run %1: no %2 record for port %3 id %4 (%5 with that key)")
                                               .arg(run)
                                               .arg(QString::fromStdString(path))
                                               .arg(x.localPort)
                                               .arg(id)
                                               .arg(std::distance(from, to))));
                ++found;
                QVERIFY2(x.responseHeaders, run == 0 ? "an HTTP/1.1 sample without its response fields"
                                                     : "an HTTP/2 sample without its response fields");
                ++withFields;
                kinds.insert(path);
                std::vector<std::pair<std::string, std::string>> sent;
                for (const auto& h : record->responseHeaders)
                    if (!h.name.starts_with(':'))
                        sent.emplace_back(h.name, h.value); // the record has :status
                auto text = [](const auto& fields) {
                    QStringList out;
                    for (const auto& [name, value] : fields)
                        out << QString::fromStdString(name + ": " + value);
                    return out.join(" | ");
                };
                QVERIFY2(canonical(*x.responseHeaders) == canonical(sent),
                         qPrintable(QStringLiteral("run %1 %2: kept %3; sent %4")
                                        .arg(run)
                                        .arg(QString::fromStdString(path))
                                        .arg(text(canonical(*x.responseHeaders)))
                                        .arg(text(canonical(sent)))));
                if (path == "/big")
                    QVERIFY(std::find(
                                x.responseHeaders->begin(), x.responseHeaders->end(),
                                std::pair<std::string, std::string>(run == 1 ? "x-kind" : "X-Kind", "big")) !=
                            x.responseHeaders->end());
            }
            QCOMPARE(found, r.samples.size());
            QCOMPARE(withFields, r.samples.size());
            QCOMPARE(kinds.size(), std::size_t(3));
            for (const auto& x : r.samples)
                QVERIFY2(x.requestId.empty(), "a request id without Options::requestId");
        }
        for (const auto& e : exchanges) // ids are opt-in: none was sent
            for (const auto& h : e.requestHeaders)
                QVERIFY2(!http::iequals(h.name, "x-request-id"), e.target.c_str());
    }

    // With Options::requestId every request carries `x-request-id: RUN-CONNECTION.PORT.N` (HTTP/1.1
    // inserted before the blank line, also ahead of a body; HTTP/2 a literal after the prepared
    // fields): the server's records each have exactly one, all different, naming the record's own client port
    // and its index on the connection, one run id per run; and each sample's requestId is the id of a record
    // with its target and status.
    void requestIdsNameServerRecords() {
        std::vector<load::Result> runs;
        std::vector<capture::Exchange> exchanges;
        recordedRuns(dir_, "ids.db", runs, exchanges, [](const QString& base, bool h2) {
            load::Options o;
            auto post = spec(base + "/fast", 1);
            post.method = "POST";
            post.headers = {{"X-Test", "ids"}, {"X-Request-Id", "given"}}; // replaced by the run's
            post.body = "hello body";
            o.requests = {spec(base + "/fast", 2), post, spec(base + "/slow", 1)};
            o.connections = 3;
            o.count = 400;
            o.requestId = true;
            if (h2) {
                o.protocol = load::Protocol::Http2;
                o.streams = 8;
            } else {
                o.pipeline = 3;
            }
            return o;
        });
        if (QTest::currentTestFailed()) return;
        for (const auto& r : runs) {
            QCOMPARE(r.errors.reset + r.errors.timeout + r.errors.protocol, std::uint64_t(0));
            // What was sent: the given id left out of the kind's fields.
            QCOMPARE(r.options.requests[1].headers.size(), std::size_t(1));
            QCOMPARE(r.options.requests[1].headers[0].first, std::string("X-Test"));
        }
        const QRegularExpression form("^([0-9a-f]{12})-([0-9]+)\\.([0-9]+)\\.([0-9]+)$");
        std::map<std::string, const capture::Exchange*> byId;
        std::set<std::string> runIds;
        for (const auto& e : exchanges) {
            std::vector<std::string> ids;
            for (const auto& h : e.requestHeaders)
                if (http::iequals(h.name, "x-request-id")) ids.push_back(h.value);
            QVERIFY2(ids.size() == 1, qPrintable(QStringLiteral("record #%1 (%2) has %3 x-request-id fields")
                                                     .arg(e.id)
                                                     .arg(QString::fromStdString(e.target))
                                                     .arg(ids.size())));
            const auto m = form.match(QString::fromStdString(ids.front()));
            QVERIFY2(m.hasMatch(), ids.front().c_str());
            runIds.insert(m.captured(1).toStdString());
            QVERIFY2(e.client.ends_with(":" + m.captured(3).toStdString()),
                     qPrintable(QString::fromStdString(ids.front() + " from " + e.client)));
            const std::uint32_t n = m.captured(4).toUInt();
            QCOMPARE(e.streamId, e.httpVersion == 20 ? 2 * n + 1 : n + 1);
            QVERIFY2(byId.emplace(ids.front(), &e).second, ids.front().c_str());
            if (e.method == "POST") { // the body still follows the fields intact
                QCOMPARE(e.requestBody, std::string("hello body"));
                QVERIFY(std::any_of(e.requestHeaders.begin(), e.requestHeaders.end(), [](const auto& h) {
                    return http::iequals(h.name, "x-test") && h.value == "ids";
                }));
            }
        }
        QCOMPARE(runIds.size(), runs.size());
        for (std::size_t run = 0; run < runs.size(); ++run)
            for (const auto& x : runs[run].samples) {
                static const char* const kPaths[] = {"/fast", "/fast", "/slow"};
                const auto it = byId.find(x.requestId);
                QVERIFY2(it != byId.end(),
                         qPrintable(QStringLiteral("run %1: sample id '%2' sent by no request")
                                        .arg(run)
                                        .arg(QString::fromStdString(x.requestId))));
                const auto& e = *it->second;
                QCOMPARE(e.target, std::string(kPaths[x.request]));
                QCOMPARE(e.method, std::string(x.request == 1 ? "POST" : "GET"));
                QCOMPARE(e.status, x.status);
                QCOMPARE(e.httpVersion, run == 1 ? 20 : 11);
                QVERIFY(x.requestId.starts_with(it->first.substr(0, 12)));
                QVERIFY2(x.requestId.find("-" + std::to_string(x.connection) + "." +
                                          std::to_string(x.localPort) + "." + std::to_string(x.sequence)) ==
                             12,
                         x.requestId.c_str());
            }
    }

    // Many kinds (more than the branch-free draw covers): each drawn in proportion to its weight.
    void manyKindsByWeight() {
        load::Options o;
        for (unsigned w = 1; w <= 10; ++w)
            o.requests.push_back(spec(url("/fast"), w));
        o.connections = 4;
        o.pipeline = 8;
        o.count = 11000;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.byRequest.size(), std::size_t(10));
        for (std::size_t i = 0; i < 10; ++i) {
            const double expected = double(i + 1) / 55.0 * double(r.requests.started);
            const double got = double(r.byRequest[i].requests.started);
            QVERIFY2(std::abs(got - expected) < 5 * std::sqrt(expected) + 10,
                     qPrintable(QString("kind %1 (weight %2): %3, expected %4")
                                    .arg(i)
                                    .arg(i + 1)
                                    .arg(got)
                                    .arg(expected)));
        }
    }

    // A route that drops every connection: every failed request is sampled (up to the cap) as a
    // reset, each on a fresh connection (sequence 0, its own port).
    void samplesFailedRequests() {
        load::Options o;
        o.requests = {spec(url("/drop")), spec(url("/fast"))};
        o.connections = 2;
        o.threads = 2;
        o.count = 120;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(r.requests.failed > 20);
        QCOMPARE(r.requests.failed, r.errors.reset);
        checkSamples(r, true);
        if (QTest::currentTestFailed()) return;
        std::uint64_t failed = 0;
        for (const auto& x : r.samples)
            if (x.failure) {
                ++failed;
                QCOMPARE(x.failure, std::uint8_t(1)); // reset
                QCOMPARE(x.request, std::uint32_t(0));
                QCOMPARE(x.status, 0);
            } else {
                QCOMPARE(x.request, std::uint32_t(1));
                QCOMPARE(x.status, 200);
            }
        QCOMPARE(failed, r.requests.failed); // all of them: fewer than the cap
        // The failures' series: every failure in a slot, as long as the completions' series.
        QCOMPARE(r.failedPerSlot.size(), r.perSlot.size());
        QCOMPARE(std::accumulate(r.failedPerSlot.begin(), r.failedPerSlot.end(), std::uint64_t{0}),
                 r.requests.failed);

        // More failures than the cap: the first kMaxFailedSamples are kept.
        o.requests = {spec(url("/drop"))};
        o.count = 0;
        o.duration = 1500ms;
        o.connections = 4;
        auto many = load::run(o);
        QVERIFY2(many.ok(), many.error.c_str());
        QVERIFY2(many.requests.failed > load::Result::kMaxFailedSamples,
                 qPrintable(QString::number(many.requests.failed)));
        checkSamples(many, true);
        QCOMPARE(many.samples.size(), load::Result::kMaxFailedSamples);
        for (const auto& x : many.samples)
            QVERIFY(x.failure == 1 && x.sequence == 0);
        // The first ones: none of them after the first half of the run.
        QVERIFY2(many.samples.back().doneNs < many.measured.count() / 2,
                 qPrintable(QString::number(many.samples.back().doneNs)));
        // 1.5 s of failures, each in the 100 ms slot it happened in: spread over the run, not
        // bunched. Interior slots (not the first, connecting, nor the last) have failures, but for
        // one in four at most: a loaded CI host can stall the generator for a slot or two.
        QCOMPARE(many.failedPerSlot.size(), many.perSlot.size());
        QVERIFY2(many.failedPerSlot.size() >= 14, qPrintable(QString::number(many.failedPerSlot.size())));
        QCOMPARE(std::accumulate(many.failedPerSlot.begin(), many.failedPerSlot.end(), std::uint64_t{0}),
                 many.requests.failed);
        std::size_t interior = 0, empty = 0;
        QString emptySlots;
        for (std::size_t s = 1; s + 1 < many.failedPerSlot.size(); ++s) {
            ++interior;
            if (many.failedPerSlot[s] == 0) {
                ++empty;
                emptySlots += QString(" %1").arg(s);
            }
        }
        QVERIFY2(
            4 * empty <= interior,
            qPrintable(
                QString("%1 of %2 slots without a failure:%3").arg(empty).arg(interior).arg(emptySlots)));
    }

    // At most kSamplesPerBin completions per latency bin and kSamplesPerSecond per second: the
    // entries of a bin beyond 4 can only be second samples, and the reverse.
    void samplesPerBinBound() {
        load::Options o;
        o.requests = {spec(url("/fast"))};
        o.connections = 8;
        o.threads = 2;
        o.pipeline = 4;
        o.duration = 1500ms;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        checkSamples(r, false);
        std::map<std::size_t, std::size_t> perBin;
        std::map<std::int64_t, std::size_t> perSecond;
        for (const auto& x : r.samples) {
            ++perBin[load::latencySampleBin(x.latencyNs)];
            ++perSecond[x.doneNs / 1'000'000'000];
        }
        std::size_t binExcess = 0, secondExcess = 0;
        for (const auto& [bin, n] : perBin)
            binExcess += n > load::Result::kSamplesPerBin ? n - load::Result::kSamplesPerBin : 0;
        for (const auto& [second, n] : perSecond)
            secondExcess += n > load::Result::kSamplesPerSecond ? n - load::Result::kSamplesPerSecond : 0;
        const QString what = QStringLiteral("%1 samples, %2 bins, %3 seconds, excess %4 / %5")
                                 .arg(r.samples.size())
                                 .arg(perBin.size())
                                 .arg(perSecond.size())
                                 .arg(binExcess)
                                 .arg(secondExcess);
        QVERIFY2(binExcess <= load::Result::kSamplesPerSecond * perSecond.size(), qPrintable(what));
        QVERIFY2(secondExcess <= load::Result::kSamplesPerBin * perBin.size(), qPrintable(what));
        QVERIFY2(r.samples.size() <= load::Result::kSamplesPerBin * perBin.size() +
                                         load::Result::kSamplesPerSecond * perSecond.size(),
                 qPrintable(what));
        // Busy bins hold thousands of completions: a bound that did not hold would show.
        QVERIFY2(r.requests.completed > 20 * r.samples.size(), qPrintable(what));
        // A bin with at least 4 samples is full; the busiest bins are.
        QVERIFY2(std::any_of(perBin.begin(), perBin.end(), [](const auto& b) { return b.second >= 4; }),
                 qPrintable(what));
    }

    // A slow (5 ms) and a fast route: samples in both latency ranges, each kind where it belongs.
    void samplesBothLatencyRanges() {
        load::Options o;
        o.requests = {spec(url("/fast"), 1), spec(url("/slow"), 1)};
        o.connections = 4;
        o.duration = 1s;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        checkSamples(r, false);
        std::set<std::size_t> fastBins, slowBins;
        for (const auto& x : r.samples) {
            if (x.request == 1) {
                QVERIFY2(x.latencyNs >= 5'000'000, qPrintable(QString::number(x.latencyNs)));
                slowBins.insert(load::latencySampleBin(x.latencyNs));
            } else if (x.latencyNs < 4'000'000) {
                fastBins.insert(load::latencySampleBin(x.latencyNs));
            }
        }
        QVERIFY(!slowBins.empty());
        QVERIFY(!fastBins.empty());
        QVERIFY(*fastBins.begin() < *slowBins.begin());
    }

    // Options::samples off (`--no-samples`): none kept; the CLI's JSON says so.
    void samplesOff() {
        load::Options o;
        o.requests = {spec(url("/drop")), spec(url("/fast"))};
        o.count = 200;
        o.samples = false;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(r.requests.failed > 0);
        QVERIFY(r.samples.empty());
        const QString on = dir_.filePath("samples-on.json"), off = dir_.filePath("samples-off.json");
        auto a = test::runProcess(test::porticoBinary(),
                                  {"bench", url("/fast"), "-n", "300", "--no-save", "--json", on});
        QVERIFY2(a.exitCode == 0, a.err.constData());
        auto b = test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-n", "300", "--no-save",
                                                          "--no-samples", "--json", off});
        QVERIFY2(b.exitCode == 0, b.err.constData());
        QVERIFY(readJson(on)["samples"].toArray().size() > 0);
        QCOMPARE(readJson(on)["options"].toObject()["samples"].toBool(), true);
        QVERIFY(readJson(off)["samples"].isArray());
        QCOMPARE(readJson(off)["samples"].toArray().size(), 0);
        QCOMPARE(readJson(off)["options"].toObject()["samples"].toBool(), false);
        const auto first = readJson(on)["samples"].toArray()[0].toObject();
        for (const char* key : {"request", "status", "failure", "intendedNs", "sentNs", "doneNs", "latencyNs",
                                "connection", "sequence", "localPort"})
            QVERIFY2(first.contains(key), key);
        QVERIFY(!first.contains("requestId")); // opt-in
        QCOMPARE(readJson(on)["options"].toObject()["requestId"].toBool(true), false);
        // --request-id: the option in the JSON and each sample's id, made of its own fields.
        const QString ids = dir_.filePath("request-ids.json");
        auto c = test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-n", "300", "-c", "2",
                                                          "--no-save", "--request-id", "--json", ids});
        QVERIFY2(c.exitCode == 0, c.err.constData());
        QCOMPARE(readJson(ids)["options"].toObject()["requestId"].toBool(false), true);
        const auto withIds = readJson(ids)["samples"].toArray();
        QVERIFY(!withIds.isEmpty());
        for (const auto& v : withIds) {
            const auto x = v.toObject();
            const QString tail = QStringLiteral("-%1.%2.%3")
                                     .arg(x["connection"].toInteger())
                                     .arg(x["localPort"].toInteger())
                                     .arg(x["sequence"].toInteger());
            QVERIFY2(x["requestId"].toString().size() == 12 + tail.size() &&
                         x["requestId"].toString().endsWith(tail),
                     qPrintable(x["requestId"].toString() + " " + tail));
        }
    }

    // The JSON keeps the samples (failed ones with their kind); read back, they are the same; two
    // runs merged keep both, shifted by each run's start.
    void samplesJsonRoundTripAndMerge() {
        load::Options o;
        o.requests = {spec(url("/fast"), 4), spec(url("/drop"), 1)};
        o.connections = 2;
        o.count = 400;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(r.requests.failed > 0);
        const std::string json = load::toJson(r);
        const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
        const auto list = doc["samples"].toArray();
        QCOMPARE(static_cast<std::size_t>(list.size()), r.samples.size());
        bool sawReset = false;
        for (const auto& v : list) {
            const auto e = v.toObject();
            if (e["failure"].isNull()) continue;
            QCOMPARE(e["failure"].toString(), QStringLiteral("reset"));
            sawReset = true;
        }
        QVERIFY(sawReset);
        load::Result back;
        std::string error;
        QVERIFY2(load::resultFromJson(json, back, error), error.c_str());
        QVERIFY(back.samples == r.samples);

        load::Result later;
        QVERIFY2(load::resultFromJson(json, later, error), error.c_str());
        later.startedAt = back.startedAt + 250ms;
        std::vector<load::Result> runs;
        runs.push_back(std::move(back));
        runs.push_back(std::move(later));
        load::Result merged;
        QVERIFY2(load::mergeResults(runs, merged, error), error.c_str());
        QCOMPARE(merged.samples.size(), 2 * r.samples.size());
        std::size_t shifted = 0;
        for (const auto& x : merged.samples)
            if (x.connection >= o.connections) { // the second run's connections follow the first's
                const auto orig = std::find_if(r.samples.begin(), r.samples.end(), [&](const auto& y) {
                    return y.connection + o.connections == x.connection && y.sequence == x.sequence &&
                           y.localPort == x.localPort;
                });
                QVERIFY(orig != r.samples.end());
                QCOMPARE(x.doneNs, orig->doneNs + 250'000'000);
                QCOMPARE(x.sentNs, orig->sentNs + 250'000'000);
                QCOMPARE(x.intendedNs, orig->intendedNs + 250'000'000);
                QCOMPARE(x.firstByteNs, orig->firstByteNs < 0 ? -1 : orig->firstByteNs + 250'000'000);
                QCOMPARE(x.latencyNs, orig->latencyNs);
                ++shifted;
            }
        QCOMPARE(shifted, r.samples.size());
        for (std::size_t i = 1; i < merged.samples.size(); ++i)
            QVERIFY(merged.samples[i - 1].doneNs <= merged.samples[i].doneNs);
    }

    // --start-at on the command line: a signal while waiting ends the command before any request
    // (exit 1, the JSON says why); a time that has passed starts with a warning; an empty value,
    // an impossible date and more than 24 h ahead are usage errors.
    void startAtCommandLine() {
        const QString json = dir_.filePath("waited.json");
        QProcess p;
        const QString later = QString::fromStdString(
            load::isoTime(std::chrono::system_clock::now() + std::chrono::minutes(10)));
        p.start(test::porticoBinary(),
                {"bench", url("/fast"), "-n", "50", "--no-save", "--start-at", later, "--json", json});
        QVERIFY(p.waitForStarted());
        QByteArray err;
        QVERIFY(QTest::qWaitFor(
            [&] {
                p.waitForReadyRead(50);
                err += p.readAllStandardError();
                return err.contains("Waiting until");
            },
            10000));
        ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(5000));
        err += p.readAllStandardError();
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains("stopped while waiting for the start time"), err.constData());
        QVERIFY2(!p.readAllStandardOutput().contains("Requests/sec"), "a summary after a cancelled wait");
        QVERIFY(readJson(json).contains("error"));

        auto past = test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-n", "20", "--no-save",
                                                             "--start-at", "2020-01-01T00:00:00Z"});
        QCOMPARE(past.exitCode, 0);
        QVERIFY2(past.err.contains("has passed: starting now"), past.err.constData());
        for (const char* bad : {"", "2026-02-30T00:00:00Z", "soon"}) {
            auto r = test::runProcess(test::porticoBinary(),
                                      {"bench", url("/fast"), "-n", "5", "--start-at", bad});
            QVERIFY2(r.exitCode == 2, bad);
        }
        const QString farAhead =
            QString::fromStdString(load::isoTime(std::chrono::system_clock::now() + std::chrono::hours(25)));
        auto far = test::runProcess(test::porticoBinary(),
                                    {"bench", url("/fast"), "-n", "5", "--start-at", farAhead});
        QCOMPARE(far.exitCode, 2);
        QVERIFY2(far.err.contains("more than 24 hours ahead"), far.err.constData());
    }

    // Output files: a run that cannot start leaves an existing .hgrm alone and writes an error page
    // as the report; two options naming one file are a usage error; a latency threshold on a run
    // in which nothing completed is breached.
    void outputFilesOnFailure() {
        const QString hgrm = dir_.filePath("keep.hgrm"), report = dir_.filePath("failed.html");
        writeFile(hgrm, "previous contents\n");
        auto down =
            test::runProcess(test::porticoBinary(), {"bench", "http://127.0.0.1:9/", "-n", "5", "--no-save",
                                                     "--hgrm", hgrm, "--report", report});
        QCOMPARE(down.exitCode, 1);
        QFile kept(hgrm);
        QVERIFY(kept.open(QIODevice::ReadOnly));
        QCOMPARE(kept.readAll(), QByteArray("previous contents\n"));
        QFile page(report);
        QVERIFY(page.open(QIODevice::ReadOnly));
        const QByteArray html = page.readAll();
        QVERIFY2(html.contains("cannot connect") && html.endsWith("</html>\n"), html.left(300).constData());
        // A new file that the run never wrote is not left behind empty.
        QVERIFY(!QFile::exists(dir_.filePath("never.hgrm")));
        auto none =
            test::runProcess(test::porticoBinary(), {"bench", "http://127.0.0.1:9/", "-n", "5", "--no-save",
                                                     "--hgrm", dir_.filePath("never.hgrm")});
        QCOMPARE(none.exitCode, 1);
        QVERIFY(!QFile::exists(dir_.filePath("never.hgrm")));

        auto same = test::runProcess(test::porticoBinary(),
                                     {"bench", url("/fast"), "-n", "5", "--json", dir_.filePath("x.out"),
                                      "--report", dir_.filePath("x.out")});
        QCOMPARE(same.exitCode, 2);
        QVERIFY2(same.err.contains("name the same file"), same.err.constData());

        auto dropped = test::runProcess(
            test::porticoBinary(), {"bench", url("/drop"), "-n", "20", "--no-save", "--threshold", "p99<1s"});
        QCOMPARE(dropped.exitCode, 3);
        QVERIFY2(dropped.out.contains("BREACHED  p99<1s  (measured nothing: no request completed)"),
                 dropped.out.constData());
    }

    // --merge refuses one file twice and runs of another model.
    void mergeRefusals() {
        const QString closed = dir_.filePath("closed.json"), open = dir_.filePath("open.json");
        QCOMPARE(test::runProcess(test::porticoBinary(),
                                  {"bench", url("/fast"), "-n", "50", "--no-save", "--json", closed})
                     .exitCode,
                 0);
        QCOMPARE(test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-R", "500", "-n", "50",
                                                          "--no-save", "--json", open})
                     .exitCode,
                 0);
        auto twice = test::runProcess(test::porticoBinary(), {"bench", "--merge", closed, closed});
        QCOMPARE(twice.exitCode, 2);
        QVERIFY2(twice.err.contains("given twice"), twice.err.constData());
        auto models = test::runProcess(test::porticoBinary(), {"bench", "--merge", closed, open});
        QCOMPARE(models.exitCode, 1);
        QVERIFY2(models.err.contains("another load model"), models.err.constData());
        auto one = test::runProcess(test::porticoBinary(), {"bench", "--merge", closed});
        QCOMPARE(one.exitCode, 0);
        QVERIFY2(one.out.startsWith("Merged 1 run\n"), one.out.constData());
    }

    // installers/k8s/bench-indexed-job.yaml run locally: its pod command, as an Indexed Job would
    // run it, for three workers on loopback with the same --start-at; they measure the same
    // interval, and --merge adds them into one result whose counts are the sums. Against one run
    // of the same total load (3 × the connections) the merge must be the same order of magnitude
    // (a merge that counted a worker twice or dropped one would be 1.5× off or more).
    void threeWorkersMerged() {
        QFile manifestFile(test::sourceDir() + "/installers/k8s/bench-indexed-job.yaml");
        QVERIFY(manifestFile.open(QIODevice::ReadOnly));
        QString manifest = QString::fromUtf8(manifestFile.readAll());
        const QString startAt =
            QString::fromStdString(load::isoTime(std::chrono::system_clock::now() + 2500ms));
        // envsubst with the variables the manifest names; ${JOB_COMPLETION_INDEX} stays.
        const QList<QPair<QString, QString>> vars = {{"WORKERS", "3"},
                                                     {"CONNECTIONS", "2"},
                                                     {"DURATION", "1s"},
                                                     {"PORTICO_IMAGE", "portico:test"},
                                                     {"TARGET_URL", url("/fast")},
                                                     {"START_AT", startAt}};
        for (const auto& [name, value] : vars) {
            QVERIFY2(manifest.contains("${" + name + "}"), qPrintable(name));
            manifest.replace("${" + name + "}", value);
        }
        const YAML::Node job = YAML::Load(manifest.toStdString());
        QCOMPARE(QString::fromStdString(job["kind"].as<std::string>()), QStringLiteral("Job"));
        QCOMPARE(QString::fromStdString(job["spec"]["completionMode"].as<std::string>()),
                 QStringLiteral("Indexed"));
        QCOMPARE(job["spec"]["completions"].as<int>(), 3);
        QCOMPARE(job["spec"]["parallelism"].as<int>(), 3);
        const auto container = job["spec"]["template"]["spec"]["containers"][0];
        QCOMPARE(container["command"][0].as<std::string>(), std::string("sh"));
        QString command = QString::fromStdString(container["args"][0].as<std::string>());
        QVERIFY2(command.startsWith("exec portico bench ") && command.contains("${JOB_COMPLETION_INDEX}"),
                 qPrintable(command));
        command.replace("exec portico ", "exec '" + test::porticoBinary() + "' ");
        command.replace("/results/", dir_.path() + "/");

        std::vector<std::unique_ptr<QProcess>> workers;
        QStringList files;
        for (int i = 0; i < 3; ++i) {
            files << dir_.filePath(QStringLiteral("worker-%1.json").arg(i));
            auto p = std::make_unique<QProcess>();
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert("JOB_COMPLETION_INDEX", QString::number(i));
            p->setProcessEnvironment(env);
            p->start("sh", {"-c", command});
            workers.push_back(std::move(p));
        }
        for (auto& p : workers) {
            QVERIFY(p->waitForFinished(30000));
            QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
        }
        std::uint64_t completed = 0;
        std::vector<double> starts;
        for (const auto& f : files) {
            const auto o = readJson(f);
            QVERIFY2(!o.isEmpty(), qPrintable(f));
            completed += static_cast<std::uint64_t>(o["requests"].toObject()["completed"].toInteger());
            std::chrono::system_clock::time_point t;
            QVERIFY(load::parseIsoTime(o["startedAt"].toString().toStdString(), t));
            starts.push_back(std::chrono::duration<double>(t.time_since_epoch()).count());
        }
        std::sort(starts.begin(), starts.end());
        QVERIFY2(starts.back() - starts.front() < 0.5,
                 qPrintable(QStringLiteral("starts spread over %1 s").arg(starts.back() - starts.front())));
        const QString merged = dir_.filePath("merged.json");
        auto m = test::runProcess(test::porticoBinary(),
                                  QStringList{"bench", "--merge"} + files + QStringList{"--json", merged});
        QVERIFY2(m.exitCode == 0, m.err.constData());
        QVERIFY2(m.out.startsWith("Merged 3 runs"), m.out.constData());
        const auto o = readJson(merged);
        QCOMPARE(static_cast<std::uint64_t>(o["requests"].toObject()["completed"].toInteger()), completed);
        QCOMPARE(o["options"].toObject()["connections"].toInt(), 6);
        QCOMPARE(static_cast<std::uint64_t>(o["latency"].toObject()["count"].toInteger()), completed);
        // They overlapped: the merged window is about one run's, not three.
        const double window = o["measuredSeconds"].toDouble();
        QVERIFY2(window >= 0.9 && window < 1.8, qPrintable(QString::number(window)));

        // One generator with the same total load.
        const QString single = dir_.filePath("single.json");
        auto one = test::runProcess(test::porticoBinary(), {"bench", url("/fast"), "-c", "6", "-t", "2", "-d",
                                                            "1s", "--no-save", "--json", single});
        QVERIFY2(one.exitCode == 0, one.err.constData());
        const double ratio =
            o["requestsPerSecond"].toDouble() / readJson(single)["requestsPerSecond"].toDouble();
        QVERIFY2(ratio > 0.4 && ratio < 2.5,
                 qPrintable(QStringLiteral("merged / single req/s = %1").arg(ratio)));
        qInfo("three merged workers: %.0f req/s; one generator with the same connections: %.0f req/s",
              o["requestsPerSecond"].toDouble(), readJson(single)["requestsPerSecond"].toDouble());

        // A damaged input is named and refused.
        writeFile(dir_.filePath("broken.json"), "{\"schema\":1,");
        auto broken = test::runProcess(test::porticoBinary(),
                                       {"bench", "--merge", files[0], dir_.filePath("broken.json")});
        QCOMPARE(broken.exitCode, 1);
        QVERIFY2(broken.err.contains("broken.json: not JSON"), broken.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestLoadOutputs)
#include "tst_load_outputs.moc"

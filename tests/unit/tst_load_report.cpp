// The HTML report of a load run (load/report.h) from hand-built Results: the figures and their
// units, escaping of every user-controlled string, no reference to anything the page could fetch,
// thresholds, the error page, monotonic percentile curve, histogram bars that add up, the throughput
// series, and a well-formed page for degenerate inputs.
#include <portico/load/report.h>

#include <QRegularExpression>
#include <QStringDecoder>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>

using namespace std::chrono_literals;
using portico::load::htmlReport;
using portico::load::Protocol;
using portico::load::RequestBreakdown;
using portico::load::RequestSpec;
using portico::load::Result;
using portico::load::ThresholdOutcome;
using portico::stats::Histogram;

namespace {

// The report's duration format (report.h: the text summary's units, "µs" for us).
QString dur(double ns) {
    if (ns < 1e3) return QString::asprintf("%.0f ns", ns);
    if (ns < 1e6) return QString::asprintf("%.2f \xC2\xB5s", ns / 1e3);
    if (ns < 1e9) return QString::asprintf("%.2f ms", ns / 1e6);
    return QString::asprintf("%.2f s", ns / 1e9);
}
QString dur(std::uint64_t ns) { return dur(static_cast<double>(ns)); }

RequestSpec spec(std::string url, std::string method = "GET") {
    RequestSpec q;
    q.url = std::move(url);
    q.method = std::move(method);
    return q;
}

QString page(const Result& r) { return QString::fromStdString(htmlReport(r)); }

const char* kEvilUrl = "http://127.0.0.1:8080/search?q=<script>alert(1)</script>&page=2";
const char* kEvilUrlEscaped =
    "http://127.0.0.1:8080/search?q=&lt;script&gt;alert(1)&lt;/script&gt;&amp;page=2";

// `n` latencies around `medianNs` (log-normal, fixed seed) into `h`.
void fill(Histogram& h, std::uint64_t n, double medianNs, double sigma, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> d(std::log(medianNs), sigma);
    for (std::uint64_t i = 0; i < n; ++i)
        h.record(static_cast<std::uint64_t>(d(rng)));
}

// A 5 s closed-model run of three request kinds (one URL and one header value with markup in them),
// 30000 completions, thresholds, 50 slots.
Result realistic() {
    Result r;
    r.options.requests = {
        RequestSpec{.url = kEvilUrl,
                    .method = "GET",
                    .headers = {{"X-Trace", "a<b>&\"c\""}},
                    .body = "",
                    .weight = 3},
        RequestSpec{.url = "http://127.0.0.1:8080/login",
                    .method = "POST",
                    .headers = {{"Content-Type", "application/json"}},
                    .body = "{\"user\":1}",
                    .weight = 1},
        RequestSpec{.url = "http://127.0.0.1:8080/static/app.css",
                    .method = "GET",
                    .headers = {},
                    .body = "",
                    .weight = 6},
    };
    r.options.connections = 64;
    r.options.threads = 2;
    r.options.duration = 5s;
    r.options.warmup = 1s;
    r.address = "127.0.0.1:8080";
    r.startedAt = std::chrono::sys_days{std::chrono::year{2026} / 3 / 14} + 15h + 9min + 26s;
    r.measured = 5s;
    const std::uint64_t completed[] = {9000, 3000, 18000};
    const double medians[] = {400e3, 2.5e6, 150e3};
    r.latency = std::make_unique<Histogram>();
    r.serviceTime = std::make_unique<Histogram>();
    for (int i = 0; i < 3; ++i) {
        RequestBreakdown b;
        b.latency = std::make_unique<Histogram>();
        fill(*b.latency, completed[i], medians[i], 0.6, 17u + static_cast<unsigned>(i));
        b.requests.completed = completed[i];
        b.statuses[200] = completed[i] - (i == 1 ? 40 : 0);
        if (i == 1) {
            b.statuses[401] = 40;
            b.errors.timeout = 3;
            b.requests.failed = 3;
        }
        b.requests.started = b.requests.completed + b.requests.failed;
        r.latency->merge(*b.latency);
        for (const auto& [code, n] : b.statuses)
            r.statuses[code] += n;
        r.requests.started += b.requests.started;
        r.requests.completed += b.requests.completed;
        r.requests.failed += b.requests.failed;
        r.errors.timeout += b.errors.timeout;
        r.byRequest.push_back(std::move(b));
    }
    r.serviceTime->merge(*r.latency);
    r.warmup.started = r.warmup.completed = 4800;
    r.bytesRead = 9'000'000;
    r.bytesWritten = 2'500'000;
    r.measuredBytesRead = 7'500'000;
    r.measuredBytesWritten = 2'000'000;
    for (int i = 0; i < 50; ++i) // 6000 req/s with a dip at 2.0 s and the catch-up after it: 30000
        r.perSlot.push_back(i == 20 ? 300 : i == 21 ? 900 : 600);
    r.cpuUserSeconds = 1.25;
    r.cpuSystemSeconds = 2.5;
    r.thresholds = {ThresholdOutcome{.expr = "p99<250ms", .value = 180e6, .unit = "ns", .ok = true},
                    ThresholdOutcome{.expr = "errors<0.001%", .value = 0.01, .unit = "%", .ok = false},
                    ThresholdOutcome{.expr = "rps>5000", .value = 6000, .unit = "req/s", .ok = true}};
    return r;
}

// The text between the first `open` and the following `close` (empty if absent).
QString between(const QString& s, const QString& open, const QString& close) {
    const qsizetype a = s.indexOf(open);
    if (a < 0) return {};
    const qsizetype b = s.indexOf(close, a);
    return b < 0 ? QString() : s.mid(a, b + close.size() - a);
}

// The points of every <polyline class="cls"> in `svg`.
QList<QList<QPointF>> polylines(const QString& svg, const QString& cls) {
    QList<QList<QPointF>> lines;
    QRegularExpression re("<polyline class=\"" + QRegularExpression::escape(cls) + "\" points=\"([^\"]*)\"");
    for (auto it = re.globalMatch(svg); it.hasNext();) {
        QList<QPointF> pts;
        for (const QString& pair : it.next().captured(1).split(' ', Qt::SkipEmptyParts)) {
            const auto xy = pair.split(',');
            pts.append(xy.size() == 2 ? QPointF(xy[0].toDouble(), xy[1].toDouble()) : QPointF(-1e9, -1e9));
        }
        lines.append(pts);
    }
    return lines;
}

// Checks every document must pass; returns an empty string or what failed.
QString wellFormed(const QString& html, const QByteArray& bytes) {
    if (!html.startsWith("<!DOCTYPE html>\n")) return "does not start with <!DOCTYPE html>";
    if (!html.endsWith("</html>\n")) return "does not end with </html>";
    if (html.count("</html>") != 1) return "</html> more than once";
    QStringDecoder decoder(QStringDecoder::Utf8);
    QString decoded = decoder.decode(bytes);
    if (decoder.hasError()) return "not valid UTF-8";
    if (bytes.contains('\0')) return "holds a NUL byte";
    for (const char* tag : {"svg", "section", "table", "tr", "div", "main", "header", "style", "title"}) {
        const auto opens = html.count(QRegularExpression(QString("<%1[ >]").arg(tag)));
        const auto closes = html.count(QString("</%1>").arg(tag));
        if (opens != closes) return QString("<%1> %2 opened, %3 closed").arg(tag).arg(opens).arg(closes);
    }
    // Numbers in attributes (SVG coordinates) are finite.
    const QRegularExpression nonFinite("=\"[^\"]*\\b(nan|inf)", QRegularExpression::CaseInsensitiveOption);
    if (html.contains(nonFinite))
        return "an attribute holds nan or inf: " + nonFinite.match(html).captured(0);
    if (html.contains(QRegularExpression("<script", QRegularExpression::CaseInsensitiveOption)))
        return "a <script";
    return {};
}

} // namespace

class TestLoadReport : public QObject {
    Q_OBJECT
private slots:
    void figuresInTheirUnits() {
        const Result r = realistic();
        const QString html = page(r);
        QVERIFY2(wellFormed(html, html.toUtf8()).isEmpty(), qPrintable(wellFormed(html, html.toUtf8())));
        // 30000 completions in 5 s.
        QCOMPARE(r.requests.completed, 30000u);
        QVERIFY(html.contains(QRegularExpression("Requests/sec</th><td class=\"n\">6000.00<")));
        QVERIFY(html.contains(QRegularExpression("Completed</th><td class=\"n\">30000<")));
        QVERIFY(html.contains(QRegularExpression("Requests started</th><td class=\"n\">30003<")));
        QVERIFY(html.contains(QRegularExpression("Failed</th><td class=\"n\">3<")));
        QVERIFY(html.contains(QRegularExpression("Cancelled</th><td class=\"n\">0<")));
        QVERIFY(html.contains("1.43 MiB read")); // 7'500'000 B / 5 s
        QVERIFY(html.contains("timeout 3"));
        QVERIFY(html.contains(">200: 29960<"));
        QVERIFY(html.contains(">401: 40<"));
        QVERIFY(html.contains("1.25 s user, 2.50 s system (38 % of 2 thread(s))"));
        // The latency table's cells in order: min, mean, stddev, p50 … p99.99, max.
        const QString table = between(html, "<table id=\"latency-table\"", "</table>");
        QVERIFY(!table.isEmpty());
        const Histogram& h = *r.latency;
        QStringList expected{dur(h.min()), dur(h.mean()), dur(h.stddev())};
        for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99})
            expected << dur(h.valueAtPercentile(p));
        expected << dur(h.max());
        qsizetype at = 0;
        for (const QString& cell : expected) {
            const qsizetype found = table.indexOf("<td class=\"n\">" + cell + "</td>", at);
            QVERIFY2(found >= 0, qPrintable("latency cell " + cell + " missing or out of order in " + table));
            at = found + 1;
        }
        // The p99 appears as a key figure too.
        QVERIFY(html.contains("Latency p99</div><div class=\"v\">" + dur(h.valueAtPercentile(99)) + "<"));
    }

    void runParameters() {
        Result r = realistic();
        r.options.protocol = Protocol::Http2;
        r.options.streams = 8;
        r.options.rate = 500;
        const QString html = page(r);
        QVERIFY(html.contains("<span class=\"u\">127.0.0.1:8080</span>"));
        QVERIFY(html.contains("h2c, 8 stream(s) per connection"));
        QVERIFY(html.contains("open: 500.00 req/s arrival rate"));
        QVERIFY(html.contains("Connections</th><td>64<"));
        QVERIFY(html.contains("Threads</th><td>2<"));
        QVERIFY(html.contains("Duration / count</th><td>5.00 s<"));
        QVERIFY(html.contains("Warm-up</th><td>1.00 s<"));
        QVERIFY(html.contains("TLS</th><td>no<"));
        QVERIFY(html.contains("2026-03-14T15:09:26Z"));
        QVERIFY(html.contains("portico bench " PORTICO_VERSION));
        QVERIFY(html.contains("weight 6"));
        QVERIFY(html.contains(
            "<span class=\"method\">POST</span><span class=\"u\">http://127.0.0.1:8080/login<"));
        Result tls = realistic();
        for (auto& q : tls.options.requests)
            q.url.replace(0, 4, "https");
        tls.options.insecure = true;
        QVERIFY(page(tls).contains("TLS</th><td>yes, certificate not verified"));
        QVERIFY(page(tls).contains("HTTP/1.1, pipeline 1"));
    }

    void userTextIsEscaped() {
        Result r = realistic();
        r.options.caFile = "/tmp/<ca>.pem";
        const QString html = page(r);
        QVERIFY(html.contains(kEvilUrlEscaped));
        QVERIFY(!html.contains(kEvilUrl));
        QVERIFY(!html.contains(QRegularExpression("<script", QRegularExpression::CaseInsensitiveOption)));
        QVERIFY(html.contains("X-Trace: a&lt;b&gt;&amp;&quot;c&quot;"));
        // Every & starts one of the entities the page uses.
        const QRegularExpression rawAmp("&(?!(amp|lt|gt|quot|#39);)");
        QVERIFY2(!html.contains(rawAmp), qPrintable(html.mid(rawAmp.match(html).capturedStart() - 40, 80)));
        // Invalid UTF-8 and control characters become U+FFFD; the page stays valid UTF-8.
        Result bad = realistic();
        bad.options.requests[1].url = std::string(
            "http://127.0.0.1:8080/\xff\xfe\xc0\xaf/a\0b\x1b\xed\xa0\x80", 34); // without the literal's NUL
        const std::string raw = htmlReport(bad);
        const QByteArray bytes = QByteArray::fromStdString(raw);
        const QString decoded = QString::fromStdString(raw);
        QVERIFY2(wellFormed(decoded, bytes).isEmpty(), qPrintable(wellFormed(decoded, bytes)));
        QVERIFY(decoded.contains(QString("http://127.0.0.1:8080/") + QString(4, QChar(0xFFFD)) + "/a" +
                                 QChar(0xFFFD) + "b" + QString(4, QChar(0xFFFD))));
    }

    void nothingToFetch() {
        Result open = realistic();
        open.options.rate = 6000;
        open.missedArrivals = 7;
        for (const Result* r : {&open}) {
            const QString html = page(*r);
            for (const char* attr : {"src", "href", "srcset", "action", "formaction", "poster", "data",
                                     "background", "xlink:href", "ping", "manifest", "cite", "longdesc"}) {
                const QRegularExpression re(QString("\\s%1\\s*=").arg(QRegularExpression::escape(attr)),
                                            QRegularExpression::CaseInsensitiveOption);
                QVERIFY2(!html.contains(re), attr);
            }
            for (const char* s : {"url(", "@import", "<link", "<img", "<iframe", "<object", "<embed", "<base",
                                  "<script", "<audio", "<video", "<source", "<frame", "<form", "<use"})
                QVERIFY2(!html.contains(s, Qt::CaseInsensitive), s);
            // Any "://" is in text, never inside a tag (an attribute): the page names URLs, it does not use
            // them.
            bool inTag = false;
            int schemes = 0;
            for (qsizetype i = 0; i < html.size(); ++i) {
                if (html[i] == '<') inTag = true;
                if (html[i] == '>') inTag = false;
                if (html.mid(i, 3) == "://") {
                    ++schemes;
                    QVERIFY2(!inTag, qPrintable("a URL inside a tag: " + html.mid(i - 60, 120)));
                }
            }
            QVERIFY(schemes >= 3); // the URLs are shown (as text)
            QVERIFY(
                html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"));
        }
    }

    void thresholdsSayMetOrBreached() {
        const QString html = page(realistic());
        const QRegularExpression row(
            "<tr class=\"(met|breached)\"><td class=\"u\">([^<]*)</td><td "
            "class=\"n\">([^<]*)</td><td><span class=\"chip (ok|bad)\">[^ ]* (met|breached)<");
        QStringList rows;
        for (auto it = row.globalMatch(html); it.hasNext();) {
            const auto m = it.next();
            QCOMPARE(m.captured(1), m.captured(5));
            QCOMPARE(m.captured(4), QString(m.captured(1) == "met" ? "ok" : "bad"));
            rows << m.captured(2) + " | " + m.captured(3) + " | " + m.captured(1);
        }
        QCOMPARE(rows, (QStringList{"p99&lt;250ms | 180.00 ms | met", "errors&lt;0.001% | 0.01% | breached",
                                    "rps&gt;5000 | 6000.00 req/s | met"}));
        QVERIFY(html.contains("1 threshold(s) breached"));
        QVERIFY(html.contains("1 of 3 breached"));
        // None: no section, no verdict.
        Result none = realistic();
        none.thresholds.clear();
        QVERIFY(!page(none).contains("id=\"thresholds\""));
        QVERIFY(!page(none).contains("breached"));
        // All met, and an outcome without a unit gets one from its key.
        Result met = realistic();
        met.thresholds = {ThresholdOutcome{.expr = "p99.9 <= 1s", .value = 2.5e6, .unit = "", .ok = true}};
        QVERIFY(page(met).contains("all thresholds met"));
        QVERIFY(page(met).contains("<td class=\"n\">2.50 ms</td>"));
        // Nothing completed: a latency threshold has no measured value (judge stored 0), a rate one
        // has its 0.
        Result nothing = realistic();
        nothing.requests.completed = 0;
        nothing.thresholds = {ThresholdOutcome{.expr = "p99<1s", .value = 0, .unit = "ns", .ok = false},
                              ThresholdOutcome{.expr = "rps>10", .value = 0, .unit = "req/s", .ok = false}};
        const QString none0 = page(nothing);
        QVERIFY(none0.contains(QString::fromUtf8("<td class=\"n\">\u2014 (nothing completed)</td>")));
        QVERIFY(!none0.contains("<td class=\"n\">0 ns</td>"));
        QVERIFY(none0.contains("<td class=\"n\">0.00 req/s</td>"));
    }

    void errorRun() {
        Result r;
        r.error = "connect to 127.0.0.1:9: refused <b>&</b>";
        r.options.requests = {spec(kEvilUrl)};
        const QString html = page(r);
        QVERIFY2(wellFormed(html, html.toUtf8()).isEmpty(), qPrintable(wellFormed(html, html.toUtf8())));
        QVERIFY(html.contains("connect to 127.0.0.1:9: refused &lt;b&gt;&amp;&lt;/b&gt;"));
        QVERIFY(html.contains("run failed"));
        QVERIFY(html.contains(kEvilUrlEscaped));
        QVERIFY(!html.contains("<svg"));
        QVERIFY(!html.contains("id=\"latency\""));
        QVERIFY(html.size() < 12000); // short: the style sheet and the message
    }

    void percentileCurveIsMonotonic_data() {
        QTest::addColumn<bool>("open");
        QTest::newRow("closed") << false;
        QTest::newRow("open, with service time") << true;
    }
    void percentileCurveIsMonotonic() {
        QFETCH(bool, open);
        Result r = realistic();
        if (open) {
            r.options.rate = 6000;
            r.serviceTime = std::make_unique<Histogram>();
            fill(*r.serviceTime, 30000, 200e3, 0.4, 99);
        }
        const QString svg = between(page(r), "<svg id=\"plot-percentiles\"", "</svg>");
        QVERIFY(!svg.isEmpty());
        auto lines = polylines(svg, "pl-lat");
        if (open) lines += polylines(svg, "pl-svc");
        QCOMPARE(lines.size(), open ? 2 : 1);
        for (const auto& pts : lines) {
            QVERIFY(pts.size() >= 60); // 20 per decade over log10(30000) ≈ 4.5 decades
            for (qsizetype i = 1; i < pts.size(); ++i) {
                QVERIFY2(pts[i].x() >= pts[i - 1].x(), qPrintable(QString("x falls at point %1").arg(i)));
                QVERIFY2(pts[i].y() <= pts[i - 1].y(),
                         qPrintable(QString("latency falls at point %1").arg(i)));
            }
            QVERIFY(pts.back().x() > pts.front().x());
            QVERIFY(pts.back().y() < pts.front().y());
        }
        // Decade ticks 0% … 99.999% (30000 samples: 5 decades).
        for (const char* tick : {">0%<", ">90%<", ">99%<", ">99.9%<", ">99.99%<", ">99.999%<"})
            QVERIFY2(svg.contains(tick), tick);
        QVERIFY(!svg.contains(">99.9999%<"));
        QVERIFY(svg.contains(QRegularExpression(">latency \\((ms|\xC2\xB5s)\\)<")));
    }

    void histogramBarsAddUp() {
        const Result r = realistic();
        const QString svg = between(page(r), "<svg id=\"plot-histogram\"", "</svg>");
        QVERIFY(!svg.isEmpty());
        const QRegularExpression bar("<rect class=\"bar\"[^>]*><title>[^<]*: (\\d+) requests</title>");
        int bars = 0;
        std::uint64_t sum = 0;
        for (auto it = bar.globalMatch(svg); it.hasNext();) {
            ++bars;
            sum += it.next().captured(1).toULongLong();
        }
        QVERIFY2(bars >= 30 && bars <= 80, qPrintable(QString::number(bars)));
        QCOMPARE(sum, r.latency->count());
        for (const char* label : {"p50 ", "p90 ", "p99 ", "latency (log scale)", "requests per bar"})
            QVERIFY2(svg.contains(label), label);
    }

    void throughputSeries() {
        const Result r = realistic();
        const QString svg = between(page(r), "<svg id=\"plot-throughput\"", "</svg>");
        const auto lines = polylines(svg, "tp");
        QCOMPARE(lines.size(), 1);
        QCOMPARE(lines[0].size(), 100); // two points (start, end) per 100 ms slot
        for (qsizetype i = 1; i < lines[0].size(); ++i)
            QVERIFY(lines[0][i].x() >= lines[0][i - 1].x());
        // The dip (slot 20: 3000 req/s) is lower on the page (larger y) than the others (6000 req/s).
        QVERIFY(lines[0][40].y() > lines[0][0].y());
        QCOMPARE(lines[0][40].y(), lines[0][41].y());
        QVERIFY(svg.contains("mean 6000.00 req/s"));
        QVERIFY(svg.contains(">5<")); // the x axis reaches 5 s
        QVERIFY(svg.contains("time after warm-up (s)"));
        QVERIFY(svg.contains("requests per second"));
        // The 3 failures are not in a series (a Result made by hand): no failures' line.
        QVERIFY(polylines(svg, "failed").isEmpty());
    }

    // The failed requests per second (Result::failedPerSlot): a second line on the same axes.
    void throughputFailures() {
        Result r = realistic();
        r.failedPerSlot.assign(r.perSlot.size(), 0);
        r.failedPerSlot[30] = 3; // 30 failed/s in the slot from 3.0 s
        const QString svg = between(page(r), "<svg id=\"plot-throughput\"", "</svg>");
        const auto tp = polylines(svg, "tp");
        const auto failed = polylines(svg, "failed");
        QCOMPARE(failed.size(), 1);
        QCOMPARE(failed[0].size(), tp[0].size());
        // Flat at 0 (the x axis, below the throughput line) but for the slot of the failures.
        QCOMPARE(failed[0][0].y(), failed[0][59].y());
        QVERIFY(failed[0][60].y() < failed[0][0].y());
        QCOMPARE(failed[0][60].y(), failed[0][61].y());
        QVERIFY(failed[0][0].y() > tp[0][0].y());
        QVERIFY(svg.contains("failed requests per second (3 in all)"));
        // A series that does not match the completions' (a corrupt or foreign result) is not drawn.
        r.failedPerSlot.pop_back();
        QVERIFY(polylines(between(page(r), "<svg id=\"plot-throughput\"", "</svg>"), "failed").isEmpty());
    }

    void perRequestTable() {
        const Result r = realistic();
        const QString section = between(page(r), "<section id=\"per-request\"", "</section>");
        QVERIFY(!section.isEmpty());
        QCOMPARE(section.count("<tr><td class=\"req\"><span class=\"method\">"), 3);
        const QString urls[] = {kEvilUrlEscaped, "http://127.0.0.1:8080/login",
                                "http://127.0.0.1:8080/static/app.css"};
        qsizetype at = 0;
        for (int i = 0; i < 3; ++i) {
            const auto& b = r.byRequest[static_cast<std::size_t>(i)];
            const QString row =
                between(section.mid(at), "<tr><td class=\"req\"><span class=\"method\">", "</tr>");
            QVERIFY2(row.contains(urls[i]), qPrintable(row));
            QVERIFY(row.contains(QString("<td class=\"n\">%1</td>").arg(b.requests.completed)));
            QVERIFY(row.contains(QString::asprintf("<td class=\"n\">%.2f</td>", b.requests.completed / 5.0)));
            for (double p : {50.0, 90.0, 99.0})
                QVERIFY(row.contains("<td class=\"n\">" + dur(b.latency->valueAtPercentile(p)) + "</td>"));
            QVERIFY(row.contains("<td class=\"n\">" + dur(b.latency->max()) + "</td>"));
            at = section.indexOf(row) + row.size();
        }
        QVERIFY(section.contains(">401: 40<"));
        QVERIFY(section.contains("timeout 3"));
        // One kind: no table.
        Result one = realistic();
        one.options.requests.resize(1);
        one.byRequest.resize(1);
        QVERIFY(!page(one).contains("id=\"per-request\""));
    }

    void openModel() {
        Result r = realistic();
        r.options.rate = 7000;
        r.missedArrivals = 1500;
        r.serviceTime = std::make_unique<Histogram>();
        fill(*r.serviceTime, 30000, 100e3, 0.3, 5);
        const QString html = page(r);
        QVERIFY(html.contains("Rate not met: sent 30003 of 31503 arrivals"));
        const Histogram& s = *r.serviceTime;
        QVERIFY(html.contains("Uncorrected (from actual send): p50 " + dur(s.valueAtPercentile(50)) +
                              ", p99 " + dur(s.valueAtPercentile(99)) + ", max " + dur(s.max())));
        QVERIFY(html.contains("<tr><th>service time (uncorrected)</th>"));
        QVERIFY(html.contains("target 7000.00 req/s"));
        QVERIFY(html.contains("Missed arrivals</th><td class=\"n\"><span class=\"chip warn\">1500<"));
        Result met = realistic();
        met.options.rate = 6000;
        QVERIFY(!page(met).contains("Rate not met"));
    }

    void degenerateInputs_data() {
        QTest::addColumn<int>("kind");
        QTest::newRow("default Result") << 0;
        QTest::newRow("zero completions") << 1;
        QTest::newRow("one sample") << 2;
        QTest::newRow("a single slot") << 3;
        QTest::newRow("empty byRequest, two kinds") << 4;
        QTest::newRow("huge numbers") << 5;
        QTest::newRow("null histograms, measured 0") << 6;
        QTest::newRow("all samples in one bucket, open model") << 7;
        QTest::newRow("one hour of slots") << 8;
        QTest::newRow("error with nothing else") << 9;
    }
    void degenerateInputs() {
        QFETCH(int, kind);
        Result r;
        r.options.requests = {spec("http://127.0.0.1:1/")};
        r.address = "127.0.0.1:1";
        r.latency = std::make_unique<Histogram>();
        r.serviceTime = std::make_unique<Histogram>();
        r.measured = 2s;
        switch (kind) {
        case 0:
            r = Result{};
            break;
        case 1:
            r.requests.started = r.requests.cancelled = 10;
            r.perSlot.assign(20, 0);
            r.byRequest.resize(1);
            break;
        case 2:
            r.latency->record(123'456);
            r.requests.started = r.requests.completed = 1;
            r.perSlot = {1};
            break;
        case 3:
            fill(*r.latency, 50, 1e6, 1.0, 3);
            r.requests.started = r.requests.completed = 50;
            r.perSlot = {50};
            r.measured = 80ms;
            break;
        case 4:
            r.options.requests.push_back(spec("http://127.0.0.1:1/b", "DELETE"));
            fill(*r.latency, 1000, 1e6, 1.0, 3);
            r.requests.started = r.requests.completed = 1000;
            r.perSlot.assign(20, 50);
            break;
        case 5: {
            const std::uint64_t big = std::numeric_limits<std::uint64_t>::max() / 4;
            r.latency->record(Histogram::kHighest, big);
            r.latency->record(1, big);
            r.requests = {big, big, 0, 0};
            r.statuses[599] = big;
            r.errors = {big, big, big, big};
            r.bytesRead = r.measuredBytesRead = big;
            r.measured = 1ns;
            r.perSlot = {big, 0, big};
            r.missedArrivals = big;
            r.options.rate = 1e300;
            r.cpuUserSeconds = 1e300;
            r.options.connections = 100000;
            r.options.count = big;
            r.options.duration = std::chrono::nanoseconds::max();
            r.thresholds = {
                ThresholdOutcome{.expr = "p99<1ms", .value = 1e300, .unit = "ns", .ok = false},
                ThresholdOutcome{.expr = "rps>1", .value = std::nan(""), .unit = "req/s", .ok = false}};
            break;
        }
        case 6:
            r.latency.reset();
            r.serviceTime.reset();
            r.measured = 0ns;
            r.options.rate = 100;
            r.options.requests.push_back(spec("http://127.0.0.1:1/b"));
            r.byRequest.resize(2);
            r.requests.completed = 5; // inconsistent on purpose: no histogram to read
            break;
        case 7:
            r.options.rate = 1000;
            r.latency->record(5'000'000, 1000);
            r.serviceTime->record(5'000'000, 1000);
            r.requests.started = r.requests.completed = 1000;
            r.perSlot.assign(10, 100);
            break;
        case 8:
            fill(*r.latency, 100000, 300e3, 0.5, 8);
            r.requests.started = r.requests.completed = 100000;
            r.perSlot.assign(36000, 3);
            r.measured = 3600s;
            break;
        case 9:
            r = Result{};
            r.error = "bad";
            break;
        }
        const std::string raw = htmlReport(r);
        const QByteArray bytes = QByteArray::fromStdString(raw);
        const QString html = QString::fromStdString(raw);
        const QString problem = wellFormed(html, bytes);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        if (kind == 1 || kind == 6) QVERIFY(html.contains("No measured request completed"));
        if (kind == 2) {
            QVERIFY(html.contains("123.46 \xC2\xB5s"));
            QCOMPARE(polylines(between(html, "<svg id=\"plot-percentiles\"", "</svg>"), "pl-lat").size(), 1);
            QCOMPARE(html.count("<rect class=\"bar\""), 1);
        }
        if (kind == 3) QCOMPARE(polylines(html, "tp").value(0).size(), 2);
        if (kind == 4) QVERIFY(!html.contains("id=\"per-request\""));
        if (kind == 7) QCOMPARE(html.count("<rect class=\"bar\""), 1);
        if (kind == 8) {
            QVERIFY(polylines(html, "tp").value(0).size() <= 1000); // grouped, not 72000 points
            QVERIFY(bytes.size() < 400'000);
        }
        if (kind == 9) QVERIFY(html.contains("bad"));
    }
};

QTEST_GUILESS_MAIN(TestLoadReport)
#include "tst_load_report.moc"

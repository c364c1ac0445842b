// The HTML report of a load run (load/report.h) rendered by Debian's headless Chromium: the DOM
// holds the tables and the plots, a screenshot is a real page (decoded and looked at), the console
// stays silent and the page makes no network request (Chromium's NetLog lists every URL request and
// who asked for it; names resolve nowhere anyway). A control page with an image and a script shows
// that both detectors do fire.
//
// PORTICO_REPORT_SCREENSHOT=FILE copies the screenshot there (docs/images/bench-report.png).
#include "test_support.h"

#include <portico/load/report.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <map>
#include <random>

using namespace std::chrono_literals;
using portico::load::RequestBreakdown;
using portico::load::RequestSpec;
using portico::load::Result;
using portico::load::ThresholdOutcome;
using portico::stats::Histogram;

namespace {

constexpr int kChromiumTimeoutMs = 60000;

// `n` latencies around `medianNs` (log-normal, fixed seed), plus a slow tail of `tail` values.
void fill(Histogram& h, std::uint64_t n, double medianNs, double sigma, unsigned seed,
          std::uint64_t tail = 0) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> d(std::log(medianNs), sigma);
    for (std::uint64_t i = 0; i < n; ++i)
        h.record(static_cast<std::uint64_t>(d(rng)));
    std::lognormal_distribution<double> slow(std::log(medianNs * 25), 0.5);
    for (std::uint64_t i = 0; i < tail; ++i)
        h.record(static_cast<std::uint64_t>(slow(rng)));
}

RequestSpec spec(std::string method, std::string url, unsigned weight,
                 std::vector<std::pair<std::string, std::string>> headers = {}, std::string body = {}) {
    RequestSpec q;
    q.method = std::move(method);
    q.url = std::move(url);
    q.weight = weight;
    q.headers = std::move(headers);
    q.body = std::move(body);
    return q;
}

// A 10 s HTTP/2 closed-model run of four request kinds with a latency tail, a few errors and a
// stall in the series; thresholds, one of them breached.
Result realistic() {
    Result r;
    r.options.requests = {
        spec("GET", "http://127.0.0.1:8080/api/items?page=2", 5, {{"Accept", "application/json"}}),
        spec("GET", "http://127.0.0.1:8080/static/app.css", 8),
        spec("GET", "http://127.0.0.1:8080/api/search?q=<script>alert(1)</script>&sort=new", 2),
        spec("POST", "http://127.0.0.1:8080/api/login", 1, {{"Content-Type", "application/json"}},
             "{\"user\":\"demo\"}"),
    };
    r.options.connections = 64;
    r.options.threads = 2;
    r.options.protocol = portico::load::Protocol::Http2;
    r.options.streams = 16;
    r.options.duration = 10s;
    r.options.warmup = 2s;
    r.address = "127.0.0.1:8080";
    r.startedAt = std::chrono::sys_days{std::chrono::year{2026} / 3 / 14} + 15h + 9min + 26s;
    r.measured = std::chrono::nanoseconds(10'004'000'000);
    const std::uint64_t completed[] = {120'000, 190'000, 46'000, 24'000};
    const double medians[] = {420e3, 160e3, 1.1e6, 2.4e6};
    r.latency = std::make_unique<Histogram>();
    r.serviceTime = std::make_unique<Histogram>();
    for (std::size_t i = 0; i < 4; ++i) {
        RequestBreakdown b;
        b.latency = std::make_unique<Histogram>();
        fill(*b.latency, completed[i] - completed[i] / 200, medians[i], 0.45, 11u + static_cast<unsigned>(i),
             completed[i] / 200);
        b.requests.completed = completed[i];
        b.statuses[200] = completed[i];
        if (i == 3) {
            b.statuses[200] -= 310;
            b.statuses[401] = 310;
            b.errors.timeout = 12;
            b.errors.reset = 4;
            b.requests.failed = 16;
        }
        if (i == 2) {
            b.statuses[200] -= 7;
            b.statuses[503] = 7;
        }
        b.requests.started = b.requests.completed + b.requests.failed;
        r.latency->merge(*b.latency);
        for (const auto& [code, n] : b.statuses)
            r.statuses[code] += n;
        r.requests.started += b.requests.started;
        r.requests.completed += b.requests.completed;
        r.requests.failed += b.requests.failed;
        r.errors.timeout += b.errors.timeout;
        r.errors.reset += b.errors.reset;
        r.byRequest.push_back(std::move(b));
    }
    r.serviceTime->merge(*r.latency);
    r.warmup.started = r.warmup.completed = 61'000;
    r.measuredBytesRead = 412'000'000;
    r.measuredBytesWritten = 38'000'000;
    r.bytesRead = 495'000'000;
    r.bytesWritten = 46'000'000;
    // 100 slots with noise and a stall at 6.2-6.5 s (then a catch-up), scaled to sum to completed.
    std::mt19937_64 rng(7);
    std::normal_distribution<double> noise(0, 90);
    std::vector<double> raw;
    double rawSum = 0;
    for (int i = 0; i < 100; ++i) {
        double v = 3800 + noise(rng);
        if (i >= 62 && i <= 64) v = 900 + noise(rng);
        if (i == 65) v = 6200;
        raw.push_back(v);
        rawSum += v;
    }
    std::uint64_t sum = 0;
    for (double v : raw) {
        r.perSlot.push_back(
            static_cast<std::uint64_t>(v * static_cast<double>(r.requests.completed) / rawSum));
        sum += r.perSlot.back();
    }
    for (std::size_t i = 0; sum < r.requests.completed; i = (i + 1) % r.perSlot.size(), ++sum)
        ++r.perSlot[i];
    r.cpuUserSeconds = 3.1;
    r.cpuSystemSeconds = 7.4;
    r.thresholds = {
        ThresholdOutcome{.expr = "p99<25ms", .value = 0, .unit = "ns", .ok = true},
        ThresholdOutcome{.expr = "errors<0.001%", .value = 0, .unit = "%", .ok = false},
        ThresholdOutcome{.expr = "rps>30000", .value = r.requestsPerSecond(), .unit = "req/s", .ok = true}};
    r.thresholds[0].value = static_cast<double>(r.latency->valueAtPercentile(99));
    r.thresholds[1].value = 100.0 * static_cast<double>(r.requests.failed) /
                            static_cast<double>(r.requests.completed + r.requests.failed);
    return r;
}

bool writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

// What one Chromium run left: its process result, the console lines and the URL requests the page made.
struct Render {
    portico::test::ProcessResult proc;
    QStringList console;     ///< stderr lines with CONSOLE or Uncaught
    QStringList pageFetches; ///< NetLog URL requests with a page as initiator
    QStringList ownFetches;  ///< the browser's own (initiator "not an origin"; blocked by the resolver rules)
    QString netLogProblem;   ///< empty when the NetLog was read
};

// The URL requests of a NetLog (JSON, written when Chromium exits): URL_REQUEST_START_JOB events,
// split by initiator. The browser's own services (time, updates, accounts) have "not an origin";
// anything a document asked for has its origin ("null" for a file: page).
void readNetLog(const QString& path, Render& out) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        out.netLogProblem = "no NetLog at " + path;
        return;
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (err.error != QJsonParseError::NoError) {
        out.netLogProblem = "NetLog is not JSON: " + err.errorString();
        return;
    }
    const QJsonObject root = doc.object();
    const int startJob =
        root["constants"].toObject()["logEventTypes"].toObject()["URL_REQUEST_START_JOB"].toInt(-1);
    if (startJob < 0) {
        out.netLogProblem = "NetLog has no URL_REQUEST_START_JOB constant";
        return;
    }
    for (const QJsonValue& v : root["events"].toArray()) {
        const QJsonObject e = v.toObject();
        if (e["type"].toInt() != startJob) continue;
        const QJsonObject p = e["params"].toObject();
        if (!p.contains("url")) continue; // the job's end (phase 2) carries only net_error
        const QString line = p["method"].toString() + " " + p["url"].toString() + " (initiator " +
                             p["initiator"].toString() + ")";
        if (p["initiator"].toString() == "not an origin" &&
            !p["network_isolation_key"].toString().contains("file:"))
            out.ownFetches << line;
        else
            out.pageFetches << line;
    }
}

// A decoded PNG: 8-bit RGB or RGBA, non-interlaced (what Chromium writes), as RGB triples.
struct Image {
    int width = 0, height = 0;
    std::vector<std::uint32_t> rgb; ///< 0xRRGGBB, row-major
    QString problem;
};

std::uint32_t be32(const uchar* p) {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

Image decodePng(const QByteArray& png) {
    Image img;
    const auto* d = reinterpret_cast<const uchar*>(png.constData());
    if (png.size() < 33 || !png.startsWith("\x89PNG\r\n\x1a\n")) {
        img.problem = "not a PNG";
        return img;
    }
    QByteArray idat;
    int depth = 0, colour = 0, interlace = 0;
    for (qsizetype at = 8; at + 12 <= png.size();) {
        const std::uint32_t len = be32(d + at);
        if (at + 12 + qsizetype(len) > png.size()) break;
        const QByteArray type = png.mid(at + 4, 4);
        if (type == "IHDR" && len >= 13) {
            img.width = int(be32(d + at + 8));
            img.height = int(be32(d + at + 12));
            depth = d[at + 16];
            colour = d[at + 17];
            interlace = d[at + 20];
        } else if (type == "IDAT") {
            idat += png.mid(at + 8, len);
        }
        at += 12 + len;
    }
    const int channels = colour == 6 ? 4 : colour == 2 ? 3 : 0;
    if (depth != 8 || channels == 0 || interlace != 0 || img.width <= 0 || img.height <= 0) {
        img.problem = QString("unsupported PNG: depth %1, colour type %2, interlace %3")
                          .arg(depth)
                          .arg(colour)
                          .arg(interlace);
        return img;
    }
    const qsizetype stride = qsizetype(img.width) * channels;
    const qsizetype expected = (stride + 1) * img.height;
    // qUncompress takes a zlib stream after a 4-byte big-endian length: IDAT is a zlib stream.
    QByteArray framed(4, '\0');
    for (int i = 0; i < 4; ++i)
        framed[i] = char((expected >> (24 - 8 * i)) & 0xff);
    const QByteArray raw = qUncompress(framed + idat);
    if (raw.size() != expected) {
        img.problem = QString("inflated %1 bytes, expected %2").arg(raw.size()).arg(expected);
        return img;
    }
    const auto rowBytes = static_cast<std::size_t>(stride);
    std::vector<uchar> prev(rowBytes, 0), cur(rowBytes, 0);
    img.rgb.reserve(std::size_t(img.width) * std::size_t(img.height));
    for (int y = 0; y < img.height; ++y) {
        const auto* row = reinterpret_cast<const uchar*>(raw.constData()) + y * (stride + 1);
        const int filter = row[0];
        for (qsizetype x = 0; x < stride; ++x) {
            const int a = x >= channels ? cur[std::size_t(x - channels)] : 0;
            const int b = prev[std::size_t(x)];
            const int c = x >= channels ? prev[std::size_t(x - channels)] : 0;
            int pred = 0;
            switch (filter) {
            case 1:
                pred = a;
                break;
            case 2:
                pred = b;
                break;
            case 3:
                pred = (a + b) / 2;
                break;
            case 4: {
                const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
                pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
                break;
            }
            default:
                break;
            }
            cur[std::size_t(x)] = uchar((row[1 + x] + pred) & 0xff);
        }
        for (int x = 0; x < img.width; ++x) {
            const uchar* px = cur.data() + std::size_t(x) * std::size_t(channels);
            img.rgb.push_back((std::uint32_t(px[0]) << 16) | (std::uint32_t(px[1]) << 8) | px[2]);
        }
        std::swap(prev, cur);
    }
    return img;
}

// Pixels within `tolerance` per channel of `colour`.
std::size_t pixelsNear(const Image& img, std::uint32_t colour, int tolerance, int y0 = 0, int y1 = -1) {
    if (y1 < 0) y1 = img.height;
    std::size_t n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = 0; x < img.width; ++x) {
            const std::uint32_t p = img.rgb[std::size_t(y) * std::size_t(img.width) + std::size_t(x)];
            bool near = true;
            for (int s = 0; s < 24 && near; s += 8)
                near = std::abs(int((p >> s) & 0xff) - int((colour >> s) & 0xff)) <= tolerance;
            n += near;
        }
    return n;
}

} // namespace

class TestLoadReportChromium : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    QString chromium_;
    QString reportPath_;
    Result result_;
    int runs_ = 0;

    // Runs Chromium headless on `url` with `extra` arguments (each run its own profile and NetLog),
    // at most kChromiumTimeoutMs; killed on timeout.
    Render render(const QString& url, const QStringList& extra) {
        const QString dir = tmp_.filePath(QString("run%1").arg(++runs_));
        QDir().mkpath(dir + "/profile");
        QDir().mkpath(dir + "/home");
        const QString netLog = dir + "/netlog.json";
        QStringList args{"--headless",
                         "--no-sandbox",
                         "--disable-gpu",
                         "--disable-background-networking",
                         "--disable-component-update",
                         "--disable-sync",
                         "--no-first-run",
                         "--user-data-dir=" + dir + "/profile",
                         "--enable-logging=stderr",
                         "--v=0",
                         "--host-resolver-rules=MAP * ~NOTFOUND",
                         "--log-net-log=" + netLog,
                         "--net-log-capture-mode=Default"};
        args << extra << url;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HOME", dir + "/home"); // nothing of Chromium's lands in the real home
        Render r;
        r.proc = portico::test::runProcessIn(chromium_, args, env, dir, kChromiumTimeoutMs);
        for (const QByteArray& line : r.proc.err.split('\n'))
            if (line.contains("CONSOLE") || line.contains("Uncaught")) r.console << QString::fromUtf8(line);
        readNetLog(netLog, r);
        return r;
    }

    static QString describe(const Render& r) {
        return QString("exit %1%2\nconsole: %3\npage fetches: %4\nNetLog: %5\nstderr (end): %6")
            .arg(r.proc.exitCode)
            .arg(r.proc.timedOut ? " (timed out, killed)" : "")
            .arg(r.console.join(" | "), r.pageFetches.join(" | "), r.netLogProblem,
                 QString::fromUtf8(r.proc.err.right(1500)));
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        chromium_ = QFileInfo::exists("/usr/bin/chromium") ? QString("/usr/bin/chromium")
                                                           : QStandardPaths::findExecutable("chromium");
        if (chromium_.isEmpty())
            QFAIL("chromium is not installed (/usr/bin/chromium): run installers/dev.sh test to install it");
        result_ = realistic();
        reportPath_ = tmp_.filePath("report.html");
        QVERIFY(writeFile(reportPath_, QByteArray::fromStdString(portico::load::htmlReport(result_))));
    }

    void domHoldsTablesAndPlots() {
        const Render r = render(QUrl::fromLocalFile(reportPath_).toString(), {"--dump-dom"});
        QVERIFY2(r.proc.exitCode == 0, qPrintable(describe(r)));
        const QString dom = QString::fromUtf8(r.proc.out);
        QVERIFY2(dom.contains("portico bench report"), qPrintable(dom.left(2000)));
        for (const char* id :
             {"<table id=\"latency-table\"", "<section id=\"per-request\"", "<section id=\"thresholds\"",
              "<svg id=\"plot-percentiles\"", "<svg id=\"plot-histogram\"", "<svg id=\"plot-throughput\"",
              "<polyline class=\"pl-lat\"", "<polyline class=\"tp\"", "<rect class=\"bar\""})
            QVERIFY2(dom.contains(id), id);
        QCOMPARE(dom.count("<svg "), 3);
        // The figures, as the browser parsed them.
        const auto p99 = static_cast<double>(result_.latency->valueAtPercentile(99));
        QVERIFY(dom.contains(QString::asprintf(">%.2f ms<", p99 / 1e6)));
        QVERIFY(dom.contains(QString::asprintf(">%.2f<", result_.requestsPerSecond())));
        QVERIFY(dom.contains("h2c, 16 stream(s) per connection"));
        QVERIFY(dom.contains("2026-03-14T15:09:26Z"));
        QVERIFY(dom.contains("breached"));
        // The URL with markup is text: no script element came out of it.
        QVERIFY(dom.contains("q=&lt;script&gt;alert(1)&lt;/script&gt;&amp;sort=new"));
        QVERIFY(!dom.contains("<script", Qt::CaseInsensitive));
        QVERIFY2(r.console.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.netLogProblem.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.pageFetches.isEmpty(), qPrintable(describe(r)));
    }

    void screenshotIsARenderedPage() {
        const QString png = tmp_.filePath("report.png");
        const Render r = render(QUrl::fromLocalFile(reportPath_).toString(),
                                {"--screenshot=" + png, "--window-size=1280,2000", "--hide-scrollbars"});
        QVERIFY2(r.proc.exitCode == 0, qPrintable(describe(r)));
        QVERIFY2(r.console.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.netLogProblem.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.pageFetches.isEmpty(), qPrintable(describe(r)));
        const QByteArray keep = qgetenv("PORTICO_REPORT_SCREENSHOT");
        if (!keep.isEmpty()) {
            QFile::remove(QString::fromLocal8Bit(keep));
            QVERIFY(QFile::copy(
                png, QString::fromLocal8Bit(keep))); // before the checks: also to look at a failure
        }
        QFile f(png);
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable("no screenshot: " + describe(r)));
        const QByteArray bytes = f.readAll();
        const Image img = decodePng(bytes);
        QVERIFY2(img.problem.isEmpty(), qPrintable(img.problem));
        QCOMPARE(img.width, 1280);
        QCOMPARE(img.height, 2000);
        // Not blank: the dark header band on top, the page's grey, the plots' blue lines and bars,
        // the met (green) and breached (red) chips.
        QVERIFY2(pixelsNear(img, 0x111827, 2, 0, 60) > 1280 * 40, "no dark header band");
        QVERIFY2(pixelsNear(img, 0xf5f6f8, 2) > 1280 * 100, "no page background");
        QVERIFY2(pixelsNear(img, 0x2563eb, 30) > 800, "no plot lines");
        QVERIFY2(pixelsNear(img, 0x60a5fa, 20) > 5000, "no histogram bars");
        QVERIFY2(pixelsNear(img, 0xdcfce7, 4) > 200, "no green (met) chip");
        QVERIFY2(pixelsNear(img, 0xfee2e2, 4) > 200, "no red (breached) chip");
        std::map<std::uint32_t, std::size_t> colours;
        for (std::uint32_t p : img.rgb)
            ++colours[p];
        QVERIFY2(colours.size() > 200, qPrintable(QString::number(colours.size()))); // text is anti-aliased
    }

    // The detectors above do fire: a page with an image from a host and a failing script.
    void controlPageIsCaught() {
        const QString bad = tmp_.filePath("control.html");
        QVERIFY(writeFile(
            bad, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>control</title></head>"
                 "<body><p>control</p><img src=\"http://report-test.invalid/pixel.png\">"
                 "<script>console.error('control-console'); notDefined();</script></body></html>\n"));
        const Render r = render(QUrl::fromLocalFile(bad).toString(), {"--dump-dom"});
        QVERIFY2(r.proc.exitCode == 0, qPrintable(describe(r)));
        QVERIFY2(r.netLogProblem.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.console.join('\n').contains("control-console"), qPrintable(describe(r)));
        QVERIFY2(r.console.join('\n').contains("Uncaught"), qPrintable(describe(r)));
        QVERIFY2(r.pageFetches.join('\n').contains("http://report-test.invalid/pixel.png"),
                 qPrintable(describe(r)));
    }
};

QTEST_GUILESS_MAIN(TestLoadReportChromium)
#include "tst_load_report_chromium.moc"

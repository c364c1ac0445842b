// Unit tests for the HdrHistogram outputs (load/hdr_output.h): the V2 compressed encoding byte by
// byte, encode → decode round trips, histograms written by HdrHistogram's Java and JS writers,
// corrupt inputs (each rejected with an error, none crashing, plus seeded random mutations), the
// percentile distribution text of 1..10000 µs against rows worked out by hand and against a
// nearest-rank reference over the raw values, its rounding (Java's, not printf's), and the interval
// log's lines.
#include <portico/load/hdr_output.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

using portico::load::decodeCompressedHistogram;
using portico::load::DecodedHistogram;
using portico::load::encodeCompressedHistogram;
using portico::load::intervalLog;
using portico::load::LatencyInterval;
using portico::load::percentileDistribution;
using portico::load::Result;
using portico::stats::Histogram;
using Bucket = portico::stats::Histogram::Bucket;

namespace {

// ~264 KiB: off the stack.
std::unique_ptr<Histogram> makeHistogram() { return std::make_unique<Histogram>(); }

std::vector<Bucket> bucketsOf(const Histogram& h) {
    std::vector<Bucket> v;
    h.forEachBucket([&](const Bucket& b) { v.push_back(b); });
    return v;
}

// ---- raw frames, built here independently of the code under test (Qt's zlib and base64) ------

QByteArray be32(quint32 v) {
    QByteArray b;
    for (int s = 24; s >= 0; s -= 8)
        b += static_cast<char>((v >> s) & 0xff);
    return b;
}
QByteArray be64(quint64 v) { return be32(static_cast<quint32>(v >> 32)) + be32(static_cast<quint32>(v)); }

// ZigZag LEB128-64b9B as ZigZagEncoding.java writes it.
QByteArray zigZag(qint64 value) {
    quint64 v = (static_cast<quint64>(value) << 1) ^ static_cast<quint64>(value >> 63);
    QByteArray b;
    for (int i = 0; i < 8 && (v >> 7); ++i, v >>= 7)
        b += static_cast<char>((v & 0x7f) | 0x80);
    b += static_cast<char>(v & 0xff);
    return b;
}

struct Header {
    quint32 cookie = 0x1c849313;
    qint32 payloadLength = -1; // -1: the payload's size
    qint32 normalizingIndexOffset = 0;
    qint32 digits = 3;
    quint64 lowest = 1;
    quint64 highest = Histogram::kHighest;
};
QByteArray plainHistogram(const QByteArray& payload, Header h = {}) {
    return be32(h.cookie) +
           be32(static_cast<quint32>(h.payloadLength < 0 ? payload.size() : h.payloadLength)) +
           be32(static_cast<quint32>(h.normalizingIndexOffset)) + be32(static_cast<quint32>(h.digits)) +
           be64(h.lowest) + be64(h.highest) + be64(0x3ff0000000000000ull) + payload;
}
QByteArray zlibStream(const QByteArray& data) { return qCompress(data, 9).mid(4); } // drop Qt's size prefix
QByteArray frame(const QByteArray& zlib, quint32 cookie = 0x1c849314, qint64 lengthField = -1) {
    return be32(cookie) + be32(static_cast<quint32>(lengthField < 0 ? zlib.size() : lengthField)) + zlib;
}
std::string b64(const QByteArray& bytes) { return bytes.toBase64().toStdString(); }
QByteArray unbase64(const std::string& s) { return QByteArray::fromBase64(QByteArray::fromStdString(s)); }

// Mean over medianEquivalentValue (HdrHistogram's getMean) of decoded buckets.
double hdrMean(const DecodedHistogram& d) {
    double total = 0;
    for (const Bucket& b : d.buckets)
        total += static_cast<double>(b.lowestNs + (b.highestNs - b.lowestNs + 1) / 2) *
                 static_cast<double>(b.count);
    return d.totalCount ? total / static_cast<double>(d.totalCount) : 0;
}

std::vector<std::uint64_t> skewedValues(std::size_t n, std::uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> logn(std::log(2e6), 1.8); // median 2 ms, tail into seconds
    std::vector<std::uint64_t> v;
    for (std::size_t i = 0; i < n; ++i)
        v.push_back(static_cast<std::uint64_t>(logn(rng)));
    v.push_back(3'000'000'000ull);     // 3 s
    v.push_back(7'200'000'000'000ull); // 2 h: clamped to 1 h
    v.push_back(10);                   // clamped to 1 µs
    return v;
}

// The rows of a percentile distribution: value (text), percentile, total count.
struct Row {
    QString value;
    double percentile;
    quint64 count;
    QString line;
};
QList<Row> rowsOf(const std::string& text) {
    QList<Row> rows;
    const QStringList lines = QString::fromStdString(text).split('\n');
    for (const QString& line : lines) {
        if (line.isEmpty() || line.startsWith('#') || line.trimmed().startsWith("Value")) continue;
        const QStringList f = line.split(' ', Qt::SkipEmptyParts);
        rows.push_back({f.value(0), f.value(1).toDouble(), f.value(2).toULongLong(), line});
    }
    return rows;
}

// The first line of a Java-written interval log (HdrHistogram's test file jHiccup-2.0.7S.logV2.hlog);
// hdr-histogram-js's tests expect floor(mean) == 301998 for it.
constexpr char kJHiccupLine[] = "HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9"
                                "v2lMaxhvMekILGZkKmcCAEf2CsI=";
// hdr-histogram-js's tests: one value 42 (decoded there with mean 42 and total 1), written by a level 9
// (Java) writer, and the same written by the JS writer (default zlib level, ratio field 1 as a long).
constexpr char kJava42[] = "HISTFAAAAB542pNpmSzMwMDAxAABzFCaEUoz2X+AMIKZAEARAtM=";
constexpr char kJs42[] = "HISTFAAAAB94nJNpmSzMwMDABMSMQMzMAAGMUJoJxg9mAgA1TQGm";
// V1 encoding (hdr-histogram-js's tests): must be refused.
constexpr char kV1[] = "HISTIgAAAFd42pNpmazIwMAYxgABTBDKT4GBgdnNYMcCBvsPUBkeBkYGZqA8MwMbAzsDC5DFBCTZgJCDQY1Bj"
                       "kGLQZRBlUEPCB8zWDCYMxgDZZkZhgJgHDibAY8JB/A=";

} // namespace

class TestHdrOutput : public QObject {
    Q_OBJECT

private slots:
    // The exact bytes for 1000 ns once and 1001 ns twice: header fields and the payload
    // zero-run(-1000) count(1) count(2) worked out by hand.
    void encodingBytes() {
        auto h = makeHistogram();
        h->record(1000);
        h->record(1001, 2);
        const std::string s = encodeCompressedHistogram(*h);
        QVERIFY2(QString::fromStdString(s).startsWith("HISTFAAA"), s.c_str());
        const QByteArray raw = unbase64(s);
        QCOMPARE(raw.left(4), be32(0x1c849314));
        QCOMPARE(raw.mid(4, 4), be32(static_cast<quint32>(raw.size() - 8)));
        QCOMPARE(raw.mid(8, 2), QByteArray("\x78\xda", 2)); // zlib, best compression (Java's writer)
        // -1000 → ZigZag 1999 = 0x7cf → LEB128 cf 0f; 1 → 02; 2 → 04.
        const QByteArray payload("\xcf\x0f\x02\x04", 4);
        const QByteArray plain = qUncompress(be32(44) + raw.mid(8));
        QCOMPARE(plain.toHex(), plainHistogram(payload).toHex());
        QCOMPARE(zigZag(-1000), QByteArray("\xcf\x0f", 2));
    }

    // Empty: HdrHistogram writes one count (0) for maxValue 0.
    void emptyHistogram() {
        const std::string s = encodeCompressedHistogram({}, 0);
        const QByteArray plain = qUncompress(be32(41) + unbase64(s).mid(8));
        QCOMPARE(plain.toHex(), plainHistogram(QByteArray(1, '\0')).toHex());
        std::string error;
        const auto d = decodeCompressedHistogram(s, &error);
        QVERIFY2(d, error.c_str());
        QCOMPARE(d->totalCount, 0ull);
        QVERIFY(d->buckets.empty());
        QCOMPARE(d->maxValue, 0ull);
        QCOMPARE(d->numberOfSignificantValueDigits, 3);
        QCOMPARE(d->lowestDiscernibleValue, 1ull);
        QCOMPARE(d->highestTrackableValue, Histogram::kHighest);
        QCOMPARE(percentileDistribution(*makeHistogram()),
                 std::string("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"
                             "#[Mean    =        0.000, StdDeviation   =        0.000]\n"
                             "#[Max     =        0.000, Total count    =            0]\n"
                             "#[Buckets =           32, SubBuckets     =         2048]\n"));
    }

    void roundTrip_data() {
        QTest::addColumn<int>("kind");
        QTest::newRow("1..10000 us") << 0;
        QTest::newRow("skewed, ms to seconds, clamped ends") << 1;
        QTest::newRow("every value 1000..2047 ns") << 2;
        QTest::newRow("only 1 h") << 3;
        QTest::newRow("huge counts") << 4;
    }
    void roundTrip() {
        QFETCH(int, kind);
        auto h = makeHistogram();
        switch (kind) {
        case 0:
            for (std::uint64_t us = 1; us <= 10000; ++us)
                h->record(us * 1000);
            break;
        case 1:
            for (std::uint64_t v : skewedValues(50000, 7))
                h->record(v);
            break;
        case 2:
            for (std::uint64_t v = 1000; v < 2048; ++v)
                h->record(v, v);
            break;
        case 3:
            h->record(Histogram::kHighest, 3);
            break;
        case 4:
            h->record(5'000, 1ull << 40);
            h->record(90'000'000, (1ull << 62) + 12345);
            break;
        }
        const std::vector<Bucket> expected = bucketsOf(*h);
        const std::string s = encodeCompressedHistogram(*h);
        std::string error;
        const auto d = decodeCompressedHistogram(s, &error);
        QVERIFY2(d, error.c_str());
        QCOMPARE(d->totalCount, h->count());
        QCOMPARE(d->maxValue, Histogram::highestEquivalent(h->max()));
        QCOMPARE(d->buckets.size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(d->buckets[i].lowestNs, expected[i].lowestNs);
            QCOMPARE(d->buckets[i].highestNs, expected[i].highestNs);
            QCOMPARE(d->buckets[i].count, expected[i].count);
        }
        // Buckets in any order (and with surrounding whitespace) give the same thing.
        std::vector<Bucket> shuffled = expected;
        std::mt19937 rng(3);
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        QCOMPARE(encodeCompressedHistogram(shuffled, h->max()), s);
        QVERIFY(decodeCompressedHistogram(" \t" + s + "\r\n"));
        // Rebuilt from the decoded buckets, the histogram encodes the same.
        auto back = makeHistogram();
        for (const Bucket& b : d->buckets)
            back->record(b.lowestNs, b.count);
        QCOMPARE(encodeCompressedHistogram(*back), s);
    }

    // Histograms written by HdrHistogram's own writers decode to what their readers see.
    void foreignWriters() {
        std::string error;
        for (const char* s : {kJava42, kJs42}) {
            const auto d = decodeCompressedHistogram(s, &error);
            QVERIFY2(d, error.c_str());
            QCOMPARE(d->totalCount, 1ull);
            QCOMPARE(d->buckets.size(), std::size_t{1});
            QCOMPARE(d->buckets[0].lowestNs, 42ull);
            QCOMPARE(d->buckets[0].highestNs, 42ull);
            QCOMPARE(hdrMean(*d), 42.0);
        }
        const auto j = decodeCompressedHistogram(kJHiccupLine, &error);
        QVERIFY2(j, error.c_str());
        QCOMPARE(static_cast<long long>(std::floor(hdrMean(*j))), 301998LL);
        QVERIFY(j->totalCount > 0);
        QCOMPARE(j->maxValue, j->buckets.back().highestNs);

        // normalizingIndexOffset only says where a shifted writer's array started: ignored.
        const QByteArray payload("\xcf\x0f\x02\x04", 4);
        const auto shifted = decodeCompressedHistogram(
            b64(frame(zlibStream(plainHistogram(payload, {.normalizingIndexOffset = 5})))));
        QVERIFY(shifted);
        QCOMPARE(shifted->totalCount, 3ull);
        QCOMPARE(shifted->buckets[0].lowestNs, 1000ull);

        QVERIFY(!decodeCompressedHistogram(kV1, &error));
        QVERIFY2(QString::fromStdString(error).contains("cookie 0x1c849322"), error.c_str());
    }

    void corruptInputs_data() {
        QTest::addColumn<QByteArray>("input"); // base64 text
        QTest::addColumn<QString>("why");      // a word of the expected error

        const QByteArray payload("\xcf\x0f\x02\x04", 4);
        const QByteArray good = zlibStream(plainHistogram(payload));
        const auto row = [](const char* name, const QByteArray& bytes, const char* why) {
            QTest::newRow(name) << bytes.toBase64() << QString(why);
        };
        QTest::newRow("empty") << QByteArray() << "base64";
        QTest::newRow("base64 length") << QByteArray("HISTFAA") << "base64";
        QTest::newRow("base64 character") << QByteArray("HIST*AAA") << "character";
        QTest::newRow("base64 padding in the middle") << QByteArray("HI==FAAA") << "character";
        row("too short", QByteArray("\x1c\x84\x93", 3), "too short");
        row("wrong cookie", frame(good, 0x1c849315), "cookie");
        row("plain (uncompressed) cookie", frame(good, 0x1c849313), "cookie");
        row("length field too big", frame(good, 0x1c849314, good.size() + 1), "length field");
        row("length field negative", frame(good, 0x1c849314, 0x80000000ll), "length field");
        row("truncated zlib", frame(good.left(good.size() - 6)), "truncated");
        row("zlib header only", frame(good.left(2)), "truncated");
        QByteArray badHeader = good, badBlock = good, badChecksum = good;
        badHeader[0] = static_cast<char>(badHeader[0] ^ 1);                          // FCHECK fails
        badBlock[2] = static_cast<char>(badBlock[2] | 0x06);                         // BTYPE 11: invalid
        badChecksum[good.size() - 1] = static_cast<char>(good[good.size() - 1] ^ 1); // Adler-32
        row("corrupt zlib header", frame(badHeader), "zlib");
        row("corrupt deflate block", frame(badBlock), "zlib");
        row("corrupt zlib checksum", frame(badChecksum), "zlib");
        row("not zlib", frame(QByteArray("plain text, not deflated")), "zlib");
        row("bytes after the zlib stream", frame(good + "xx"), "after the end");
        row("inflated too short", frame(zlibStream(QByteArray(20, '\x1c'))), "too short");
        row("inner cookie", frame(zlibStream(plainHistogram(payload, {.cookie = 0x1c849314}))), "cookie");
        row("payload length too small", frame(zlibStream(plainHistogram(payload, {.payloadLength = 3}))),
            "payload length says 3");
        row("payload length too big", frame(zlibStream(plainHistogram(payload, {.payloadLength = 9}))),
            "payload length says 9");
        // A header that says 3 bytes, then a far longer stream: refused without inflating it all.
        row("payload length much too small",
            frame(zlibStream(plainHistogram(QByteArray(100000, '\x02'), {.payloadLength = 3}))), "longer");
        row("payload length absurd",
            frame(zlibStream(plainHistogram(payload, {.payloadLength = 0x7fffffff}))), "out of range");
        row("digits", frame(zlibStream(plainHistogram(payload, {.digits = 7}))),
            "numberOfSignificantValueDigits");
        row("lowest 0", frame(zlibStream(plainHistogram(payload, {.lowest = 0}))), "lowestDiscernibleValue");
        row("highest below 2 lowest", frame(zlibStream(plainHistogram(payload, {.highest = 1}))),
            "highestTrackableValue");
        row("highest negative", frame(zlibStream(plainHistogram(payload, {.highest = 1ull << 63}))),
            "highestTrackableValue");
        row("LEB128 overruns", frame(zlibStream(plainHistogram(QByteArray("\x02\x80", 2)))), "runs past");
        row("LEB128 8 continuation bytes at the end",
            frame(zlibStream(plainHistogram(QByteArray(8, '\xff')))), "runs past");
        // 33792 counts in this layout (32 buckets + 1, × 1024).
        row("count beyond the array", frame(zlibStream(plainHistogram(zigZag(-33792) + zigZag(1)))),
            "beyond");
        row("zero run beyond the array", frame(zlibStream(plainHistogram(zigZag(1) + zigZag(-33792)))),
            "beyond");
        row("zero run of 2^63", frame(zlibStream(plainHistogram(zigZag(std::numeric_limits<qint64>::min())))),
            "beyond");
        const QByteArray maxCount = zigZag(std::numeric_limits<qint64>::max());
        row("total overflows", frame(zlibStream(plainHistogram(maxCount + maxCount + maxCount))),
            "overflows");
    }
    void corruptInputs() {
        QFETCH(QByteArray, input);
        QFETCH(QString, why);
        std::string error = "stale";
        const auto d = decodeCompressedHistogram(input.toStdString(), &error);
        QVERIFY2(!d, "decoded what should be refused");
        QVERIFY2(QString::fromStdString(error).contains(why), error.c_str());
        QVERIFY(!decodeCompressedHistogram(input.toStdString())); // no error pointer: still refused
    }

    // Seeded random damage to a real encoding, before and after base64: refused or decoded, never
    // a crash, a hang or a read out of bounds (the asan preset checks the latter).
    void mutationsNeverCrash() {
        auto h = makeHistogram();
        for (std::uint64_t v : skewedValues(2000, 11))
            h->record(v);
        const QByteArray raw = unbase64(encodeCompressedHistogram(*h));
        const QByteArray inflated = qUncompress(be32(1 << 20) + raw.mid(8));
        QVERIFY(!inflated.isEmpty());
        std::mt19937 rng(5);
        int refused = 0;
        for (int i = 0; i < 3000; ++i) {
            const bool inner = i % 2; // damage the inflated bytes (then recompress) or the frame
            QByteArray bytes = inner ? inflated : raw;
            const int edits = 1 + static_cast<int>(rng() % 4);
            for (int e = 0; e < edits; ++e) {
                const auto pos = static_cast<qsizetype>(rng() % static_cast<std::uint32_t>(bytes.size()));
                switch (rng() % 3) {
                case 0:
                    bytes[pos] = static_cast<char>(rng());
                    break;
                case 1:
                    bytes.truncate(std::max<qsizetype>(pos, 1));
                    break;
                default:
                    bytes.insert(pos, static_cast<char>(rng()));
                    break;
                }
            }
            const QByteArray framed = inner ? frame(zlibStream(bytes)) : bytes;
            std::string error;
            const auto d = decodeCompressedHistogram(b64(framed), &error);
            if (!d) {
                ++refused;
                QVERIFY(!error.empty());
            } else {
                std::uint64_t total = 0;
                for (const Bucket& b : d->buckets)
                    total += b.count;
                QCOMPARE(total, d->totalCount);
            }
        }
        qInfo("%d of 3000 mutations refused", refused);
        QVERIFY(refused > 2000);
    }

    // 1..10000 µs: rows worked out by hand, then every row against a nearest-rank reference.
    void percentileDistributionByHand() {
        auto h = makeHistogram();
        std::vector<std::uint64_t> values;
        for (std::uint64_t us = 1; us <= 10000; ++us) {
            h->record(us * 1000);
            values.push_back(us * 1000);
        }
        const std::string text = percentileDistribution(*h);
        QVERIFY2(QString::fromStdString(text).startsWith(
                     "       Value     Percentile TotalCount 1/(1-Percentile)\n\n"
                     "       0.001 0.000000000000          1           1.00\n"
                     // 10 %: the 1000th value, 1 ms, in [999936, 1000447] ns alone.
                     "       1.000 0.100000000000       1000           1.11\n"),
                 text.c_str());
        // 50 %: 5 ms is in [4997120, 5001215] (4096 wide) with 4998..5001 µs: 5001 values so far.
        QVERIFY(text.find("\n       5.001 0.500000000000       5001           2.00\n") != std::string::npos);
        // 90 %: 9 ms is in [8994816, 9003007] with 8995..9003 µs.
        QVERIFY(text.find("\n       9.003 0.900000000000       9003          10.00\n") != std::string::npos);
        // The last bucket, [9994240, 10002431], once at the level reached, then at 100 %.
        QVERIFY2(text.find("\n      10.002 1.000000000000      10000\n#[Mean    = ") != std::string::npos,
                 text.c_str());
        QVERIFY(text.find("#[Max     =       10.002, Total count    =        10000]\n"
                          "#[Buckets =           32, SubBuckets     =         2048]\n") != std::string::npos);
        // Mean over bucket medians: a little above the exact 5.0005 ms (medians sit mid-bucket).
        const auto meanAt = text.find("#[Mean    = ");
        const double mean = std::stod(text.substr(meanAt + 12, 12));
        QVERIFY2(mean >= 5.000 && mean <= 5.003, text.c_str());
        const double sd = std::stod(text.substr(text.find("StdDeviation   = ") + 17, 12));
        QVERIFY2(std::abs(sd - 2.887) < 0.003, text.c_str()); // 10000 µs / sqrt(12)

        const QList<Row> rows = rowsOf(text);
        // Levels: 0, 5 ticks per half distance (10 % steps to 50, 5 % to 75, 2.5 % to 87.5, ...).
        const double firstLevels[] = {0,  .1,  .2,   .3, .4,   .5,  .55,  .6,   .65,
                                      .7, .75, .775, .8, .825, .85, .875, .8875};
        QVERIFY(rows.size() > 40);
        for (std::size_t i = 0; i < std::size(firstLevels); ++i)
            QCOMPARE(rows[static_cast<qsizetype>(i)].percentile, firstLevels[i]);
        QCOMPARE(rows.back().percentile, 1.0);
        QCOMPARE(rows[rows.size() - 2].value, QString("10.002"));
        for (const Row& r : rows) {
            // The value at rank ceil(p × N) (at least 1), its bucket's highest value, and every value
            // up to that bucket counted.
            const auto rank =
                std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(r.percentile * 10000 - 1e-6)));
            const std::uint64_t top = Histogram::highestEquivalent(values[rank - 1]);
            QCOMPARE(r.value, QString::number(static_cast<double>(top) / 1e6, 'f', 3));
            const auto upTo =
                static_cast<quint64>(std::upper_bound(values.begin(), values.end(), top) - values.begin());
            QVERIFY2(r.count == upTo, qPrintable(r.line));
            if (r.percentile < 1) { // 1/(1-Percentile), from the 12-decimal percentile: to ±0.006
                const double inverse = r.line.section(' ', -1).toDouble();
                QVERIFY2(std::abs(inverse - 1 / (1 - r.percentile)) < 0.006, qPrintable(r.line));
                QCOMPARE(r.line.size(), 12 + 1 + 14 + 1 + 10 + 1 + 14);
            }
        }
        // Levels strictly increase; rows never go back in value or count.
        for (qsizetype i = 1; i < rows.size(); ++i) {
            QVERIFY(rows[i].percentile > rows[i - 1].percentile);
            QVERIFY(rows[i].count >= rows[i - 1].count);
            QVERIFY(rows[i].value.toDouble() >= rows[i - 1].value.toDouble());
        }

        // Other ticks and unit: one tick per half distance; nanoseconds.
        const QList<Row> coarse = rowsOf(percentileDistribution(*h, 1, 1));
        QCOMPARE(coarse[0].value, QString("1000.000"));
        QCOMPARE(coarse[1].percentile, 0.5);
        QCOMPARE(coarse[2].percentile, 0.75);
        QCOMPARE(coarse[1].value, QString("5001215.000"));
    }

    // A single value: the 0 % row, then the 100 % row, same bucket.
    void percentileDistributionSingleValue() {
        auto h = makeHistogram();
        h->record(1'500'000'000); // 1.5 s → [1499463680, 1500512255]
        const std::string text = percentileDistribution(*h);
        QCOMPARE(text, std::string("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"
                                   "    1500.512 0.000000000000          1           1.00\n"
                                   "    1500.512 1.000000000000          1\n"
                                   "#[Mean    =     1499.988, StdDeviation   =        0.000]\n"
                                   "#[Max     =     1500.512, Total count    =            1]\n"
                                   "#[Buckets =           32, SubBuckets     =         2048]\n"));
    }

    // Numbers are rounded as Java's Formatter and hdr-histogram-js do: the level 99.97802734375 / 100
    // is the double 0.99978027343749998…, whose shortest form 0.9997802734375 rounds half up to
    // …438 (printf, from the exact binary value, writes …437).
    void percentileRounding() {
        auto h = makeHistogram();
        h->record(1'000'000, 99999); // 1 ms, [999936, 1000447]
        h->record(1'000'000'000);    // 1 s, [999817216, 1000341503]
        const std::string text = percentileDistribution(*h);
        QVERIFY2(text.find("\n       1.000 0.999780273438      99999        4551.11\n") != std::string::npos,
                 text.c_str());
        QVERIFY2(
            text.find(
                "\n    1000.342 1.000000000000     100000\n#[Mean    =        1.010, StdDeviation   =        "
                "3.159]\n#[Max     =     1000.342, Total count    =       100000]\n") != std::string::npos,
            text.c_str());
    }

    void intervalLogLines() {
        Result r;
        r.startedAt = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
        auto first = makeHistogram();
        for (std::uint64_t us = 1; us <= 1000; ++us)
            first->record(us * 1000);
        auto third = makeHistogram();
        third->record(1'500'000'000);
        using namespace std::chrono_literals;
        r.intervals.push_back(LatencyInterval{0s, 1s, bucketsOf(*first), first->max()});
        r.intervals.push_back(LatencyInterval{1s, 1s, {}, 0});
        r.intervals.push_back(LatencyInterval{2s, 500ms, bucketsOf(*third), third->max()});

        const QStringList lines = QString::fromStdString(intervalLog(r)).split('\n');
        QCOMPARE(lines.size(), 8); // 7 lines, each ending in \n
        QCOMPARE(lines[0], QString("#[Histogram log format version 1.3]"));
        // 1700000000 s = Tuesday 14 November 2023, 22:13:20 UTC.
        QCOMPARE(lines[1],
                 QString("#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]"));
        QCOMPARE(lines[2], QString("#[BaseTime: 1700000000.123 (seconds since epoch)]"));
        QCOMPARE(
            lines[3],
            QString(
                "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""));
        // Max: the bucket's highest value in ms (1 ms is in [999936, 1000447]).
        QCOMPARE(lines[4], "0.000,1.000,1.000," + QString::fromStdString(encodeCompressedHistogram(*first)));
        QCOMPARE(lines[5], "1.000,1.000,0.000," + QString::fromStdString(encodeCompressedHistogram({}, 0)));
        QCOMPARE(lines[6],
                 "2.000,0.500,1500.512," + QString::fromStdString(encodeCompressedHistogram(*third)));
        QCOMPARE(lines[7], QString());
        const auto d = decodeCompressedHistogram(lines[6].section(',', 3).toStdString());
        QVERIFY(d);
        QCOMPARE(d->totalCount, 1ull);
        QCOMPARE(d->maxValue, 1'500'512'255ull);

        // No intervals: the header alone.
        Result none;
        QCOMPARE(QString::fromStdString(intervalLog(none)).count('\n'), 4);
        QVERIFY(intervalLog(none).find(
                    "#[StartTime: 0.000 (seconds since epoch), Thu Jan 01 00:00:00 UTC 1970]") !=
                std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestHdrOutput)
#include "tst_hdr_output.moc"

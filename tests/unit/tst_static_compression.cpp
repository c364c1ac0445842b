// Content coding of static files: Accept-Encoding negotiation with q-values, on-the-fly gzip and
// Brotli (checked by decompressing), precompressed .br/.gz siblings, Vary and per-coding ETags.
#include "handlers_test_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>

using namespace portico;
using namespace portico::test;

namespace {

std::string gunzip(std::string_view in) {
    z_stream zs{};
    if (inflateInit2(&zs, 31) != Z_OK) return "<init failed>";
    std::string out;
    char buf[16384];
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
        zs.next_out = reinterpret_cast<Bytef*>(buf);
        zs.avail_out = sizeof buf;
        rc = inflate(&zs, Z_NO_FLUSH);
        out.append(buf, sizeof buf - zs.avail_out);
    }
    inflateEnd(&zs);
    return rc == Z_STREAM_END ? out : "<inflate failed>";
}

std::string brotli(std::string_view in, int quality) {
    std::string out(BrotliEncoderMaxCompressedSize(in.size()), '\0');
    std::size_t size = out.size();
    if (!BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, in.size(),
                               reinterpret_cast<const uint8_t*>(in.data()), &size,
                               reinterpret_cast<uint8_t*>(out.data())))
        return "<brotli failed>";
    out.resize(size);
    return out;
}

// Compressible text of exactly `size` bytes.
std::string jsOfSize(std::size_t size) {
    std::string out;
    for (int i = 0; out.size() < size; ++i)
        out += "const value" + std::to_string(i) + " = 'abcdefghij';\n";
    out.resize(size);
    return out;
}

std::string unbrotli(std::string_view in, std::size_t expected) {
    std::string out(expected + 16, '\0');
    std::size_t size = out.size();
    if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const uint8_t*>(in.data()), &size,
                                reinterpret_cast<uint8_t*>(out.data())) != BROTLI_DECODER_RESULT_SUCCESS)
        return "<brotli failed>";
    out.resize(size);
    return out;
}

} // namespace

class StaticCompressionTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    handlers::WorkerState worker_;
    std::string js_;
    std::string bigJs_;
    std::string hugeJs_;
    int brotliQuality_ = 5;

    http::Response get(const std::string& target, const std::string& acceptEncoding, bool enabled = true,
                       std::vector<std::pair<std::string, std::string>> extra = {}) {
        Site site(tmp_.path());
        site.config.compression.enabled = enabled;
        site.config.compression.brotliQuality = brotliQuality_;
        TestRequest req(target);
        if (!acceptEncoding.empty()) req.header("Accept-Encoding", acceptEncoding);
        for (auto& [n, v] : extra)
            req.header(n, v);
        http::Response res;
        run(site.config, fallbackResult(), req, worker_, res);
        return res;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        for (int i = 0; i < 300; ++i)
            js_ += "export function f" + std::to_string(i) + "() { return " + std::to_string(i) + "; }\n";
        QVERIFY(writeFile(tmp_.path(), "app.js", QByteArray::fromStdString(js_)));
        for (int i = 0; i < 12000; ++i)
            bigJs_ += "const value" + std::to_string(i) + " = 'abcdefghij';\n";
        QVERIFY(bigJs_.size() > 256 * 1024);
        QVERIFY(writeFile(tmp_.path(), "bundle.js", QByteArray::fromStdString(bigJs_)));
        QVERIFY(writeFile(tmp_.path(), "tiny.css", "a{}\n"));
        QVERIFY(writeFile(tmp_.path(), "pic.png", QByteArray(4096, 'P')));
        QVERIFY(writeFile(tmp_.path(), "pre.js", QByteArray::fromStdString(js_)));
        QVERIFY(writeFile(tmp_.path(), "pre.js.br", "BROTLI-BYTES"));
        QVERIFY(writeFile(tmp_.path(), "pre.js.gz", "GZIP-BYTES"));
        hugeJs_ = jsOfSize(2 * 1024 * 1024);
        QVERIFY(writeFile(tmp_.path(), "huge.js", QByteArray::fromStdString(hugeJs_)));
        QVERIFY(writeFile(tmp_.path(), "huge-pre.js", QByteArray::fromStdString(hugeJs_)));
        QVERIFY(writeFile(tmp_.path(), "huge-pre.js.gz", "GZIP-BYTES"));
        QVERIFY(writeFile(tmp_.path(), "limit.js", QByteArray::fromStdString(jsOfSize(1024 * 1024))));
        QVERIFY(writeFile(tmp_.path(), "limit1.js", QByteArray::fromStdString(jsOfSize(1024 * 1024 + 1))));
    }

    void gzipOnTheFly() {
        auto res = get("/app.js", "gzip");
        QCOMPARE(res.status, 200);
        QCOMPARE(hv(res, "Content-Encoding"), QString("gzip"));
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/javascript; charset=utf-8"));
        QVERIFY(res.bodyLength() < js_.size());
        QVERIFY(gunzip(res.bodyView()) == js_);
        QVERIFY(hv(res, "ETag").endsWith("-gz\""));
    }

    void brotliOnTheFly() {
        auto res = get("/app.js", "gzip, deflate, br");
        QCOMPARE(hv(res, "Content-Encoding"), QString("br"));
        QVERIFY(unbrotli(res.bodyView(), js_.size()) == js_);
        QVERIFY(hv(res, "ETag").endsWith("-br\""));
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
    }

    void etagsDifferPerCoding() {
        QString identity = hv(get("/app.js", ""), "ETag");
        QString gz = hv(get("/app.js", "gzip"), "ETag");
        QString br = hv(get("/app.js", "br"), "ETag");
        QVERIFY(identity != gz && gz != br && identity != br);
        // Each representation revalidates against its own tag.
        QCOMPARE(get("/app.js", "gzip", true, {{"If-None-Match", gz.toStdString()}}).status, 304);
        QCOMPARE(get("/app.js", "br", true, {{"If-None-Match", gz.toStdString()}}).status, 200);
        QCOMPARE(get("/app.js", "", true, {{"If-None-Match", identity.toStdString()}}).status, 304);
        auto res = get("/app.js", "br", true, {{"If-None-Match", br.toStdString()}});
        QCOMPARE(res.status, 304);
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
    }

    void negotiation_data() {
        QTest::addColumn<QString>("accept");
        QTest::addColumn<QString>("coding");
        QTest::newRow("none") << ""
                              << "";
        QTest::newRow("identity") << "identity"
                                  << "";
        QTest::newRow("br refused") << "br;q=0, gzip"
                                    << "gzip";
        QTest::newRow("gzip preferred by q") << "gzip;q=0.9, br;q=0.8"
                                             << "gzip";
        QTest::newRow("br preferred by q") << "gzip;q=0.5, br;q=0.8"
                                           << "br";
        QTest::newRow("tie prefers br") << "gzip, br"
                                        << "br";
        QTest::newRow("star") << "*"
                              << "br";
        QTest::newRow("star refused") << "*;q=0"
                                      << "";
        QTest::newRow("star but br refused") << "*, br;q=0"
                                             << "gzip";
        QTest::newRow("both refused") << "gzip;q=0, br;q=0.000"
                                      << "";
        QTest::newRow("x-gzip") << "x-gzip"
                                << "gzip";
        QTest::newRow("case and spaces") << " GZIP ; Q=1 "
                                         << "gzip";
        QTest::newRow("malformed q ignored") << "br;q=abc, gzip"
                                             << "gzip";
        QTest::newRow("unknown only") << "deflate, zstd"
                                      << "";
    }
    void negotiation() {
        QFETCH(QString, accept);
        QFETCH(QString, coding);
        auto res = get("/app.js", accept.toStdString());
        QCOMPARE(hv(res, "Content-Encoding"), coding);
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding")); // always, even in identity
        if (coding.isEmpty()) QVERIFY(bodyOf(res) == js_);
    }

    void smallAndIncompressibleStayIdentity() {
        auto res = get("/tiny.css", "gzip, br");
        QCOMPARE(hv(res, "Content-Encoding"), QString());
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
        res = get("/pic.png", "gzip, br");
        QCOMPARE(hv(res, "Content-Encoding"), QString());
        QCOMPARE(hv(res, "Vary"), QString());
        res = get("/app.js", "gzip, br", false); // compression.enabled = false
        QCOMPARE(hv(res, "Content-Encoding"), QString());
        QVERIFY(bodyOf(res) == js_);
    }

    void precompressedSiblings() {
        auto res = get("/pre.js", "br, gzip");
        QCOMPARE(hv(res, "Content-Encoding"), QString("br"));
        QCOMPARE(bodyOf(res), std::string("BROTLI-BYTES"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/javascript; charset=utf-8"));
        QVERIFY(hv(res, "ETag").endsWith("-br\""));
        res = get("/pre.js", "gzip");
        QCOMPARE(hv(res, "Content-Encoding"), QString("gzip"));
        QCOMPARE(bodyOf(res), std::string("GZIP-BYTES"));
        QVERIFY(hv(res, "ETag").endsWith("-gz\""));
        // Siblings are used even with on-the-fly compression off.
        res = get("/pre.js", "gzip", false);
        QCOMPARE(bodyOf(res), std::string("GZIP-BYTES"));
        res = get("/pre.js", "");
        QVERIFY(bodyOf(res) == js_);
        // The sibling itself is still a plain file.
        res = get("/pre.js.gz", "");
        QCOMPARE(hv(res, "Content-Type"), QString("application/gzip"));
    }

    void compressedVariantIsCached() {
        auto a = get("/app.js", "gzip");
        auto b = get("/app.js", "gzip");
        QCOMPARE(a.bodyKind(), http::Response::BodyKind::Shared);
        QCOMPARE(a.bodyView().data(), b.bodyView().data());
    }

    void largeFileCompressed() {
        auto res = get("/bundle.js", "gzip");
        QCOMPARE(hv(res, "Content-Encoding"), QString("gzip"));
        QVERIFY(gunzip(res.bodyView()) == bigJs_);
        res = get("/bundle.js", "");
        QCOMPARE(res.bodyKind(), http::Response::BodyKind::File);
        QCOMPARE(res.bodyLength(), std::uint64_t(bigJs_.size()));
    }

    // On-the-fly compression runs on the worker's event loop: above 1 MiB the file is sent as it
    // is (no stall of every other request on the worker), still with Vary and the identity ETag.
    void hugeFileIsNotCompressedOnTheFly() {
        auto plain = get("/huge.js", "");
        auto res = get("/huge.js", "gzip, br");
        QCOMPARE(res.status, 200);
        QCOMPARE(hv(res, "Content-Encoding"), QString());
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
        QCOMPARE(hv(res, "ETag"), hv(plain, "ETag"));
        QVERIFY(!hv(res, "ETag").endsWith("-br\"") && !hv(res, "ETag").endsWith("-gz\""));
        QCOMPARE(res.bodyKind(), http::Response::BodyKind::File);
        QCOMPARE(res.bodyLength(), std::uint64_t(hugeJs_.size()));
        QVERIFY(bodyOf(res) == hugeJs_);
        // It revalidates against the identity tag, whatever the client accepts.
        res = get("/huge.js", "gzip, br", true, {{"If-None-Match", hv(plain, "ETag").toStdString()}});
        QCOMPARE(res.status, 304);
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
        // The bound is inclusive: exactly 1 MiB is still compressed.
        QCOMPARE(hv(get("/limit.js", "gzip"), "Content-Encoding"), QString("gzip"));
        QCOMPARE(hv(get("/limit1.js", "gzip"), "Content-Encoding"), QString());
    }

    void hugeFileUsesPrecompressedSibling() {
        auto res = get("/huge-pre.js", "gzip, br");
        QCOMPARE(res.status, 200);
        QCOMPARE(hv(res, "Content-Encoding"), QString("gzip"));
        QCOMPARE(bodyOf(res), std::string("GZIP-BYTES"));
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
        QVERIFY(hv(res, "ETag").endsWith("-gz\""));
    }

    // Brotli 10-11 costs seconds per MiB: above 256 KiB the configured quality is capped at 9.
    void brotliQualityCappedForLargeFiles() {
        brotliQuality_ = 11;
        auto big = get("/bundle.js", "br");
        auto small = get("/app.js", "br");
        brotliQuality_ = 5;
        QCOMPARE(hv(big, "Content-Encoding"), QString("br"));
        QVERIFY(big.bodyView() == brotli(bigJs_, 9));
        QVERIFY(unbrotli(big.bodyView(), bigJs_.size()) == bigJs_);
        QCOMPARE(hv(small, "Content-Encoding"), QString("br"));
        QVERIFY(small.bodyView() == brotli(js_, 11)); // small files get the configured quality
    }

    void changedFileIsRecompressed() {
        QVERIFY(writeFile(tmp_.path(), "changing.js", QByteArray::fromStdString(js_)));
        QVERIFY(gunzip(get("/changing.js", "gzip").bodyView()) == js_);
        std::string next = js_ + "// more\n";
        QVERIFY(writeFile(tmp_.path(), "changing.js", QByteArray::fromStdString(next)));
        QVERIFY(gunzip(get("/changing.js", "gzip").bodyView()) == next);
    }
};

QTEST_APPLESS_MAIN(StaticCompressionTest)
#include "tst_static_compression.moc"

// Unit tests for request-path decoding and dot-segment removal, incl. traversal cases PTH-01 and PTH-05.
#include <portico/http/path.h>

#include <QtTest>

#include <cctype>
#include <string>
#include <vector>

using portico::http::normalizePath;
using portico::http::PathError;

Q_DECLARE_METATYPE(PathError)

namespace {

// An oracle written straight from RFC 3986: percent-decode once (refusing %2F and NUL), then split
// into segments and apply §5.2.4's rules segment by segment ("." and empty segments dropped, ".."
// pops, or is refused at the root), keeping a trailing slash when the last segment was empty, "."
// or "..". Slow and simple: normalizePath's fast path and its in-place pass must agree with it.
PathError oracle(std::string_view raw, std::string& out) {
    out.clear();
    if (raw.empty() || raw.front() != '/') return PathError::NotAbsolute;
    std::string decoded;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '%') {
            auto hex = [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; };
            if (i + 2 >= raw.size() || !hex(raw[i + 1]) || !hex(raw[i + 2])) return PathError::BadEncoding;
            c = static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16));
            if (c == '/') return PathError::EncodedSlash;
            i += 2;
        }
        if (c == '\0') return PathError::Nul;
        decoded.push_back(c);
    }
    std::vector<std::string> stack;
    bool trailing = false;
    std::size_t at = 1;
    for (;;) {
        const std::size_t slash = decoded.find('/', at);
        const std::string seg =
            decoded.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
        const bool last = slash == std::string::npos;
        if (seg.empty() || seg == ".") {
            trailing = last;
        } else if (seg == "..") {
            if (stack.empty()) return PathError::AboveRoot;
            stack.pop_back();
            trailing = last;
        } else {
            stack.push_back(seg);
            trailing = false;
        }
        if (last) break;
        at = slash + 1;
    }
    for (const auto& seg : stack)
        out += "/" + seg;
    if (out.empty() || trailing) out += "/";
    return PathError::None;
}

template <std::size_t N> QByteArray B(const char (&s)[N]) {
    return QByteArray(s, static_cast<qsizetype>(N - 1));
}
std::string_view sv(const QByteArray& a) { return {a.constData(), static_cast<std::size_t>(a.size())}; }
} // namespace

class TestHttpPath : public QObject {
    Q_OBJECT

private slots:
    void normalize_data();
    void normalize();
    void errors_data();
    void errors();
    void idempotent_data() { normalize_data(); }
    void idempotent();
    void reusesCapacity();
    void matchesTheRfcAlgorithm();
};

void TestHttpPath::normalize_data() {
    QTest::addColumn<QByteArray>("raw");
    QTest::addColumn<QByteArray>("path");
    // clang-format off
    QTest::newRow("root") << B("/") << B("/");
    QTest::newRow("plain") << B("/a/b.txt") << B("/a/b.txt");
    QTest::newRow("dot and dot-dot") << B("/a/./b/../c") << B("/a/c");
    QTest::newRow("trailing slash kept") << B("/a/b/") << B("/a/b/");
    QTest::newRow("trailing dot is a directory") << B("/a/.") << B("/a/");
    QTest::newRow("trailing dot-dot is a directory") << B("/a/b/..") << B("/a/");
    QTest::newRow("dot-dot to root") << B("/a/..") << B("/");
    QTest::newRow("only dot") << B("/.") << B("/");
    QTest::newRow("double slash") << B("//a//b") << B("/a/b");
    QTest::newRow("many slashes") << B("////") << B("/");
    QTest::newRow("trailing double slash") << B("/a//") << B("/a/");
    QTest::newRow("slash dot slash") << B("/./a/./") << B("/a/");
    QTest::newRow("dot-dot then slash") << B("/a/b/../../c/") << B("/c/");
    QTest::newRow("triple dot is a name") << B("/.../a") << B("/.../a");
    QTest::newRow("dot prefix names") << B("/.env/..x/x..") << B("/.env/..x/x..");
    QTest::newRow("percent-encoded letters") << B("/%61%62c") << B("/abc");
    QTest::newRow("encoded space") << B("/a%20b") << B("/a b");
    QTest::newRow("lower and upper hex") << B("/%e2%82%AC") << B("/\xe2\x82\xac");
    QTest::newRow("plus stays plus") << B("/a+b") << B("/a+b");
    QTest::newRow("encoded plus") << B("/a%2Bb") << B("/a+b");
    QTest::newRow("decoded once: %25") << B("/%2541") << B("/%41");
    QTest::newRow("decoded once: %252e%252e is a name") << B("/a/%252e%252e/b") << B("/a/%2e%2e/b");
    QTest::newRow("encoded dot segment") << B("/a/%2e/b") << B("/a/b");
    QTest::newRow("encoded dot-dot segment") << B("/a/b/%2e%2e/c") << B("/a/c");
    QTest::newRow("mixed encoded dot-dot") << B("/a/b/.%2E/c") << B("/a/c");
    QTest::newRow("upper-case encoded dot-dot") << B("/a/%2E%2E") << B("/");
    QTest::newRow("encoded dot name") << B("/%2eenv") << B("/.env");
    QTest::newRow("backslash is not a separator") << B("/a\\..\\b") << B("/a\\..\\b");
    QTest::newRow("raw UTF-8") << B("/caf\xc3\xa9/") << B("/caf\xc3\xa9/");
    QTest::newRow("encoded CR stays data") << B("/a%0Db") << B("/a\rb");
    QTest::newRow("long") << B("/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbbb/../c") << B("/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/c");
    // clang-format on
}

void TestHttpPath::normalize() {
    QFETCH(QByteArray, raw);
    QFETCH(QByteArray, path);
    std::string out = "garbage from a previous request";
    QCOMPARE(normalizePath(sv(raw), out), PathError::None);
    QCOMPARE(QByteArray::fromStdString(out), path);
}

void TestHttpPath::errors_data() {
    QTest::addColumn<QByteArray>("raw");
    QTest::addColumn<PathError>("error");
    // clang-format off
    // PTH-01 (CVE-2018-3712): encoded dot-dot and encoded slashes never leave the root.
    QTest::newRow("PTH-01 %2e%2e/%2e%2e/etc/passwd") << B("/%2e%2e/%2e%2e/etc/passwd") << PathError::AboveRoot;
    QTest::newRow("PTH-01 ..%2fsecret") << B("/..%2fsecret") << PathError::EncodedSlash;
    QTest::newRow("PTH-01 %2e%2e/outside/secret.txt") << B("/%2e%2e/outside/secret.txt") << PathError::AboveRoot;
    QTest::newRow("PTH-01 ..%2foutside%2fsecret.txt") << B("/..%2foutside%2fsecret.txt") << PathError::EncodedSlash;
    QTest::newRow("PTH-01 sub/%2e%2e%2f%2e%2e%2foutside/") << B("/sub/%2e%2e%2f%2e%2e%2foutside/") << PathError::EncodedSlash;
    QTest::newRow("PTH-01 %2E%2e/outside/") << B("/%2E%2e/outside/") << PathError::AboveRoot;
    QTest::newRow("PTH-01 sub%2f..%2f..%2foutside%2fsecret.txt") << B("/sub%2f..%2f..%2foutside%2fsecret.txt") << PathError::EncodedSlash;
    QTest::newRow("upper-case %2F") << B("/a%2Fb") << PathError::EncodedSlash;
    QTest::newRow("plain dot-dot above root") << B("/..") << PathError::AboveRoot;
    QTest::newRow("dot-dot above root after name") << B("/a/../../b") << PathError::AboveRoot;
    QTest::newRow("dot-dot above root with slashes") << B("//..//x") << PathError::AboveRoot;
    // PTH-05: NUL must never reach a filesystem call (truncation, crashes).
    QTest::newRow("PTH-05 a.txt%00.png") << B("/a.txt%00.png") << PathError::Nul;
    QTest::newRow("PTH-05 %00") << B("/%00") << PathError::Nul;
    QTest::newRow("PTH-05 sub/%00/../a.txt") << B("/sub/%00/../a.txt") << PathError::Nul;
    QTest::newRow("raw NUL") << B("/a\0b") << PathError::Nul;
    QTest::newRow("bad % at end") << B("/a%") << PathError::BadEncoding;
    QTest::newRow("bad % one digit") << B("/a%4") << PathError::BadEncoding;
    QTest::newRow("bad % non-hex") << B("/a%zz") << PathError::BadEncoding;
    QTest::newRow("bad % half hex") << B("/a%4g") << PathError::BadEncoding;
    QTest::newRow("bad %%") << B("/%%41") << PathError::BadEncoding;
    QTest::newRow("empty") << B("") << PathError::NotAbsolute;
    QTest::newRow("relative") << B("a/b") << PathError::NotAbsolute;
    QTest::newRow("asterisk") << B("*") << PathError::NotAbsolute;
    QTest::newRow("encoded leading slash") << B("%2Fa") << PathError::NotAbsolute;
    // clang-format on
}

void TestHttpPath::errors() {
    QFETCH(QByteArray, raw);
    QFETCH(PathError, error);
    std::string out;
    QCOMPARE(normalizePath(sv(raw), out), error);
}

void TestHttpPath::idempotent() {
    // A normalised path without '%' normalises to itself.
    QFETCH(QByteArray, path);
    if (path.contains('%')) QSKIP("decoding again would be a second decode");
    std::string out;
    QCOMPARE(normalizePath(sv(path), out), PathError::None);
    QCOMPARE(QByteArray::fromStdString(out), path);
}

void TestHttpPath::reusesCapacity() {
    std::string out;
    out.reserve(256);
    const char* before = out.data();
    QCOMPARE(normalizePath("/a/./b/%2e%2e/c/", out), PathError::None);
    QCOMPARE(out, std::string("/a/c/"));
    QCOMPARE(out.data(), before);
}

// Every path of up to 8 characters after the leading '/' over an alphabet that reaches each rule
// ('/', '.', a letter, an escape of '.', an escape of '/', a bad escape, NUL): the same result and
// the same error as the oracle. About 6.7 million paths.
void TestHttpPath::matchesTheRfcAlgorithm() {
    static const std::vector<std::string> pieces = {"/", ".", "a", "%2e", "%2F", "%z", std::string(1, '\0')};
    std::string got, want, raw;
    std::size_t checked = 0, normal = 0;
    std::vector<std::size_t> digits;
    for (std::size_t len = 0; len <= 8; ++len) {
        digits.assign(len, 0);
        for (;;) {
            raw.assign(1, '/');
            for (std::size_t d : digits)
                raw += pieces[d];
            const PathError e = normalizePath(raw, got);
            const PathError o = oracle(raw, want);
            if (e != o || (e == PathError::None && got != want))
                QFAIL(qPrintable(QStringLiteral("%1: got %2 (%3), the RFC gives %4 (%5)")
                                     .arg(QString::fromStdString(raw), QString::fromStdString(got))
                                     .arg(int(e))
                                     .arg(QString::fromStdString(want))
                                     .arg(int(o))));
            ++checked;
            normal += e == PathError::None && got == raw;
            std::size_t i = 0;
            while (i < len && ++digits[i] == pieces.size())
                digits[i++] = 0;
            if (i == len) break;
        }
    }
    QVERIFY(checked > 6'000'000);
    QVERIFY(normal > 1000); // the fast path's inputs were among them
}

QTEST_APPLESS_MAIN(TestHttpPath)
#include "tst_http_path.moc"

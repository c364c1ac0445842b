// portico/http/message.h helpers: validAuthority (Host and :authority, RFC 9110 §7.2, RFC 3986
// §3.2.2-3.2.3) against a regular expression written from the grammar, over every short string of
// an alphabet that reaches each rule, plus the named cases of its contract; statusLine11's table.
#include <portico/http/message.h>

#include <QtTest>

#include <regex>
#include <string>
#include <vector>

using portico::http::reasonPhrase;
using portico::http::statusLine11;
using portico::http::validAuthority;

namespace {

// The grammar as validAuthority's contract states it: empty, or host [":" port]; host is
// "[" (hex digits, ':' and '.', at least two) "]" or a non-empty reg-name (unreserved,
// '%' of pct-encoded, sub-delims); port is up to five digits and at most 65535.
bool oracle(const std::string& a) {
    static const std::regex grammar(
        R"(^(\[[0-9A-Fa-f:.]{2,}\]|[A-Za-z0-9._~%!$&'()*+,;=-]+)(:([0-9]{0,5}))?$)");
    if (a.empty()) return true;
    std::smatch m;
    if (!std::regex_match(a, m, grammar)) return false;
    return !m[3].matched || m[3].length() == 0 || std::stoul(m[3].str()) <= 65535;
}

} // namespace

class TestHttpMessage : public QObject {
    Q_OBJECT

private slots:
    // RFC 9110 §5.6.2: tchar is any VCHAR (0x21..0x7E) but the delimiters "(),/:;<=>?@[\]{}
    // and DQUOTE; every byte value against that wording, and tokens of one and two bytes.
    void tokens() {
        const std::string_view delimiters = "\"(),/:;<=>?@[\\]{}";
        auto oracle = [&](unsigned char c) {
            return c >= 0x21 && c <= 0x7e && delimiters.find(static_cast<char>(c)) == std::string_view::npos;
        };
        int tchars = 0;
        for (int c = 0; c < 256; ++c) {
            const char ch = static_cast<char>(c);
            QVERIFY2(portico::http::isTchar(ch) == oracle(static_cast<unsigned char>(c)),
                     qPrintable(QString::number(c)));
            tchars += oracle(static_cast<unsigned char>(c));
            for (int d = 0; d < 256; d += 7) {
                const char two[2] = {ch, static_cast<char>(d)};
                QCOMPARE(portico::http::isToken(std::string_view(two, 2)),
                         oracle(static_cast<unsigned char>(c)) && oracle(static_cast<unsigned char>(d)));
            }
        }
        QCOMPARE(tchars, 26 * 2 + 10 + 15); // ALPHA, DIGIT and the 15 symbols the RFC lists
        QVERIFY(!portico::http::isToken(""));
        QVERIFY(portico::http::isToken("X-Forwarded-For"));
        QVERIFY(!portico::http::isToken("Bad Name"));
    }

    // RFC 9112 §4: "HTTP/1.1" SP status-code SP reason-phrase CRLF, for every code in range.
    void statusLines() {
        QCOMPARE(statusLine11(200), std::string_view("HTTP/1.1 200 OK\r\n"));
        QCOMPARE(statusLine11(404), std::string_view("HTTP/1.1 404 Not Found\r\n"));
        QCOMPARE(statusLine11(599), std::string_view("HTTP/1.1 599 Unknown\r\n"));
        for (int s = 100; s < 600; ++s) {
            const std::string want =
                "HTTP/1.1 " + std::to_string(s) + " " + std::string(reasonPhrase(s)) + "\r\n";
            QCOMPARE(statusLine11(s), std::string_view(want));
        }
        QCOMPARE(statusLine11(999), std::string_view("HTTP/1.1 999 Unknown\r\n")); // out of the table
    }

    void namedCases_data() {
        QTest::addColumn<QString>("value");
        QTest::addColumn<bool>("valid");
        QTest::newRow("empty") << "" << true;
        QTest::newRow("name") << "example.com" << true;
        QTest::newRow("name and port") << "localhost:8080" << true;
        QTest::newRow("IPv4 and port") << "127.0.0.1:65535" << true;
        QTest::newRow("IPv6") << "[::1]:443" << true;
        QTest::newRow("empty port") << "example.com:" << true;
        QTest::newRow("port only") << ":80" << false;
        QTest::newRow("colon only") << ":" << false;
        QTest::newRow("port not digits") << "x:abc" << false;
        QTest::newRow("port too large") << "x:99999" << false;
        QTest::newRow("unclosed IPv6") << "[::1" << false;
        QTest::newRow("userinfo") << "a@b" << false;
        QTest::newRow("space") << "a b" << false;
        QTest::newRow("slash") << "a/b" << false;
    }
    void namedCases() {
        QFETCH(QString, value);
        QFETCH(bool, valid);
        QCOMPARE(validAuthority(value.toStdString()), valid);
        QCOMPARE(oracle(value.toStdString()), valid);
    }

    // Every string of up to 6 characters over an alphabet that reaches each rule (a letter, a
    // digit, '.', ':', brackets, '%', '-', and bytes no authority may hold: '@', ' ', '/', 0x80).
    void matchesTheGrammar() {
        static const std::string alphabet = std::string("a7.:[]%-@ /") + char(0x80);
        std::string s;
        std::vector<std::size_t> digits;
        std::size_t checked = 0, valid = 0;
        for (std::size_t len = 0; len <= 6; ++len) {
            digits.assign(len, 0);
            for (;;) {
                s.clear();
                for (std::size_t d : digits)
                    s.push_back(alphabet[d]);
                const bool got = validAuthority(s);
                if (got != oracle(s))
                    QFAIL(qPrintable(QStringLiteral("'%1': %2")
                                         .arg(QString::fromLatin1(s.data(), int(s.size())))
                                         .arg(got)));
                ++checked;
                valid += got;
                std::size_t i = 0;
                while (i < len && ++digits[i] == alphabet.size())
                    digits[i++] = 0;
                if (i == len) break;
            }
        }
        QVERIFY(checked > 3'000'000);
        QVERIFY(valid > 10'000);
    }
};

QTEST_APPLESS_MAIN(TestHttpMessage)
#include "tst_http_message.moc"

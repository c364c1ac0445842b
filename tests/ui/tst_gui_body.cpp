// The body view's JSON rendering (issue 26, point 3): the text as sent, re-indented by 2 spaces,
// with key order, duplicate keys, number literals and string escapes kept; anything that is not one
// JSON value (RFC 8259) is shown as the raw text with where and why. nlohmann::ordered_json is the
// oracle: a valid input and its indented text parse to the same value, removing white space outside
// strings gives the same bytes back, and on mutated inputs the two agree on what is JSON.
#include "inspector/bodyview.h"
#include "inspector/jsonpretty.h"

#include <nlohmann/json.hpp>

#include <QLabel>
#include <QPlainTextEdit>
#include <QtTest>

#include <chrono>
#include <random>

using namespace portico;
using portico::ui::BodyView;
using portico::ui::JsonPretty;
using portico::ui::prettyPrintJson;

namespace {

// White space outside strings removed (the strings themselves byte for byte).
std::string minify(std::string_view s) {
    std::string out;
    bool inString = false, escaped = false;
    for (const char c : s) {
        if (inString) {
            out += c;
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        if (c == '"') inString = true;
        out += c;
    }
    return out;
}

// nlohmann's verdict: "" when it parses `s`, else its message.
std::string oracleError(const std::string& s) {
    try {
        [[maybe_unused]] const auto parsed = nlohmann::ordered_json::parse(s);
        return {};
    } catch (const nlohmann::json::exception& e) {
        return e.what();
    }
}

// Each line's indentation is 2 spaces a level and nothing trails a line.
bool wellIndented(const std::string& pretty) {
    std::size_t start = 0;
    while (start <= pretty.size()) {
        std::size_t end = pretty.find('\n', start);
        if (end == std::string::npos) end = pretty.size();
        const std::string_view line(pretty.data() + start, end - start);
        const std::size_t indent = line.find_first_not_of(' ');
        if (indent == std::string_view::npos || indent % 2 != 0) return false;
        if (line.back() == ' ' || line.back() == '\t') return false;
        start = end + 1;
    }
    return true;
}

// Valid documents: the seeds of the mutation loop and the inputs of the oracle check.
const std::vector<std::string>& validCorpus() {
    static const std::vector<std::string> corpus = {
        "{\"zebra\":1,\"apple\":2,\"mango\":3}",
        "{\"id\":12345678901234567890,\"neg\":-12345678901234567890123,\"small\":-0}",
        "{\"a\":1,\"a\":2,\"b\":{\"c\":true,\"c\":false}}",
        "{\"price\":1.10,\"exp\":1.0E+10,\"e2\":2e-3,\"z\":0.0}",
        "[1,[2,[3,[4,[]]]],{\"x\":{\"y\":{\"z\":{}}}}]",
        "{\"k[,]\":\"v{\\\"}:,\",\"e\":\"\\u00e9\\n\\t\\/\\\\\",\"u\":\"é中😀\",\"q\":\"\\\"\",\"b\":\"]}\"}",
        "  { \"spaced\" : [ 1 , 2 ] ,\"tabs\"	:	null }  ",
        "\"just a string\"",
        "42",
        " true ",
        "null",
        "-0.5e+10",
        "[]",
        "{}",
        "[{}, [], \"\", 0, false]",
        "{\"nested\":[[[[\"deep\"]]]],\"after\":[{\"a\":[{\"b\":[]}]}]}",
        "{\"surrogates\":\"\\ud83d\\ude00\",\"ctl\":\"\\u0001\\u001f\",\"big\":1e300}",
    };
    return corpus;
}

} // namespace

class TestGuiBody : public QObject {
    Q_OBJECT

    // What the view shows for `bytes` in JSON mode, and its info line.
    static std::pair<QString, QString> shownAsJson(const std::string& bytes, std::uint64_t fullSize = 0) {
        BodyView view;
        view.setMode(BodyView::Json);
        view.setBody(bytes, fullSize ? fullSize : bytes.size(), "application/json");
        return {view.shownText(), view.findChild<QLabel*>("bodyInfo")->text()};
    }
    // `bytes` as any QPlainTextEdit shows them (a lone CR reads back as a line break).
    static QString asPlainText(const std::string& bytes) {
        QPlainTextEdit edit;
        edit.setPlainText(QString::fromUtf8(bytes.data(), qsizetype(bytes.size())));
        return edit.toPlainText();
    }

private slots:
    // The four cases of issue 26, point 3, through the widget as a user sees them (Auto picks JSON).
    void issueCasesAreShownAsSent_data() {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("expected");
        QTest::newRow("key order") << "{\"zebra\":1,\"apple\":2,\"mango\":3}"
                                   << "{\n  \"zebra\": 1,\n  \"apple\": 2,\n  \"mango\": 3\n}";
        QTest::newRow("big integer") << "{\"id\":12345678901234567890}"
                                     << "{\n  \"id\": 12345678901234567890\n}";
        QTest::newRow("duplicate keys") << "{\"a\":1,\"a\":2}"
                                        << "{\n  \"a\": 1,\n  \"a\": 2\n}";
        QTest::newRow("number literal") << "{\"price\":1.10,\"e\":1.0E+10}"
                                        << "{\n  \"price\": 1.10,\n  \"e\": 1.0E+10\n}";
    }
    void issueCasesAreShownAsSent() {
        QFETCH(QString, input);
        QFETCH(QString, expected);
        BodyView view;
        const std::string bytes = input.toStdString();
        view.setBody(bytes, bytes.size(), "application/json; charset=utf-8");
        QCOMPARE(view.effectiveMode(), BodyView::Json);
        QCOMPARE(view.shownText(), expected);
        QCOMPARE(BodyView::prettyJson(bytes), expected);
    }

    void nestedAndEmptyContainers_data() {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("expected");
        QTest::newRow("nested") << "{\"a\":[1,[2,{\"b\":null}],{}],\"c\":{\"d\":[]}}"
                                << "{\n"
                                   "  \"a\": [\n"
                                   "    1,\n"
                                   "    [\n"
                                   "      2,\n"
                                   "      {\n"
                                   "        \"b\": null\n"
                                   "      }\n"
                                   "    ],\n"
                                   "    {}\n"
                                   "  ],\n"
                                   "  \"c\": {\n"
                                   "    \"d\": []\n"
                                   "  }\n"
                                   "}";
        QTest::newRow("{}") << "{}"
                            << "{}";
        QTest::newRow("[]") << "[]"
                            << "[]";
        QTest::newRow("{ } with space") << " {\n \t} "
                                        << "{}";
        QTest::newRow("[ ] with space") << "[ \r\n ]"
                                        << "[]";
        QTest::newRow("array of empties") << "[{},[],{ },[ ]]"
                                          << "[\n  {},\n  [],\n  {},\n  []\n]";
        QTest::newRow("re-indented") << "{\n      \"a\" :\n\n [ true,false ]\n}"
                                     << "{\n  \"a\": [\n    true,\n    false\n  ]\n}";
        QTest::newRow("top-level string") << "  \"x\"  "
                                          << "\"x\"";
        QTest::newRow("top-level number") << "-0.5e+10"
                                          << "-0.5e+10";
        QTest::newRow("top-level literal") << "\nnull\n"
                                           << "null";
        QTest::newRow("beyond double") << "[1e400,-1E-400]"
                                       << "[\n  1e400,\n  -1E-400\n]";
    }
    void nestedAndEmptyContainers() {
        QFETCH(QString, input);
        QFETCH(QString, expected);
        const JsonPretty pretty = prettyPrintJson(input.toStdString());
        QVERIFY2(pretty.ok, pretty.error.c_str());
        QCOMPARE(QString::fromStdString(pretty.text), expected);
        QCOMPARE(shownAsJson(input.toStdString()).first, expected);
    }

    // Brackets, commas, colons and quotes inside strings are not structure; escapes and non-ASCII
    // text are copied byte for byte.
    void stringsAreCopiedAsWritten() {
        const std::string input =
            "{\"k[,]\":\"v{\\\"}:,\",\"e\":\"\\u00e9\\n\\t\\/"
            "\\\\\",\"u\":\"é中😀\",\"q\":\"\\\"\",\"b\":\"]}\",\"s\":\"\\ud83d\\ude00\"}";
        const JsonPretty pretty = prettyPrintJson(input);
        QVERIFY2(pretty.ok, pretty.error.c_str());
        // Not raw strings: moc (Qt 6.4) misreads a raw string with \" in it and skips the class.
        const std::string expected = "{\n"
                                     "  \"k[,]\": \"v{\\\"}:,\",\n"
                                     "  \"e\": \"\\u00e9\\n\\t\\/\\\\\",\n"
                                     "  \"u\": \"é中😀\",\n"
                                     "  \"q\": \"\\\"\",\n"
                                     "  \"b\": \"]}\",\n"
                                     "  \"s\": \"\\ud83d\\ude00\"\n"
                                     "}";
        QCOMPARE(pretty.text, expected);
        QCOMPARE(shownAsJson(input).first, QString::fromStdString(expected));
    }

    // Not one JSON value: the raw text unchanged, and the info line says where and why.
    void invalidInputIsShownRaw_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<int>("offset");
        QTest::addColumn<bool>("truncated");
        QTest::newRow("trailing comma in array") << QByteArray("[1,2,]") << 5 << false;
        QTest::newRow("trailing comma in object") << QByteArray("{\"a\":1,}") << 7 << false;
        QTest::newRow("unbalanced: unclosed") << QByteArray("[1,[2,3]") << 8 << true;
        QTest::newRow("unbalanced: wrong close") << QByteArray("{\"a\":1]") << 6 << false;
        QTest::newRow("unbalanced: extra close") << QByteArray("[1]]") << 3 << false;
        QTest::newRow("lone close") << QByteArray("]") << 0 << false;
        QTest::newRow("bad literal") << QByteArray("[tru]") << 4 << false;
        QTest::newRow("bad literal: case") << QByteArray("True") << 0 << false;
        QTest::newRow("bad literal: nul1") << QByteArray("[nul1]") << 4 << false;
        QTest::newRow("bad literal: suffix") << QByteArray("[truex]") << 5 << false;
        QTest::newRow("garbage after value") << QByteArray("{} x") << 3 << false;
        QTest::newRow("two values") << QByteArray("1 2") << 2 << false;
        QTest::newRow("truncated string") << QByteArray("{\"a\":\"bc") << 8 << true;
        QTest::newRow("truncated key") << QByteArray("{\"a") << 3 << true;
        QTest::newRow("truncated after colon") << QByteArray("{\"a\": ") << 6 << true;
        QTest::newRow("truncated literal") << QByteArray("[fals") << 5 << true;
        QTest::newRow("truncated number") << QByteArray("[1.") << 3 << true;
        QTest::newRow("truncated escape") << QByteArray("[\"\\u12") << 6 << true;
        QTest::newRow("leading zero") << QByteArray("[01]") << 2 << false;
        QTest::newRow("no integer part") << QByteArray("[.5]") << 1 << false;
        QTest::newRow("plus sign") << QByteArray("[+1]") << 1 << false;
        QTest::newRow("empty exponent") << QByteArray("[1e]") << 3 << false;
        QTest::newRow("lone minus") << QByteArray("[-]") << 2 << false;
        QTest::newRow("NaN") << QByteArray("[NaN]") << 1 << false;
        QTest::newRow("hex number") << QByteArray("[0x1F]") << 2 << false;
        QTest::newRow("single quotes") << QByteArray("{'a':1}") << 1 << false;
        QTest::newRow("unquoted key") << QByteArray("{a:1}") << 1 << false;
        QTest::newRow("number key") << QByteArray("{1:2}") << 1 << false;
        QTest::newRow("missing colon") << QByteArray("{\"a\" 1}") << 5 << false;
        QTest::newRow("missing comma") << QByteArray("[1 2]") << 3 << false;
        QTest::newRow("comment") << QByteArray("[1] // note") << 4 << false;
        QTest::newRow("bad escape") << QByteArray("[\"\\x41\"]") << 3 << false;
        QTest::newRow("short \\u") << QByteArray("[\"\\u12G4\"]") << 6 << false;
        QTest::newRow("raw newline in string") << QByteArray("[\"a\nb\"]") << 3 << false;
        QTest::newRow("raw NUL in string") << QByteArray("[\"a\0b\"]", 7) << 3 << false;
        QTest::newRow("invalid UTF-8") << QByteArray("[\"a\xff\"]") << 3 << false;
        QTest::newRow("overlong UTF-8") << QByteArray("[\"\xc0\xaf\"]") << 2 << false;
        QTest::newRow("UTF-8 surrogate") << QByteArray("[\"\xed\xa0\x80\"]") << 2 << false;
        QTest::newRow("overlong 3-byte UTF-8") << QByteArray("[\"\xe0\x80\xaf\"]") << 2 << false;
        QTest::newRow("UTF-8 above U+10FFFF") << QByteArray("[\"\xf4\x90\x80\x80\"]") << 2 << false;
        QTest::newRow("UTF-8 continuation alone") << QByteArray("[\"\x80\"]") << 2 << false;
        QTest::newRow("truncated UTF-8") << QByteArray("[\"\xe2\x82") << 4 << true;
        QTest::newRow("BOM") << QByteArray("\xef\xbb\xbf{}") << 0 << false;
        QTest::newRow("form feed as space") << QByteArray("[1,\f2]") << 3 << false;
        QTest::newRow("empty") << QByteArray("") << 0 << true;
        QTest::newRow("only white space") << QByteArray(" \n\t ") << 4 << true;
    }
    void invalidInputIsShownRaw() {
        QFETCH(QByteArray, input);
        QFETCH(int, offset);
        QFETCH(bool, truncated);
        const std::string bytes = input.toStdString();
        const JsonPretty pretty = prettyPrintJson(bytes);
        QVERIFY(!pretty.ok);
        QVERIFY(!pretty.error.empty());
        QVERIFY(pretty.text.empty());
        QCOMPARE(int(pretty.offset), offset);
        QCOMPARE(pretty.truncated, truncated);
        QVERIFY(!ui::isJson(bytes));
        QVERIFY(BodyView::prettyJson(bytes).isEmpty());
        QVERIFY2(!oracleError(bytes).empty() || bytes.starts_with("\xef\xbb\xbf"), "nlohmann disagrees");

        const auto [shown, info] = shownAsJson(bytes);
        QCOMPARE(shown, asPlainText(bytes));
        if (!bytes.empty()) {
            QVERIFY2(info.contains("shown as text: not"), qPrintable(info));
            if (!truncated)
                QVERIFY2(info.contains(QStringLiteral("not valid JSON at byte %1 (").arg(offset)),
                         qPrintable(info));
        }
        // Auto does not call it JSON.
        BodyView view;
        view.setBody(bytes, bytes.size(), "application/json");
        QVERIFY(view.effectiveMode() != BodyView::Json);
    }

    void theNoteSaysWhereAndWhy() {
        QCOMPARE(shownAsJson("[1,2,]").second,
                 QString("6 bytes · application/json · shown as text: not valid JSON at byte 5 (expected a "
                         "value, found ']')"));
        QCOMPARE(shownAsJson("{\"a\":1} x").second,
                 QString("9 bytes · application/json · shown as text: not valid JSON at byte 8 (expected the "
                         "end of the text after the value, found 'x')"));
        // A body cut by capture.body_bytes: the prefix is not complete JSON, and the note says why.
        QCOMPARE(
            shownAsJson("{\"list\":[1,2", 400).second,
            QString("first 12 of 400 bytes · application/json · shown as text: not complete JSON (only a "
                    "prefix was captured)"));
        QCOMPARE(
            shownAsJson("{\"list\":[1,2").second,
            QString("12 bytes · application/json · shown as text: not complete JSON (expected ',' or ']')"));
        QCOMPARE(shownAsJson("").second, QString("no body"));
    }

    // Valid inputs against nlohmann::ordered_json (keeps key order): the indented text is the same
    // value, and is the input with only white space outside strings changed.
    void validInputsMatchTheOracle() {
        for (const std::string& input : validCorpus()) {
            const JsonPretty pretty = prettyPrintJson(input);
            QVERIFY2(pretty.ok, (input + ": " + pretty.error).c_str());
            QVERIFY2(oracleError(input).empty(), input.c_str());
            QCOMPARE(nlohmann::ordered_json::parse(pretty.text), nlohmann::ordered_json::parse(input));
            QCOMPARE(minify(pretty.text), minify(input));
            QVERIFY2(wellIndented(pretty.text), pretty.text.c_str());
            QVERIFY(ui::isJson(input));
        }
    }

    // Deep nesting multiplies the indentation: the output is bounded, and past the bound the view
    // shows the raw text quickly. Nesting within the bound is fine (no recursion).
    void largeAndDeepBodiesAreBounded() {
        const std::string deep = std::string(100000, '[') + std::string(100000, ']');
        QElapsedTimer timer;
        timer.start();
        const JsonPretty tooDeep = prettyPrintJson(deep);
        QVERIFY(!tooDeep.ok);
        QVERIFY(tooDeep.tooLarge);
        QVERIFY(!tooDeep.truncated);
        QVERIFY(ui::isJson(deep)); // valid, only too large to indent
        const auto [shown, info] = shownAsJson(deep);
        QCOMPARE(shown.size(), qsizetype(deep.size()));
        QVERIFY2(info.contains("shown as text: too large to indent"), qPrintable(info));
        QVERIFY2(timer.elapsed() < 10000, "the bound did not stop the work");

        const std::string nested = std::string(2000, '[') + "1" + std::string(2000, ']');
        const JsonPretty ok = prettyPrintJson(nested);
        QVERIFY2(ok.ok, ok.error.c_str());
        QCOMPARE(minify(ok.text), nested);

        // The bound is on the output: a small one stops a small document.
        const JsonPretty small = prettyPrintJson("{\"a\":[1,2,3]}", 10);
        QVERIFY(!small.ok && small.tooLarge);

        // A 1 MiB body (the largest capture.record_bytes) of ordinary JSON is indented.
        std::string big = "[";
        for (int i = 0; big.size() < (1u << 20); ++i)
            big += (i ? "," : "") + std::string("{\"id\":") + std::to_string(i) +
                   ",\"name\":\"item\",\"tags\":[\"a\",\"b\"]}";
        big += "]";
        const JsonPretty bigPretty = prettyPrintJson(big);
        QVERIFY2(bigPretty.ok, bigPretty.error.c_str());
        QCOMPARE(minify(bigPretty.text), big);
    }

    // Mutated documents: never a crash; either indented (then nlohmann accepts it, the value and
    // the bytes outside white space are the same) or not JSON (then nlohmann rejects it too and the
    // view shows the raw bytes). Deterministic (fixed seed).
    void mutatedInputsPrettyPrintOrStayRaw() {
        std::mt19937 rng(26);
        const auto pick = [&](std::size_t n) {
            return std::size_t(std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
        };
        static const std::vector<std::string> pieces = {"{",
                                                        "}",
                                                        "[",
                                                        "]",
                                                        ",",
                                                        ":",
                                                        "\"",
                                                        "\\",
                                                        " ",
                                                        "\n",
                                                        "\t",
                                                        "0",
                                                        "1",
                                                        "9",
                                                        "-",
                                                        "+",
                                                        ".",
                                                        "e",
                                                        "E",
                                                        "t",
                                                        "r",
                                                        "u",
                                                        "f",
                                                        "a",
                                                        "l",
                                                        "s",
                                                        "n",
                                                        "/",
                                                        "b",
                                                        "x",
                                                        "\\u",
                                                        "\\ud800",
                                                        "é",
                                                        "\xf0\x9f\x98\x80",
                                                        "\xff",
                                                        "\xe0",
                                                        "\x80",
                                                        "\xf4",
                                                        std::string(1, '\0'),
                                                        "\x1f",
                                                        "true",
                                                        "null",
                                                        "{}",
                                                        "[]",
                                                        "\"k\":"};
        int valid = 0, invalid = 0;
        for (int iteration = 0; iteration < 50000; ++iteration) {
            std::string s = validCorpus()[pick(validCorpus().size())];
            const int mutations = 1 + int(pick(3));
            for (int m = 0; m < mutations; ++m) {
                const std::size_t at = s.empty() ? 0 : pick(s.size() + 1);
                switch (pick(6)) {
                case 0: // replace a byte
                    if (at < s.size()) s.replace(at, 1, pieces[pick(pieces.size())]);
                    break;
                case 1:
                    s.insert(at, pieces[pick(pieces.size())]);
                    break;
                case 2:
                    if (at < s.size()) s.erase(at, 1 + pick(3));
                    break;
                case 3:
                    s.resize(at);
                    break; // a truncated body
                case 4: {  // a slice repeated
                    const std::size_t len = pick(8) + 1;
                    if (at < s.size()) s.insert(at, s.substr(at, len));
                    break;
                }
                case 5: // a random byte
                    if (at < s.size()) s[at] = char(pick(256));
                    break;
                }
            }
            const JsonPretty pretty = prettyPrintJson(s);
            const std::string oracle = oracleError(s);
            const std::string what =
                "input: " + QByteArray::fromStdString(s).toPercentEncoding().toStdString();
            if (pretty.ok) {
                ++valid;
                // RFC 8259's grammar allows lone surrogates in \u escapes and numbers beyond a double;
                // nlohmann refuses both.
                QVERIFY2(oracle.empty() || oracle.find("surrogate") != std::string::npos ||
                             oracle.find("number overflow") != std::string::npos,
                         (what + " accepted, nlohmann says " + oracle).c_str());
                if (oracle.empty())
                    QVERIFY2(nlohmann::ordered_json::parse(pretty.text) == nlohmann::ordered_json::parse(s),
                             what.c_str());
                QVERIFY2(minify(pretty.text) == minify(s), what.c_str());
                QVERIFY2(wellIndented(pretty.text), what.c_str());
            } else {
                ++invalid;
                QVERIFY2(!pretty.tooLarge, what.c_str());
                QVERIFY2(pretty.offset <= s.size() && !pretty.error.empty(), what.c_str());
                QVERIFY2(pretty.text.empty(), what.c_str());
                // nlohmann skips a leading UTF-8 BOM and stops at a NUL byte outside strings; neither is
                // JSON text.
                QVERIFY2(!oracle.empty() || s.starts_with("\xef\xbb\xbf") ||
                             (pretty.offset < s.size() && s[pretty.offset] == '\0'),
                         (what + " refused (" + pretty.error + "), nlohmann accepts it").c_str());
            }
            QCOMPARE(ui::isJson(s), pretty.ok);
            if (iteration % 50 == 0) { // through the widget: indented, or the raw text
                const QString shown = shownAsJson(s).first;
                QCOMPARE(shown, pretty.ok ? QString::fromStdString(pretty.text) : asPlainText(s));
            }
        }
        qInfo("%d mutated inputs indented, %d shown raw", valid, invalid);
        QVERIFY(valid > 5000);
        QVERIFY(invalid > 5000);
    }
};

QTEST_MAIN(TestGuiBody)
#include "tst_gui_body.moc"

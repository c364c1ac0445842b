// Unit tests for the one "did you mean" helper the config reader and the traffic filter share
// (portico/http/spelling.h).
#include <portico/http/spelling.h>

#include <QtTest>

#include <string_view>

using portico::http::closestWord;
using portico::http::editDistance;

class TestHttpSpelling : public QObject {
    Q_OBJECT

private slots:
    void distance_data();
    void distance();
    void closest();
};

void TestHttpSpelling::distance_data() {
    QTest::addColumn<QString>("a");
    QTest::addColumn<QString>("b");
    QTest::addColumn<int>("edits");
    QTest::newRow("same") << "listen"
                          << "listen" << 0;
    QTest::newRow("both empty") << ""
                                << "" << 0;
    QTest::newRow("from empty") << ""
                                << "abc" << 3;
    QTest::newRow("to empty") << "abc"
                              << "" << 3;
    QTest::newRow("one substitution") << "status"
                                      << "statis" << 1;
    QTest::newRow("transposition is two") << "stauts"
                                          << "status" << 2;
    QTest::newRow("one deletion") << "lisen"
                                  << "listen" << 1;
    QTest::newRow("kitten") << "kitten"
                            << "sitting" << 3;
    QTest::newRow("case counts") << "GET"
                                 << "get" << 3;
}

void TestHttpSpelling::distance() {
    QFETCH(QString, a);
    QFETCH(QString, b);
    QFETCH(int, edits);
    const std::string sa = a.toStdString(), sb = b.toStdString();
    QCOMPARE(editDistance(sa, sb), std::size_t(edits));
    QCOMPARE(editDistance(sb, sa), std::size_t(edits)); // symmetric
}

void TestHttpSpelling::closest() {
    constexpr std::string_view keys[] = {"status", "method", "path", "host", "route", "post"};
    QCOMPARE(closestWord("stauts", keys), std::string_view("status"));
    QCOMPARE(closestWord("rout", keys), std::string_view("route"));
    QCOMPARE(closestWord("path", keys), std::string_view("path"));
    // Three edits away is too far by default, close enough when asked.
    QVERIFY(closestWord("mhd", keys).empty());
    QCOMPARE(closestWord("mhd", keys, 3), std::string_view("method"));
    // "hst" is one edit from "host" only; "ost" is one from both "host" and "post": no guess.
    QCOMPARE(closestWord("hst", keys), std::string_view("host"));
    QVERIFY(closestWord("ost", keys).empty());
    QVERIFY(closestWord("anything", {}).empty());
}

QTEST_GUILESS_MAIN(TestHttpSpelling)
#include "tst_http_spelling.moc"

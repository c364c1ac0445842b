// The public WebSocket helpers: UTF-8 validation (whole and fragment by fragment), handshake keys
// (RFC 6455 §1.3, §4.1) and the close codes a peer may send (§7.4).
#include <portico/ws/websocket.h>

#include <QtTest>

using namespace portico::ws;

class TestWsCodec : public QObject {
    Q_OBJECT
private slots:
    void utf8_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<bool>("valid");
        QTest::newRow("empty") << QByteArray() << true;
        QTest::newRow("ascii") << QByteArray("hello, world 0123456789") << true;
        QTest::newRow("greek") << QByteArray("κόσμε") << true;
        QTest::newRow("4-byte emoji") << QByteArray("\xf0\x9f\x98\x80") << true;
        QTest::newRow("U+10FFFF") << QByteArray("\xf4\x8f\xbf\xbf") << true;
        QTest::newRow("over U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << false;
        QTest::newRow("surrogate ED A0 80") << QByteArray("\xed\xa0\x80") << false;
        QTest::newRow("overlong slash") << QByteArray("\xc0\xaf") << false;
        QTest::newRow("overlong 3-byte") << QByteArray("\xe0\x80\xaf") << false;
        QTest::newRow("lone continuation") << QByteArray("a\x80") << false;
        QTest::newRow("truncated") << QByteArray("ab\xe2\x82") << false;
        QTest::newRow("FF byte") << QByteArray("\xff") << false;
        QTest::newRow("long ascii then bad") << QByteArray(100, 'a') + QByteArray("\xfe") << false;
    }
    void utf8() {
        QFETCH(QByteArray, bytes);
        QFETCH(bool, valid);
        QCOMPARE(validUtf8(std::string_view(bytes.constData(), bytes.size())), valid);
        // Fed one byte at a time, the verdict is the same.
        Utf8Validator v;
        bool ok = true;
        for (char c : bytes)
            ok = v.feed(std::string_view(&c, 1)) && ok;
        QCOMPARE(ok && v.complete(), valid);
    }

    void utf8FailsFast() {
        // A fragment boundary inside a code point is fine; a bad byte fails at once (RFC 6455 §8.1).
        Utf8Validator v;
        QVERIFY(v.feed("\xe2\x82"));
        QVERIFY(!v.complete());
        QVERIFY(v.feed("\xac"));
        QVERIFY(v.complete());
        QVERIFY(v.feed("\xed"));
        QVERIFY(!v.feed("\xa0"));
        QVERIFY(!v.feed("a")); // sticky
    }

    void keys() {
        QCOMPARE(QString::fromStdString(acceptKey("dGhlIHNhbXBsZSBub25jZQ==")),
                 QString("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        QVERIFY(validKey("dGhlIHNhbXBsZSBub25jZQ=="));
        QVERIFY(!validKey("dGhlIHNhbXBsZSBub25jZQ"));    // no padding
        QVERIFY(!validKey("dGhlIHNhbXBsZSBub25jZR=="));  // non-zero padding bits: not 16 bytes
        QVERIFY(!validKey("dGhlIHNhbXBsZSBub25j*Q=="));  // not base64
        QVERIFY(!validKey("dGhlIHNhbXBsZSBub25jZQ==A")); // 17 bytes
    }

    void closeCodes() {
        for (int c : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999})
            QVERIFY2(validCloseCode(static_cast<std::uint16_t>(c)), qPrintable(QString::number(c)));
        for (int c : {0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535})
            QVERIFY2(!validCloseCode(static_cast<std::uint16_t>(c)), qPrintable(QString::number(c)));
    }
};

QTEST_APPLESS_MAIN(TestWsCodec)
#include "tst_ws_codec.moc"

// tls::clientHelloServerName against OpenSSL as the oracle: ClientHellos made by OpenSSL's own
// client (TLS 1.3 and 1.2, with and without SNI, with ALPN), whole, cut short at every length,
// split across records, and broken on purpose.
#include "tls/client_hello.h"

#include <QtTest>

#include <openssl/ssl.h>

#include <memory>
#include <string>

using portico::tls::clientHelloServerName;
using portico::tls::HelloScan;

namespace {

// The first flight OpenSSL's client sends: one ClientHello in one or more TLS records.
std::string opensslClientHello(const char* serverName, int maxVersion, bool alpn) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (maxVersion) SSL_CTX_set_max_proto_version(ctx.get(), maxVersion);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl.get(), in, out);
    if (serverName) SSL_set_tlsext_host_name(ssl.get(), serverName);
    if (alpn) {
        static const unsigned char protos[] = "\x02h2\x08http/1.1";
        SSL_set_alpn_protos(ssl.get(), protos, sizeof protos - 1);
    }
    SSL_set_connect_state(ssl.get());
    SSL_do_handshake(ssl.get()); // wants to read the server's answer: the ClientHello is out
    char* data = nullptr;
    const long n = BIO_get_mem_data(out, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

// The same handshake bytes re-cut into records of at most `size` bytes of payload.
std::string refragment(const std::string& hello, std::size_t size) {
    std::string message;
    for (std::size_t at = 0; at + 5 <= hello.size();) {
        const std::size_t len =
            (static_cast<unsigned char>(hello[at + 3]) << 8) | static_cast<unsigned char>(hello[at + 4]);
        message += hello.substr(at + 5, len);
        at += 5 + len;
    }
    std::string out;
    for (std::size_t at = 0; at < message.size(); at += size) {
        const std::string part = message.substr(at, size);
        out += '\x16';
        out += "\x03\x01";
        out += static_cast<char>(part.size() >> 8);
        out += static_cast<char>(part.size() & 0xff);
        out += part;
    }
    return out;
}

} // namespace

class TestClientHello : public QObject {
    Q_OBJECT
private slots:
    void serverNameAsOpenSslSentIt_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("maxVersion");
        QTest::addColumn<bool>("alpn");
        QTest::newRow("TLS 1.3") << "api.example.test" << 0 << false;
        QTest::newRow("TLS 1.3 with ALPN") << "cdn.example.test" << 0 << true;
        QTest::newRow("TLS 1.2 only") << "legacy.example.test" << int(TLS1_2_VERSION) << true;
        QTest::newRow("one letter") << "a" << 0 << false;
        QTest::newRow("long name") << (QString("x").repeated(63) + "." + QString("y").repeated(63) + "." +
                                       QString("z").repeated(63) + ".test")
                                   << 0 << true;
        QTest::newRow("no SNI (an IP address)") << "" << 0 << true;
    }
    void serverNameAsOpenSslSentIt() {
        QFETCH(QString, name);
        QFETCH(int, maxVersion);
        QFETCH(bool, alpn);
        const std::string n = name.toStdString();
        const std::string hello = opensslClientHello(n.empty() ? nullptr : n.c_str(), maxVersion, alpn);
        QVERIFY(hello.size() > 50);
        std::string got = "unset";
        QCOMPARE(clientHelloServerName(hello, got), HelloScan::Done);
        QCOMPARE(got, n);
        // Every shorter prefix is incomplete, never a wrong answer.
        for (std::size_t k = 0; k < hello.size(); ++k) {
            const HelloScan r = clientHelloServerName(std::string_view(hello).substr(0, k), got);
            if (r != HelloScan::NeedMore)
                QFAIL(qPrintable(QString("prefix of %1 bytes: %2").arg(k).arg(int(r))));
        }
        // Bytes after the ClientHello (a client that does not wait) change nothing.
        QCOMPARE(clientHelloServerName(hello + "trailing", got), HelloScan::Done);
        QCOMPARE(got, n);
        // Split across records (RFC 8446 §5.1 allows it), down to one byte each.
        for (std::size_t size : {1000, 100, 7, 1}) {
            const std::string split = refragment(hello, size);
            QCOMPARE(clientHelloServerName(split, got), HelloScan::Done);
            QCOMPARE(got, n);
            QCOMPARE(clientHelloServerName(std::string_view(split).substr(0, split.size() - 1), got),
                     HelloScan::NeedMore);
        }
    }

    void notTlsAndBroken() {
        std::string got;
        QCOMPARE(clientHelloServerName("GET / HTTP/1.1\r\n", got), HelloScan::NotTls);
        QCOMPARE(clientHelloServerName(std::string("\x80\x2e\x01", 3), got),
                 HelloScan::NotTls); // SSLv2-style
        QCOMPARE(clientHelloServerName("", got), HelloScan::NeedMore);
        std::string hello = opensslClientHello("name.test", 0, true);
        std::string wrongType = hello;
        wrongType[5] = 2; // a ServerHello
        QCOMPARE(clientHelloServerName(wrongType, got), HelloScan::Malformed);
        std::string zeroRecord("\x16\x03\x01\x00\x00", 5);
        QCOMPARE(clientHelloServerName(zeroRecord, got), HelloScan::Malformed);
        std::string badVersion = hello;
        badVersion[1] = 0x09;
        QCOMPARE(clientHelloServerName(badVersion, got), HelloScan::Malformed);
        // An extensions block that claims more bytes than the message has.
        const std::string tiny("\x16\x03\x01\x00\x2f"
                               "\x01\x00\x00\x2b"
                               "\x03\x03"
                               "01234567890123456789012345678901"
                               "\x00"
                               "\x00\x02\x13\x01"
                               "\x01\x00"
                               "\xff\xff",
                               52);
        QCOMPARE(clientHelloServerName(tiny, got), HelloScan::Malformed);
        // A handshake message larger than the scan reads.
        std::string huge("\x16\x03\x01\x40\x00\x01\x02\x00\x00", 9);
        QCOMPARE(clientHelloServerName(huge, got), HelloScan::Malformed);
    }
};

QTEST_APPLESS_MAIN(TestClientHello)
#include "tst_client_hello.moc"

// Unit tests for the one nghttp2 session set-up every HTTP/2 end uses (portico/http2/session.h):
// a client and a server session made with makeSession talk over memory, and each sees the
// SETTINGS and windows the other asked for (RFC 9113 §6.5.2, §6.9).
#include <portico/http2/session.h>

#include "io/h2_mem.h"

#include <QtTest>

#include <string>

using namespace portico;

namespace {

int onHeaderCount(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                  const std::uint8_t*, std::size_t, std::uint8_t, void* user) {
    ++*static_cast<int*>(user);
    return 0;
}

// Moves every queued frame between the two sessions until neither has anything to send.
bool pump(nghttp2_session* a, nghttp2_session* b) {
    for (int round = 0; round < 20; ++round) {
        bool moved = false;
        for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            for (;;) {
                const std::uint8_t* data = nullptr;
                const ssize_t n = nghttp2_session_mem_send(from, &data);
                if (n < 0) return false;
                if (n == 0) break;
                if (nghttp2_session_mem_recv(to, data, static_cast<std::size_t>(n)) != n) return false;
                moved = true;
            }
        }
        if (!moved) return true;
    }
    return false;
}

} // namespace

class TestHttp2Session : public QObject {
    Q_OBJECT

private slots:
    void settingsAndWindowsReachThePeer() {
        http2::Callbacks serverCallbacks, clientCallbacks;
        QVERIFY(serverCallbacks.get() && clientCallbacks.get());
        int serverHeaders = 0;
        nghttp2_session_callbacks_set_on_header_callback(serverCallbacks.get(), onHeaderCount);

        http2::SessionSettings server;
        server.side = http2::Side::Server;
        server.maxConcurrentStreams = 7;
        server.streamWindowBytes = 1 << 20;
        server.connectionWindowBytes = 1 << 24;
        server.maxHeaderListBytes = 8192;
        server.noRfc7540Priorities = true;
        server.manualWindowUpdates = true;
        http2::SessionSettings client;
        client.streamWindowBytes = 100000;
        client.connectionWindowBytes = 1 << 22;

        std::string error;
        const std::size_t cachedBefore = io::h2mem::cachedBytes();
        {
            http2::SessionPtr s = http2::makeSession(serverCallbacks, &serverHeaders, server, error);
            QVERIFY2(s, error.c_str());
            http2::SessionPtr c = http2::makeSession(clientCallbacks, nullptr, client, error);
            QVERIFY2(c, error.c_str());
            QVERIFY(nghttp2_session_check_server_session(s.get()));
            QVERIFY(!nghttp2_session_check_server_session(c.get()));

            const nghttp2_nv request[] = {http2::field(":method", "GET"), http2::field(":scheme", "http"),
                                          http2::field(":authority", "localhost"),
                                          http2::field(":path", "/")};
            const std::int32_t id = nghttp2_submit_request(c.get(), nullptr, request, 4, nullptr, nullptr);
            QCOMPARE(id, 1);
            QVERIFY(pump(c.get(), s.get()));
            QCOMPARE(serverHeaders, 4);

            // What the client learnt of the server.
            QCOMPARE(nghttp2_session_get_remote_settings(c.get(), NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
                     7u);
            QCOMPARE(nghttp2_session_get_remote_settings(c.get(), NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
                     1u << 20);
            QCOMPARE(nghttp2_session_get_remote_settings(c.get(), NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE),
                     8192u);
            QCOMPARE(nghttp2_session_get_remote_settings(c.get(), NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES),
                     1u);
            QCOMPARE(nghttp2_session_get_remote_window_size(c.get()), 1 << 24);
            // What the server learnt of the client: no pushes, its windows.
            QCOMPARE(nghttp2_session_get_remote_settings(s.get(), NGHTTP2_SETTINGS_ENABLE_PUSH), 0u);
            QCOMPARE(nghttp2_session_get_remote_settings(s.get(), NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
                     100000u);
            QCOMPARE(nghttp2_session_get_remote_window_size(s.get()), 1 << 22);
            // Unannounced settings keep the RFC's defaults.
            QCOMPARE(nghttp2_session_get_remote_settings(s.get(), NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
                     0xffffffffu);

            // Manual window updates: the consumer acknowledges; nghttp2 refuses that otherwise.
            QCOMPARE(nghttp2_session_consume_connection(s.get(), 0), 0);
            QCOMPARE(nghttp2_session_consume_connection(c.get(), 0), int(NGHTTP2_ERR_INVALID_STATE));
        }
        // The sessions' blocks came from Portico's allocator: freed here, they are in its cache.
        QVERIFY(io::h2mem::cachedBytes() > cachedBefore);
    }

    void refusedSetUpSaysWhy() {
        http2::Callbacks callbacks;
        http2::SessionSettings s;
        s.connectionWindowBytes = 0x80000000u; // 2^31: over the largest window
        std::string error;
        QVERIFY(!http2::makeSession(callbacks, nullptr, s, error));
        QVERIFY2(error.find("2^31-1") != std::string::npos, error.c_str());
        s.connectionWindowBytes = 0;
        s.streamWindowBytes = 0x80000000u; // nghttp2 refuses the SETTINGS value
        error.clear();
        QVERIFY(!http2::makeSession(callbacks, nullptr, s, error));
        QVERIFY2(error.starts_with("HTTP/2: SETTINGS:"), error.c_str());
    }

    void connectionSpecificFields_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("value");
        QTest::addColumn<bool>("dropped");
        QTest::newRow("connection") << "Connection"
                                    << "keep-alive" << true;
        QTest::newRow("keep-alive") << "keep-alive"
                                    << "timeout=5" << true;
        QTest::newRow("proxy-connection") << "Proxy-Connection"
                                          << "close" << true;
        QTest::newRow("transfer-encoding") << "transfer-encoding"
                                           << "chunked" << true;
        QTest::newRow("upgrade") << "UPGRADE"
                                 << "websocket" << true;
        QTest::newRow("te gzip") << "te"
                                 << "gzip" << true;
        QTest::newRow("te trailers") << "TE"
                                     << "Trailers" << false;
        QTest::newRow("host") << "host"
                              << "a.test" << false;
        QTest::newRow("content-type") << "content-type"
                                      << "text/plain" << false;
        QTest::newRow("connection-ish") << "connections"
                                        << "1" << false;
    }

    void connectionSpecificFields() {
        QFETCH(QString, name);
        QFETCH(QString, value);
        QFETCH(bool, dropped);
        QCOMPARE(http2::isConnectionSpecific(name.toStdString(), value.toStdString()), dropped);
    }

    void fieldPointsAtItsText() {
        const std::string name = "content-type", value = "text/html";
        const nghttp2_nv nv = http2::field(name, value, NGHTTP2_NV_FLAG_NO_COPY_VALUE);
        QCOMPARE(static_cast<const void*>(nv.name), static_cast<const void*>(name.data()));
        QCOMPARE(nv.namelen, name.size());
        QCOMPARE(static_cast<const void*>(nv.value), static_cast<const void*>(value.data()));
        QCOMPARE(nv.valuelen, value.size());
        QCOMPARE(nv.flags, std::uint8_t(NGHTTP2_NV_FLAG_NO_COPY_VALUE));
    }
};

QTEST_GUILESS_MAIN(TestHttp2Session)
#include "tst_http2_session.moc"

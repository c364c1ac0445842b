// Publishing new config snapshots while clients hammer the server loses no request and tears none.
#include "raw_client.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QtTest>

#include <atomic>
#include <thread>

using namespace portico;

class TestConfigSwapUnderLoad : public QObject {
    Q_OBJECT
    static std::shared_ptr<const config::Config> makeConfig(const char* body) {
        std::string yaml = std::string("workers: 2\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n") +
                           "      - path: /v\n        respond: {body: " + body + "}\n";
        auto r = config::loadConfigText(yaml, "swap.yaml", ".");
        if (!r.ok()) qFatal("config: %s", r.errors.front().toString().c_str());
        return r.config;
    }

private slots:
    void swapsLoseNothing() {
        engine::Engine eng;
        std::string error;
        QVERIFY2(eng.start(makeConfig("A"), error), error.c_str());
        const std::uint16_t port = eng.endpoints().front().port;

        constexpr int kClients = 4, kRequests = 3000; // bounded: 12,000 requests in all
        std::atomic<int> ok{0}, bad{0}, sawB{0};
        std::vector<std::thread> clients;
        for (int c = 0; c < kClients; ++c) {
            clients.emplace_back([&] {
                test::RawClient client(port);
                for (int i = 0; i < kRequests; ++i) {
                    int status = client.ok() ? client.exchange("GET /v HTTP/1.1\r\nHost: t\r\n\r\n") : 0;
                    if (status == 200 && (client.body() == "A" || client.body() == "B")) {
                        ok.fetch_add(1);
                        if (client.body() == "B") sawB.fetch_add(1);
                    } else {
                        bad.fetch_add(1);
                    }
                }
            });
        }
        int swaps = 0;
        while (ok.load() + bad.load() < kClients * kRequests && swaps < 2000) {
            QVERIFY2(eng.publish(makeConfig(swaps % 2 ? "A" : "B"), error), error.c_str());
            ++swaps;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        for (auto& t : clients)
            t.join();
        QCOMPARE(bad.load(), 0);
        QCOMPARE(ok.load(), kClients * kRequests);
        QVERIFY(swaps > 10);
        QVERIFY(sawB.load() > 0); // the swaps really reached the workers
        QCOMPARE(eng.counters().requests, std::uint64_t(kClients * kRequests));
        eng.stop();
    }

    void listenerChangeOpensNewBeforeClosingOld() {
        engine::Engine eng;
        std::string error;
        QVERIFY(eng.start(makeConfig("A"), error));
        const std::uint16_t oldPort = eng.endpoints().front().port;
        auto next = std::make_shared<config::Config>(*makeConfig("B"));
        next->listen = {config::Listen{"127.0.0.1", 0, {}, {}}, config::Listen{"::1", 0, {}, {}}};
        // Same "127.0.0.1:0" entry stays bound; "::1" is added.
        QVERIFY2(eng.publish(next, error), error.c_str());
        QCOMPARE(eng.endpoints().size(), std::size_t(2));
        QCOMPARE(eng.endpoints().front().port, oldPort);
        test::RawClient c(oldPort);
        QCOMPARE(c.exchange("GET /v HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        QCOMPARE(c.body(), std::string_view("B"));
        eng.stop();
    }

    // Two listeners on any free port of the same host keep their own ports across a publish of the
    // same config (each bound listener serves one config entry: the second used to take the first's).
    void twoPortZeroListenersKeepTheirPorts() {
        engine::Engine eng;
        std::string error;
        auto cfg = std::make_shared<config::Config>(*makeConfig("A"));
        cfg->listen = {config::Listen{"127.0.0.1", 0, {}, {}}, config::Listen{"127.0.0.1", 0, {}, {}}};
        QVERIFY2(eng.start(cfg, error), error.c_str());
        QCOMPARE(eng.endpoints().size(), std::size_t(2));
        const std::uint16_t first = eng.endpoints()[0].port, second = eng.endpoints()[1].port;
        QVERIFY(first != second);
        QVERIFY2(eng.publish(cfg, error), error.c_str());
        QCOMPARE(eng.endpoints().size(), std::size_t(2));
        QCOMPARE(eng.endpoints()[0].port, first);
        QCOMPARE(eng.endpoints()[1].port, second);
        for (std::uint16_t port : {first, second}) {
            test::RawClient c(port);
            QCOMPARE(c.exchange("GET /v HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        }
        eng.stop();
    }
};

QTEST_GUILESS_MAIN(TestConfigSwapUnderLoad)
#include "tst_config_swap_under_load.moc"

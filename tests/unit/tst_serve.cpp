// serve(): the one route-and-dispatch stage both sessions (HTTP/1.1, HTTP/2) call. Server-wide
// answers, vhost and route choice, capture stamps, the WebSocket decision per protocol, what goes
// through the session's ResponseWriter (respond, upgrade, or the forwarded call and its sink), and
// the two head-only questions (does the body stream; is the request refused whatever its body).
#include "handlers_test_util.h"
#include "serve/serve.h"

#include <QtTest>

#include <boost/asio/io_context.hpp>

using namespace portico;
using namespace portico::test;

namespace {

// What serve() asked of the session: exactly one of respond, upgrade or forward per call.
enum class Next { Nothing, Respond, Upgrade, Forward };

// A client::Sink that counts every callback (serve() and proxy::forward must call none).
struct CountingSink final : client::Sink {
    int calls = 0;
    void onUpstreamHead(int, std::string_view, std::optional<std::uint64_t>) override { ++calls; }
    bool onUpstreamBody(std::string_view) override { return ++calls, true; }
    void onUpstreamEnd() override { ++calls; }
    void onUpstreamError(int, const std::string&) override { ++calls; }
};

// The session's side, recorded. `upgrades` false: a session that cannot switch protocols.
struct RecordingWriter final : serve::ResponseWriter {
    boost::asio::io_context io;
    CountingSink sink;
    bool upgrades = true;
    bool bodyFollows = false;
    int calls = 0; // respond + upgrade + forwardTo
    Next did = Next::Nothing;
    std::shared_ptr<client::Call> call;
    std::string clientAddressSeen;

    void respond(const http::Request&, http::Response&) override {
        ++calls;
        if (did == Next::Nothing) did = Next::Respond;
    }
    bool upgrade(const http::Request&, http::Response&, const serve::Routed&) override {
        if (!upgrades) return false;
        ++calls;
        did = Next::Upgrade;
        return true;
    }
    serve::ForwardTarget forwardTo(http::Request& req, const http::Response&) override {
        ++calls;
        did = Next::Forward;
        req.clientAddress = "192.0.2.7";
        return {&io, nullptr, nullptr, &sink, false, bodyFollows};
    }
    void forwarding(std::shared_ptr<client::Call> c) override { call = std::move(c); }
    ~RecordingWriter() override {
        if (call) call->cancel();
    }
};

config::Route route(std::string path, config::Action action, std::string name = {}) {
    config::Route r;
    r.spec = path;
    r.path = std::move(path);
    r.action = std::move(action);
    r.name = std::move(name);
    return r;
}

config::ProxyAction proxyTo(std::uint16_t port) {
    config::ProxyAction p;
    config::Upstream u;
    u.host = "127.0.0.1";
    u.port = port;
    u.authority = "127.0.0.1:" + std::to_string(port);
    p.upstreams.push_back(u);
    return p;
}

// Two vhosts: "app.test" with mock, WebSocket, proxy and FastCGI routes; "files.test" with a
// static root and live reload (the default).
config::Config twoVhosts(const QString& root) {
    config::Config c;
    config::Vhost app;
    app.names = {"app.test"};
    config::RespondAction hello;
    hello.body = "hello";
    app.routes.push_back(route("/hello", hello, "greeting"));
    app.routes.push_back(route("/ws", config::WebSocketAction{}));
    app.routes.push_back(route("/api/*", proxyTo(9)));
    config::ProxyAction fcgi;
    fcgi.fastcgi.address = "127.0.0.1:9000";
    app.routes.push_back(route("/php/*", fcgi));
    c.vhosts.push_back(std::move(app));
    config::Vhost files;
    files.names = {"files.test"};
    files.isDefault = true;
    files.liveReload = true;
    config::StaticAction s;
    s.root = root.toStdString();
    files.root = s;
    c.vhosts.push_back(std::move(files));
    return c;
}

} // namespace

class ServeTest : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    handlers::WorkerState state_;
    std::unique_ptr<config::Config> config_;
    std::unique_ptr<routing::Router> router_;
    std::string scratch_;

    serve::Context ctx(int version) { return {*config_, *router_, state_, 8080, version}; }

    // serve() on `treq` sent to `host`; `req_` keeps the request as serve() left it, `writer_`
    // what serve() asked of the session.
    Next call(TestRequest& treq, std::string_view host, http::Response& res, int version = 1,
              serve::Routed* routedOut = nullptr, const serve::Stamps& stamps = {}) {
        req_ = treq.get();
        req_.host = host;
        req_.path = {};
        writer_ = std::make_unique<RecordingWriter>();
        serve::serve(ctx(version), req_, scratch_, res, *writer_, stamps, routedOut);
        if (writer_->calls != 1) return Next::Nothing; // not exactly one answer: fails every check
        return writer_->did;
    }
    std::unique_ptr<RecordingWriter> writer_;
    http::Request req_;

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY(writeFile(tmp_.path(), "index.html", "<p>files</p>"));
        config_ = std::make_unique<config::Config>(twoVhosts(tmp_.path()));
        router_ = std::make_unique<routing::Router>(*config_);
    }

    // Answers that need no route, the same on both protocols.
    void serverWideAnswers_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("target");
        QTest::addColumn<int>("version");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("allow");
        for (int v : {1, 2}) {
            const QByteArray p = QByteArray("h") + QByteArray::number(v) + ": ";
            QTest::newRow(p + "unknown method") << "BREW"
                                                << "/hello" << v << 501 << "";
            QTest::newRow(p + "OPTIONS *")
                << "OPTIONS"
                << "*" << v << 204 << "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH";
            QTest::newRow(p + "CONNECT") << "CONNECT"
                                         << "" << v << 501 << "";
            QTest::newRow(p + "above the root") << "GET"
                                                << "/../etc/passwd" << v << 400 << "";
            QTest::newRow(p + "encoded slash") << "GET"
                                               << "/a%2Fb" << v << 400 << "";
        }
    }
    void serverWideAnswers() {
        QFETCH(QString, method);
        QFETCH(QString, target);
        QFETCH(int, version);
        QFETCH(int, status);
        QFETCH(QString, allow);
        TestRequest req(target.toStdString(), method.toStdString());
        http::Response res;
        serve::Routed routed;
        QCOMPARE(call(req, "app.test", res, version, &routed), Next::Respond);
        QCOMPARE(res.status, status);
        QCOMPARE(hv(res, "Allow"), allow);
        QVERIFY(!routed.routed);
        QVERIFY(res.forward == nullptr);
    }

    void routesByHostAndStamps() {
        TestRequest req("/hello");
        http::Response res;
        serve::Routed routed;
        std::int64_t routeNs = -1;
        capture::RouteLabels labels;
        QCOMPARE(call(req, "app.test", res, 1, &routed, {&routeNs, &labels}), Next::Respond);
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("hello"));
        QVERIFY(routed.routed);
        QCOMPARE(routed.vhost, std::size_t(0));
        QVERIFY(routeNs > 0);
        QCOMPARE(labels.vhost, std::string_view("app.test"));
        QCOMPARE(labels.route, std::string_view("greeting"));
        QCOMPARE(req_.path, std::string_view("/hello"));

        TestRequest other("/./index.html");
        routeNs = -1;
        QCOMPARE(call(other, "elsewhere.test", res, 2, &routed, {&routeNs, &labels}),
                 Next::Respond); // the default vhost
        QVERIFY(routeNs > 0);
        QCOMPARE(res.status, 200);
        QCOMPARE(routed.vhost, std::size_t(1));
        QCOMPARE(labels.route, std::string_view("(static)"));
        QCOMPARE(req_.path, std::string_view("/index.html")); // normalised
    }

    // A WebSocket endpoint is an upgrade on HTTP/1.1 (the session completes the handshake) and a
    // 426 on HTTP/2, where RFC 8441 is not offered.
    void webSocketEndpoints_data() {
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("path");
        QTest::newRow("websocket route") << "app.test"
                                         << "/ws";
        QTest::newRow("live reload") << "files.test"
                                     << "/__portico/livereload";
    }
    void webSocketEndpoints() {
        QFETCH(QString, host);
        QFETCH(QString, path);
        const std::string h = host.toStdString();
        TestRequest req(path.toStdString());
        http::Response res;
        serve::Routed routed;
        QCOMPARE(call(req, h, res, 1, &routed), Next::Upgrade);
        QVERIFY(routed.routed);
        QVERIFY(serve::isWebSocketEndpoint(config_->vhosts[routed.vhost], routed.route, req_));
        if (host == "app.test") {
            QCOMPARE(call(req, h, res, 2), Next::Respond);
            QCOMPARE(res.status, 426);
        }
        // Not an endpoint: the live-reload path on a vhost without live reload.
        TestRequest plain("/__portico/livereload");
        QCOMPARE(call(plain, "app.test", res, 1, &routed), Next::Respond);
        QCOMPARE(res.status, 404);
    }

    // A proxy route's request is forwarded: proxy::forward starts the call on the writer's
    // io_context with the writer's sink, and the call goes back to the writer; nothing reaches the
    // sink before serve() returns. The writer may name the client's address for the upstream.
    void proxyRoutesForward_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("routeIndex");
        QTest::newRow("proxy") << "/api/users" << 2;
        QTest::newRow("fastcgi") << "/php/index.php" << 3;
    }
    void proxyRoutesForward() {
        QFETCH(QString, path);
        QFETCH(int, routeIndex);
        for (int version : {1, 2}) {
            TestRequest req(path.toStdString(), "POST");
            http::Response res;
            QCOMPARE(call(req, "app.test", res, version), Next::Forward);
            const auto& px =
                std::get<config::ProxyAction>(config_->vhosts[0].routes[std::size_t(routeIndex)].action);
            QCOMPARE(res.forward, static_cast<const void*>(&px));
            QVERIFY(writer_->call != nullptr);
            QCOMPARE(writer_->sink.calls, 0);
            QCOMPARE(req_.clientAddress, std::string_view("192.0.2.7"));
        }
    }

    // A session that cannot switch protocols: the request is dispatched as on HTTP/2 (426).
    void upgradeDefaultsTo426() {
        TestRequest req("/ws");
        http::Response res;
        req_ = req.get();
        req_.host = "app.test";
        RecordingWriter writer;
        writer.upgrades = false;
        serve::serve(ctx(1), req_, scratch_, res, writer);
        QCOMPARE(writer.calls, 1);
        QCOMPARE(writer.did, Next::Respond);
        QCOMPARE(res.status, 426);
        QCOMPARE(hv(res, "Upgrade"), QString("websocket"));
    }

    void streamsRequestBody_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("rawPath");
        QTest::addColumn<bool>("upgrade");
        QTest::addColumn<bool>("streams");
        QTest::newRow("proxy") << "POST"
                               << "/api/upload" << false << true;
        QTest::newRow("proxy, Upgrade") << "GET"
                                        << "/api/socket" << true << false;
        QTest::newRow("proxy, CONNECT") << "CONNECT"
                                        << "/api/x" << false << false;
        QTest::newRow("proxy, unknown method") << "BREW"
                                               << "/api/x" << false << false;
        QTest::newRow("proxy, bad path") << "POST"
                                         << "/api/%zz" << false << false;
        QTest::newRow("fastcgi") << "POST"
                                 << "/php/index.php" << false << false;
        QTest::newRow("mock") << "POST"
                              << "/hello" << false << false;
        QTest::newRow("no route") << "POST"
                                  << "/nowhere" << false << false;
    }
    void streamsRequestBody() {
        QFETCH(QString, method);
        QFETCH(QString, rawPath);
        QFETCH(bool, upgrade);
        QFETCH(bool, streams);
        const auto m = http::methodFromToken(method.toStdString());
        QCOMPARE(serve::streamsRequestBody(ctx(1), m, rawPath.toStdString(), "app.test", upgrade, scratch_),
                 streams);
    }

    // RFC 9110 §10.1.1: the requests whose final status is known from the head.
    void refusedByHead_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("rawPath");
        QTest::addColumn<bool>("refused");
        QTest::newRow("unknown method") << "BREW"
                                        << "app.test"
                                        << "/hello" << true;
        QTest::newRow("CONNECT (501 from its head)") << "CONNECT"
                                                     << "app.test"
                                                     << "/hello" << true;
        QTest::newRow("no route") << "POST"
                                  << "app.test"
                                  << "/nowhere" << true;
        QTest::newRow("mock") << "POST"
                              << "app.test"
                              << "/hello" << false;
        QTest::newRow("proxy") << "PUT"
                               << "app.test"
                               << "/api/x" << false;
        QTest::newRow("static root, POST") << "POST"
                                           << "files.test"
                                           << "/index.html" << true;
        QTest::newRow("static root, GET") << "GET"
                                          << "files.test"
                                          << "/index.html" << false;
        QTest::newRow("bad path: left to serve") << "POST"
                                                 << "app.test"
                                                 << "/%zz" << false;
    }
    void refusedByHead() {
        QFETCH(QString, method);
        QFETCH(QString, host);
        QFETCH(QString, rawPath);
        QFETCH(bool, refused);
        const auto m = http::methodFromToken(method.toStdString());
        QCOMPARE(serve::refusedByHead(ctx(1), m, rawPath.toStdString(), host.toStdString(), scratch_),
                 refused);
    }
};

QTEST_GUILESS_MAIN(ServeTest)
#include "tst_serve.moc"

// Mock responses and redirects (templates, latency, faults) and what dispatch() adds to every
// response: routing outcomes, vhost/route headers, custom error pages and the Server switch.
#include "handlers_test_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include <set>
#include <thread>

using namespace portico;
using namespace portico::test;
using namespace std::chrono_literals;
using Fate = http::Response::Fate;

class RespondRedirectTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    handlers::WorkerState worker_;

    static config::Route respondRoute(config::RespondAction a) {
        config::Route r;
        r.action = std::move(a);
        return r;
    }
    http::Response call(const config::Config& cfg, const routing::RouteResult& rr, TestRequest& req) {
        http::Response res;
        run(cfg, rr, req, worker_, res);
        return res;
    }
    http::Response callRoute(const config::Route& route, TestRequest req = TestRequest("/x")) {
        Site site;
        return call(site.config, matched(route), req);
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    void fixedResponse() {
        config::RespondAction a;
        a.status = 201;
        a.body = "created";
        a.headers = {{"X-One", "1"}, {"X-Two", "2"}};
        auto res = callRoute(respondRoute(a));
        QCOMPARE(res.status, 201);
        QCOMPARE(bodyOf(res), std::string("created"));
        QCOMPARE(hv(res, "X-One"), QString("1"));
        QCOMPARE(hv(res, "X-Two"), QString("2"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/plain; charset=utf-8"));
        QCOMPARE(res.delay, 0ns);
        QCOMPARE(res.fate, Fate::Normal);
    }

    void contentTypeRules() {
        config::RespondAction a;
        a.body = "{}";
        a.headers = {{"content-type", "application/json"}};
        auto res = callRoute(respondRoute(a));
        QCOMPARE(hv(res, "Content-Type"), QString("application/json"));
        QCOMPARE(headerCount(res, "Content-Type"), 1);
        config::RespondAction empty;
        empty.status = 204;
        res = callRoute(respondRoute(empty));
        QCOMPARE(res.status, 204);
        QCOMPARE(hv(res, "Content-Type"), QString()); // no body, no type
        // A route header may set the type too, replacing the default.
        auto route = respondRoute(a);
        std::get<config::RespondAction>(route.action).headers.clear();
        route.headers = {{"Content-Type", "text/csv"}};
        res = callRoute(route);
        QCOMPARE(hv(res, "Content-Type"), QString("text/csv"));
        QCOMPARE(headerCount(res, "Content-Type"), 1);
    }

    void headIsLikeGet() {
        config::RespondAction a;
        a.body = "abc";
        auto get = callRoute(respondRoute(a), TestRequest("/x", "GET"));
        auto head = callRoute(respondRoute(a), TestRequest("/x", "HEAD"));
        QCOMPARE(std::string(head.fieldBlock()), std::string(get.fieldBlock()));
        QCOMPARE(head.bodyLength(), get.bodyLength());
    }

    void templates_data() {
        QTest::addColumn<QString>("tpl");
        QTest::addColumn<QString>("expected");
        QTest::newRow("param") << "{\"hello\":\"{{param.name}}\"}"
                               << "{\"hello\":\"ann\"}";
        QTest::newRow("wildcard") << "rest={{param.*}}"
                                  << "rest=a/b c";
        QTest::newRow("query decoded") << "{{query.q}}"
                                       << "x y&z";
        QTest::newRow("first query value") << "{{query.dup}}"
                                           << "1";
        QTest::newRow("query key encoded") << "{{query.k k}}"
                                           << "v";
        QTest::newRow("empty query value") << "[{{query.flag}}]"
                                           << "[]";
        QTest::newRow("header") << "{{header.x-token}}"
                                << "secret";
        QTest::newRow("method") << "{{method}}"
                                << "POST";
        QTest::newRow("path") << "{{path}}"
                              << "/hello/ann";
        QTest::newRow("body") << "echo: {{body}}"
                              << "echo: payload";
        QTest::newRow("spaces") << "{{ param.name }}"
                                << "ann";
        QTest::newRow("unknown") << "[{{nope}}][{{param.missing}}][{{query.missing}}][{{header.missing}}]"
                                 << "[][][][]";
        QTest::newRow("unterminated") << "a {{param.name"
                                      << "a {{param.name";
        QTest::newRow("several") << "{{method}} {{path}}?{{query.q}}"
                                 << "POST /hello/ann?x y&z";
    }
    void templates() {
        QFETCH(QString, tpl);
        QFETCH(QString, expected);
        config::RespondAction a;
        a.body = tpl.toStdString();
        auto route = respondRoute(a);
        auto rr = matched(route);
        rr.params[0] = {"name", "ann"};
        rr.params[1] = {"*", "a/b c"};
        rr.paramCount = 2;
        TestRequest req("/hello/ann?q=x+y%26z&dup=1&dup=2&k%20k=v&flag", "POST");
        req.header("X-Token", "secret").setBody("payload");
        Site site;
        auto res = call(site.config, rr, req);
        QCOMPARE(QString::fromStdString(bodyOf(res)), expected);
    }

    // Request values go into a body escaped for its Content-Type: inside a JSON string they are
    // JSON-escaped (a '"' in User-Agent used to make the mock invalid JSON), a placeholder standing
    // for a whole JSON value ({{body}} echoing JSON) is left as it is, HTML is escaped, and an
    // explicit filter ({{json …}}, {{html …}}, {{url …}}, {{raw …}}) overrides the choice.
    void templatesEscapeForTheBodyType_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("tpl");
        QTest::addColumn<QString>("expected");
        QTest::newRow("json string") << "application/json"
                                     << "{\"ua\": \"{{header.user-agent}}\"}"
                                     << "{\"ua\": \"a\\\"b\\\\c\\n<i>\"}";
        QTest::newRow("json +json, charset") << "application/problem+json; charset=utf-8"
                                             << "[\"{{header.user-agent}}\"]"
                                             << "[\"a\\\"b\\\\c\\n<i>\"]";
        QTest::newRow("json whole value") << "application/json"
                                          << "{\"echo\": {{body}}}"
                                          << "{\"echo\": {\"k\": \"v\"}}";
        QTest::newRow("json after escaped quote") << "application/json"
                                                  << "[\"\\\"\", \"{{header.user-agent}}\"]"
                                                  << "[\"\\\"\", \"a\\\"b\\\\c\\n<i>\"]";
        QTest::newRow("json filter outside a string") << "text/plain"
                                                      << "{{json header.user-agent}}"
                                                      << "a\\\"b\\\\c\\n<i>";
        QTest::newRow("html") << "text/html"
                              << "<p>{{header.user-agent}}</p>"
                              << "<p>a&quot;b\\c\n&lt;i&gt;</p>";
        QTest::newRow("raw filter") << "text/html"
                                    << "{{raw header.user-agent}}"
                                    << "a\"b\\c\n<i>";
        QTest::newRow("unknown filter is a name") << "text/plain"
                                                  << "[{{upper header.user-agent}}]"
                                                  << "[]";
        QTest::newRow("url filter") << "text/plain"
                                    << "{{url header.user-agent}}"
                                    << "a%22b%5Cc%0A%3Ci%3E";
        QTest::newRow("plain text as is") << "text/plain"
                                          << "{{header.user-agent}}"
                                          << "a\"b\\c\n<i>";
    }
    void templatesEscapeForTheBodyType() {
        QFETCH(QString, type);
        QFETCH(QString, tpl);
        QFETCH(QString, expected);
        config::RespondAction a;
        a.body = tpl.toStdString();
        a.headers = {{"Content-Type", type.toStdString()}};
        TestRequest req("/x", "POST");
        req.header("User-Agent", "a\"b\\c\n<i>").setBody("{\"k\": \"v\"}");
        auto res = callRoute(respondRoute(a), req);
        QCOMPARE(QString::fromStdString(bodyOf(res)), expected);
    }

    void headerTemplatesCannotInject() {
        config::RespondAction a;
        a.headers = {{"X-Echo", "v={{query.v}}"}, {"X-Body", "{{body}}"}};
        TestRequest req("/x?v=a%0D%0ASet-Cookie:%20evil=1");
        req.setBody("line1\r\nline2");
        auto res = callRoute(respondRoute(a), req);
        QCOMPARE(hv(res, "X-Echo"), QString("v=a  Set-Cookie: evil=1"));
        QCOMPARE(hv(res, "X-Body"), QString("line1  line2"));
        QCOMPARE(headerCount(res, "Set-Cookie"), 0);
    }

    void bodyFileIsLoadedAndRefreshed() {
        QVERIFY(writeFile(tmp_.path(), "mock.json", "{\"v\":1}"));
        config::RespondAction a;
        a.body = "ignored";
        a.bodyFile = (tmp_.path() + "/mock.json").toStdString();
        a.headers = {{"Content-Type", "application/json"}};
        auto route = respondRoute(a);
        auto res = callRoute(route);
        QCOMPARE(bodyOf(res), std::string("{\"v\":1}"));
        QCOMPARE(res.bodyKind(), http::Response::BodyKind::Shared);
        std::this_thread::sleep_for(20ms);
        QVERIFY(writeFile(tmp_.path(), "mock.json", "{\"v\":22}"));
        QCOMPARE(bodyOf(callRoute(route)), std::string("{\"v\":22}"));
        QVERIFY(writeFile(tmp_.path(), "mock.json", "{\"id\":\"{{param.id}}\"}"));
        auto rr = matched(route);
        rr.params[0] = {"id", "7"};
        rr.paramCount = 1;
        Site site;
        TestRequest req("/x");
        QCOMPARE(bodyOf(call(site.config, rr, req)), std::string("{\"id\":\"7\"}"));
        std::get<config::RespondAction>(route.action).bodyFile = (tmp_.path() + "/gone.json").toStdString();
        QCOMPARE(callRoute(route).status, 500);
    }

    void fixedLatency() {
        config::RespondAction a;
        a.latency = 20ms;
        QCOMPARE(callRoute(respondRoute(a)).delay, std::chrono::nanoseconds(20ms));
    }

    void randomLatencyInRange() {
        config::RespondAction a;
        a.latency = 10ms;
        a.latencyMax = 30ms;
        auto route = respondRoute(a);
        std::set<std::int64_t> seen;
        double sum = 0;
        const int n = 500;
        for (int i = 0; i < n; ++i) {
            auto d = callRoute(route).delay;
            QVERIFY(d >= 10ms && d <= 30ms);
            seen.insert(d.count());
            sum += std::chrono::duration<double, std::milli>(d).count();
        }
        QVERIFY(seen.size() > 100); // really random, not one value
        double mean = sum / n;
        QVERIFY2(mean > 18 && mean < 22, qPrintable(QString::number(mean)));
    }

    void dropRate() {
        config::RespondAction a;
        a.body = "x";
        a.dropRate = 1.0;
        auto always = respondRoute(a);
        a.dropRate = 0.0;
        auto never = respondRoute(a);
        a.dropRate = 0.3;
        auto some = respondRoute(a);
        int dropped = 0;
        const int n = 2000;
        for (int i = 0; i < n; ++i) {
            QCOMPARE(callRoute(always).fate, Fate::Drop);
            QCOMPARE(callRoute(never).fate, Fate::Normal);
            dropped += callRoute(some).fate == Fate::Drop;
        }
        // Binomial(2000, 0.3): sd ≈ 20.5, so ±6 sd.
        QVERIFY2(dropped > 477 && dropped < 723, qPrintable(QString::number(dropped)));
    }

    void errorRate() {
        config::RespondAction a;
        a.body = "fine";
        a.errorRate = 1.0;
        a.errorStatus = 503;
        a.latency = 5ms;
        auto res = callRoute(respondRoute(a));
        QCOMPARE(res.status, 503);
        QCOMPARE(bodyOf(res), std::string("503 Service Unavailable\n"));
        QCOMPARE(res.delay, std::chrono::nanoseconds(5ms)); // faults arrive as slowly as successes
        a.errorRate = 0.5;
        auto half = respondRoute(a);
        int errors = 0;
        const int n = 2000;
        for (int i = 0; i < n; ++i)
            errors += callRoute(half).status == 503;
        QVERIFY2(errors > 866 && errors < 1134, qPrintable(QString::number(errors))); // ±6 sd
        a.errorRate = 0;
        auto none = respondRoute(a);
        for (int i = 0; i < 200; ++i)
            QCOMPARE(callRoute(none).status, 200);
    }

    void redirects_data() {
        QTest::addColumn<int>("configured");
        QTest::addColumn<int>("status");
        QTest::newRow("301") << 301 << 301;
        QTest::newRow("302") << 302 << 302;
        QTest::newRow("303") << 303 << 303;
        QTest::newRow("307") << 307 << 307;
        QTest::newRow("308") << 308 << 308;
        QTest::newRow("invalid → 302") << 200 << 302;
    }
    void redirects() {
        QFETCH(int, configured);
        QFETCH(int, status);
        config::Route route;
        route.action = config::RedirectAction{"https://example.test/new", configured};
        auto res = callRoute(route);
        QCOMPARE(res.status, status);
        QCOMPARE(hv(res, "Location"), QString("https://example.test/new"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/html; charset=utf-8"));
        QVERIFY(bodyOf(res).find("href=\"https://example.test/new\"") != std::string::npos);
    }

    void redirectTemplates() {
        config::Route route;
        route.action = config::RedirectAction{"/new/{{param.*}}?q={{query.q}}&x=1", 301};
        auto rr = matched(route);
        rr.params[0] = {"*", "docs/a b\"<c>"};
        rr.paramCount = 1;
        Site site;
        TestRequest req("/old/docs?q=r%26d%0D%0Ax");
        auto res = call(site.config, rr, req);
        QCOMPARE(res.status, 301);
        QCOMPARE(hv(res, "Location"), QString("/new/docs/a%20b%22%3Cc%3E?q=r%26d%0D%0Ax&x=1"));
        QVERIFY(bodyOf(res).find("<c>") == std::string::npos);
        // A filter in a Location still cannot put CR or LF into the field.
        for (const char* filter : {"raw", "html", "json", "url"}) {
            std::get<config::RedirectAction>(route.action).to =
                std::string("/s?q={{") + filter + " query.q}}";
            auto filtered = call(site.config, rr, req);
            QVERIFY2(!hv(filtered, "Location").contains('\r') && !hv(filtered, "Location").contains('\n'),
                     filter);
            QVERIFY2(hv(filtered, "Location").startsWith("/s?q=r"), qPrintable(hv(filtered, "Location")));
        }
    }

    void routingOutcomes() {
        Site site;
        TestRequest req("/x", "PUT");
        routing::RouteResult rr;
        rr.kind = routing::RouteResult::Kind::NotFound;
        auto res = call(site.config, rr, req);
        QCOMPARE(res.status, 404);
        QCOMPARE(bodyOf(res), std::string("404 Not Found\n"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/plain; charset=utf-8"));
        rr.kind = routing::RouteResult::Kind::MethodNotAllowed;
        rr.allow = http::methodBit(http::Method::Get) | http::methodBit(http::Method::Head);
        res = call(site.config, rr, req);
        QCOMPARE(res.status, 405);
        QCOMPARE(hv(res, "Allow"), QString("GET, HEAD, OPTIONS"));
        rr.kind = routing::RouteResult::Kind::Options;
        TestRequest opt("/x", "OPTIONS");
        res = call(site.config, rr, opt);
        QCOMPARE(res.status, 204);
        QCOMPARE(hv(res, "Allow"), QString("GET, HEAD, OPTIONS"));
        QCOMPARE(res.bodyLength(), std::uint64_t(0));
        rr.kind = routing::RouteResult::Kind::Fallback; // no root on this vhost
        QCOMPARE(call(site.config, rr, req).status, 404);
    }

    void errorPages() {
        QVERIFY(writeFile(tmp_.path(), "404.html", "<h1>custom 404</h1>"));
        QVERIFY(writeFile(tmp_.path(), "500.txt", "custom 500"));
        QVERIFY(writeFile(tmp_.path(), "site/a.txt", "a"));
        Site site(tmp_.path() + "/site");
        site.vhost().errorPages = {{404, (tmp_.path() + "/404.html").toStdString()},
                                   {500, (tmp_.path() + "/500.txt").toStdString()},
                                   {503, (tmp_.path() + "/missing.html").toStdString()}};
        TestRequest req("/nope.txt");
        auto res = call(site.config, fallbackResult(), req);
        QCOMPARE(res.status, 404);
        QCOMPARE(bodyOf(res), std::string("<h1>custom 404</h1>"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/html; charset=utf-8"));
        QCOMPARE(headerCount(res, "Content-Type"), 1);
        routing::RouteResult nf;
        nf.kind = routing::RouteResult::Kind::NotFound;
        QCOMPARE(bodyOf(call(site.config, nf, req)), std::string("<h1>custom 404</h1>"));
        // Injected faults use the page; an unreadable page leaves the plain one.
        config::RespondAction fault;
        fault.errorRate = 1;
        fault.errorStatus = 500;
        auto faultRoute = respondRoute(fault);
        res = call(site.config, matched(faultRoute), req);
        QCOMPARE(bodyOf(res), std::string("custom 500"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/plain; charset=utf-8"));
        fault.errorStatus = 503;
        faultRoute = respondRoute(fault);
        QCOMPARE(bodyOf(call(site.config, matched(faultRoute), req)),
                 std::string("503 Service Unavailable\n"));
        // A mock that deliberately answers 404 keeps its own body.
        config::RespondAction mock;
        mock.status = 404;
        mock.body = "{\"error\":\"no user\"}";
        auto mockRoute = respondRoute(mock);
        QCOMPARE(bodyOf(call(site.config, matched(mockRoute), req)), std::string("{\"error\":\"no user\"}"));
    }

    void extraHeaders() {
        Site site;
        site.vhost().headers = {
            {"Cache-Control", "no-cache"}, {"X-Vhost", "v"}, {"Link", "<a>"}, {"Link", "<b>"}};
        config::RespondAction a;
        a.body = "x";
        a.headers = {{"Cache-Control", "max-age=60"}};
        auto route = respondRoute(a);
        route.headers = {{"X-Vhost", "route wins"}, {"X-Route", "r"}};
        TestRequest req("/x");
        auto res = call(site.config, matched(route), req);
        QCOMPARE(hv(res, "Cache-Control"), QString("no-cache")); // vhost's replaces the action's
        QCOMPARE(headerCount(res, "Cache-Control"), 1);
        QCOMPARE(hv(res, "X-Vhost"), QString("route wins"));
        QCOMPARE(headerCount(res, "X-Vhost"), 1);
        QCOMPARE(hv(res, "X-Route"), QString("r"));
        QCOMPARE(headerCount(res, "Link"), 2); // repeats within one list stay
        // Errors and fallbacks carry the vhost's headers too.
        routing::RouteResult nf;
        nf.kind = routing::RouteResult::Kind::NotFound;
        res = call(site.config, nf, req);
        QCOMPARE(hv(res, "X-Vhost"), QString("v"));
        QCOMPARE(hv(res, "X-Route"), QString());
    }

    void serverSwitch_data() {
        QTest::addColumn<int>("global");
        QTest::addColumn<int>("vhost"); // -1 unset
        QTest::addColumn<int>("route");
        QTest::addColumn<bool>("expected");
        QTest::newRow("global on") << 1 << -1 << -1 << true;
        QTest::newRow("global off") << 0 << -1 << -1 << false;
        QTest::newRow("vhost off") << 1 << 0 << -1 << false;
        QTest::newRow("vhost on") << 0 << 1 << -1 << true;
        QTest::newRow("route on over vhost off") << 1 << 0 << 1 << true;
        QTest::newRow("route off") << 1 << 1 << 0 << false;
    }
    void serverSwitch() {
        QFETCH(int, global);
        QFETCH(int, vhost);
        QFETCH(int, route);
        QFETCH(bool, expected);
        Site site;
        site.config.serverHeader = global == 1;
        if (vhost >= 0) site.vhost().serverHeader = vhost == 1;
        config::RespondAction a;
        auto r = respondRoute(a);
        if (route >= 0) r.serverHeader = route == 1;
        TestRequest req("/x");
        QCOMPARE(call(site.config, matched(r), req).serverHeader, expected);
    }

    void errorResponseShape() {
        http::Response res;
        handlers::errorResponse(418, res);
        QCOMPARE(res.status, 418);
        QCOMPARE(bodyOf(res), std::string("418 I'm a teapot\n"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/plain; charset=utf-8"));
    }
};

QTEST_APPLESS_MAIN(RespondRedirectTest)
#include "tst_respond_redirect.moc"

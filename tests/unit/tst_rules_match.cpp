// rules::Match (the Traffic filter language on live requests) and RuleSet::applyRequest: which
// requests a match takes, the errors of matches that do not parse, and the field list a rule leaves.
#include <portico/rules/rules.h>

#include <QtTest>

using namespace portico;

namespace {
struct Req {
    std::vector<http::Header> fields;
    http::Request req;
    Req(std::string_view method, std::string_view target, std::string_view host,
        std::vector<http::Header> f = {}, std::string_view client = "127.0.0.1")
        : fields(std::move(f)) {
        req.methodToken = method;
        req.method = http::methodFromToken(method);
        req.target = target;
        req.rawPath = target.substr(0, target.find('?'));
        req.host = host;
        req.headers = fields;
        req.clientAddress = client;
    }
};

bool matches(std::string_view expr, const Req& r, int httpVersion = 1) {
    std::string error;
    auto m = rules::Match::parse(expr, config::Rule::Stage::Request, error);
    if (!m) qFatal("match '%s' did not parse: %s", std::string(expr).c_str(), error.c_str());
    return m->matches({r.req, httpVersion});
}

std::string names(std::span<const http::Header> h) {
    std::string out;
    for (const auto& f : h)
        out += std::string(f.name) + "=" + std::string(f.value) + ";";
    return out;
}
} // namespace

class TestRulesMatch : public QObject {
    Q_OBJECT
private slots:
    void keys() {
        const Req get("GET", "/api/v1/users?id=3", "api.example.test:8080",
                      {{"Accept", "application/json"}, {"X-Trace", "abc123"}}, "192.168.1.20");
        QVERIFY(matches("", get));
        QVERIFY(matches("method:GET", get));
        QVERIFY(matches("method:post,get", get)); // a list, case-insensitive
        QVERIFY(!matches("method:POST", get));
        QVERIFY(matches("path:/api/v1", get));
        QVERIFY(!matches("path:/v1", get));              // a prefix
        QVERIFY(!matches("path:/api/v1/users?id", get)); // the query is not part of the path
        QVERIFY(matches("host:example.test", get));
        QVERIFY(matches("host:API.EXAMPLE", get)); // case-insensitive substring
        QVERIFY(matches("url:users?id=3", get));
        QVERIFY(matches("/v1/USERS", get)); // a bare word: a substring of the URL
        QVERIFY(!matches("/v2/users", get));
        QVERIFY(matches("header:x-trace", get));
        QVERIFY(matches("header:X-Trace=123", get));
        QVERIFY(!matches("header:X-Trace=999", get));
        QVERIFY(!matches("header:Cookie", get));
        QVERIFY(matches("client:192.168.", get));
        QVERIFY(!matches("client:127.", get));
        QVERIFY(matches("protocol:h1", get));
        QVERIFY(!matches("protocol:h1", get, 2));
        QVERIFY(matches("protocol:h2", get, 2));
        QVERIFY(matches("-method:POST path:/api", get)); // every term, negation
        QVERIFY(!matches("-path:/api", get));
        QVERIFY(!matches("path:/api method:POST", get));
        // An absolute-form target (a forward proxy's request) is its own URL.
        const Req fwd("GET", "http://origin.test/echo", "origin.test");
        QVERIFY(matches("url:http://origin.test/echo", fwd));
        QVERIFY(!matches("url:http://origin.testhttp", fwd));
    }

    void errors_data() {
        QTest::addColumn<QString>("expr");
        QTest::addColumn<int>("stage"); // 0 request, 1 response
        QTest::addColumn<QString>("error");
        QTest::newRow("unknown key") << "path:/a methd:GET" << 0
                                     << "column 9: unknown key 'methd' (did you mean 'method'?)";
        QTest::newRow("status needs a response")
            << "status:500" << 0 << "column 1: 'status:' needs a response";
        QTest::newRow("record-only") << "  vhost:a" << 0
                                     << "column 3: 'vhost:' is known to the Traffic filter only";
        QTest::newRow("bad protocol") << "protocol:ws" << 0 << "column 1: protocol: expected h1 or h2";
        QTest::newRow("bad status") << "status:abc" << 1 << "column 1: status: expected a number";
        QTest::newRow("empty value") << "path:" << 0 << "column 1: missing value after 'path:'";
    }
    void errors() {
        QFETCH(QString, expr);
        QFETCH(int, stage);
        QFETCH(QString, error);
        std::string why;
        auto m = rules::Match::parse(
            expr.toStdString(), stage ? config::Rule::Stage::Response : config::Rule::Stage::Request, why);
        QVERIFY(!m);
        QVERIFY2(why.starts_with(error.toStdString()), why.c_str());
    }

    // Actions in the order written, rules in list order (a later rule sees the earlier's fields);
    // a rule that does not match leaves the request's own fields in place (no copy).
    void applyRequest() {
        config::Config c;
        config::Rule a;
        a.name = "a";
        a.match = "path:/x";
        config::RuleAction set;
        set.kind = config::RuleAction::Kind::SetHeader;
        set.set = {{"X-New", "1"}, {"accept", "text/plain"}};
        config::RuleAction remove;
        remove.kind = config::RuleAction::Kind::RemoveHeader;
        remove.remove = {"x-gone", "X-New"};
        config::RuleAction setAgain = set;
        setAgain.set = {{"X-New", "2"}};
        a.actions = {set, remove, setAgain};
        config::Rule b;
        b.match = "header:x-new=2";
        config::RuleAction tag;
        tag.set = {{"X-B", "saw"}};
        b.actions = {tag};
        config::Rule never;
        never.match = "path:/nothing";
        config::RuleAction fail;
        fail.kind = config::RuleAction::Kind::Fail;
        never.actions = {fail};
        c.rules = {a, b, never};
        const rules::RuleSet set_(c);
        Req r("GET", "/x", "h", {{"Accept", "*/*"}, {"X-Gone", "1"}, {"X-Kept", "k"}});
        std::vector<http::Header> scratch;
        auto v = set_.applyRequest(r.req, 1, scratch);
        QVERIFY(!v.fail);
        QCOMPARE(v.changed, 2u);
        QCOMPARE(names(r.req.headers), std::string("X-Kept=k;accept=text/plain;X-New=2;X-B=saw;"));
        Req other("GET", "/y", "h", {{"Accept", "*/*"}});
        const auto* before = other.req.headers.data();
        v = set_.applyRequest(other.req, 1, scratch);
        QCOMPARE(v.changed, 0u);
        QCOMPARE(other.req.headers.data(), before);
        Req failing("GET", "/nothing", "h");
        v = set_.applyRequest(failing.req, 1, scratch);
        QVERIFY(v.fail);
        QCOMPARE(v.failedBy, &c.rules[2]);
    }

    // The path index (rules filed by their path prefix's 2nd and 3rd bytes, the rest tried for
    // every request) keeps list order and takes exactly the rules that match.
    void indexKeepsListOrder() {
        const char* matches[] = {"path:/api",
                                 "header:x-h",
                                 "path:/apple",
                                 "path:/a",
                                 "-path:/api",
                                 "path:/zzz",
                                 "path:/apple/x method:POST",
                                 "path:apple",
                                 "path:/app"};
        config::Config c;
        for (std::size_t i = 0; i < std::size(matches); ++i) {
            config::Rule r;
            r.match = matches[i];
            config::RuleAction tag;
            tag.set = {{"R" + std::to_string(i), "1"}};
            r.actions = {tag};
            c.rules.push_back(r);
        }
        const rules::RuleSet set(c);
        std::vector<http::Header> scratch;
        Req apple("GET", "/apple/x", "h", {{"X-H", "1"}});
        set.applyRequest(apple.req, 1, scratch);
        QCOMPARE(names(apple.req.headers), std::string("X-H=1;R1=1;R2=1;R3=1;R4=1;R8=1;"));
        Req api("POST", "/api/v1", "h");
        set.applyRequest(api.req, 1, scratch);
        QCOMPARE(names(api.req.headers), std::string("R0=1;R3=1;"));
        Req shortPath("GET", "/a", "h");
        set.applyRequest(shortPath.req, 1, scratch);
        QCOMPARE(names(shortPath.req.headers), std::string("R3=1;R4=1;"));
    }

    // A fail with rate 0.3 fails about that share (a binomial bound loose enough never to flake:
    // 2000 draws, 30 % ± 6 points is more than 9 standard deviations).
    void failRate() {
        config::Config c;
        config::Rule r;
        config::RuleAction fail;
        fail.kind = config::RuleAction::Kind::Fail;
        fail.rate = 0.3;
        r.actions = {fail};
        c.rules = {r};
        const rules::RuleSet set(c);
        std::vector<http::Header> scratch;
        int failed = 0;
        for (int i = 0; i < 2000; ++i) {
            Req q("GET", "/", "h");
            failed += set.applyRequest(q.req, 1, scratch).fail ? 1 : 0;
        }
        QVERIFY2(failed > 480 && failed < 720, qPrintable(QString::number(failed)));
    }
};

QTEST_MAIN(TestRulesMatch)
#include "tst_rules_match.moc"

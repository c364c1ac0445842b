// rules::Match (the Traffic filter language on live requests), RuleSet::applyRequest and
// applyResponse: which exchanges a match takes, the errors of matches that do not parse, the field
// lists rules leave, the names and originals records get, and the match counts.
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

// One exchange's request stage, as serve() runs it (a cleared rule state).
rules::RequestVerdict apply(const rules::RuleSet& set, Req& r, http::Response& res, int httpVersion = 1) {
    res.clearRuleState();
    return set.applyRequest(r.req, httpVersion, res);
}

config::RuleAction setHeader(std::string name, std::string value) {
    config::RuleAction a;
    a.kind = config::RuleAction::Kind::SetHeader;
    a.set = {{std::move(name), std::move(value)}};
    return a;
}

config::RuleAction removeHeader(std::string name) {
    config::RuleAction a;
    a.kind = config::RuleAction::Kind::RemoveHeader;
    a.remove = {std::move(name)};
    return a;
}

config::Rule rule(std::string name, std::string match, std::vector<config::RuleAction> actions,
                  config::Rule::Stage stage = config::Rule::Stage::Request) {
    config::Rule r;
    r.name = std::move(name);
    r.match = std::move(match);
    r.actions = std::move(actions);
    r.stage = stage;
    return r;
}

config::RuleAction replaceBody(std::string regex, std::string with) {
    config::RuleAction a;
    a.kind = config::RuleAction::Kind::ReplaceBody;
    a.regex = std::move(regex);
    a.replaceWith = std::move(with);
    return a;
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
        QString many;
        for (int i = 0; i < 33; ++i)
            many += QStringLiteral("header:h%1 ").arg(i, 2, 10, QChar('0'));
        QTest::newRow("too many response terms")
            << many << 1 << "column 353: a response-stage match has at most 32 terms";
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
        http::Response scratch;
        auto v = apply(set_, r, scratch);
        QVERIFY(!v.fail);
        QCOMPARE(v.changed, 2u);
        QCOMPARE(names(r.req.headers), std::string("X-Kept=k;accept=text/plain;X-New=2;X-B=saw;"));
        // The record's side: the rules that changed it (an unnamed one by its place) and the fields
        // as received.
        QCOMPARE(scratch.ruleNames, std::string("a\nrules[1]"));
        QCOMPARE(scratch.originalRequestFields, std::string("Accept: */*\r\nX-Gone: 1\r\nX-Kept: k\r\n"));
        Req other("GET", "/y", "h", {{"Accept", "*/*"}});
        const auto* before = other.req.headers.data();
        v = apply(set_, other, scratch);
        QCOMPARE(v.changed, 0u);
        QCOMPARE(other.req.headers.data(), before);
        Req failing("GET", "/nothing", "h");
        v = apply(set_, failing, scratch);
        QVERIFY(v.fail);
        QCOMPARE(v.failedBy, &c.rules[2]);
        QCOMPARE(scratch.ruleNames, std::string("rules[2]"));
        QVERIFY(scratch.originalRequestFields.empty());
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
        http::Response scratch;
        Req apple("GET", "/apple/x", "h", {{"X-H", "1"}});
        apply(set, apple, scratch);
        QCOMPARE(names(apple.req.headers), std::string("X-H=1;R1=1;R2=1;R3=1;R4=1;R8=1;"));
        Req api("POST", "/api/v1", "h");
        apply(set, api, scratch);
        QCOMPARE(names(api.req.headers), std::string("R0=1;R3=1;"));
        Req shortPath("GET", "/a", "h");
        apply(set, shortPath, scratch);
        QCOMPARE(names(shortPath.req.headers), std::string("R3=1;R4=1;"));
    }

    // Response-stage rules: request-side terms decide at the request (pendingRules), `status:` and
    // `header:` terms the request did not settle decide at the head; actions in list order, a later
    // rule's terms see the fields as the earlier ones left them.
    void responseStage() {
        using S = config::Rule::Stage;
        config::Config c;
        c.rules = {rule("tag", "path:/never", {setHeader("X-Req-Stage", "1")}),
                   rule("flags", "path:/flags status:200",
                        {setHeader("X-Debug", "1"), removeHeader("cache-control")}, S::Response),
                   rule("errors", "status:5xx", {setHeader("X-Err", "yes")}, S::Response),
                   rule("json", "header:content-type=json", {setHeader("X-Json", "1")}, S::Response),
                   rule("req-header", "header:x-req", {setHeader("X-Saw-Req", "1")}, S::Response),
                   rule("no-debug", "-header:x-debug", {setHeader("X-No-Debug", "1")}, S::Response),
                   rule("posts", "method:POST", {setHeader("X-Post", "1")}, S::Response)};
        const rules::RuleSet set(c);
        http::Response res;
        Req flags("GET", "/flags", "h", {{"X-Req", "1"}});
        auto v = apply(set, flags, res);
        QVERIFY(!v.fail);
        QCOMPARE(v.changed, 0u);
        QCOMPARE(res.pendingRules.size(), std::size_t(5)); // all but `posts` (method:POST)
        const std::string upstream = "Cache-Control: no-store\r\nContent-Type: application/json\r\n";
        std::string out, ruleNames;
        QVERIFY(set.applyResponse(res.pendingRules, 200, upstream, out, ruleNames));
        QCOMPARE(out, std::string("Content-Type: application/json\r\nX-Debug: 1\r\nX-Json: 1\r\n"
                                  "X-Saw-Req: 1\r\n"));
        QCOMPARE(ruleNames, std::string("flags\njson\nreq-header"));
        out.clear();
        ruleNames.clear();
        QVERIFY(set.applyResponse(res.pendingRules, 503, upstream, out, ruleNames));
        QCOMPARE(out,
                 std::string("Cache-Control: no-store\r\nContent-Type: application/json\r\nX-Err: yes\r\n"
                             "X-Json: 1\r\nX-Saw-Req: 1\r\nX-No-Debug: 1\r\n"));
        QCOMPARE(ruleNames, std::string("errors\njson\nreq-header\nno-debug"));
        // Without X-Req on the request, `header:x-req` looks at the response's fields.
        Req other("GET", "/other", "h");
        apply(set, other, res);
        QCOMPARE(res.pendingRules.size(), std::size_t(4)); // errors, json, req-header, no-debug
        out.clear();
        ruleNames.clear();
        QVERIFY(set.applyResponse(res.pendingRules, 200, "X-Req: from-upstream\r\nX-Debug: 0\r\n", out,
                                  ruleNames));
        QCOMPARE(out, std::string("X-Req: from-upstream\r\nX-Debug: 0\r\nX-Saw-Req: 1\r\n"));
        QCOMPARE(ruleNames, std::string("req-header"));
        // Nothing matches: false, `out` untouched.
        out = "untouched";
        ruleNames.clear();
        QVERIFY(!set.applyResponse(res.pendingRules, 200, "X-Debug: 0\r\n", out, ruleNames));
        QCOMPARE(out, std::string("untouched"));
        QVERIFY(ruleNames.empty());
        // A request-stage fail answers: no response-stage rule is selected.
        config::Config failing = c;
        config::RuleAction fail;
        fail.kind = config::RuleAction::Kind::Fail;
        failing.rules[0] = rule("fail", "", {fail});
        const rules::RuleSet failSet(failing);
        QVERIFY(apply(failSet, flags, res).fail);
        QVERIFY(res.pendingRules.empty());
    }

    // Match counts: a relaxed counter per rule, kept across RuleSets (reloads) by name, an unnamed
    // rule by its place; a response-stage rule counts only when its `status:` matched too.
    void matchCounts() {
        using S = config::Rule::Stage;
        rules::MatchCounts counts;
        config::Config c;
        c.rules = {rule("api", "path:/api", {setHeader("X-A", "1")}),
                   rule("", "path:/b", {setHeader("X-B", "1")}),
                   rule("errors", "status:5xx", {setHeader("X-E", "1")}, S::Response)};
        {
            const rules::RuleSet set(c, &counts);
            http::Response res;
            for (const char* path : {"/api/1", "/api/2", "/b", "/c"}) {
                Req r("GET", path, "h");
                apply(set, r, res);
                std::string out, ruleNames;
                set.applyResponse(res.pendingRules, std::string_view(path) == "/c" ? 502 : 200, "", out,
                                  ruleNames);
            }
        }
        QCOMPARE(counts.countsFor(c), (std::vector<std::uint64_t>{2, 1, 1}));
        // Reloaded with `api` moved last: it keeps its count; the unnamed rule, still at place 1,
        // keeps its own; the new rule starts at 0.
        config::Config next = c;
        next.rules = {rule("new", "path:/n", {setHeader("X-N", "1")}), c.rules[1], c.rules[2], c.rules[0]};
        const rules::RuleSet reloaded(next, &counts);
        QCOMPARE(counts.countsFor(next), (std::vector<std::uint64_t>{0, 1, 1, 2}));
        http::Response res;
        Req api("GET", "/api/3", "h");
        apply(reloaded, api, res);
        QCOMPARE(counts.countsFor(next), (std::vector<std::uint64_t>{0, 1, 1, 3}));
    }

    // map_local under a folder: the path below the rule's `path:` prefix (strip_prefix's rule for a
    // prefix without its slash); a file answers every path.
    void mapLocalPaths() {
        rules::MapLocal slash;
        slash.prefix = "/assets/";
        QCOMPARE(slash.pathFor("/assets/app.js"), std::string_view("/app.js"));
        QCOMPARE(slash.pathFor("/assets/"), std::string_view("/"));
        QCOMPARE(slash.pathFor("/other/x"), std::string_view("/other/x"));
        rules::MapLocal bare;
        bare.prefix = "/assets";
        QCOMPARE(bare.pathFor("/assets/app.js"), std::string_view("/app.js"));
        QCOMPARE(bare.pathFor("/assets"), std::string_view(""));
        QCOMPARE(bare.pathFor("/assetsX/y"), std::string_view("/assetsX/y"));
        rules::MapLocal none;
        QCOMPARE(none.pathFor("/a/b"), std::string_view("/a/b"));
        rules::MapLocal file;
        file.file = "/app.js";
        QCOMPARE(file.pathFor("/anything/else"), std::string_view("/app.js"));
    }

    // replace_body at the request stage: every match replaced ($1 groups, list order, each rule on
    // the previous one's result), the body then a view of the Response's copy; the rules named.
    // An empty body (it may be streaming) is left alone and noted for the session; a compressed one
    // and one over max_rewrite_body are left alone with the reason in the names.
    void replaceBodyRequestStage() {
        config::Config c;
        c.limits.maxRewriteBody = 64;
        c.rules = {rule("ids", "path:/api", {replaceBody(R"(id=(\d+))", "id=<$1>")}),
                   rule("", "path:/api method:POST", {setHeader("X-Seen", "1"), replaceBody("<", "[")}),
                   rule("other", "path:/elsewhere", {replaceBody("a", "b")})};
        const rules::RuleSet set(c);
        http::Response res;
        Req r("POST", "/api/x", "h", {{"Content-Type", "text/plain"}});
        const std::string body = "id=1&id=22&name=id";
        r.req.body = body;
        auto v = apply(set, r, res);
        QVERIFY(!v.fail);
        QCOMPARE(std::string(r.req.body), std::string("id=[1>&id=[22>&name=id"));
        QVERIFY(r.req.body.data() == res.ruledRequestBody.data()); // a view of the Response's copy
        QCOMPARE(body, std::string("id=1&id=22&name=id"));         // the received body is not written to
        QCOMPARE(res.ruleNames, std::string("ids\nrules[1]"));
        QVERIFY(res.streamedBodyNotes.empty());
        // No match: the body stays the received one (no copy), the rule is still named.
        Req same("PUT", "/api/y", "h");
        const std::string tail = body.substr(10);
        same.req.body = tail;
        apply(set, same, res);
        QVERIFY(same.req.body.data() == tail.data()); // the same bytes, not a copy
        QVERIFY(res.ruledRequestBody.empty());
        QCOMPARE(res.ruleNames, std::string("ids"));
        // No body (or one still to come): nothing changes, the session is told.
        Req empty("POST", "/api/z", "h");
        apply(set, empty, res);
        QVERIFY(empty.req.body.empty());
        QCOMPARE(res.ruleNames, std::string("rules[1]")); // its set_header ran
        QCOMPARE(res.streamedBodyNotes,
                 std::string("ids: replace_body skipped (streamed request body)\n"
                             "rules[1]: replace_body skipped (streamed request body)"));
        // A gzip body is never rewritten.
        Req gz("GET", "/api/g", "h", {{"Content-Encoding", "gzip"}});
        gz.req.body = "id=7";
        apply(set, gz, res);
        QCOMPARE(std::string(gz.req.body), std::string("id=7"));
        QCOMPARE(res.ruleNames,
                 std::string("ids\nids: replace_body skipped (compressed body (Content-Encoding: gzip))"));
        // Over max_rewrite_body (64 bytes): unchanged.
        const std::string big(65, '1');
        Req large("GET", "/api/l", "h");
        const std::string bigBody = "id=" + big;
        large.req.body = bigBody;
        apply(set, large, res);
        QVERIFY(large.req.body.data() == bigBody.data());
        QCOMPARE(res.ruleNames,
                 std::string("ids\nids: replace_body skipped (body over max_rewrite_body, 64 bytes)"));
        // A rule that does not match leaves the body alone.
        Req none("GET", "/none", "h");
        none.req.body = "aaa";
        apply(set, none, res);
        QCOMPARE(std::string(none.req.body), std::string("aaa"));
        QVERIFY(res.ruleNames.empty());
    }

    // replace_body at the response stage: applyResponse reports the edits of the rules that applied
    // (none, and nothing touched, for rules without one); rewriteBody runs them in order.
    void replaceBodyResponseStage() {
        using S = config::Rule::Stage;
        config::Config c;
        c.limits.maxRewriteBody = 1000;
        c.rules = {
            rule("names", "status:200", {replaceBody("(?<first>\\w+) (\\w+)", "$2, ${first}")}, S::Response),
            rule("fields", "", {setHeader("X-A", "1")}, S::Response),
            rule("dollars", "path:/d", {replaceBody("USD", "$$"), replaceBody("\\$", "€")}, S::Response),
            rule("missing", "status:404", {replaceBody("x", "y")}, S::Response)};
        const rules::RuleSet set(c);
        QCOMPARE(set.maxRewriteBody(), std::uint64_t(1000));
        http::Response res;
        Req d("GET", "/d", "h");
        apply(set, d, res);
        std::vector<rules::BodyEdit> edits;
        std::string fields, ruleNames;
        set.applyResponse(res.pendingRules, 200, "Content-Type: text/plain\r\n", fields, ruleNames, &edits);
        QCOMPARE(ruleNames, std::string("names\nfields\ndollars"));
        QCOMPARE(edits.size(), std::size_t(3));
        QCOMPARE(edits[0].rule, &c.rules[0]);
        QCOMPARE(edits[2].rule, &c.rules[2]);
        std::string out;
        ruleNames.clear();
        QVERIFY(set.rewriteBody(edits, "Ada Lovelace paid 5 USD", out, ruleNames));
        QCOMPARE(out, std::string("Lovelace, Ada 5, paid €"));
        QVERIFY(ruleNames.empty());
        // No match anywhere: false, `out` untouched.
        out = "untouched";
        QVERIFY(!set.rewriteBody(std::span(edits).subspan(2), "no currency", out, ruleNames));
        QCOMPARE(out, std::string("untouched"));
        QVERIFY(!set.rewriteBody(edits, "", out, ruleNames)); // an empty body is left alone
        // Only rules without replace_body: no edits reported.
        edits.clear();
        Req other("GET", "/o", "h");
        apply(set, other, res);
        set.applyResponse(res.pendingRules, 500, "", fields, ruleNames, &edits);
        QVERIFY(edits.empty());
        // Over the limit, before or after the rewrite: unchanged, and the names say why.
        set.applyResponse(res.pendingRules, 200, "", fields, ruleNames, &edits);
        QCOMPARE(edits.size(), std::size_t(1));
        ruleNames.clear();
        QVERIFY(!set.rewriteBody(edits, std::string(1001, 'a'), out, ruleNames));
        QCOMPARE(ruleNames,
                 std::string("names: replace_body skipped (body over max_rewrite_body, 1000 bytes)"));
        ruleNames.clear();
        std::string words;
        for (int i = 0; i < 90; ++i)
            words += "ab cd "; // 540 bytes, each pair rewritten to "cd, ab" (+1 byte): 630
        QVERIFY(set.rewriteBody(edits, words, out, ruleNames));
        QCOMPARE(out.size(), std::size_t(630));
        words += std::string(400, '.'); // 940 bytes, 1030 rewritten
        QVERIFY(!set.rewriteBody(edits, words, out, ruleNames));
        QCOMPARE(ruleNames, std::string("names: replace_body skipped (rewritten body over 1000 bytes)"));
    }

    // A regex that backtracks without end stops at PCRE2's match limit: the body is left alone and
    // the names say so; the skip reasons of bodies never rewritten.
    void replaceBodyLimits() {
        using S = config::Rule::Stage;
        config::Config c;
        c.rules = {rule("slow", "", {replaceBody("(a+)+b", "x")}, S::Response),
                   rule("bad", "", {replaceBody("(unclosed", "x")}, S::Response),
                   rule("then", "", {replaceBody("c", "d")}, S::Response)};
        const rules::RuleSet set(c);
        http::Response res;
        Req r("GET", "/", "h");
        apply(set, r, res);
        std::vector<rules::BodyEdit> edits;
        std::string fields, ruleNames;
        set.applyResponse(res.pendingRules, 200, "", fields, ruleNames, &edits);
        QCOMPARE(edits.size(), std::size_t(2)); // the regex that does not compile is not there
        ruleNames.clear();
        std::string out;
        // (A 'b' after the run: PCRE2 checks that the required 'b' is there before it backtracks.)
        QVERIFY(set.rewriteBody(edits, std::string(40, 'a') + "cb", out, ruleNames));
        QCOMPARE(out, std::string(40, 'a') + "db"); // the next edit still ran
        QCOMPARE(ruleNames, std::string("slow: replace_body skipped (regex match limit reached)"));
        QCOMPARE(rules::RuleSet::bodySkipReason("Content-Type: text/html\r\nContent-Encoding: br\r\n"),
                 std::string("compressed body (Content-Encoding: br)"));
        QCOMPARE(rules::RuleSet::bodySkipReason("content-encoding: identity\r\n"), std::string());
        QCOMPARE(rules::RuleSet::bodySkipReason("Content-Type: application/grpc+proto\r\n"),
                 std::string("gRPC message"));
        QCOMPARE(rules::RuleSet::bodySkipReason("Content-Type: application/json\r\n"), std::string());
        ruleNames.clear();
        rules::RuleSet::noteSkipped(edits, "why\nnot", ruleNames);
        QCOMPARE(ruleNames,
                 std::string("slow: replace_body skipped (why not)\nthen: replace_body skipped (why not)"));
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
        http::Response scratch;
        int failed = 0;
        for (int i = 0; i < 2000; ++i) {
            Req q("GET", "/", "h");
            failed += apply(set, q, scratch).fail ? 1 : 0;
        }
        QVERIFY2(failed > 480 && failed < 720, qPrintable(QString::number(failed)));
    }
};

QTEST_MAIN(TestRulesMatch)
#include "tst_rules_match.moc"

// Tests for the `rules:` section of the config: the reader's model (every key, the shorthands and
// the defaults), its located errors (unknown keys, kinds not supported yet, malformed actions,
// header names and values, fail's status and rate), the source map of each rule's `match`, and the
// writer's round trip.
#include "test_support.h"

#include <portico/config/reader.h>
#include <portico/config/writer.h>
#include <portico/http/message.h>
#include <portico/validate/load.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::config;

namespace {

// One listener, one vhost with a respond route at "/": the smallest config built in code.
Config minimalConfig() {
    Config c;
    c.listen.push_back(Listen{});
    Vhost vh;
    Route route;
    route.path = "/";
    route.spec = "/";
    route.action = RespondAction{};
    vh.routes.push_back(route);
    c.vhosts.push_back(vh);
    return c;
}

QString str(const std::string& s) { return QString::fromStdString(s); }

QString where(const Location& l) { return QString("%1:%2").arg(l.line).arg(l.column); }

// Appended after the rules so that the rules' line numbers start at 1.
const QByteArray kVhosts = "vhosts:\n  - routes: [{path: /, respond: {body: x}}]\n";

} // namespace

class TestConfigRules : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    ReadResult read(const QByteArray& yaml) {
        return readConfigText(std::string_view(yaml.constData(), yaml.size()), "test.yaml",
                              dir_.path().toStdString(), "test.yaml");
    }

    static QStringList lines(const std::vector<ConfigError>& errors) {
        QStringList out;
        for (const ConfigError& e : errors)
            out << str(e.toString());
        return out;
    }

    /// Reads `yaml` (rules, then kVhosts), expecting no error, and gives its rules.
    std::vector<Rule> rulesOf(const QByteArray& yaml) {
        const ReadResult r = read(yaml + kVhosts);
        [&] { QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n'))); }();
        return r.config->rules;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY(QDir().mkpath(dir_.path() + "/site")); // docs examples serve ./site
    }

    void fullExample() {
        const QByteArray yaml = "rules:\n"                                             // 1
                                "  - name: debug flag\n"                               // 2
                                "    enabled: false\n"                                 // 3
                                "    stage: response\n"                                // 4
                                "    match: \"path:/flags\"\n"                         // 5
                                "    actions:\n"                                       // 6
                                "      - set_header: {X-Debug: \"1\", X-Other: two}\n" // 7
                                "      - remove_header: Cache-Control\n"               // 8
                                "      - fail: {rate: 0.2, with: reset}\n"             // 9
                                "      - fail: 503\n"                                  // 10
                                "      - fail: reset\n"                                // 11
                                "  - match: method:POST\n"                             // 12
                                "    actions:\n"                                       // 13
                                "      - remove_header: [Cookie, authorization]\n"     // 14
                                "      - fail: {with: 429}\n"                          // 15
                                "      - set_header:\n"                                // 16
                                "          X-Num: 42\n"                                // 17
                                "          X-Bool: true\n"                             // 18
                                "          X-Empty: \"\"\n";                           // 19
        const ReadResult r = read(yaml + kVhosts);
        QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n')));
        const auto& rules = r.config->rules;
        QCOMPARE(rules.size(), std::size_t(2));

        const Rule& a = rules[0];
        QCOMPARE(str(a.name), QString("debug flag"));
        QCOMPARE(a.enabled, false);
        QVERIFY(a.stage == Rule::Stage::Response);
        QCOMPARE(str(a.match), QString("path:/flags"));
        QCOMPARE(where(a.where), QString("2:5"));
        QCOMPARE(str(a.where.file), QString("test.yaml"));
        QCOMPARE(a.actions.size(), std::size_t(5));
        QVERIFY(a.actions[0].kind == RuleAction::Kind::SetHeader);
        QVERIFY(a.actions[0].set == (HeaderList{{"X-Debug", "1"}, {"X-Other", "two"}}));
        QVERIFY(a.actions[0].remove.empty());
        QCOMPARE(where(a.actions[0].where), QString("7:9"));
        QVERIFY(a.actions[1].kind == RuleAction::Kind::RemoveHeader);
        QCOMPARE(a.actions[1].remove, std::vector<std::string>{"Cache-Control"});
        QVERIFY(a.actions[1].set.empty());
        QCOMPARE(where(a.actions[1].where), QString("8:9"));
        QVERIFY(a.actions[2].kind == RuleAction::Kind::Fail);
        QVERIFY(a.actions[2].failure == RuleAction::Failure::Reset);
        QCOMPARE(a.actions[2].rate, 0.2);
        QCOMPARE(where(a.actions[2].where), QString("9:9"));
        QVERIFY(a.actions[3].kind == RuleAction::Kind::Fail);
        QVERIFY(a.actions[3].failure == RuleAction::Failure::Status);
        QCOMPARE(a.actions[3].failStatus, 503);
        QCOMPARE(a.actions[3].rate, 1.0);
        QCOMPARE(where(a.actions[3].where), QString("10:9"));
        QVERIFY(a.actions[4].kind == RuleAction::Kind::Fail);
        QVERIFY(a.actions[4].failure == RuleAction::Failure::Reset);
        QCOMPARE(a.actions[4].rate, 1.0);
        QCOMPARE(where(a.actions[4].where), QString("11:9"));

        const Rule& b = rules[1];
        QCOMPARE(str(b.name), QString());
        QCOMPARE(b.enabled, true);
        QVERIFY(b.stage == Rule::Stage::Request);
        QCOMPARE(str(b.match), QString("method:POST"));
        QCOMPARE(where(b.where), QString("12:5"));
        QCOMPARE(b.actions.size(), std::size_t(3));
        QCOMPARE(b.actions[0].remove, (std::vector<std::string>{"Cookie", "authorization"}));
        QVERIFY(b.actions[1].failure == RuleAction::Failure::Status);
        QCOMPARE(b.actions[1].failStatus, 429);
        QCOMPARE(b.actions[1].rate, 1.0);
        // Numbers and booleans written as scalars are their text.
        QVERIFY(b.actions[2].set == (HeaderList{{"X-Num", "42"}, {"X-Bool", "true"}, {"X-Empty", ""}}));
        QCOMPARE(where(b.actions[2].where), QString("16:9"));

        // Validate parses `match` later and points at it through the source map.
        QCOMPARE(where(r.map.at("rules[0].match")), QString("5:12"));
        QCOMPARE(str(r.map.at("rules[0].match").file), QString("test.yaml"));
        QCOMPARE(where(r.map.at("rules[1].match")), QString("12:12"));
        QCOMPARE(where(r.map.at("rules[1].actions[1].fail.with")), QString("15:22"));
        QCOMPARE(where(r.map.at("rules[2].match")), QString("0:0")); // no third rule
    }

    // The whole loader (reader, then validate) takes request-stage rules and keeps them as read.
    void loaderKeepsRules() {
        const QByteArray yaml = "rules:\n"
                                "  - name: flaky\n"
                                "    match: \"path:/api method:POST\"\n"
                                "    actions:\n"
                                "      - set_header: {X-A: \"1\"}\n"
                                "      - fail: {rate: 0.5, with: 503}\n"
                                "  - enabled: false\n"
                                "    actions: [{remove_header: Cookie}]\n";
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY2(loaded.ok(), qPrintable(lines(loaded.errors).join('\n')));
        QCOMPARE(loaded.config->rules.size(), std::size_t(2));
        QVERIFY(loaded.config->rules == read(yaml + kVhosts).config->rules);
        QCOMPARE(loaded.config->rules[0].actions[1].rate, 0.5);
        QCOMPARE(loaded.config->rules[1].enabled, false);
    }

    // Response-stage rules load (with `status:` in their match); a `fail` among their actions and a
    // name with a control character are refused with their place.
    void loaderResponseStage() {
        const QByteArray good = "rules:\n"
                                "  - match: \"path:/flags status:5xx header:content-type=json\"\n"
                                "    stage: response\n"
                                "    actions: [{set_header: {X-Debug: \"1\"}}, {remove_header: ETag}]\n";
        const LoadResult loaded =
            loadConfigText(std::string(good + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY2(loaded.ok(), qPrintable(lines(loaded.errors).join('\n')));
        QVERIFY(loaded.config->rules.at(0).stage == Rule::Stage::Response);
        const QByteArray bad = "rules:\n"
                               "  - name: \"tab\\there\"\n"
                               "    stage: response\n"
                               "    actions:\n"
                               "      - set_header: {X-A: \"1\"}\n"
                               "      - fail: 503\n";
        const LoadResult refused =
            loadConfigText(std::string(bad + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY(!refused.ok());
        const QStringList got = lines(refused.errors);
        QCOMPARE(got.size(), 2);
        QVERIFY2(
            got[0].startsWith("test.yaml:2:11: rules[0].name: a rule's name cannot hold control characters"),
            qPrintable(got.join('\n')));
        QVERIFY2(got[1].startsWith("test.yaml:6:9: rules[0].actions[1]: fail acts at the request stage"),
                 qPrintable(got.join('\n')));
    }

    // map_local takes a file or a folder (relative to the config's folder, absolute once read; one
    // that does not exist refuses the config), map_remote an origin URL as a proxy's upstream
    // (change_origin on); both are request-stage only; the writer gives both back.
    void mapActions() {
        QVERIFY(QDir(dir_.path()).mkpath("dev/assets"));
        QFile js(dir_.filePath("dev/app.js"));
        QVERIFY(js.open(QIODevice::WriteOnly));
        js.write("// dev build\n");
        js.close();
        const QByteArray yaml = "rules:\n"
                                "  - match: \"path:/app.js\"\n"
                                "    actions: [{map_local: dev/app.js}]\n"
                                "  - match: \"path:/assets/\"\n"
                                "    actions: [{set_header: {X-Mapped: \"1\"}}, {map_local: ./dev/assets}]\n"
                                "  - match: \"host:cdn.example.com\"\n"
                                "    actions: [{map_remote: \"http://127.0.0.1:3000\"}]\n"
                                "  - actions: [{map_remote: \"https://[::1]:8443\"}]\n";
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY2(loaded.ok(), qPrintable(lines(loaded.errors).join('\n')));
        const auto& rules = loaded.config->rules;
        QVERIFY(rules[0].actions[0].kind == RuleAction::Kind::MapLocal);
        QCOMPARE(str(rules[0].actions[0].mapLocal), dir_.filePath("dev/app.js"));
        QCOMPARE(str(rules[1].actions[1].mapLocal), dir_.filePath("dev/assets"));
        const RuleAction& remote = rules[2].actions[0];
        QVERIFY(remote.kind == RuleAction::Kind::MapRemote);
        QCOMPARE(remote.mapRemote.upstreams.size(), std::size_t(1));
        QCOMPARE(str(remote.mapRemote.upstreams[0].host), QString("127.0.0.1"));
        QCOMPARE(int(remote.mapRemote.upstreams[0].port), 3000);
        QVERIFY(remote.mapRemote.changeOrigin);
        QVERIFY(rules[3].actions[0].mapRemote.upstreams[0].protocol == Upstream::Protocol::H2);
        // Written back relative to the folder, and read again the same.
        const std::string written = configToYaml(*loaded.config, dir_.path().toStdString());
        for (const char* part : {"map_local: ./dev/app.js", "map_local: ./dev/assets",
                                 "map_remote: http://127.0.0.1:3000", "map_remote: https://[::1]:8443"})
            QVERIFY2(written.find(part) != std::string::npos,
                     qPrintable(QString(part) + " in\n" + str(written)));
        const LoadResult again = loadConfigText(written, "test.yaml", dir_.path().toStdString());
        QVERIFY2(again.ok(), qPrintable(lines(again.errors).join('\n')));
        QVERIFY(again.config->rules == rules);

        // Errors, each with its place.
        const QByteArray bad = "rules:\n"
                               "  - actions: [{map_local: dev/missing.js}]\n"
                               "  - actions: [{map_remote: \"ftp://x\"}]\n"
                               "  - actions: [{map_remote: \"http://127.0.0.1:3000/base\"}]\n"
                               "  - stage: response\n"
                               "    actions: [{map_local: dev/app.js}]\n"
                               "  - actions: [{map_local: \"\"}]\n";
        const LoadResult refused =
            loadConfigText(std::string(bad + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY(!refused.ok());
        const QStringList got = lines(refused.errors);
        const QStringList expected = {
            "test.yaml:2:27: rules[0].actions[0].map_local: file or folder '" +
                dir_.filePath("dev/missing.js") + "' does not exist",
            "test.yaml:3:28: rules[1].actions[0].map_remote: expected an upstream URL",
            "test.yaml:4:28: rules[2].actions[0].map_remote: an upstream is SCHEME://HOST[:PORT] without a "
            "path",
            "test.yaml:6:15: rules[3].actions[0]: map_local acts at the request stage",
            "test.yaml:7:27: rules[4].actions[0].map_local: empty path"};
        QCOMPARE(got.size(), expected.size());
        for (int i = 0; i < got.size(); ++i)
            QVERIFY2(got[i].startsWith(expected[i]), qPrintable(got.join('\n')));
    }

    // Names tell rules apart in records, the rule: filter and match counts: two rules may not share
    // one, and none may hold a control character (C1 and U+2028 included).
    void namesAreDistinctAndPrintable() {
        const QByteArray yaml = "rules:\n"
                                "  - name: same\n"
                                "    actions: [{fail: 503}]\n"
                                "  - name: same\n"
                                "    actions: [{fail: 503}]\n"
                                "  - name: \"n\\x85x\"\n"
                                "    actions: [{fail: 503}]\n"
                                "  - name: \"a\\u2028b\"\n"
                                "    actions: [{fail: 503}]\n"
                                "  - name: \"caf\u00e9 \u2603\"\n"
                                "    actions: [{fail: 503}]\n";
        const LoadResult r =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        const QStringList got = lines(r.errors);
        QCOMPARE(got.size(), 3);
        QVERIFY2(got[0].startsWith("test.yaml:4:11: rules[1].name: another rule is named 'same' (rules[0])"),
                 qPrintable(got.join('\n')));
        QVERIFY2(got[1].startsWith("test.yaml:6:11: rules[2].name: a rule's name cannot hold control"),
                 qPrintable(got.join('\n')));
        QVERIFY2(got[2].startsWith("test.yaml:8:11: rules[3].name: a rule's name cannot hold control"),
                 qPrintable(got.join('\n')));
    }

    void defaults() {
        const auto rules = rulesOf("rules:\n  - actions:\n      - fail: {with: 502}\n");
        QCOMPARE(rules.size(), std::size_t(1));
        const Rule& r = rules[0];
        QCOMPARE(str(r.name), QString());
        QCOMPARE(r.enabled, true);
        QVERIFY(r.stage == Rule::Stage::Request);
        QCOMPARE(str(r.match), QString());
        QCOMPARE(r.actions.size(), std::size_t(1));
        QVERIFY(r.actions[0].kind == RuleAction::Kind::Fail);
        QVERIFY(r.actions[0].failure == RuleAction::Failure::Status);
        QCOMPARE(r.actions[0].failStatus, 502);
        QCOMPARE(r.actions[0].rate, 1.0);
        // An explicit request stage and empty match are the defaults.
        const auto same = rulesOf("rules:\n  - stage: request\n    match: \"\"\n    enabled: true\n"
                                  "    actions: [{fail: {with: 502}}]\n");
        QCOMPARE(same.size(), std::size_t(1));
        QVERIFY(same[0].stage == Rule::Stage::Request);
        QCOMPARE(str(same[0].match), QString());
        QCOMPARE(same[0].enabled, true);
        // No `rules:` at all: none.
        const ReadResult none = read(kVhosts);
        QVERIFY(none.ok());
        QVERIFY(none.config->rules.empty());
    }

    void shorthands_data() {
        QTest::addColumn<QByteArray>("action");
        QTest::addColumn<int>("kind"); // RuleAction::Kind
        QTest::addColumn<QString>("expected");
        auto row = [](const char* tag, const char* action, RuleAction::Kind kind, const char* expected) {
            QTest::newRow(tag) << QByteArray(action) << static_cast<int>(kind) << QString(expected);
        };
        using K = RuleAction::Kind;
        row("fail status", "fail: 503", K::Fail, "status 503 rate 1");
        row("fail 599", "fail: 599", K::Fail, "status 599 rate 1");
        row("fail quoted status", "fail: \"404\"", K::Fail, "status 404 rate 1");
        row("fail reset", "fail: reset", K::Fail, "reset rate 1");
        row("fail map reset", "fail: {with: reset}", K::Fail, "reset rate 1");
        row("fail map status rate", "fail: {rate: 0.25, with: 500}", K::Fail, "status 500 rate 0.25");
        row("fail rate 1", "fail: {rate: 1, with: 500}", K::Fail, "status 500 rate 1");
        row("fail block map", "fail:\n          rate: 0.5\n          with: reset", K::Fail, "reset rate 0.5");
        row("remove one", "remove_header: X-Powered-By", K::RemoveHeader, "remove X-Powered-By");
        row("remove list", "remove_header: [A, b-c]", K::RemoveHeader, "remove A,b-c");
        row("remove block list", "remove_header:\n          - ETag\n          - Vary", K::RemoveHeader,
            "remove ETag,Vary");
        row("set one", "set_header: {X-A: b}", K::SetHeader, "set X-A=b");
        row("set number bool", "set_header: {X-N: 1.50, X-B: false}", K::SetHeader, "set X-N=1.50;X-B=false");
        row("set block", "set_header:\n          Access-Control-Allow-Origin: \"*\"", K::SetHeader,
            "set Access-Control-Allow-Origin=*");
    }

    void shorthands() {
        QFETCH(QByteArray, action);
        QFETCH(int, kind);
        QFETCH(QString, expected);
        const auto rules = rulesOf("rules:\n  - actions:\n      - " + action + "\n");
        QCOMPARE(rules.size(), std::size_t(1));
        QCOMPARE(rules[0].actions.size(), std::size_t(1));
        const RuleAction& a = rules[0].actions[0];
        QCOMPARE(static_cast<int>(a.kind), kind);
        QString got;
        switch (a.kind) {
        case RuleAction::Kind::Fail:
            got = (a.failure == RuleAction::Failure::Reset ? QString("reset")
                                                           : QString("status %1").arg(a.failStatus)) +
                  QString(" rate %1").arg(a.rate);
            break;
        case RuleAction::Kind::RemoveHeader: {
            QStringList names;
            for (const auto& n : a.remove)
                names << str(n);
            got = "remove " + names.join(',');
            break;
        }
        case RuleAction::Kind::SetHeader: {
            QStringList fields;
            for (const auto& [n, v] : a.set)
                fields << str(n) + "=" + str(v);
            got = "set " + fields.join(';');
            break;
        }
        }
        QCOMPARE(got, expected);
    }

    void errors_data() {
        QTest::addColumn<QByteArray>("yaml");
        QTest::addColumn<QStringList>("expected");
        auto row = [](const char* tag, const char* yaml, QStringList expected) {
            QTest::newRow(tag) << QByteArray(yaml) << expected;
        };
        row("rules not a list", "rules: {name: x}\n", {"test.yaml:1:8: rules: expected a list, got a map"});
        row("rule not a map", "rules:\n  - just text\n",
            {"test.yaml:2:5: rules[0]: expected a rule (a map with `actions:`), got 'just text'"});
        row("unknown rule key",
            "rules:\n"
            "  - name: a\n"
            "    stge: response\n"
            "    actions: [{fail: 503}]\n",
            {"test.yaml:3:5: rules[0].stge: unknown key 'stge' (did you mean 'stage'?)"});
        row("action written as a rule key", "rules:\n  - fail: 503\n",
            {"test.yaml:2:5: rules[0].fail: unknown key 'fail'",
             "test.yaml:2:5: rules[0]: a rule needs `actions:` (a list of set_header, remove_header, "
             "fail, map_local or map_remote)"});
        row("missing actions", "rules:\n  - name: x\n",
            {"test.yaml:2:5: rules[0]: a rule needs `actions:` (a list of set_header, remove_header, "
             "fail, map_local or map_remote)"});
        row("empty actions", "rules:\n  - actions: []\n",
            {"test.yaml:2:14: rules[0].actions: a rule needs at least one action"});
        row("null actions", "rules:\n  - name: x\n    actions:\n",
            {"test.yaml:3:5: rules[0].actions: a rule needs at least one action"});
        row("actions not a list", "rules:\n  - actions: {fail: 503}\n",
            {"test.yaml:2:14: rules[0].actions: expected a list, got a map"});
        row("bad stage", "rules:\n  - stage: respons\n    actions: [{fail: 503}]\n",
            {"test.yaml:2:12: rules[0].stage: stage must be request or response, got 'respons' (did you "
             "mean 'response'?)"});
        row("bad enabled", "rules:\n  - enabled: maybe\n    actions: [{fail: 503}]\n",
            {"test.yaml:2:14: rules[0].enabled: expected true or false, got 'maybe'"});
        row("match not a string", "rules:\n  - match: [a]\n    actions: [{fail: 503}]\n",
            {"test.yaml:2:12: rules[0].match: expected a string, got a list"});
        row("name not a string", "rules:\n  - name: {a: b}\n    actions: [{fail: 503}]\n",
            {"test.yaml:2:11: rules[0].name: expected a string, got a map"});
        row("unknown action",
            "rules:\n"
            "  - actions:\n"
            "      - set_headr: {X-A: \"1\"}\n",
            {"test.yaml:3:9: rules[0].actions[0].set_headr: unknown key 'set_headr' (did you mean "
             "'set_header'?)"});
        row("two keys in one action",
            "rules:\n"
            "  - actions:\n"
            "      - remove_header: X-A\n"
            "        fail: 503\n",
            {"test.yaml:4:9: rules[0].actions[0].fail: an action takes exactly one key; this one already "
             "has 'remove_header' (write each action as its own list item)"});
        row("no key in an action", "rules:\n  - actions:\n      - {}\n",
            {"test.yaml:3:9: rules[0].actions[0]: expected an action: a map with one key, set_header, "
             "remove_header, fail, map_local or map_remote (e.g. `- remove_header: Cache-Control`), got an "
             "empty map"});
        row("action a scalar", "rules:\n  - actions:\n      - fail\n",
            {"test.yaml:3:9: rules[0].actions[0]: expected an action: a map with one key, set_header, "
             "remove_header, fail, map_local or map_remote (e.g. `- remove_header: Cache-Control`), got "
             "'fail'"});
        row("set_header bad name", "rules:\n  - actions:\n      - set_header: {\"Bad Name\": x}\n",
            {"test.yaml:3:22: rules[0].actions[0].set_header.Bad Name: 'Bad Name' is not a valid header "
             "field name"});
        row("set_header CR LF", "rules:\n  - actions:\n      - set_header: {X-A: \"a\\r\\nB: c\"}\n",
            {"test.yaml:3:27: rules[0].actions[0].set_header.X-A: header values cannot contain control "
             "characters (CR, LF, NUL and the other bytes below 0x20 but tab, or DEL)"});
        row("set_header NUL", "rules:\n  - actions:\n      - set_header: {X-A: \"a\\0b\"}\n",
            {"test.yaml:3:27: rules[0].actions[0].set_header.X-A: header values cannot contain control "
             "characters (CR, LF, NUL and the other bytes below 0x20 but tab, or DEL)"});
        row("set_header list value", "rules:\n  - actions:\n      - set_header: {X-A: [1, 2]}\n",
            {"test.yaml:3:27: rules[0].actions[0].set_header.X-A: a rule sets one value per header, got a "
             "list"});
        row("set_header null value",
            "rules:\n"
            "  - actions:\n"
            "      - set_header:\n"
            "          X-A:\n"
            "          X-B: \"2\"\n",
            {"test.yaml:4:11: rules[0].actions[0].set_header.X-A: missing value (write \"\" for an empty "
             "one)"});
        row("set_header server field", "rules:\n  - actions:\n      - set_header: {Content-Length: \"5\"}\n",
            {"test.yaml:3:22: rules[0].actions[0].set_header.Content-Length: 'Content-Length' is set by the "
             "server and cannot be configured"});
        row("set_header same name twice",
            "rules:\n  - actions:\n      - set_header: {X-A: \"1\", x-a: \"2\"}\n",
            {"test.yaml:3:32: rules[0].actions[0].set_header.x-a: 'x-a' is already set as 'X-A' (header "
             "names are case-insensitive)"});
        row("set_header duplicate key",
            "rules:\n  - actions:\n      - set_header: {X-A: \"1\", X-A: \"2\"}\n",
            {"test.yaml:3:32: rules[0].actions[0].set_header.X-A: duplicate key 'X-A'"});
        row("set_header empty", "rules:\n  - actions:\n      - set_header: {}\n",
            {"test.yaml:3:21: rules[0].actions[0].set_header: set_header needs at least one header (e.g. "
             "{X-Debug: \"1\"})"});
        row("set_header a scalar", "rules:\n  - actions:\n      - set_header: X-A\n",
            {"test.yaml:3:21: rules[0].actions[0].set_header: expected a map, got 'X-A'"});
        row("remove_header bad name", "rules:\n  - actions:\n      - remove_header: [X-A, \"b c\"]\n",
            {"test.yaml:3:30: rules[0].actions[0].remove_header[1]: 'b c' is not a valid header field name"});
        row("remove_header empty", "rules:\n  - actions:\n      - remove_header: []\n",
            {"test.yaml:3:24: rules[0].actions[0].remove_header: remove_header needs a header name or a "
             "list of them"});
        row("remove_header server field", "rules:\n  - actions:\n      - remove_header: Server\n",
            {"test.yaml:3:24: rules[0].actions[0].remove_header: 'Server' is set by the server and cannot "
             "be removed by a rule (use server_header: false to leave it out)"});
        row("set_header host and hop-by-hop",
            "rules:\n  - actions:\n      - set_header: {Host: evil.test, TE: gzip}\n",
            {"test.yaml:3:22: rules[0].actions[0].set_header.Host: 'Host' cannot be changed by a rule: the "
             "vhost is chosen by it before rules run (map_remote sends the origin's own)",
             "test.yaml:3:39: rules[0].actions[0].set_header.TE: 'TE' is a hop-by-hop field (RFC 9110 "
             "§7.6.1) and cannot be changed by a rule"});
        row("remove_header hop-by-hop", "rules:\n  - actions:\n      - remove_header: [X-A, Keep-Alive]\n",
            {"test.yaml:3:30: rules[0].actions[0].remove_header[1]: 'Keep-Alive' is a hop-by-hop field (RFC "
             "9110 §7.6.1) and cannot be changed by a rule"});
        row("set_header value with a control character",
            "rules:\n  - actions:\n      - set_header: {X-A: \"a\\x01b\"}\n",
            {"test.yaml:3:27: rules[0].actions[0].set_header.X-A: header values cannot contain control "
             "characters (CR, LF, NUL and the other bytes below 0x20 but tab, or DEL)"});
        row("remove_header a map", "rules:\n  - actions:\n      - remove_header: {X-A: 1}\n",
            {"test.yaml:3:24: rules[0].actions[0].remove_header: expected a string or a list, got a map"});
        row("fail status too high", "rules:\n  - actions:\n      - fail: 600\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: status must be between 200 and 599, got 600"});
        row("fail with too low", "rules:\n  - actions:\n      - fail: {with: 199}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.with: status 199 is an interim (1xx) status and "
             "cannot be a final response"});
        row("fail a word", "rules:\n  - actions:\n      - fail: nope\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: expected reset, a status (e.g. 503) or {rate: 0.2, "
             "with: reset|503}, got 'nope'"});
        row("fail nothing", "rules:\n  - actions:\n      - fail:\n",
            {"test.yaml:3:9: rules[0].actions[0].fail: expected reset, a status (e.g. 503) or {rate: 0.2, "
             "with: reset|503}, got nothing"});
        row("fail with a word", "rules:\n  - actions:\n      - fail: {with: drop}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.with: expected reset or a status (e.g. 503), got "
             "'drop'"});
        row("fail rate 0", "rules:\n  - actions:\n      - fail: {rate: 0, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: rate must be greater than 0 (the share of "
             "matching exchanges that fail, 0 < rate <= 1), got 0"});
        row("fail rate above 1", "rules:\n  - actions:\n      - fail: {rate: 1.5, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: must be between 0 and 1, got 1.5"});
        row("fail rate a word", "rules:\n  - actions:\n      - fail: {rate: often, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: expected a number, got 'often'"});
        row("fail without with", "rules:\n  - actions:\n      - fail: {rate: 0.5}\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: fail needs `with:` (reset, or a status such as "
             "503)"});
        row("fail unknown key", "rules:\n  - actions:\n      - fail: {rate: 0.5, whith: reset}\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: fail needs `with:` (reset, or a status such as 503)",
             "test.yaml:3:27: rules[0].actions[0].fail.whith: unknown key 'whith' (did you mean 'with'?)"});
        // Indices of later rules and actions, and every error of one file reported.
        row("second rule, third action",
            "rules:\n"                               // 1
            "  - actions: [{fail: 503}]\n"           // 2
            "  - name: two\n"                        // 3
            "    actions:\n"                         // 4
            "      - remove_header: X-A\n"           // 5
            "      - set_header: {X-B: \"1\"}\n"     // 6
            "      - fail: {rate: 2, with: reset}\n" // 7
            "    colour: red\n",                     // 8
            {"test.yaml:7:22: rules[1].actions[2].fail.rate: must be between 0 and 1, got 2",
             "test.yaml:8:5: rules[1].colour: unknown key 'colour'"});
    }

    void errors() {
        QFETCH(QByteArray, yaml);
        QFETCH(QStringList, expected);
        const ReadResult r = read(yaml + kVhosts);
        QCOMPARE(lines(r.errors), expected);
        // A bad rule refuses the whole configuration.
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        QVERIFY(!loaded.ok());
        QVERIFY(loaded.config == nullptr);
        QCOMPARE(lines(loaded.errors), expected);
    }

    void notYetSupported_data() {
        QTest::addColumn<QString>("kind");
        for (const char* k : {"replace_body", "throttle", "breakpoint"})
            QTest::newRow(k) << QString(k);
    }

    void notYetSupported() {
        QFETCH(QString, kind);
        const QByteArray yaml = "rules:\n"
                                "  - actions:\n"
                                "      - remove_header: X-A\n"
                                "      - " +
                                kind.toUtf8() + ": {}\n";
        const ReadResult r = read(yaml + kVhosts);
        QCOMPARE(
            lines(r.errors),
            QStringList{QString("test.yaml:4:9: rules[0].actions[1].%1: '%1' is not supported yet in this "
                                "version; supported actions: set_header, remove_header, fail, map_local, "
                                "map_remote")
                            .arg(kind)});
    }

    void roundTrip() {
        const QByteArray yaml = "rules:\n"
                                "  - name: debug flag\n"
                                "    enabled: false\n"
                                "    stage: response\n"
                                "    match: \"path:/flags status:>=500\"\n"
                                "    actions:\n"
                                "      - set_header: {X-Debug: \"1\", X-Quote: \"it's \\\"q\\\"\", X-N: 7}\n"
                                "      - remove_header: Cache-Control\n"
                                "      - remove_header: [ETag, Vary]\n"
                                "      - fail: {rate: 0.2, with: reset}\n"
                                "      - fail: 503\n"
                                "      - fail: {rate: 0.125, with: 429}\n"
                                "  - actions: [{fail: reset}]\n"
                                "  - name: \"yes\"\n"
                                "    match: '-header:\"X-Skip\" url:\"a b\"'\n"
                                "    actions: [{set_header: {Access-Control-Allow-Origin: \"*\"}}]\n";
        const ReadResult first = read(yaml + kVhosts);
        QVERIFY2(first.ok(), qPrintable(lines(first.errors).join('\n')));
        QCOMPARE(first.config->rules.size(), std::size_t(3));
        QCOMPARE(str(first.config->rules[2].name), QString("yes"));
        const std::string written = configToYaml(*first.config, dir_.path().toStdString());
        // The forms the writer uses.
        for (const char* part :
             {"rules:", "stage: response", "enabled: false", "name: \"debug flag\"",
              "remove_header: Cache-Control", "remove_header: [ETag, Vary]", "fail: {rate: 0.2, with: reset}",
              "fail: {with: 503}", "fail: {rate: 0.125, with: 429}", "fail: {with: reset}",
              "match: \"path:/flags status:>=500\""})
            QVERIFY2(written.find(part) != std::string::npos,
                     qPrintable(QString(part) + " in\n" + str(written)));
        QVERIFY2(written.find("stage: request") == std::string::npos, written.c_str());
        QVERIFY2(written.find("rate: 1") == std::string::npos, written.c_str());
        const ReadResult second = read(QByteArray::fromStdString(written));
        QVERIFY2(second.ok(), qPrintable(str(written) + "\n" + lines(second.errors).join('\n')));
        QCOMPARE(second.config->rules.size(), std::size_t(3));
        QVERIFY(second.config->rules == first.config->rules);
        QVERIFY(*second.config == *first.config);
        QCOMPARE(configToYaml(*second.config, dir_.path().toStdString()), written);
    }

    // A config built in code (no positions) written and read back.
    void roundTripFromCode() {
        Config c = minimalConfig();
        Rule a;
        a.name = "a";
        a.stage = Rule::Stage::Response;
        a.match = "status:5xx";
        RuleAction set;
        set.kind = RuleAction::Kind::SetHeader;
        set.set = {{"Retry-After", "3"}, {"X-Rule", "a"}};
        RuleAction fail;
        fail.kind = RuleAction::Kind::Fail;
        fail.failure = RuleAction::Failure::Reset;
        fail.rate = 0.3;
        a.actions = {set, fail};
        Rule b;
        b.enabled = false;
        RuleAction remove;
        remove.kind = RuleAction::Kind::RemoveHeader;
        remove.remove = {"Cookie"};
        RuleAction status;
        status.kind = RuleAction::Kind::Fail;
        status.failStatus = 418;
        b.actions = {remove, status};
        c.rules = {a, b};
        c.sourcePath = "test.yaml";
        const std::string written = configToYaml(c, dir_.path().toStdString());
        const ReadResult r = read(QByteArray::fromStdString(written));
        QVERIFY2(r.ok(), qPrintable(str(written) + "\n" + lines(r.errors).join('\n')));
        QVERIFY2(r.config->rules == c.rules, written.c_str());
        QCOMPARE(r.config->rules[0].actions[1].rate, 0.3);
        QCOMPARE(r.config->rules[1].actions[1].failStatus, 418);
        QVERIFY(*r.config == c);
    }

    // Header names are tokens (RFC 9110 §5.6.2), which may start with YAML indicators or read as
    // null or a boolean when plain: the writer quotes what needs it.
    void oddHeaderNamesRoundTrip() {
        const std::vector<std::string> names{"~",  "null", "Null", "true", "no", "!x", "#x", "%x",
                                             "&x", "'x",   "*x",   "|x",   "`x", "-",  "-x", ".5",
                                             "+1", "x#y",  "^",    "~x",   "?x", "x:y"};
        Config c = minimalConfig();
        c.sourcePath = "test.yaml";
        for (const std::string& n : names) {
            if (!portico::http::isToken(n)) continue; // "?x" and "x:y" are not names
            Rule r;
            RuleAction set, remove;
            set.kind = RuleAction::Kind::SetHeader;
            set.set = {{n, n}};
            remove.kind = RuleAction::Kind::RemoveHeader;
            remove.remove = {n};
            r.actions = {set, remove};
            c.rules.push_back(r);
        }
        QCOMPARE(c.rules.size(), names.size() - 2);
        const std::string written = configToYaml(c, dir_.path().toStdString());
        const ReadResult r = read(QByteArray::fromStdString(written));
        QVERIFY2(r.ok(), qPrintable(str(written) + "\n" + lines(r.errors).join('\n')));
        QVERIFY2(r.config->rules == c.rules, written.c_str());
    }

    void noRulesWritesNoKey() {
        const ReadResult r = read(kVhosts);
        QVERIFY(r.ok());
        const std::string written = configToYaml(*r.config, dir_.path().toStdString());
        QVERIFY2(written.find("rules") == std::string::npos, written.c_str());
        QVERIFY2(written.find("vhosts:") != std::string::npos, written.c_str());
    }

    // docs/configuration.md's "Rules" section shows a config with rules that loads.
    void docsExample() {
        QFile doc(portico::test::sourceDir() + "/docs/configuration.md");
        QVERIFY(doc.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(doc.readAll());
        const qsizetype section = text.indexOf("\n## Rules\n");
        QVERIFY(section >= 0);
        const qsizetype open = text.indexOf("```yaml\n", section);
        QVERIFY(open > section);
        const qsizetype close = text.indexOf("\n```", open + 8);
        QVERIFY(close > open);
        const QByteArray yaml = text.mid(open + 8, close - open - 8 + 1).toUtf8();
        const LoadResult r = loadConfigText(std::string(yaml), "portico.yaml", dir_.path().toStdString());
        QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n')));
        QVERIFY(r.config->rules.size() >= 2);
    }
};

QTEST_MAIN(TestConfigRules)
#include "tst_config_rules.moc"

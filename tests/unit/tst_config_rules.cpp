// Tests for the `rules:` section of the config: the reader's model (every key, the shorthands and
// the defaults, throttle's presets and rates, replace_body, breakpoint's timeout), its located
// errors (unknown keys, malformed actions, header names and values, fail's status and rate, rates,
// latencies and timeouts), the source map of each rule's `match`, validate's checks (stages,
// replace_body's regex and replacement), and the writer's round trip.
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

    // Validate compiles each replace_body regex as routes' are (PCRE2) and tries its replacement
    // with pcre2_substitute; throttle is refused at the response stage, replace_body is not.
    void loaderRuleActions_data() {
        QTest::addColumn<QByteArray>("yaml");
        QTest::addColumn<QStringList>("expected"); // empty: loads
        auto row = [](const char* tag, const char* actions, QStringList expected) {
            QTest::newRow(tag) << QByteArray("rules:\n  - actions:\n      - ") + actions + "\n" << expected;
        };
        const QString use = " (write $1 or ${name} for a group, $$ for a dollar)";
        row("group and whole match", "replace_body: {regex: 'a(b)', with: '$0 $1 ${1} $$'}", {});
        row("named group", "replace_body: {regex: '(?<word>\\w+)', with: '<${word}>'}", {});
        row("named group without braces", "replace_body: {regex: '(?<w>x)', with: '$w.'}", {});
        row("no group, literal text", "replace_body: {regex: 'http://', with: 'https://'}", {});
        row("regex matching nothing", "replace_body: {regex: 'x|', with: '-'}", {});
        row("extended with a comment", "replace_body: {regex: '(?x) (\\w+)  # a word', with: '[$1]'}", {});
        row("leading options", "replace_body: {regex: '(*CRLF)(*NO_JIT)(a)', with: '$1'}", {});
        row("a mark", "replace_body: {regex: '(*MARK:m)a', with: '$*MARK'}", {});
        row("bad regex", "replace_body: {regex: 'a(b', with: x}",
            {"test.yaml:3:31: rules[0].actions[0].replace_body.regex: invalid regular expression 'a(b' at "
             "offset "
             "3: missing closing parenthesis"});
        row("bad regex, second action", "remove_header: X-A\n      - replace_body: {regex: '*a', with: x}",
            {"test.yaml:4:31: rules[0].actions[1].replace_body.regex: invalid regular expression '*a' at "
             "offset "
             "0: quantifier does not follow a repeatable item"});
        row("unknown group", "replace_body: {regex: 'a(b)', with: 'x$2'}",
            {"test.yaml:3:45: rules[0].actions[0].replace_body.with: invalid replacement 'x$2' at offset 3: "
             "unknown substring" +
             use});
        row("unknown name", "replace_body: {regex: '(?<n>b)', with: '${m}'}",
            {"test.yaml:3:48: rules[0].actions[0].replace_body.with: invalid replacement '${m}' at offset 4: "
             "unknown substring" +
             use});
        row("lone dollar", "replace_body: {regex: 'price', with: 'cost: 5$'}",
            {"test.yaml:3:46: rules[0].actions[0].replace_body.with: invalid replacement 'cost: 5$' at "
             "offset 8: "
             "invalid replacement string" +
             use});
        row("unclosed brace", "replace_body: {regex: '(a)', with: '${1'}",
            {"test.yaml:3:44: rules[0].actions[0].replace_body.with: invalid replacement '${1' at offset 3: "
             "expected closing curly bracket in replacement string" +
             use});
        // The group count is the regex's own: leading `(*...)` options, an `(?x)` comment or a `\Q`
        // quote at its end do not hide a group from the check, nor add one.
        row("extended comment, unknown group", "replace_body: {regex: '(?x)(a)#c', with: '$2'}",
            {"test.yaml:3:50: rules[0].actions[0].replace_body.with: invalid replacement '$2' at offset 2: "
             "unknown substring" +
             use});
        row("leading options, unknown group", "replace_body: {regex: '(*CRLF)(*NO_JIT)(a)', with: '$2'}",
            {"test.yaml:3:60: rules[0].actions[0].replace_body.with: invalid replacement '$2' at offset 2: "
             "unknown substring" +
             use});
        row("quoted parenthesis, no group", "replace_body: {regex: '\\Qa(', with: '$1'}",
            {"test.yaml:3:45: rules[0].actions[0].replace_body.with: invalid replacement '$1' at offset 2: "
             "unknown substring" +
             use});
        QTest::newRow("replace_body at the response stage")
            << QByteArray("rules:\n"
                          "  - stage: response\n"
                          "    actions: [{replace_body: {regex: 'a', with: b}}]\n")
            << QStringList{};
        QTest::newRow("throttle at the response stage")
            << QByteArray("rules:\n"
                          "  - stage: response\n"
                          "    actions: [{set_header: {X-A: \"1\"}}, {throttle: Slow 3G}]\n")
            << QStringList{"test.yaml:3:41: rules[0].actions[1]: throttle applies to the whole exchange (the "
                           "request's body and the response): use it in a rule without `stage: response`"};
        QTest::newRow("throttle at the request stage")
            << QByteArray(
                   "rules:\n"
                   "  - stage: request\n"
                   "    actions: [{throttle: Fast 4G}, {fail: timeout}, {fail: {rate: 0.1, with: close}}]\n")
            << QStringList{};
        // breakpoint works at both stages, with other actions.
        QTest::newRow("breakpoint at the request stage")
            << QByteArray(
                   "rules:\n"
                   "  - match: \"path:/api\"\n"
                   "    actions: [{set_header: {X-A: \"1\"}}, {breakpoint: {timeout: 30s}}, {throttle: "
                   "Fast 4G}]\n")
            << QStringList{};
        QTest::newRow("breakpoint at the response stage")
            << QByteArray("rules:\n"
                          "  - stage: response\n"
                          "    match: \"status:5xx\"\n"
                          "    actions: [{breakpoint: true}, {replace_body: {regex: 'a', with: b}}]\n")
            << QStringList{};
        QTest::newRow("fail close at the response stage")
            << QByteArray("rules:\n"
                          "  - stage: response\n"
                          "    actions: [{fail: close}]\n")
            << QStringList{"test.yaml:3:15: rules[0].actions[0]: fail acts at the request stage (it answers "
                           "instead of the route's action): use it in a rule without `stage: response`"};
    }

    void loaderRuleActions() {
        QFETCH(QByteArray, yaml);
        QFETCH(QStringList, expected);
        QVERIFY2(read(yaml + kVhosts).ok(), "the reader takes it: validate decides");
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        QCOMPARE(lines(loaded.errors), expected);
        QCOMPARE(loaded.ok(), expected.isEmpty());
    }

    // An action that did not read is left out of its rule; validate still places the errors of the
    // actions after it at their own items.
    void validateAfterAnActionThatDidNotRead() {
        const QByteArray yaml = "rules:\n"
                                "  - actions:\n"
                                "      - throttle: {down: 400}\n"
                                "      - fail: 999\n"
                                "      - replace_body: {regex: '(a)', with: '$2'}\n"
                                "      - map_local: missing.html\n"
                                "  - stage: response\n"
                                "    actions:\n"
                                "      - set_header: {X-A: [1]}\n"
                                "      - throttle: Slow 3G\n";
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        const QStringList expected = {
            "test.yaml:3:26: rules[0].actions[0].throttle.down: rate '400' needs a unit: bits per second "
            "(e.g. "
            "400kbit) or bytes per second (e.g. 400kB)",
            "test.yaml:4:15: rules[0].actions[1].fail: status must be between 200 and 599, got 999",
            "test.yaml:5:44: rules[0].actions[2].replace_body.with: invalid replacement '$2' at offset 2: "
            "unknown "
            "substring (write $1 or ${name} for a group, $$ for a dollar)",
            "test.yaml:6:20: rules[0].actions[3].map_local: file or folder '" +
                dir_.filePath("missing.html") + "' does not exist",
            "test.yaml:9:27: rules[1].actions[0].set_header.X-A: a rule sets one value per header, got a "
            "list",
            "test.yaml:10:9: rules[1].actions[1]: throttle applies to the whole exchange (the request's body "
            "and "
            "the response): use it in a rule without `stage: response`"};
        QCOMPARE(lines(loaded.errors), expected);
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
        row("fail close", "fail: close", K::Fail, "close rate 1");
        row("fail timeout", "fail: timeout", K::Fail, "timeout rate 1");
        row("fail map close", "fail: {with: close}", K::Fail, "close rate 1");
        row("fail map timeout rate", "fail: {rate: 0.5, with: timeout}", K::Fail, "timeout rate 0.5");
        row("replace_body", "replace_body: {regex: 'http://(\\w+)\\.test', with: 'https://$1.test'}",
            K::ReplaceBody, "replace http://(\\w+)\\.test => https://$1.test");
        row("replace_body empty with", "replace_body: {regex: \"<!--.*?-->\", with: \"\"}", K::ReplaceBody,
            "replace <!--.*?--> => ");
        row("replace_body block, numbers as text",
            "replace_body:\n          regex: 1.5\n          with: true", K::ReplaceBody,
            "replace 1.5 => true");
        row("replace_body quoted newline", "replace_body: {regex: \"a\\nb\", with: \"$$ \\t\"}",
            K::ReplaceBody, "replace a\nb => $$ \t");
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
            got = (a.failure == RuleAction::Failure::Reset     ? QString("reset")
                   : a.failure == RuleAction::Failure::Close   ? QString("close")
                   : a.failure == RuleAction::Failure::Timeout ? QString("timeout")
                                                               : QString("status %1").arg(a.failStatus)) +
                  QString(" rate %1").arg(a.rate);
            break;
        case RuleAction::Kind::ReplaceBody:
            got = "replace " + str(a.regex) + " => " + str(a.replaceWith);
            break;
        case RuleAction::Kind::MapLocal:
        case RuleAction::Kind::MapRemote:
        case RuleAction::Kind::Throttle:   // mapActions and throttle test these
        case RuleAction::Kind::Breakpoint: // and breakpoint this one
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

    // throttle: Chrome's presets with their exact numbers (latency, then down and up in bytes per
    // second), and custom maps with every rate unit.
    void throttle_data() {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<qint64>("latencyNs");
        QTest::addColumn<quint64>("down");
        QTest::addColumn<quint64>("up");
        QTest::addColumn<QString>("preset");
        auto row = [](const char* tag, const char* value, qint64 latencyNs, quint64 down, quint64 up,
                      const char* preset = "") {
            QTest::newRow(tag) << QByteArray(value) << latencyNs << down << up << QString(preset);
        };
        const qint64 ms = 1000 * 1000;
        row("Slow 3G", "Slow 3G", 2000 * ms, 50000, 50000, "Slow 3G");
        row("Fast 3G", "Fast 3G", 562500 * 1000, 180000, 84375, "Fast 3G");
        row("Slow 4G", "Slow 4G", 562500 * 1000, 180000, 84375, "Slow 4G");
        row("Fast 4G", "Fast 4G", 165 * ms, 1012500, 168750, "Fast 4G");
        row("quoted preset", "\"Slow 3G\"", 2000 * ms, 50000, 50000, "Slow 3G");
        row("custom, as the presets' units", "{latency: 400ms, down: 400kbit, up: 400kbit}", 400 * ms, 50000,
            50000);
        row("custom block", "\n          latency: 2s\n          down: 1.44mbit", 2000 * ms, 180000, 0);
        row("latency only", "{latency: 250us}", 250 * 1000, 0, 0);
        row("latency 0", "{latency: 0ms}", 0, 0, 0);
        row("latency 1h", "{latency: 1h}", 3600 * 1000 * ms, 0, 0);
        row("up only", "{up: 675kbit/s}", 0, 0, 84375);
        row("bit", "{down: 8bit}", 0, 1, 0);
        row("bits rounded down", "{down: 15bit, up: 1001bit}", 0, 1, 125);
        row("kbit fraction", "{down: 0.5kbit}", 0, 62, 0);
        row("Kbit", "{down: 2Kbit}", 0, 250, 0);
        row("mbit fraction", "{down: 8.1mbit, up: 1.35Mbit}", 0, 1012500, 168750);
        row("gbit", "{down: 1gbit, up: 2.5Gbit/s}", 0, 125000000, 312500000);
        row("B", "{down: 100B, up: 1B/s}", 0, 100, 1);
        row("kB KB", "{down: 50kB, up: 50KB/s}", 0, 50000, 50000);
        row("MB GB", "{down: 2MB, up: 1GB}", 0, 2000000, 1000000000);
        row("KiB MiB GiB", "{latency: 1ms, down: 64KiB, up: 1.5MiB/s}", ms, 65536, 1572864);
        row("GiB", "{down: 1GiB}", 0, 1073741824, 0);
        row("nine fraction digits", "{down: 1.000000001MB}", 0, 1000000, 0);
    }

    void throttle() {
        QFETCH(QByteArray, value);
        QFETCH(qint64, latencyNs);
        QFETCH(quint64, down);
        QFETCH(quint64, up);
        QFETCH(QString, preset);
        const auto rules = rulesOf("rules:\n  - actions:\n      - throttle: " + value + "\n");
        QCOMPARE(rules.size(), std::size_t(1));
        QCOMPARE(rules[0].actions.size(), std::size_t(1));
        const RuleAction& a = rules[0].actions[0];
        QVERIFY(a.kind == RuleAction::Kind::Throttle);
        QCOMPARE(qint64(a.throttleLatency.count()), latencyNs);
        QCOMPARE(quint64(a.throttleDown), down);
        QCOMPARE(quint64(a.throttleUp), up);
        QCOMPARE(str(a.throttlePreset), preset);
        QCOMPARE(where(a.where), QString("3:9"));
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
             "fail, map_local, map_remote, throttle, replace_body or breakpoint)"});
        row("missing actions", "rules:\n  - name: x\n",
            {"test.yaml:2:5: rules[0]: a rule needs `actions:` (a list of set_header, remove_header, "
             "fail, map_local, map_remote, throttle, replace_body or breakpoint)"});
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
             "remove_header, fail, map_local, map_remote, throttle, replace_body or breakpoint (e.g. `- "
             "remove_header: Cache-Control`), got an "
             "empty map"});
        row("action a scalar", "rules:\n  - actions:\n      - fail\n",
            {"test.yaml:3:9: rules[0].actions[0]: expected an action: a map with one key, set_header, "
             "remove_header, fail, map_local, map_remote, throttle, replace_body or breakpoint (e.g. `- "
             "remove_header: Cache-Control`), got "
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
            {"test.yaml:3:15: rules[0].actions[0].fail: expected reset, close, timeout, a status (e.g. 503) "
             "or {rate: 0.2, with: reset|close|timeout|503}, got 'nope'"});
        row("fail nothing", "rules:\n  - actions:\n      - fail:\n",
            {"test.yaml:3:9: rules[0].actions[0].fail: expected reset, close, timeout, a status (e.g. 503) "
             "or {rate: 0.2, with: reset|close|timeout|503}, got nothing"});
        row("fail with a word", "rules:\n  - actions:\n      - fail: {with: drop}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.with: expected reset, close, timeout or a status "
             "(e.g. "
             "503), got 'drop'"});
        row("fail with closed", "rules:\n  - actions:\n      - fail: {with: closed}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.with: expected reset, close, timeout or a status "
             "(e.g. "
             "503), got 'closed'"});
        row("fail Timeout", "rules:\n  - actions:\n      - fail: Timeout\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: expected reset, close, timeout, a status (e.g. 503) "
             "or {rate: 0.2, with: reset|close|timeout|503}, got 'Timeout'"});
        row("fail rate 0", "rules:\n  - actions:\n      - fail: {rate: 0, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: rate must be greater than 0 (the share of "
             "matching exchanges that fail, 0 < rate <= 1), got 0"});
        row("fail rate above 1", "rules:\n  - actions:\n      - fail: {rate: 1.5, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: must be between 0 and 1, got 1.5"});
        row("fail rate a word", "rules:\n  - actions:\n      - fail: {rate: often, with: reset}\n",
            {"test.yaml:3:22: rules[0].actions[0].fail.rate: expected a number, got 'often'"});
        row("fail without with", "rules:\n  - actions:\n      - fail: {rate: 0.5}\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: fail needs `with:` (reset, close, timeout, or a "
             "status such as 503)"});
        row("fail unknown key", "rules:\n  - actions:\n      - fail: {rate: 0.5, whith: reset}\n",
            {"test.yaml:3:15: rules[0].actions[0].fail: fail needs `with:` (reset, close, timeout, or a "
             "status "
             "such as 503)",
             "test.yaml:3:27: rules[0].actions[0].fail.whith: unknown key 'whith' (did you mean 'with'?)"});
        const char* presets =
            "; presets: Slow 3G, Fast 3G, Slow 4G, Fast 4G (as Chrome DevTools names them), "
            "or write the link as {latency: 400ms, down: 400kbit, up: 400kbit}";
        row("throttle preset in another case", "rules:\n  - actions:\n      - throttle: slow 3g\n",
            {QString(
                 "test.yaml:3:19: rules[0].actions[0].throttle: unknown throttle preset 'slow 3g' (did you "
                 "mean 'Slow 3G'?)") +
             presets});
        row("throttle unknown preset", "rules:\n  - actions:\n      - throttle: 3G\n",
            {QString("test.yaml:3:19: rules[0].actions[0].throttle: unknown throttle preset '3G'") +
             presets});
        const char* throttleNeeds =
            "throttle needs a preset name (Slow 3G, Fast 3G, Slow 4G or Fast 4G) or at "
            "least one of latency, down and up (e.g. {latency: 400ms, down: 400kbit, up: "
            "400kbit}), got ";
        row("throttle empty map", "rules:\n  - actions:\n      - throttle: {}\n",
            {QString("test.yaml:3:19: rules[0].actions[0].throttle: ") + throttleNeeds + "an empty map"});
        row("throttle nothing", "rules:\n  - actions:\n      - throttle:\n",
            {QString("test.yaml:3:9: rules[0].actions[0].throttle: ") + throttleNeeds + "nothing"});
        row("throttle a list", "rules:\n  - actions:\n      - throttle: [Slow 3G]\n",
            {QString("test.yaml:3:19: rules[0].actions[0].throttle: ") + throttleNeeds + "a list"});
        row("throttle rate without a unit", "rules:\n  - actions:\n      - throttle: {down: 400}\n",
            {"test.yaml:3:26: rules[0].actions[0].throttle.down: rate '400' needs a unit: bits per second "
             "(e.g. "
             "400kbit) or bytes per second (e.g. 400kB)"});
        const char* rateExamples =
            "(write bits per second as 400kbit, 1.44mbit or 1gbit, or bytes per second as "
            "50kB, 2MB or 64KiB; `/s` may follow)";
        row("throttle rate unknown unit", "rules:\n  - actions:\n      - throttle: {down: 400kbps}\n",
            {QString("test.yaml:3:26: rules[0].actions[0].throttle.down: invalid rate '400kbps' ") +
             rateExamples});
        row("throttle rate lower-case b", "rules:\n  - actions:\n      - throttle: {up: 50kb}\n",
            {QString("test.yaml:3:24: rules[0].actions[0].throttle.up: invalid rate '50kb' ") +
             rateExamples});
        row("throttle rate with a space", "rules:\n  - actions:\n      - throttle: {down: 1.5 mbit}\n",
            {QString("test.yaml:3:26: rules[0].actions[0].throttle.down: invalid rate '1.5 mbit' ") +
             rateExamples});
        row("throttle rate dot without digits", "rules:\n  - actions:\n      - throttle: {down: 1.kbit}\n",
            {QString("test.yaml:3:26: rules[0].actions[0].throttle.down: invalid rate '1.kbit' ") +
             rateExamples});
        row("throttle rate ten fraction digits",
            "rules:\n  - actions:\n      - throttle: {down: 1.0000000001MB}\n",
            {QString("test.yaml:3:26: rules[0].actions[0].throttle.down: invalid rate '1.0000000001MB' ") +
             rateExamples});
        row("throttle rate 0", "rules:\n  - actions:\n      - throttle: {up: 0kbit}\n",
            {"test.yaml:3:24: rules[0].actions[0].throttle.up: up must be greater than 0 (leave `up:` out "
             "for no "
             "limit), got 0kbit"});
        row("throttle rate bare 0", "rules:\n  - actions:\n      - throttle: {down: 0}\n",
            {"test.yaml:3:26: rules[0].actions[0].throttle.down: down must be greater than 0 (leave `down:` "
             "out "
             "for no limit), got 0"});
        row("throttle rate negative", "rules:\n  - actions:\n      - throttle: {down: -5kbit}\n",
            {"test.yaml:3:26: rules[0].actions[0].throttle.down: down must be greater than 0 (leave `down:` "
             "out "
             "for no limit), got -5kbit"});
        row("throttle rate below a byte", "rules:\n  - actions:\n      - throttle: {down: 7bit}\n",
            {"test.yaml:3:26: rules[0].actions[0].throttle.down: down must be at least 1 byte per second "
             "(8bit), "
             "got 7bit"});
        row("throttle rate not a string", "rules:\n  - actions:\n      - throttle: {down: [1kbit]}\n",
            {"test.yaml:3:26: rules[0].actions[0].throttle.down: expected a string, got a list"});
        row("throttle latency too long", "rules:\n  - actions:\n      - throttle: {latency: 61m}\n",
            {"test.yaml:3:29: rules[0].actions[0].throttle.latency: latency must be at most 1h, got 61m"});
        row("throttle latency without a unit", "rules:\n  - actions:\n      - throttle: {latency: 400}\n",
            {"test.yaml:3:29: rules[0].actions[0].throttle.latency: duration '400' needs a unit: us, ms, s, "
             "m or "
             "h (e.g. 400s or 400ms)"});
        row("throttle latency negative", "rules:\n  - actions:\n      - throttle: {latency: -1ms}\n",
            {"test.yaml:3:29: rules[0].actions[0].throttle.latency: invalid duration '-1ms' (write e.g. "
             "500us, "
             "250ms, 10s, 2m or 1h)"});
        row("throttle unknown key", "rules:\n  - actions:\n      - throttle: {latency: 1ms, dwn: 1kbit}\n",
            {"test.yaml:3:34: rules[0].actions[0].throttle.dwn: unknown key 'dwn' (did you mean 'down'?)"});
        row("throttle preset key", "rules:\n  - actions:\n      - throttle: {preset: Slow 3G, up: 1kbit}\n",
            {"test.yaml:3:20: rules[0].actions[0].throttle.preset: unknown key 'preset'"});
        const char* replaceNeeds =
            "replace_body needs {regex: RE, with: TEXT} (e.g. {regex: 'http://api\\.test', "
            "with: 'https://api.test'}), got ";
        row("replace_body a scalar", "rules:\n  - actions:\n      - replace_body: x\n",
            {QString("test.yaml:3:23: rules[0].actions[0].replace_body: ") + replaceNeeds + "'x'"});
        row("replace_body empty map", "rules:\n  - actions:\n      - replace_body: {}\n",
            {QString("test.yaml:3:23: rules[0].actions[0].replace_body: ") + replaceNeeds + "an empty map"});
        row("replace_body without with", "rules:\n  - actions:\n      - replace_body: {regex: a}\n",
            {"test.yaml:3:23: rules[0].actions[0].replace_body: replace_body needs `with:` (the replacement: "
             "text, $1, ${name}; \"\" deletes what matches)"});
        row("replace_body without regex", "rules:\n  - actions:\n      - replace_body: {with: b}\n",
            {"test.yaml:3:23: rules[0].actions[0].replace_body: replace_body needs `regex:` (the PCRE2 "
             "pattern "
             "to find)"});
        row("replace_body empty regex",
            "rules:\n  - actions:\n      - replace_body: {regex: \"\", with: b}\n",
            {"test.yaml:3:31: rules[0].actions[0].replace_body.regex: regex cannot be empty"});
        row("replace_body regex a list",
            "rules:\n  - actions:\n      - replace_body: {regex: [a], with: b}\n",
            {"test.yaml:3:31: rules[0].actions[0].replace_body.regex: expected a string, got a list"});
        row("replace_body with nothing",
            "rules:\n"
            "  - actions:\n"
            "      - replace_body:\n"
            "          regex: a\n"
            "          with:\n",
            {"test.yaml:5:11: rules[0].actions[0].replace_body.with: missing value (write \"\" to delete "
             "what the "
             "regex matches)"});
        row("replace_body unknown key",
            "rules:\n  - actions:\n      - replace_body: {regex: a, with: b, flags: g}\n",
            {"test.yaml:3:43: rules[0].actions[0].replace_body.flags: unknown key 'flags'"});
        row("breakpoint false", "rules:\n  - actions:\n      - breakpoint: false\n",
            {"test.yaml:3:21: rules[0].actions[0].breakpoint: breakpoint: false is not a setting: remove the "
             "action to turn the breakpoint off (or set the rule's `enabled: false`)"});
        const char* breakpointTakes =
            "test.yaml:3:21: rules[0].actions[0].breakpoint: breakpoint takes {timeout: 5m} (1s to 24h), or "
            "{} or true for the default 5m, got ";
        row("breakpoint a duration", "rules:\n  - actions:\n      - breakpoint: 5m\n",
            {QString(breakpointTakes) + "'5m'"});
        row("breakpoint a list", "rules:\n  - actions:\n      - breakpoint: [5m]\n",
            {QString(breakpointTakes) + "a list"});
        row("breakpoint timeout too short", "rules:\n  - actions:\n      - breakpoint: {timeout: 999ms}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: timeout must be between 1s and 24h, "
             "got "
             "999ms"});
        row("breakpoint timeout too long", "rules:\n  - actions:\n      - breakpoint: {timeout: 25h}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: timeout must be between 1s and 24h, "
             "got "
             "25h"});
        row("breakpoint timeout 0", "rules:\n  - actions:\n      - breakpoint: {timeout: 0s}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: timeout must be between 1s and 24h, "
             "got "
             "0s"});
        row("breakpoint timeout without a unit", "rules:\n  - actions:\n      - breakpoint: {timeout: 300}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: duration '300' needs a unit: us, ms, "
             "s, "
             "m or h (e.g. 300s or 300ms)"});
        row("breakpoint timeout a word", "rules:\n  - actions:\n      - breakpoint: {timeout: soon}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: invalid duration 'soon' (write e.g. "
             "500us, 250ms, 10s, 2m or 1h)"});
        row("breakpoint timeout a list", "rules:\n  - actions:\n      - breakpoint: {timeout: [1s]}\n",
            {"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: expected a string, got a list"});
        row("breakpoint unknown key", "rules:\n  - actions:\n      - breakpoint: {timout: 5m}\n",
            {"test.yaml:3:22: rules[0].actions[0].breakpoint.timout: unknown key 'timout' (did you mean "
             "'timeout'?)"});
        row("breakpoint another key",
            "rules:\n"
            "  - actions:\n"
            "      - breakpoint:\n"
            "          timeout: 5m\n"
            "          resume: auto\n",
            {"test.yaml:5:11: rules[0].actions[0].breakpoint.resume: unknown key 'resume'"});
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

    // breakpoint: a timeout (a duration, 1s to 24h), or the default 5m for `{}`, nothing or `true`.
    void breakpoint_data() {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<qint64>("timeoutMs");
        auto row = [](const char* tag, const char* value, qint64 timeoutMs) {
            QTest::newRow(tag) << QByteArray(value) << timeoutMs;
        };
        row("map", "{timeout: 30s}", 30 * 1000);
        row("minutes", "{timeout: 5m}", 5 * 60 * 1000);
        row("empty map", "{}", 5 * 60 * 1000);
        row("true", "true", 5 * 60 * 1000);
        row("nothing", "", 5 * 60 * 1000);
        row("block map", "\n          timeout: 90s", 90 * 1000);
        row("milliseconds", "{timeout: 1500ms}", 1500);
        row("an hour", "{timeout: 1h}", 3600 * 1000);
    }

    void breakpoint() {
        QFETCH(QByteArray, value);
        QFETCH(qint64, timeoutMs);
        const auto rules = rulesOf("rules:\n  - actions:\n      - breakpoint: " + value + "\n");
        QCOMPARE(rules.size(), std::size_t(1));
        QCOMPARE(rules[0].actions.size(), std::size_t(1));
        const RuleAction& a = rules[0].actions[0];
        QCOMPARE(a.kind, RuleAction::Kind::Breakpoint);
        QCOMPARE(qint64(std::chrono::duration_cast<std::chrono::milliseconds>(a.breakpointTimeout).count()),
                 timeoutMs);
        QCOMPARE(where(a.where), QString("3:9"));
    }

    // The timeout's range, 1s to 24h, both ends included, through the whole loader.
    void breakpointTimeoutRange_data() {
        QTest::addColumn<QByteArray>("timeout");
        QTest::addColumn<bool>("ok");
        QTest::newRow("1s") << QByteArray("1s") << true;
        QTest::newRow("1000ms") << QByteArray("1000ms") << true;
        QTest::newRow("999ms") << QByteArray("999ms") << false;
        QTest::newRow("0s") << QByteArray("0s") << false;
        QTest::newRow("24h") << QByteArray("24h") << true;
        QTest::newRow("1440m") << QByteArray("1440m") << true;
        QTest::newRow("86401s") << QByteArray("86401s") << false;
        QTest::newRow("25h") << QByteArray("25h") << false;
    }

    void breakpointTimeoutRange() {
        QFETCH(QByteArray, timeout);
        QFETCH(bool, ok);
        const QByteArray yaml = "rules:\n"
                                "  - actions:\n"
                                "      - breakpoint: {timeout: " +
                                timeout + "}\n";
        const LoadResult loaded =
            loadConfigText(std::string(yaml + kVhosts), "test.yaml", dir_.path().toStdString());
        if (ok) {
            QVERIFY2(loaded.ok(), qPrintable(lines(loaded.errors).join('\n')));
            QCOMPARE(loaded.config->rules.at(0).actions.at(0).kind, RuleAction::Kind::Breakpoint);
        } else {
            QCOMPARE(lines(loaded.errors),
                     QStringList{"test.yaml:3:31: rules[0].actions[0].breakpoint.timeout: timeout must be "
                                 "between 1s and 24h, got " +
                                 QString(timeout)});
        }
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
                                "    actions: [{set_header: {Access-Control-Allow-Origin: \"*\"}}]\n"
                                "  - name: slow and rewritten\n"
                                "    actions:\n"
                                "      - throttle: Slow 3G\n"
                                "      - throttle: \"Fast 3G\"\n"
                                "      - throttle: {latency: 400ms, down: 1.44mbit, up: 50kB}\n"
                                "      - throttle: {down: 7B/s}\n"
                                "      - throttle: {latency: 562500us}\n"
                                "      - fail: close\n"
                                "      - fail: {rate: 0.5, with: timeout}\n"
                                "      - replace_body: {regex: 'it''s \"(\\w+)\"', with: \"\\\\$1\\n${1}\"}\n"
                                "      - replace_body: {regex: '^\\s+$', with: ''}\n"
                                "      - replace_body: {regex: \"tab\\there\", with: \"#x: y\"}\n"
                                "  - name: paused\n"
                                "    stage: response\n"
                                "    actions:\n"
                                "      - breakpoint: {timeout: 30s}\n"
                                "      - breakpoint: {}\n"
                                "      - breakpoint: true\n"
                                "      - breakpoint: {timeout: 1500ms}\n"
                                "      - breakpoint: {timeout: 1440m}\n";
        const ReadResult first = read(yaml + kVhosts);
        QVERIFY2(first.ok(), qPrintable(lines(first.errors).join('\n')));
        QCOMPARE(first.config->rules.size(), std::size_t(5));
        QCOMPARE(first.config->rules[4].actions.size(), std::size_t(5));
        const std::vector<RuleAction>& slow = first.config->rules[3].actions;
        QCOMPARE(slow.size(), std::size_t(10));
        QCOMPARE(str(slow[7].regex), QString("it's \"(\\w+)\""));
        QCOMPARE(str(slow[7].replaceWith), QString("\\$1\n${1}"));
        QCOMPARE(str(slow[9].regex), QString("tab\there"));
        QCOMPARE(str(first.config->rules[2].name), QString("yes"));
        const std::string written = configToYaml(*first.config, dir_.path().toStdString());
        // The forms the writer uses.
        for (const char* part : {"rules:",
                                 "stage: response",
                                 "enabled: false",
                                 "name: \"debug flag\"",
                                 "remove_header: Cache-Control",
                                 "remove_header: [ETag, Vary]",
                                 "fail: {rate: 0.2, with: reset}",
                                 "fail: {with: 503}",
                                 "fail: {rate: 0.125, with: 429}",
                                 "fail: {with: reset}",
                                 "match: \"path:/flags status:>=500\"",
                                 "throttle: Slow 3G\n",
                                 "throttle: Fast 3G\n",
                                 "throttle: {latency: 400ms, down: 1440kbit, up: 400kbit}",
                                 "throttle: {down: 7B}",
                                 "throttle: {latency: 562500us}",
                                 "fail: {with: close}",
                                 "fail: {rate: 0.5, with: timeout}",
                                 "replace_body: {regex: '^\\s+$', with: ''}",
                                 "replace_body: {regex: 'it''s \"(\\w+)\"', with: ",
                                 "breakpoint: {timeout: 30s}\n",
                                 "breakpoint: {timeout: 5m}\n",
                                 "breakpoint: {timeout: 1500ms}\n",
                                 "breakpoint: {timeout: 24h}\n"})
            QVERIFY2(written.find(part) != std::string::npos,
                     qPrintable(QString(part) + " in\n" + str(written)));
        QVERIFY2(written.find("stage: request") == std::string::npos, written.c_str());
        QVERIFY2(written.find("rate: 1") == std::string::npos, written.c_str());
        const ReadResult second = read(QByteArray::fromStdString(written));
        QVERIFY2(second.ok(), qPrintable(str(written) + "\n" + lines(second.errors).join('\n')));
        QCOMPARE(second.config->rules.size(), std::size_t(5));
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
        Rule t;
        t.name = "throttle and rewrite";
        RuleAction preset;
        preset.kind = RuleAction::Kind::Throttle;
        preset.throttlePreset = "Fast 4G";
        preset.throttleLatency = std::chrono::milliseconds(165);
        preset.throttleDown = 1012500;
        preset.throttleUp = 168750;
        RuleAction custom;
        custom.kind = RuleAction::Kind::Throttle;
        custom.throttleLatency = std::chrono::microseconds(562500);
        custom.throttleDown = 7;
        custom.throttleUp = 84375;
        RuleAction replace;
        replace.kind = RuleAction::Kind::ReplaceBody;
        replace.regex = "(?m)^\\s*// (.*)$";
        replace.replaceWith = "/* $1 */\n\"done\" 'q' \\";
        RuleAction close, timeout;
        close.kind = timeout.kind = RuleAction::Kind::Fail;
        close.failure = RuleAction::Failure::Close;
        timeout.failure = RuleAction::Failure::Timeout;
        timeout.rate = 0.25;
        RuleAction pause;
        pause.kind = RuleAction::Kind::Breakpoint;
        pause.breakpointTimeout = std::chrono::seconds(90);
        t.actions = {preset, custom, replace, close, timeout, pause};
        a.actions.push_back(pause); // at the response stage too
        c.rules = {a, b, t};
        c.sourcePath = "test.yaml";
        const std::string written = configToYaml(c, dir_.path().toStdString());
        const ReadResult r = read(QByteArray::fromStdString(written));
        QVERIFY2(r.ok(), qPrintable(str(written) + "\n" + lines(r.errors).join('\n')));
        QVERIFY2(r.config->rules == c.rules, written.c_str());
        QCOMPARE(r.config->rules[0].actions[1].rate, 0.3);
        QCOMPARE(r.config->rules[1].actions[1].failStatus, 418);
        QVERIFY(r.config->rules[2].actions[4].failure == RuleAction::Failure::Timeout);
        for (const char* part :
             {"throttle: Fast 4G\n", "throttle: {latency: 562500us, down: 7B, up: 675kbit}",
              "fail: {with: close}", "fail: {rate: 0.25, with: timeout}", "breakpoint: {timeout: 90s}"})
            QVERIFY2(written.find(part) != std::string::npos,
                     qPrintable(QString(part) + " in\n" + str(written)));
        QVERIFY(*r.config == c);
    }

    // A throttle is written by its preset's name while its values are the preset's, else as the map
    // of its values (the name is then gone); a custom map with a preset's values stays a map.
    void throttleWrittenByPreset() {
        for (const char* name : {"Slow 3G", "Fast 3G", "Slow 4G", "Fast 4G"}) {
            const ReadResult first =
                read("rules:\n  - actions: [{throttle: " + QByteArray(name) + "}]\n" + kVhosts);
            QVERIFY2(first.ok(), qPrintable(lines(first.errors).join('\n')));
            const std::string written = configToYaml(*first.config, dir_.path().toStdString());
            QVERIFY2(written.find("throttle: " + std::string(name) + "\n") != std::string::npos,
                     written.c_str());
            const ReadResult second = read(QByteArray::fromStdString(written));
            QVERIFY2(second.ok(), qPrintable(lines(second.errors).join('\n')));
            QVERIFY(second.config->rules == first.config->rules);
            QCOMPARE(str(second.config->rules[0].actions[0].throttlePreset), QString(name));
        }
        Config c = minimalConfig();
        c.sourcePath = "test.yaml";
        Rule r;
        RuleAction changed; // "Slow 3G" with a faster download
        changed.kind = RuleAction::Kind::Throttle;
        changed.throttlePreset = "Slow 3G";
        changed.throttleLatency = std::chrono::seconds(2);
        changed.throttleDown = 100000;
        changed.throttleUp = 50000;
        RuleAction same = changed; // a preset's values, written as a map
        same.throttlePreset.clear();
        same.throttleDown = 50000;
        r.actions = {changed, same};
        c.rules = {r};
        const std::string written = configToYaml(c, dir_.path().toStdString());
        QVERIFY2(written.find("Slow 3G") == std::string::npos, written.c_str());
        QVERIFY2(written.find("throttle: {latency: 2s, down: 800kbit, up: 400kbit}") != std::string::npos,
                 written.c_str());
        QVERIFY2(written.find("throttle: {latency: 2s, down: 400kbit, up: 400kbit}") != std::string::npos,
                 written.c_str());
        const ReadResult back = read(QByteArray::fromStdString(written));
        QVERIFY2(back.ok(), qPrintable(lines(back.errors).join('\n')));
        const RuleAction& a = back.config->rules[0].actions[0];
        QCOMPARE(str(a.throttlePreset), QString());
        QCOMPARE(quint64(a.throttleDown), quint64(100000));
        QCOMPARE(qint64(a.throttleLatency.count()), qint64(2000000000));
        QVERIFY(back.config->rules[0].actions[1] == same);
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
        // It shows every action kind.
        std::vector<bool> seen(static_cast<std::size_t>(RuleAction::Kind::ReplaceBody) + 1);
        for (const Rule& rule : r.config->rules)
            for (const RuleAction& a : rule.actions)
                seen.at(static_cast<std::size_t>(a.kind)) = true;
        for (std::size_t k = 0; k < seen.size(); ++k)
            QVERIFY2(seen[k], qPrintable(QString("no action of kind %1 in the example").arg(k)));
    }
};

QTEST_MAIN(TestConfigRules)
#include "tst_config_rules.moc"

// load/suite_file.h: a user's benchmark suite file (`portico bench --suite-file`) read from YAML,
// every error with its exact line and column, the command line's precedence over the file, and the
// judging of each route by the command line's, the file's and its own thresholds. The built-in
// suite written as a file (resources/bench-suite/suite.yaml) is exactly load::suiteRoutes().
#include "test_support.h"

#include <portico/load/suite_file.h>

#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> errorsOf(const std::string& text) {
    load::SuiteFile file;
    std::vector<config::ConfigError> errors;
    const bool ok = load::parseSuiteFile(text, "s.yaml", file, errors);
    std::vector<std::string> out;
    for (const auto& e : errors)
        out.push_back(e.toString());
    if (ok != out.empty()) out.push_back("parseSuiteFile returned " + std::string(ok ? "true" : "false"));
    return out;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += l + "\n";
    return s;
}

load::SuiteFile parsed(const std::string& text) {
    load::SuiteFile file;
    std::vector<config::ConfigError> errors;
    if (!load::parseSuiteFile(text, "s.yaml", file, errors)) qFatal("%s", errors.front().toString().c_str());
    return file;
}

// A finished route: 1000 requests at 1..1000 µs over 2 s (500 req/s), none failed.
load::SuiteRun runOf(const std::string& name) {
    load::SuiteRun run;
    run.route.name = name;
    run.route.target = "/" + name;
    auto& r = run.result;
    r.latency = std::make_unique<stats::Histogram>();
    for (std::uint64_t us = 1; us <= 1000; ++us)
        r.latency->record(us * 1000);
    r.requests.completed = r.requests.started = 1000;
    r.statuses[200] = 1000;
    r.measured = 2s;
    return run;
}

std::vector<std::string> exprs(const load::Result& r) {
    std::vector<std::string> out;
    for (const auto& t : r.thresholds)
        out.push_back(t.expr + (t.ok ? " met" : " BREACHED"));
    return out;
}

} // namespace

class TestLoadSuiteFile : public QObject {
    Q_OBJECT
private slots:
    // The shipped file and the built-in list cannot drift apart.
    void builtInSuiteAsAFile() {
        const QString path = test::sourceDir() + "/resources/bench-suite/suite.yaml";
        load::SuiteFile file;
        std::vector<config::ConfigError> errors;
        QVERIFY2(load::readSuiteFile(path.toStdString(), file, errors),
                 errors.empty() ? "" : errors.front().toString().c_str());
        QCOMPARE(file.file, path.toStdString());
        QCOMPARE(file.base, std::string(load::kSuiteDefaultUrl));
        QVERIFY(file.duration && *file.duration == 3s);
        QVERIFY(!file.connections && !file.threads && !file.pipeline);
        QVERIFY(file.thresholds.empty());
        const auto& builtIn = load::suiteRoutes();
        const auto routes = file.suiteRoutes();
        QCOMPARE(routes.size(), builtIn.size());
        for (std::size_t i = 0; i < routes.size(); ++i) {
            const auto& a = routes[i];
            const auto& b = builtIn[i];
            QCOMPARE(a.name, b.name);
            QCOMPARE(a.description, b.description);
            QCOMPARE(a.target, b.target);
            QCOMPARE(a.method, b.method);
            QCOMPARE(a.headers, b.headers);
            QCOMPARE(a.body, b.body);
            QVERIFY(file.routes[i].thresholds.empty());
        }
    }

    void fullFile() {
        const auto file = parsed(R"(# every key
base: https://[::1]:8443/
duration: 1500ms
connections: 50
threads: 2
pipeline: 4
thresholds: [p99<50ms, "errors<1%"]
routes:
  - name: plaintext
    path: /plaintext?x=1
    description: the smallest
    thresholds: p50<10ms
  - name: echo
    path: /echo
    method: POST
    headers: {Content-Type: application/json, X-Empty: , X-Number: 42}
    body: '{"a":1}'
    thresholds:
      - rps>100
      - status:5xx<0.1%
)");
        QCOMPARE(file.file, std::string("s.yaml"));
        QCOMPARE(file.base, std::string("https://[::1]:8443"));
        QCOMPARE(*file.duration, std::chrono::nanoseconds(1500ms));
        QCOMPARE(*file.connections, 50u);
        QCOMPARE(*file.threads, 2u);
        QCOMPARE(*file.pipeline, 4u);
        QCOMPARE(file.thresholds.size(), std::size_t{2});
        QCOMPARE(file.thresholds[0].expr, std::string("p99<50ms"));
        QCOMPARE(file.thresholds[1].metric, load::Threshold::Metric::Errors);
        QCOMPARE(file.routes.size(), std::size_t{2});
        const auto& a = file.routes[0];
        QCOMPARE(a.route.name, std::string("plaintext"));
        QCOMPARE(a.route.target, std::string("/plaintext?x=1"));
        QCOMPARE(a.route.method, std::string("GET"));
        QCOMPARE(a.route.description, std::string("the smallest"));
        QCOMPARE(a.line, 9);
        QCOMPARE(a.thresholds.size(), std::size_t{1});
        QCOMPARE(a.thresholds[0].expr, std::string("p50<10ms"));
        const auto& b = file.routes[1];
        QCOMPARE(b.route.method, std::string("POST"));
        QCOMPARE(b.route.body, std::string(R"({"a":1})"));
        using Fields = std::vector<std::pair<std::string, std::string>>;
        QCOMPARE(b.route.headers,
                 (Fields{{"Content-Type", "application/json"}, {"X-Empty", ""}, {"X-Number", "42"}}));
        QCOMPARE(b.thresholds.size(), std::size_t{2});
        QCOMPARE(b.thresholds[1].expr, std::string("status:5xx<0.1%"));
        QCOMPARE(b.line, 13);
    }

    void minimalFile() {
        const auto file = parsed("routes: [{name: home, path: /}]\n");
        QVERIFY(file.base.empty());
        QVERIFY(!file.duration && !file.connections);
        QCOMPARE(file.routes.size(), std::size_t{1});
        QCOMPARE(file.routes[0].route.target, std::string("/"));
        QCOMPARE(file.routes[0].line, 1);
    }

    // docs/cli.md's example file reads as shown, and its error listing is what the reader says.
    void docsExample() {
        QFile doc(test::sourceDir() + "/docs/cli.md");
        QVERIFY(doc.open(QIODevice::ReadOnly));
        const QString page = QString::fromUtf8(doc.readAll());
        const qsizetype section = page.indexOf("### A suite of your own");
        QVERIFY(section > 0);
        auto block = [&](qsizetype from) {
            const qsizetype open = page.indexOf("```text\n", from);
            const qsizetype close = page.indexOf("\n```", open + 8);
            return open < 0 || close < 0 ? QString() : page.mid(open + 8, close - open - 7);
        };
        const QString example = block(section);
        QVERIFY2(example.startsWith("base: "), qPrintable(example));
        const auto file = parsed(example.toStdString());
        QCOMPARE(file.routes.size(), std::size_t{2});
        QCOMPARE(file.thresholds.size(), std::size_t{2});
        QCOMPARE(*file.connections, 50u);
        QCOMPARE(file.routes[1].route.method, std::string("POST"));
        QCOMPARE(file.routes[0].thresholds[0].expr, std::string("p99<10ms"));

        const QString listing = block(page.indexOf("refused whole before a request is sent", section));
        QVERIFY2(listing.startsWith("my-suite.yaml:"), qPrintable(listing));
        load::SuiteFile bad;
        std::vector<config::ConfigError> errors;
        QVERIFY(!load::parseSuiteFile("base: http://127.0.0.1:8090\nthresholds: [p99<fast]\nroutes:\n"
                                      "  - name: a\n    pth: /a\n",
                                      "my-suite.yaml", bad, errors));
        QString expected;
        for (const auto& e : errors)
            expected += QString::fromStdString(e.toString()) + "\n";
        expected += "portico bench --suite-file: my-suite.yaml refused (3 errors); nothing was sent\n";
        QCOMPARE(listing, expected);
    }

    // Each kind of error, with the exact position and wording people see.
    void errors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected"); // the errors, one a line
        std::string thresholdError;
        load::parseThreshold("p99<fast", thresholdError);
        QVERIFY(!thresholdError.empty());
        const QString ok = "routes: [{name: a, path: /a}]\n";
        QTest::newRow("unknown key, close") << "thresold: [p99<1ms]\n" + ok
                                            << "s.yaml:1:1: thresold: unknown key 'thresold' (did you mean "
                                               "'thresholds'?)\n";
        QTest::newRow("unknown key, far")
            << "colour: red\n" + ok << "s.yaml:1:1: colour: unknown key 'colour'\n";
        QTest::newRow("unknown route key")
            << "routes:\n  - name: a\n    pth: /a\n"
            << "s.yaml:2:5: routes[0]: route needs a `path:` (e.g. /plaintext)\n"
               "s.yaml:3:5: routes[0].pth: unknown key 'pth' (did you mean "
               "'path'?)\n";
        QTest::newRow("duplicate key") << "routes: [{name: a, path: /a}]\nduration: 1s\nduration: 2s\n"
                                       << "s.yaml:3:1: duration: duplicate key 'duration'\n";
        QTest::newRow("routes a map") << "routes: {name: a}\n"
                                      << "s.yaml:1:9: routes: expected a list of routes, got a map\n";
        QTest::newRow("route a string") << "routes: [plaintext]\n"
                                        << "s.yaml:1:10: routes[0]: expected a map, got 'plaintext'\n";
        QTest::newRow("top a list") << "- name: a\n"
                                    << "s.yaml:1:1: expected a map, got a list\n";
        QTest::newRow("name a list") << "routes:\n  - name: [a]\n    path: /a\n"
                                     << "s.yaml:2:11: routes[0].name: expected a string, got a list\n";
        QTest::newRow("connections not a number") << "connections: many\n" + ok
                                                  << "s.yaml:1:14: connections: expected a whole number, got "
                                                     "'many'\n";
        QTest::newRow("connections out of range")
            << "connections: 0\n" + ok
            << "s.yaml:1:14: connections: must be between 1 and 100000, "
               "got 0\n";
        QTest::newRow("threads out of range")
            << "threads: 257\n" + ok << "s.yaml:1:10: threads: must be between 1 and 256, got 257\n";
        QTest::newRow("missing name") << "routes:\n  - path: /a\n"
                                      << "s.yaml:2:5: routes[0]: route needs a `name:` (unique, e.g. "
                                         "plaintext)\n";
        QTest::newRow("missing path") << "routes:\n  - {name: a}\n"
                                      << "s.yaml:2:5: routes[0]: route needs a `path:` (e.g. /plaintext)\n";
        QTest::newRow("empty value") << "routes:\n  - name:\n    path: /a\n"
                                     << "s.yaml:2:5: routes[0].name: missing value\n";
        QTest::newRow("duplicate name") << "routes:\n  - name: a\n    path: /a\n  - name: a\n    path: /b\n"
                                        << "s.yaml:4:11: routes[1].name: duplicate route name 'a' (first at "
                                           "line 2)\n";
        QTest::newRow("duration without unit") << "duration: 3\n" + ok
                                               << "s.yaml:1:11: duration: duration '3' needs a unit: us, ms, "
                                                  "s, m or h (e.g. 3s)\n";
        QTest::newRow("duration junk") << "duration: soon\n" + ok
                                       << "s.yaml:1:11: duration: invalid duration 'soon' (write e.g. 500ms, "
                                          "3s or 1m)\n";
        QTest::newRow("duration zero")
            << "duration: 0s\n" + ok << "s.yaml:1:11: duration: must be greater than 0\n";
        QTest::newRow("bad threshold")
            << "thresholds: [errors<1%, p99<fast]\n" + ok
            << "s.yaml:1:25: thresholds[1]: " + QString::fromStdString(thresholdError) + "\n";
        QTest::newRow("bad route threshold")
            << "routes:\n  - name: a\n    path: /a\n    thresholds:\n      - p99<fast\n"
            << "s.yaml:5:9: routes[0].thresholds[0]: " + QString::fromStdString(thresholdError) + "\n";
        QTest::newRow("thresholds a map") << "thresholds: {p99: 1ms}\n" + ok
                                          << "s.yaml:1:13: thresholds: expected a list of threshold "
                                             "expressions, e.g. [p99<50ms, errors<1%], got a map\n";
        QTest::newRow("empty routes") << "routes: []\n"
                                      << "s.yaml:1:9: routes: at least one route is required (a list of "
                                         "{name, path})\n";
        QTest::newRow("routes empty value") << "duration: 1s\nroutes:\n"
                                            << "s.yaml:2:1: routes: at least one route is required (a list "
                                               "of {name, path})\n";
        QTest::newRow("no routes") << "duration: 1s\n"
                                   << "s.yaml:1:1: no routes: add at least one under `routes:` (e.g. "
                                      "`routes: [{name: home, path: /}]`)\n";
        QTest::newRow("empty file")
            << ""
            << "s.yaml:1:1: empty suite file: expected a map with `routes:` (a list of "
               "{name, path})\n";
        QTest::newRow("base with a path") << "base: http://127.0.0.1:8090/api\n" + ok
                                          << "s.yaml:1:7: base: base 'http://127.0.0.1:8090/api': give only "
                                             "the origin, e.g. http://127.0.0.1:8090\n";
        QTest::newRow("base not a URL") << "base: 127.0.0.1:8090\n" + ok
                                        << "s.yaml:1:7: base: bad URL '127.0.0.1:8090': expected "
                                           "http://HOST[:PORT]/PATH\n";
        QTest::newRow("path without slash") << "routes: [{name: a, path: plaintext}]\n"
                                            << "s.yaml:1:26: routes[0].path: expected a path starting with "
                                               "'/' (e.g. /users/42?page=2), got 'plaintext'\n";
        QTest::newRow("path with a space")
            << "routes: [{name: a, path: /a b}]\n"
            << "s.yaml:1:26: routes[0].path: must not contain spaces, control or non-ASCII characters "
               "(percent-encode them: %20, %C3%A9)\n";
        QTest::newRow("bad method") << "routes: [{name: a, path: /a, method: 'GE T'}]\n"
                                    << "s.yaml:1:38: routes[0].method: expected a method name such as GET or "
                                       "POST, got 'GE T'\n";
        QTest::newRow("headers a list") << "routes: [{name: a, path: /a, headers: [x]}]\n"
                                        << "s.yaml:1:39: routes[0].headers: expected a map of field name to "
                                           "value (e.g. {Accept: text/plain}), got a list\n";
        QTest::newRow("bad field name") << "routes: [{name: a, path: /a, headers: {'Bad Name': x}}]\n"
                                        << "s.yaml:1:40: routes[0].headers: expected a field name (an RFC "
                                           "9110 token), got 'Bad Name'\n";
        QTest::newRow("syntax") << "routes: [{name: a, path: /a}\n"
                                << "s.yaml:2:1: YAML syntax error: end of sequence flow not found\n";
        QTest::newRow("tab")
            << "routes:\n\t- name: a\n"
            << "s.yaml:2:2: YAML syntax error: illegal block entry (indent YAML with spaces, "
               "not tabs)\n";
        QTest::newRow("a field the generator writes")
            << "routes:\n  - name: a\n    path: /a\n    body: hello\n    headers: {Content-Length: '5'}\n"
            << "s.yaml:5:15: routes[0].headers: 'Content-Length' is written by the load generator from the "
               "body: leave it out\n";
        QTest::newRow("the same field twice, in another case")
            << "routes:\n  - name: a\n    path: /a\n    headers: {X-A: '1', x-a: '2'}\n"
            << "s.yaml:4:25: routes[0].headers: duplicate field 'x-a' (names are case-insensitive)\n";
        QTest::newRow("non-ASCII path")
            << QString::fromUtf8("routes: [{name: a, path: /caf\u00e9}]\n")
            << "s.yaml:1:26: routes[0].path: must not contain spaces, control or non-ASCII characters "
               "(percent-encode them: %20, %C3%A9)\n";
        QTest::newRow("two documents")
            << ok + "---\n" + ok << "s.yaml:2:1: expected one YAML document, found more than one\n";
        // Every error of a file at once, in file order.
        QTest::newRow("several")
            << "threads: 0\nroutes:\n  - name: a\n  - name: a\n    path: /b\nconections: 5\n"
            << "s.yaml:1:10: threads: must be between 1 and 256, got 0\n"
               "s.yaml:3:5: routes[0]: route needs a `path:` (e.g. /plaintext)\n"
               "s.yaml:4:11: routes[1].name: duplicate route name 'a' (first at line 3)\n"
               "s.yaml:6:1: conections: unknown key 'conections' (did you mean "
               "'connections'?)\n";
    }
    void errors() {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(joined(errorsOf(text.toStdString()))), expected);
    }

    // Bytes that are not UTF-8 anywhere in the file: refused at their line and column before
    // anything is parsed (they would reach the JSON result and the history).
    void notUtf8() {
        QCOMPARE(joined(errorsOf("routes:\n  - name: ok\n    path: /a\n  - name: \xff\xfe\n    path: /b\n")),
                 std::string("s.yaml:4:11: not UTF-8 text (save the file as UTF-8)\n"));
        QCOMPARE(joined(errorsOf("# caf\xc3\xa9 \xc3\n")), // a cut two-byte sequence
                 std::string("s.yaml:1:9: not UTF-8 text (save the file as UTF-8)\n"));
        QCOMPARE(joined(errorsOf("# \xed\xa0\x80\n")), // a UTF-16 surrogate
                 std::string("s.yaml:1:3: not UTF-8 text (save the file as UTF-8)\n"));
        QCOMPARE(joined(errorsOf("# \xc0\xaf\n")), // an overlong '/'
                 std::string("s.yaml:1:3: not UTF-8 text (save the file as UTF-8)\n"));
        // Well-formed UTF-8 in a name is fine.
        QVERIFY(errorsOf("routes: [{name: \"caf\xc3\xa9 \xf0\x9f\x9a\x80\", path: /a}]\n").empty());
    }

    void unreadableFile() {
        QTemporaryDir dir;
        load::SuiteFile file;
        std::vector<config::ConfigError> errors;
        const std::string missing = dir.filePath("none.yaml").toStdString();
        QVERIFY(!load::readSuiteFile(missing, file, errors));
        QCOMPARE(errors.size(), std::size_t{1});
        QCOMPARE(errors[0].toString(), missing + ": cannot read (No such file or directory)");
        errors.clear();
        QVERIFY(!load::readSuiteFile(dir.path().toStdString(), file, errors));
        QCOMPARE(errors[0].toString(), dir.path().toStdString() + ": cannot read (a folder, not a file)");
        // A file with an error names the path it was read as.
        QFile f(dir.filePath("bad.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("routes: []\n");
        f.close();
        errors.clear();
        QVERIFY(!load::readSuiteFile(f.fileName().toStdString(), file, errors));
        QCOMPARE(errors[0].toString(),
                 f.fileName().toStdString() +
                     ":1:9: routes: at least one route is required (a list of {name, path})");
    }

    // The command line wins over the file, the file over the defaults.
    void precedence() {
        const auto file = parsed("base: http://127.0.0.1:9000\nduration: 2s\nconnections: 50\nthreads: 2\n"
                                 "pipeline: 8\nroutes: [{name: a, path: /a}]\n");
        std::string base, error;
        load::Options o; // as the command line left it: -c 10 (default), -t 1, -p 1, 3 s per route
        o.duration = 3s;
        QVERIFY(load::applySuiteFile(file, {}, o, base, error));
        QCOMPARE(base, std::string("http://127.0.0.1:9000"));
        QCOMPARE(o.duration, std::chrono::nanoseconds(2s));
        QCOMPARE(o.connections, 50u);
        QCOMPARE(o.threads, 2u);
        QCOMPARE(o.pipeline, 8u);

        load::Options given;
        given.duration = 300ms;
        given.connections = 3;
        given.threads = 1;
        given.pipeline = 1;
        load::SuiteFileOverrides all{"http://[::1]:8080", true, true, true, true};
        QVERIFY(load::applySuiteFile(file, all, given, base, error));
        QCOMPARE(base, std::string("http://[::1]:8080"));
        QCOMPARE(given.duration, std::chrono::nanoseconds(300ms));
        QCOMPARE(given.connections, 3u);
        QCOMPARE(given.threads, 1u);
        QCOMPARE(given.pipeline, 1u);

        // -n alone is a bound: the file's duration is not added to it.
        load::Options counted;
        counted.count = 40;
        QVERIFY(load::applySuiteFile(file, {"", true, false, false, false}, counted, base, error));
        QCOMPARE(counted.count, std::uint64_t{40});
        QCOMPARE(counted.duration.count(), 0);
        QCOMPARE(counted.connections, 50u);

        // Nothing anywhere: the default origin and 3 s per route.
        const auto bare = parsed("routes: [{name: a, path: /a}]\n");
        load::Options d;
        QVERIFY(load::applySuiteFile(bare, {}, d, base, error));
        QCOMPARE(base, std::string(load::kSuiteDefaultUrl));
        QCOMPARE(d.duration, std::chrono::nanoseconds(3s));
        QCOMPARE(d.connections, load::Options{}.connections);

        // The file's pipelining does not fit HTTP/2; the command line's -p would have said so too.
        load::Options h2;
        h2.protocol = load::Protocol::Http2;
        QVERIFY(!load::applySuiteFile(file, {}, h2, base, error));
        QCOMPARE(error, std::string("s.yaml: pipeline 8 is HTTP/1.1 only; with --h2 the command line's "
                                    "--streams applies (or give -p 1)"));
        QVERIFY(load::applySuiteFile(file, {"", false, false, false, true}, h2, base, error));
    }

    // Each route: the command line's thresholds, then the file's, then its own; one expression once.
    void judging() {
        const auto file = parsed("thresholds: [p99<2ms, rps>100]\nroutes:\n"
                                 "  - {name: a, path: /a, thresholds: [p50<1us, rps>100]}\n"
                                 "  - {name: b, path: /b}\n");
        std::string error;
        std::vector<load::Threshold> extra{*load::parseThreshold("max<=1ms", error)};
        load::SuiteResult suite;
        suite.runs.push_back(runOf("a"));
        suite.runs.push_back(runOf("b"));
        QVERIFY(!load::judgeSuiteFile(file, extra, suite));
        QCOMPARE(exprs(suite.runs[0].result), (std::vector<std::string>{"max<=1ms met", "p99<2ms met",
                                                                        "rps>100 met", "p50<1us BREACHED"}));
        QCOMPARE(exprs(suite.runs[1].result),
                 (std::vector<std::string>{"max<=1ms met", "p99<2ms met", "rps>100 met"}));

        // Without route a's own breached one, everything is met.
        suite.runs.erase(suite.runs.begin());
        QVERIFY(load::judgeSuiteFile(file, extra, suite));
        // No thresholds anywhere: nothing judged, met.
        const auto none = parsed("routes: [{name: b, path: /b}]\n");
        QVERIFY(load::judgeSuiteFile(none, {}, suite));
        QVERIFY(suite.runs[0].result.thresholds.empty());
        // A breach of the command line's alone fails the suite too.
        std::vector<load::Threshold> strict{*load::parseThreshold("rps>1000000000000", error)};
        QVERIFY(!load::judgeSuiteFile(none, strict, suite));
    }
};

QTEST_GUILESS_MAIN(TestLoadSuiteFile)
#include "tst_load_suite_file.moc"

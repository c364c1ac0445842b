// Tests for config checked as data: the YAML reader alone (reading errors only, a source map) and
// validate() on what it read — located errors, Checks::NoFiles, configs built in code.
#include "test_support.h"

#include <portico/config/reader.h>
#include <portico/validate/load.h>
#include <portico/validate/validate.h>

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::config;
using portico::validate::Checks;
using portico::validate::validate;

namespace {

QString str(const std::string& s) { return QString::fromStdString(s); }

QString where(const Location& l) {
    return str(l.file) + ":" + QString::number(l.line) + ":" + QString::number(l.column);
}

// A bad route pattern (a parameter twice) and a root that does not exist: neither is a reading
// error, both are validate's.
const char kBadPatternMissingRoot[] = "vhosts:\n"
                                      "  - root: missing-site\n"
                                      "    routes:\n"
                                      "      - path: /users/:id/:id\n"
                                      "        respond: {body: hi}\n";

} // namespace

class TestConfigValidate : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    ReadResult read(const char* yaml) {
        return readConfigText(yaml, "test.yaml", dir_.path().toStdString(), "test.yaml");
    }

    QStringList lines(const std::vector<ConfigError>& errors) const {
        QStringList out;
        for (const ConfigError& e : errors)
            out << str(e.toString()).replace(dir_.path(), "$DIR");
        return out;
    }

private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void readerAcceptsWhatValidateRefuses() {
        const ReadResult r = read(kBadPatternMissingRoot);
        QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n')));
        QCOMPARE(r.config->vhosts.size(), std::size_t(1));
        const Vhost& vh = r.config->vhosts[0];
        QVERIFY(vh.root);
        QCOMPARE(str(vh.root->root), dir_.path() + "/missing-site");
        QCOMPARE(vh.routes.size(), std::size_t(1));
        QCOMPARE(str(vh.routes[0].path), QString("/users/:id/:id"));

        const QStringList expected = {
            "test.yaml:2:11: vhosts[0].root: directory '$DIR/missing-site' does not exist",
            "test.yaml:4:15: vhosts[0].routes[0].path: parameter ':id' appears twice in '/users/:id/:id'",
        };
        QCOMPARE(lines(validate(*r.config, r.map)), expected);
        // Loading is reading then validating: the same errors, and no config.
        const LoadResult loaded =
            loadConfigText(kBadPatternMissingRoot, "test.yaml", dir_.path().toStdString());
        QVERIFY(!loaded.ok());
        QCOMPARE(lines(loaded.errors), expected);
    }

    void noFilesSkipsTheDisk() {
        const ReadResult r = read(kBadPatternMissingRoot);
        QVERIFY(r.ok());
        QCOMPARE(lines(validate(*r.config, r.map, Checks::NoFiles)),
                 QStringList{"test.yaml:4:15: vhosts[0].routes[0].path: parameter ':id' appears twice in "
                             "'/users/:id/:id'"});
        // Certificate files are the disk's too; a missing key is not.
        const ReadResult t = read("listen:\n"
                                  "  - {address: 127.0.0.1:8443, tls: {cert: no.crt, key: no.key}}\n"
                                  "  - {address: 127.0.0.1:8444, tls: {cert: no.crt}}\n"
                                  "vhosts: [{names: [a.test]}]\n");
        QVERIFY2(t.ok(), qPrintable(lines(t.errors).join('\n')));
        QCOMPARE(lines(validate(*t.config, t.map, Checks::NoFiles)),
                 QStringList{"test.yaml:3:36: listen[1].tls: needs `key:` (the private key, PEM)"});
        QCOMPARE(validate(*t.config, t.map).size(), std::size_t(3)); // two missing files, then the key
    }

    void crossFieldChecksAreValidates() {
        const ReadResult r = read("listen: [\"127.0.0.1:8080\", \"127.0.0.1:8080\"]\n"
                                  "vhosts:\n"
                                  "  - routes:\n"
                                  "      - {path: /a, respond: {body: one}}\n"
                                  "      - {path: /a/, respond: {body: two}}\n"
                                  "      - {location: \"~ ([a-z]\", respond: {body: three}}\n");
        QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n')));
        const QStringList got = lines(validate(*r.config, r.map, Checks::NoFiles));
        QCOMPARE(got.size(), 3);
        QCOMPARE(got[0],
                 QString("test.yaml:1:28: listen[1]: duplicate listener 127.0.0.1:8080 (already on line 1)"));
        QCOMPARE(got[1], QString("test.yaml:5:16: vhosts[0].routes[1].path: duplicate route '/a/' for every "
                                 "method: vhosts[0].routes[0] (line 4) already matches it"));
        QVERIFY2(got[2].startsWith("test.yaml:6:20: vhosts[0].routes[2].location: invalid regular expression "
                                   "'([a-z]' at offset"),
                 qPrintable(got[2]));
    }

    void sourceMapLookup() {
        const ReadResult r = read("listen: [\"127.0.0.1:8080\"]\n"
                                  "vhosts:\n"
                                  "  - names: [a.test]\n"
                                  "    routes:\n"
                                  "      - group:\n"
                                  "          prefix: /api\n"
                                  "          routes:\n"
                                  "            - path: /users\n"
                                  "              respond: {status: 201}\n");
        QVERIFY2(r.ok(), qPrintable(lines(r.errors).join('\n')));
        const SourceMap& m = r.map;
        QCOMPARE(where(m.at("listen[0]")), QString("test.yaml:1:10"));
        QCOMPARE(where(m.at("vhosts[0].names[0]")), QString("test.yaml:3:13"));
        QCOMPARE(where(m.at("vhosts[0].routes[0].group.prefix")), QString("test.yaml:6:19"));
        QCOMPARE(where(m.at("vhosts[0].routes[0].group.routes[0].respond.status")),
                 QString("test.yaml:9:33"));
        // The flattened route knows where it was written.
        QCOMPARE(str(r.config->vhosts[0].routes[0].path), QString("/api/users"));
        QCOMPARE(str(m.routePath(0, 0)), QString("vhosts[0].routes[0].group.routes[0]"));
        QCOMPARE(str(m.matchPath(0, 0)), QString("vhosts[0].routes[0].group.routes[0].path"));
        QCOMPARE(where(m.at(m.matchPath(0, 0))), QString("test.yaml:8:21"));
        QCOMPARE(m.listen, std::vector<std::string>{"listen[0]"});
        // A path the file does not have: line 0.
        QCOMPARE(where(m.at("vhosts[3].root")), QString("test.yaml:0:0"));
    }

    void configBuiltInCode() {
        // What the GUI validates: a model with no file behind it. Errors carry the path, line 0.
        Config c;
        c.listen.push_back(Listen{});
        Vhost vh;
        Route r;
        r.path = "users";
        r.spec = "users";
        r.action = RespondAction{};
        vh.routes.push_back(r);
        c.vhosts.push_back(vh);
        const auto errors = validate(c, SourceMap{}, Checks::NoFiles);
        QCOMPARE(errors.size(), std::size_t(1));
        QCOMPARE(str(errors[0].toString()),
                 QString(": vhosts[0].routes[0].path: a path pattern must start with '/', got 'users'"));
        QCOMPARE(errors[0].where.line, 0);
    }
};

QTEST_APPLESS_MAIN(TestConfigValidate)
#include "tst_config_validate.moc"

// The Rules tab against a real in-process server: a rule added with the form is checked by the
// loader as it is typed (a bad match shows its column and keeps Apply off), Apply publishes only
// the rules and a real request sees them, the enable switch, a Sites apply keeps applied rules,
// external edits reload the list, "Create rule from this exchange", the Matched column, and the
// map_local and map_remote forms (the loader's messages, a file served, a config that has them),
// the throttle form (a preset's values are the reader's; custom values), replace_body (its fields,
// a bad regex's message), fail's close and timeout and breakpoint (its timeout; a bad one's message),
// each applied and read back from the file.
#include "mainwindow.h"
#include "rules/rulespage.h"
#include "servercontroller.h"
#include "sites/sitespage.h"
#include "test_support.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include <portico/config/reader.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QUrl>
#include <QtTest>

using namespace portico;
using portico::ui::MainWindow;
using portico::ui::RulesPage;
using portico::ui::ServerController;
using portico::ui::SitesPage;

namespace {

// /hello answers with the X-Debug field of the request it got, so a rule's set_header is seen.
const char* kConfig = "listen: [127.0.0.1:0]\n"
                      "capture: true\n"
                      "vhosts:\n"
                      "  - routes:\n"
                      "      - path: /hello\n"
                      "        respond: {body: \"x-debug={{header.X-Debug}}\"}\n";

const char* kRule = "rules:\n"
                    "  - name: debug\n"
                    "    match: \"path:/hello\"\n"
                    "    actions:\n"
                    "      - set_header: {X-Debug: on}\n";

void writeFile(const QString& path, const QByteArray& content) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(content);
}

} // namespace

class TestRulesPage : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;
    std::unique_ptr<RulesPage> m_page;

    QString configPath() const { return m_dir.path() + "/portico.yaml"; }
    QString url(const QString& path) const { return m_server->firstHttpUrl() + path.mid(1); }

    template <class T> T* field(const QString& name) {
        T* w = m_page->findChild<T*>(name);
        if (!w) qWarning("no field %s", qPrintable(name));
        return w;
    }
    QLabel* errorLabel(const QString& key) { return field<QLabel>("error:" + key); }
    QPushButton* applyButton() { return field<QPushButton>("applyRules"); }

    void typeInto(QLineEdit* edit, const QString& text) {
        edit->setFocus();
        edit->selectAll();
        QTest::keyClick(edit, Qt::Key_Backspace);
        QTest::keyClicks(edit, text);
    }

    void open(const QByteArray& yaml) {
        m_page.reset();
        m_server.reset();
        writeFile(configPath(), yaml);
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(configPath(), &error, false), qPrintable(error));
        m_page = std::make_unique<RulesPage>(m_server.get());
        m_page->resize(1100, 700);
        m_page->show();
    }

    void chooseKind(config::RuleAction::Kind kind) {
        auto* combo = field<QComboBox>("actionKind");
        combo->setCurrentIndex(combo->findData(int(kind)));
    }

    QString devFile() const { return QDir::cleanPath(m_dir.path() + "/dev/app.js"); }
    void writeDevFile() {
        QVERIFY(QDir(m_dir.path()).mkpath("dev"));
        writeFile(devFile(), "console.log('local');\n");
    }

    /// The file Apply saved, opened again as a new server and page: what the forms show of it.
    void reopenSaved() {
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QByteArray text = saved.readAll();
        saved.close();
        open(text);
    }
    QByteArray savedText() {
        QFile saved(configPath());
        return saved.open(QIODevice::ReadOnly) ? saved.readAll() : QByteArray();
    }

    /// `throttle: "NAME"` as the loader reads it, by itself: the values a preset stands for.
    static config::RuleAction presetAction(const char* name) {
        const std::string yaml = std::string("rules:\n  - actions:\n      - throttle: \"") + name + "\"\n";
        const config::ReadResult read = config::readConfigText(yaml, "portico.yaml", "/", "");
        for (const config::ConfigError& e : read.errors) // not the rule's: the file has no vhost
            if (e.path.starts_with("rules[")) qWarning("%s: %s", e.path.c_str(), e.message.c_str());
        if (read.config->rules.size() != 1 || read.config->rules[0].actions.size() != 1) return {};
        return read.config->rules[0].actions[0];
    }

    void choose(QComboBox* combo, const QVariant& data) {
        const int i = combo->findData(data);
        if (i < 0) qWarning("no item %s", qPrintable(data.toString()));
        combo->setCurrentIndex(i);
    }

    QByteArray fetch(const QString& path) {
        const test::CurlReply r = test::curlFetch({url(path)});
        if (r.status != 200) qWarning("curl: %d %s", r.status, r.err.constData());
        return r.body;
    }

private slots:
    void init() { open(kConfig); }

    void cleanup() {
        m_page.reset();
        m_server.reset();
    }

    // Add → the form; a bad match shows the loader's message with its column and keeps Apply off;
    // fixed, Apply publishes the rule (and saves it) and a real request gets the header.
    void addRuleWithTheForm() {
        QCOMPARE(m_page->table()->rowCount(), 0);
        QVERIFY(!applyButton()->isEnabled());
        QTest::mouseClick(field<QPushButton>("addRule"), Qt::LeftButton);
        QCOMPARE(m_page->table()->rowCount(), 1);
        QCOMPARE(m_page->currentRow(), 0);
        typeInto(field<QLineEdit>("ruleName"), "debug header");
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello nosuchkey:x");

        QLabel* error = errorLabel("match");
        QVERIFY(error->isVisible());
        QVERIFY2(error->text().contains("column 13") && error->text().contains("nosuchkey"),
                 qPrintable(error->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());
        QVERIFY(m_server->config()->rules.empty());
        QCOMPARE(m_page->table()->item(0, RulesPage::Match)->foreground().color(), QColor("#c0392b"));
        QCOMPARE(fetch("/hello"), QByteArray("x-debug="));

        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        QVERIFY(!error->isVisible());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(applyButton()->isEnabled());
        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!m_page->hasChanges());
        QVERIFY(!applyButton()->isEnabled());

        const auto& rules = m_server->config()->rules;
        QCOMPARE(rules.size(), std::size_t(1));
        QCOMPARE(rules[0].name, std::string("debug header"));
        QCOMPARE(rules[0].match, std::string("path:/hello"));
        QCOMPARE(rules[0].stage, config::Rule::Stage::Request);
        QCOMPARE(rules[0].actions.size(), std::size_t(1));
        QCOMPARE(rules[0].actions[0].kind, config::RuleAction::Kind::SetHeader);
        QCOMPARE(fetch("/hello"), QByteArray("x-debug=1"));
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QVERIFY(saved.readAll().contains("debug header"));
    }

    // The actions' forms: the reader's checks (a field the server writes cannot be removed) show
    // under the action; a fail action's rate and status reach the config.
    void actionFormsAndTheirChecks() {
        m_page->addRule();
        auto* kind = field<QComboBox>("actionKind");
        kind->setCurrentIndex(kind->findData(int(config::RuleAction::Kind::RemoveHeader)));
        auto* names = field<QListWidget>("removeHeaders");
        QCOMPARE(names->count(), 1);
        names->item(0)->setText("Content-Length");
        QVERIFY(errorLabel("action")->isVisible());
        QVERIFY2(errorLabel("action")->text().contains("set by the server"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        names->item(0)->setText("Cookie");
        QVERIFY(!errorLabel("action")->isVisible());

        QTest::mouseClick(field<QPushButton>("addAction"), Qt::LeftButton);
        QCOMPARE(field<QListWidget>("ruleActions")->count(), 2);
        kind->setCurrentIndex(kind->findData(int(config::RuleAction::Kind::Fail)));
        field<QDoubleSpinBox>("failRate")->setValue(0.5);
        field<QSpinBox>("failStatus")->setValue(418);
        // A set_header without a header is refused by the reader.
        QTest::mouseClick(field<QPushButton>("addAction"), Qt::LeftButton);
        auto* headers = field<QTableWidget>("setHeaders");
        QCOMPARE(headers->rowCount(), 1);
        headers->setCurrentCell(0, 0);
        QTest::mouseClick(field<QPushButton>("removeSetHeader"), Qt::LeftButton);
        QVERIFY2(errorLabel("action")->text().contains("at least one header"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QTest::mouseClick(field<QPushButton>("removeAction"), Qt::LeftButton);
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));

        QVERIFY(m_page->apply());
        const auto& actions = m_server->config()->rules.at(0).actions;
        QCOMPARE(actions.size(), std::size_t(2));
        QCOMPARE(actions[0].kind, config::RuleAction::Kind::RemoveHeader);
        QCOMPARE(actions[0].remove, std::vector<std::string>{"Cookie"});
        QCOMPARE(actions[1].kind, config::RuleAction::Kind::Fail);
        QCOMPARE(actions[1].rate, 0.5);
        QCOMPARE(actions[1].failure, config::RuleAction::Failure::Status);
        QCOMPARE(actions[1].failStatus, 418);
    }

    // The table's switch flips `enabled` in the config in force once applied; a real request sees it.
    void enableSwitch() {
        open(QByteArray(kConfig) + kRule);
        QCOMPARE(m_page->table()->rowCount(), 1);
        QCOMPARE(fetch("/hello"), QByteArray("x-debug=on"));
        QTableWidgetItem* on = m_page->table()->item(0, RulesPage::On);
        QCOMPARE(on->checkState(), Qt::Checked);
        on->setCheckState(Qt::Unchecked);
        QVERIFY(m_page->hasChanges());
        QVERIFY(!field<QCheckBox>("ruleEnabled")->isChecked());
        QVERIFY(m_server->config()->rules[0].enabled); // not before Apply
        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!m_server->config()->rules[0].enabled);
        QCOMPARE(fetch("/hello"), QByteArray("x-debug="));

        m_page->table()->item(0, RulesPage::On)->setCheckState(Qt::Checked);
        QVERIFY(m_page->apply());
        QVERIFY(m_server->config()->rules[0].enabled);
        QCOMPARE(fetch("/hello"), QByteArray("x-debug=on"));
    }

    // The Sites tab, with an unapplied edit made before the rule was applied, keeps the rules in
    // force when it applies; and a Rules apply did not publish the Sites draft.
    void sitesApplyKeepsRules() {
        SitesPage sites(m_server.get());
        sites.show();
        sites.select(0, 0);
        auto* body = sites.findChild<QPlainTextEdit*>("respond.body");
        QVERIFY(body);
        body->setPlainText("sites {{header.X-Debug}}");
        QVERIFY(sites.hasChanges());

        m_page->addRuleMatching("path:/hello", "debug");
        QVERIFY(m_page->apply());
        QCOMPARE(m_server->config()->rules.size(), std::size_t(1));
        QCOMPARE(fetch("/hello"), QByteArray("x-debug=1")); // the Sites draft is not published
        QVERIFY(sites.hasChanges());

        QVERIFY2(sites.apply(), qPrintable(sites.problems().join('\n')));
        QCOMPARE(m_server->config()->rules.size(), std::size_t(1));
        QCOMPARE(m_server->config()->rules[0].name, std::string("debug"));
        QCOMPARE(fetch("/hello"), QByteArray("sites 1"));
        QVERIFY(!m_page->hasChanges());
        QVERIFY(!sites.hasChanges());
    }

    // An edit of the file reloads the list when the tab has no unapplied edits, and leaves the
    // edits alone when it has.
    void externalEditReloadsTheList() {
        QSignalSpy spy(m_server.get(), &ServerController::externalChange);
        writeFile(configPath(), QByteArray(kConfig) + kRule);
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, 5000);
        QCOMPARE(m_page->table()->rowCount(), 1);
        QCOMPARE(m_page->table()->item(0, RulesPage::Name)->text(), QString("debug"));
        QCOMPARE(field<QLineEdit>("ruleMatch")->text(), QString("path:/hello"));

        m_page->addRule(); // unapplied
        writeFile(configPath(), kConfig);
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 2, 5000);
        QVERIFY(m_server->config()->rules.empty());
        QCOMPARE(m_page->table()->rowCount(), 2);
        QVERIFY(field<QLabel>("rulesNotice")->isVisible());
        m_page->revert();
        QCOMPARE(m_page->table()->rowCount(), 0);
    }

    // Traffic › context menu › Create rule from this exchange: the Rules tab with a new rule
    // matching the exchange's host, path (no query) and method, not applied.
    void createRuleFromExchange() {
        MainWindow window(m_server.get());
        window.show();
        QCOMPARE(fetch("/hello?x=1"), QByteArray("x-debug="));
        m_server->engine().flushCapture();
        auto* traffic = window.trafficPage();
        QTRY_VERIFY_WITH_TIMEOUT((traffic->poll(), traffic->model()->rowCount() >= 1), 5000);
        std::unique_ptr<QMenu> menu(traffic->contextMenuFor(0));
        auto* create = menu->findChild<QAction*>("createRule");
        QVERIFY(create);
        create->trigger();

        RulesPage* rules = window.rulesPage();
        QVERIFY(rules->isVisible());
        QCOMPARE(qobject_cast<QTabWidget*>(window.centralWidget())->tabText(2), QString("Rules"));
        QCOMPARE(int(rules->rules().size()), 1);
        const QString host = QUrl(m_server->firstHttpUrl()).authority();
        const QString expected = QString("host:%1 path:/hello method:GET").arg(host);
        QCOMPARE(QString::fromStdString(rules->rules()[0].match), expected);
        QCOMPARE(rules->rules()[0].stage, config::Rule::Stage::Request);
        QCOMPARE(rules->findChild<QLineEdit*>("ruleMatch")->text(), expected);
        QVERIFY(rules->problems().isEmpty());
        QVERIFY(rules->hasChanges());
        QVERIFY(m_server->config()->rules.empty()); // not applied

        capture::Exchange e;
        e.method = "GET";
        e.authority = "example.test";
        e.target = "http://example.test/a%20b/c?q=1";
        QCOMPARE(RulesPage::matchFor(e), QString("host:example.test path:/a%20b/c method:GET"));
        e.method = "CONNECT";
        e.target = "example.test:443";
        QCOMPARE(RulesPage::matchFor(e), QString("host:example.test method:CONNECT"));
    }

    // Matched: the engine's count for each rule in force, read every second while the tab is shown.
    void matchedColumnCounts() {
        open(QByteArray(kConfig) + kRule +
             "  - name: never\n    match: \"path:/nothing\"\n    actions:\n      - fail: 503\n");
        QCOMPARE(m_page->table()->rowCount(), 2);
        for (int i = 0; i < 3; ++i)
            QCOMPARE(fetch("/hello"), QByteArray("x-debug=on"));
        QTRY_COMPARE_WITH_TIMEOUT(m_page->table()->item(0, RulesPage::Matched)->text(), QString("3"),
                                  RulesPage::kMatchesMs * 3);
        QCOMPARE(m_page->table()->item(1, RulesPage::Matched)->text(), QString("0"));
        m_page->addRule(); // not in force: no count
        m_page->refreshMatches();
        QCOMPARE(m_page->table()->item(2, RulesPage::Matched)->text(), QString("—"));
    }
    // map_local: the loader's messages under the action (a file that is not there, map_local in a
    // response-stage rule) keep Apply off; a real file, typed as an absolute path, is shown relative
    // to the config's folder, applied as the absolute path, and a real request gets its content.
    void mapLocalAnswersFromAFile() {
        writeDevFile();
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/app.js");
        chooseKind(config::RuleAction::Kind::MapLocal);
        auto* path = field<QLineEdit>("mapLocal");
        QVERIFY(path->isVisible());
        QVERIFY(field<QToolButton>("mapLocalBrowse")->isVisible());
        QCOMPARE(path->text(), QString());
        QVERIFY2(errorLabel("action")->text().contains("empty path"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());

        typeInto(path, "./dev/missing.js");
        QVERIFY(errorLabel("action")->isVisible());
        QVERIFY2(errorLabel("action")->text().contains("does not exist") &&
                     errorLabel("action")->text().contains("missing.js"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());

        typeInto(path, devFile());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(), QString("map_local ./dev/app.js"));
        QCOMPARE(field<QListWidget>("ruleActions")->item(0)->text(), QString("map_local ./dev/app.js"));

        auto* stage = field<QComboBox>("ruleStage");
        stage->setCurrentIndex(stage->findData(int(config::Rule::Stage::Response)));
        QVERIFY2(errorLabel("action")->text().contains("acts at the request stage"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        stage->setCurrentIndex(stage->findData(int(config::Rule::Stage::Request)));
        QVERIFY(applyButton()->isEnabled());

        QCOMPARE(test::curlFetch({url("/app.js")}).status, 404); // no such route before Apply
        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!m_page->hasChanges());
        const auto& rules = m_server->config()->rules;
        QCOMPARE(rules.size(), std::size_t(1));
        QCOMPARE(rules[0].actions.size(), std::size_t(1));
        QCOMPARE(rules[0].actions[0].kind, config::RuleAction::Kind::MapLocal);
        QCOMPARE(QString::fromStdString(rules[0].actions[0].mapLocal), devFile());
        QCOMPARE(fetch("/app.js"), QByteArray("console.log('local');\n"));
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QVERIFY(saved.readAll().contains("map_local: ./dev/app.js"));
        // Loaded again from the rules in force, the field shows the path as the file has it.
        QCOMPARE(path->text(), QString("./dev/app.js"));
    }

    // map_remote: a URL with a path or another scheme shows the reader's own message and keeps
    // Apply off (and Revert on); a bare origin applies as one upstream with change_origin.
    void mapRemoteTakesAnOrigin() {
        m_page->addRule();
        QVERIFY(m_page->apply()); // the set_header rule in force; now its action becomes map_remote
        chooseKind(config::RuleAction::Kind::MapRemote);
        auto* url = field<QLineEdit>("mapRemote");
        QVERIFY(url->isVisible());
        QCOMPARE(url->placeholderText(), QString("http://127.0.0.1:3000"));
        QVERIFY(!applyButton()->isEnabled());

        typeInto(url, "http://127.0.0.1:1/base");
        QVERIFY(errorLabel("action")->isVisible());
        QVERIFY2(errorLabel("action")->text().contains("without a path") &&
                     errorLabel("action")->text().contains("http://127.0.0.1:1/base"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(field<QPushButton>("revertRules")->isEnabled());
        QVERIFY(!m_page->apply());
        QCOMPARE(m_server->config()->rules[0].actions[0].kind, config::RuleAction::Kind::SetHeader);
        QCOMPARE(field<QListWidget>("ruleActions")->item(0)->text(),
                 QString("map_remote http://127.0.0.1:1/base"));

        typeInto(url, "ftp://127.0.0.1:1");
        QVERIFY2(errorLabel("action")->text().contains("expected an upstream URL") &&
                     errorLabel("action")->text().contains("ftp://127.0.0.1:1"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());

        typeInto(url, "http://127.0.0.1:1");
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                 QString("map_remote http://127.0.0.1:1"));
        QVERIFY(m_page->apply());
        const config::RuleAction& a = m_server->config()->rules.at(0).actions.at(0);
        QCOMPARE(a.kind, config::RuleAction::Kind::MapRemote);
        QCOMPARE(a.mapRemote.upstreams.size(), std::size_t(1));
        QCOMPARE(a.mapRemote.upstreams[0].host, std::string("127.0.0.1"));
        QCOMPARE(int(a.mapRemote.upstreams[0].port), 1);
        QVERIFY(a.mapRemote.changeOrigin);
    }

    // A file that already has map_local and map_remote rules: the table and the forms show their
    // kinds and values as the file writes them, loading them is no edit, and an Apply of another
    // change keeps them as they were.
    void openWithMapRules() {
        writeDevFile();
        open(QByteArray(kConfig) + "rules:\n"
                                   "  - name: dev bundle\n"
                                   "    match: \"path:/app.js\"\n"
                                   "    actions:\n"
                                   "      - map_local: ./dev/app.js\n"
                                   "  - name: local cdn\n"
                                   "    match: \"host:cdn.example.com\"\n"
                                   "    actions:\n"
                                   "      - set_header: {X-A: \"1\"}\n"
                                   "      - map_remote: http://127.0.0.1:3000\n");
        QCOMPARE(m_page->table()->rowCount(), 2);
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(), QString("map_local ./dev/app.js"));
        QCOMPARE(m_page->table()->item(1, RulesPage::Actions)->text(),
                 QString("set X-A: 1; map_remote http://127.0.0.1:3000"));
        const std::vector<config::Rule> before = m_server->config()->rules;

        auto* kind = field<QComboBox>("actionKind");
        m_page->select(0);
        QCOMPARE(kind->currentData().toInt(), int(config::RuleAction::Kind::MapLocal));
        QCOMPARE(field<QLineEdit>("mapLocal")->text(), QString("./dev/app.js"));
        QVERIFY(field<QLineEdit>("mapLocal")->isVisible());
        m_page->select(1);
        auto* actions = field<QListWidget>("ruleActions");
        QCOMPARE(actions->count(), 2);
        QCOMPARE(actions->item(1)->text(), QString("map_remote http://127.0.0.1:3000"));
        actions->setCurrentRow(1);
        QCOMPARE(kind->currentData().toInt(), int(config::RuleAction::Kind::MapRemote));
        QCOMPARE(field<QLineEdit>("mapRemote")->text(), QString("http://127.0.0.1:3000"));
        QVERIFY(field<QLineEdit>("mapRemote")->isVisible());
        QVERIFY(!m_page->hasChanges());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(!applyButton()->isEnabled());

        typeInto(field<QLineEdit>("ruleName"), "cdn");
        QVERIFY(m_page->apply());
        const auto& rules = m_server->config()->rules;
        QCOMPARE(rules.size(), std::size_t(2));
        QCOMPARE(rules[1].name, std::string("cdn"));
        QVERIFY(rules[0] == before[0]);
        QVERIFY(rules[1].actions == before[1].actions);
        QCOMPARE(rules[0].actions[0].kind, config::RuleAction::Kind::MapLocal);
        QCOMPARE(rules[1].actions[1].kind, config::RuleAction::Kind::MapRemote);
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QByteArray text = saved.readAll();
        QVERIFY2(text.contains("map_local: ./dev/app.js") &&
                     text.contains("map_remote: http://127.0.0.1:3000"),
                 text.constData());
        QCOMPARE(fetch("/app.js"), QByteArray("console.log('local');\n"));
    }

    // throttle from a preset: the fields show the reader's values for it and cannot be edited; Apply
    // puts the preset's name and those values in the config in force, and the file keeps the name.
    // The validator's message for a throttle in a response-stage rule keeps Apply off.
    void throttlePresetGivesItsValues() {
        const config::RuleAction fast3g = presetAction("Fast 3G");
        QVERIFY(fast3g.kind == config::RuleAction::Kind::Throttle);
        QVERIFY(fast3g.throttleLatency.count() > 0 && fast3g.throttleDown > 0 && fast3g.throttleUp > 0);
        QVERIFY(!(fast3g.throttleLatency == presetAction("Slow 3G").throttleLatency &&
                  fast3g.throttleDown == presetAction("Slow 3G").throttleDown));

        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        chooseKind(config::RuleAction::Kind::Throttle);
        auto* preset = field<QComboBox>("throttlePreset");
        auto* latency = field<QLineEdit>("throttleLatency");
        auto* down = field<QLineEdit>("throttleDown");
        auto* up = field<QLineEdit>("throttleUp");
        QVERIFY(preset->isVisible() && latency->isVisible() && down->isVisible() && up->isVisible());
        QCOMPARE(preset->count(), 5);
        QCOMPARE(preset->itemText(0), QString("Custom"));
        QCOMPARE(preset->currentText(), QString("Slow 3G")); // a new throttle starts from a preset

        preset->setCurrentIndex(preset->findText("Fast 3G"));
        QVERIFY(!latency->isEnabled() && !down->isEnabled() && !up->isEnabled());
        QCOMPARE(latency->text().toDouble() * 1e6, double(fast3g.throttleLatency.count()));
        QCOMPARE(qRound64(down->text().toDouble() * 125), qint64(fast3g.throttleDown));
        QCOMPARE(qRound64(up->text().toDouble() * 125), qint64(fast3g.throttleUp));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(), QString("throttle Fast 3G"));
        QCOMPARE(field<QListWidget>("ruleActions")->item(0)->text(), QString("throttle Fast 3G"));

        QVERIFY(applyButton()->isEnabled());
        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!m_page->hasChanges());
        const config::RuleAction& a = m_server->config()->rules.at(0).actions.at(0);
        QCOMPARE(a.kind, config::RuleAction::Kind::Throttle);
        QCOMPARE(a.throttlePreset, std::string("Fast 3G"));
        QCOMPARE(a.throttleLatency.count(), fast3g.throttleLatency.count());
        QCOMPARE(a.throttleDown, fast3g.throttleDown);
        QCOMPARE(a.throttleUp, fast3g.throttleUp);
        QVERIFY2(savedText().contains("Fast 3G"), savedText().constData());

        // Request stage only: the validator's message, under the rule's form, keeps Apply off.
        auto* stage = field<QComboBox>("ruleStage");
        choose(stage, int(config::Rule::Stage::Response));
        QVERIFY(errorLabel("action")->isVisible());
        QVERIFY2(errorLabel("action")->text().contains("throttle") &&
                     errorLabel("action")->text().contains("stage: response"),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());
        choose(stage, int(config::Rule::Stage::Request));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));

        reopenSaved();
        m_page->select(0);
        QCOMPARE(field<QComboBox>("throttlePreset")->currentText(), QString("Fast 3G"));
        QVERIFY(!field<QLineEdit>("throttleLatency")->isEnabled());
        QVERIFY(!m_page->hasChanges());
    }

    // throttle with custom values: ms and kbit/s typed become nanoseconds and bytes per second, an
    // empty rate is not limited; Apply and the saved file keep them, and the form shows them again.
    void throttleCustomValuesRoundTrip() {
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        chooseKind(config::RuleAction::Kind::Throttle);
        auto* preset = field<QComboBox>("throttlePreset");
        preset->setCurrentIndex(preset->findText("Custom"));
        auto* latency = field<QLineEdit>("throttleLatency");
        auto* down = field<QLineEdit>("throttleDown");
        auto* up = field<QLineEdit>("throttleUp");
        QVERIFY(latency->isEnabled() && down->isEnabled() && up->isEnabled());
        typeInto(latency, "400");
        typeInto(down, "400");
        typeInto(up, "");
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                 QString("throttle 400 ms, ↓400 kbit/s"));
        typeInto(up, "250");
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                 QString("throttle 400 ms, ↓400 kbit/s ↑250 kbit/s"));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));

        QVERIFY(m_page->apply());
        const config::RuleAction& a = m_server->config()->rules.at(0).actions.at(0);
        QCOMPARE(a.kind, config::RuleAction::Kind::Throttle);
        QCOMPARE(a.throttlePreset, std::string());
        QCOMPARE(qint64(a.throttleLatency.count()), qint64(400) * 1000 * 1000);
        QCOMPARE(a.throttleDown, std::uint64_t(50000)); // 400 kbit/s
        QCOMPARE(a.throttleUp, std::uint64_t(31250));   // 250 kbit/s
        const std::vector<config::Rule> applied = m_server->config()->rules;

        reopenSaved();
        const config::RuleAction& b = m_server->config()->rules.at(0).actions.at(0);
        QCOMPARE(b.throttlePreset, std::string());
        QCOMPARE(b.throttleLatency.count(), applied[0].actions[0].throttleLatency.count());
        QCOMPARE(b.throttleDown, applied[0].actions[0].throttleDown);
        QCOMPARE(b.throttleUp, applied[0].actions[0].throttleUp);
        m_page->select(0);
        QCOMPARE(field<QComboBox>("throttlePreset")->currentText(), QString("Custom"));
        QCOMPARE(field<QLineEdit>("throttleLatency")->text(), QString("400"));
        QCOMPARE(field<QLineEdit>("throttleDown")->text(), QString("400"));
        QCOMPARE(field<QLineEdit>("throttleUp")->text(), QString("250"));
        QVERIFY(field<QLineEdit>("throttleDown")->isEnabled());
        QVERIFY(!m_page->hasChanges());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
    }

    // replace_body: a regex the loader refuses shows its message under the action and keeps Apply
    // off; a good one and its replacement (a group, in a response-stage rule) are applied, a real
    // response is rewritten, and the file keeps them and shows them again.
    void replaceBodyFieldsRoundTrip() {
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        chooseKind(config::RuleAction::Kind::ReplaceBody);
        auto* regex = field<QLineEdit>("replaceRegex");
        auto* with = field<QLineEdit>("replaceWith");
        QVERIFY(regex->isVisible() && with->isVisible());
        auto* stage = field<QComboBox>("ruleStage");
        choose(stage, int(config::Rule::Stage::Response));

        typeInto(regex, "x-(\\w+=");
        typeInto(with, "rewritten-$1:");
        QVERIFY(errorLabel("action")->isVisible());
        QVERIFY2(errorLabel("action")->text().contains("invalid regular expression") &&
                     errorLabel("action")->text().contains("x-(\\w+="),
                 qPrintable(errorLabel("action")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());
        QVERIFY(m_server->config()->rules.empty());

        typeInto(regex, "x-(\\w+)=");
        QVERIFY(!errorLabel("action")->isVisible());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                 QString("replace_body /x-(\\w+)=/ → rewritten-$1:"));
        QVERIFY(applyButton()->isEnabled());
        QCOMPARE(fetch("/hello"), QByteArray("x-debug="));
        QVERIFY(m_page->apply());
        const config::Rule& r = m_server->config()->rules.at(0);
        QCOMPARE(r.stage, config::Rule::Stage::Response);
        QCOMPARE(r.actions.at(0).kind, config::RuleAction::Kind::ReplaceBody);
        QCOMPARE(r.actions[0].regex, std::string("x-(\\w+)="));
        QCOMPARE(r.actions[0].replaceWith, std::string("rewritten-$1:"));
        QCOMPARE(fetch("/hello"), QByteArray("rewritten-debug:"));

        reopenSaved();
        m_page->select(0);
        QCOMPARE(field<QComboBox>("actionKind")->currentData().toInt(),
                 int(config::RuleAction::Kind::ReplaceBody));
        QCOMPARE(field<QLineEdit>("replaceRegex")->text(), QString("x-(\\w+)="));
        QCOMPARE(field<QLineEdit>("replaceWith")->text(), QString("rewritten-$1:"));
        QVERIFY(!m_page->hasChanges());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(fetch("/hello"), QByteArray("rewritten-debug:"));
    }

    // fail with close and with timeout: chosen in the form (no status then), summarised, applied,
    // saved and shown again from the file.
    void failCloseAndTimeout() {
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        chooseKind(config::RuleAction::Kind::Fail);
        auto* with = field<QComboBox>("failWith");
        QVERIFY(with->isVisible());
        choose(with, int(config::RuleAction::Failure::Close));
        QVERIFY(!with->itemData(with->currentIndex(), Qt::ToolTipRole).toString().isEmpty());
        QVERIFY(!field<QSpinBox>("failStatus")->isEnabled());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(), QString("fail → close"));
        QVERIFY(m_page->apply());
        QCOMPARE(m_server->config()->rules.at(0).actions.at(0).failure, config::RuleAction::Failure::Close);
        const test::CurlReply closed = test::curlFetch({url("/hello")});
        QCOMPARE(closed.status, 0); // no answer: curl's "Empty reply from server"
        QCOMPARE(closed.exitCode, 52);
        reopenSaved();
        m_page->select(0);
        with = field<QComboBox>("failWith");
        QCOMPARE(with->currentData().toInt(), int(config::RuleAction::Failure::Close));
        QVERIFY(!m_page->hasChanges());

        choose(with, int(config::RuleAction::Failure::Timeout));
        QVERIFY(!with->itemData(with->currentIndex(), Qt::ToolTipRole).toString().isEmpty());
        field<QDoubleSpinBox>("failRate")->setValue(0.25);
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(), QString("fail 25 % → timeout"));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(m_page->apply());
        const config::RuleAction& a = m_server->config()->rules.at(0).actions.at(0);
        QCOMPARE(a.failure, config::RuleAction::Failure::Timeout);
        QCOMPARE(a.rate, 0.25);
        reopenSaved();
        m_page->select(0);
        QCOMPARE(field<QComboBox>("failWith")->currentData().toInt(),
                 int(config::RuleAction::Failure::Timeout));
        QCOMPARE(field<QDoubleSpinBox>("failRate")->value(), 0.25);
        QVERIFY(!m_page->hasChanges());
    }

    // breakpoint: chosen from the action kinds it starts with the default timeout (5m); a timeout
    // typed as the file writes it reaches the rule (empty: the default again), at the response stage
    // too and after another action; Apply puts it in the config in force and the file, and the form
    // shows it again from the file. (No request is made: it would wait in the Paused queue.)
    void breakpointFormTakesATimeout() {
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        QTest::mouseClick(field<QPushButton>("addAction"), Qt::LeftButton); // after a set_header
        chooseKind(config::RuleAction::Kind::Breakpoint);
        auto* timeout = field<QLineEdit>("breakpointTimeout");
        QVERIFY(timeout->isVisible());
        QCOMPARE(timeout->text(), QString("5m"));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                 QString("set X-Debug: 1; breakpoint (timeout 5m)"));

        typeInto(timeout, "90s");
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QCOMPARE(field<QListWidget>("ruleActions")->item(1)->text(), QString("breakpoint (timeout 90s)"));
        const config::RuleAction& edited = m_page->rules().at(0).actions.at(1);
        QCOMPARE(edited.kind, config::RuleAction::Kind::Breakpoint);
        QVERIFY(edited.breakpointTimeout == std::chrono::seconds(90));
        typeInto(timeout, "");
        QVERIFY(m_page->rules().at(0).actions.at(1).breakpointTimeout == std::chrono::minutes(5));
        typeInto(timeout, "90s");
        choose(field<QComboBox>("ruleStage"), int(config::Rule::Stage::Response));
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(!errorLabel("action")->isVisible());

        QVERIFY(applyButton()->isEnabled());
        QVERIFY(m_page->apply());
        const config::Rule& r = m_server->config()->rules.at(0);
        QCOMPARE(r.stage, config::Rule::Stage::Response);
        QCOMPARE(r.actions.size(), std::size_t(2));
        QCOMPARE(r.actions[1].kind, config::RuleAction::Kind::Breakpoint);
        QVERIFY(r.actions[1].breakpointTimeout == std::chrono::seconds(90));
        QVERIFY2(savedText().contains("breakpoint: {timeout: 90s}"), savedText().constData());

        reopenSaved();
        m_page->select(0);
        field<QListWidget>("ruleActions")->setCurrentRow(1);
        QCOMPARE(field<QComboBox>("actionKind")->currentData().toInt(),
                 int(config::RuleAction::Kind::Breakpoint));
        QCOMPARE(field<QLineEdit>("breakpointTimeout")->text(), QString("90s"));
        QVERIFY(!m_page->hasChanges());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
    }

    // A timeout the loader refuses (outside 1s..24h, no unit, not a duration) shows the reader's
    // message under the action, is summarised as typed and keeps Apply off; a good one clears it.
    // Another kind chosen drops the text typed, and breakpoint again shows the last good timeout.
    void breakpointBadTimeoutKeepsApplyOff() {
        m_page->addRule();
        typeInto(field<QLineEdit>("ruleMatch"), "path:/hello");
        chooseKind(config::RuleAction::Kind::Breakpoint);
        auto* timeout = field<QLineEdit>("breakpointTimeout");
        QLabel* error = errorLabel("action");
        const struct {
            const char* typed;
            const char* message;
        } bad[] = {{"25h", "timeout must be between 1s and 24h, got 25h"},
                   {"999ms", "timeout must be between 1s and 24h, got 999ms"},
                   {"30", "duration '30' needs a unit"},
                   {"soon", "invalid duration 'soon'"}};
        for (const auto& b : bad) {
            typeInto(timeout, b.typed);
            QVERIFY2(error->isVisible(), b.typed);
            QVERIFY2(error->text().contains(b.message), qPrintable(error->text()));
            QCOMPARE(m_page->table()->item(0, RulesPage::Actions)->text(),
                     QString("breakpoint (timeout %1)").arg(b.typed));
            QVERIFY(m_page->hasChanges());
            QVERIFY(!applyButton()->isEnabled());
            QVERIFY(!m_page->apply());
            QVERIFY(m_server->config()->rules.empty());
        }

        typeInto(timeout, "24h");
        QVERIFY(!error->isVisible());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(applyButton()->isEnabled());
        QVERIFY(m_page->rules().at(0).actions.at(0).breakpointTimeout == std::chrono::hours(24));

        QTest::keyClick(timeout, Qt::Key_Backspace); // "24": refused, the rule keeps 24h
        QVERIFY(error->isVisible());
        QVERIFY(m_page->rules().at(0).actions.at(0).breakpointTimeout == std::chrono::hours(24));
        chooseKind(config::RuleAction::Kind::SetHeader);
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        chooseKind(config::RuleAction::Kind::Breakpoint);
        QCOMPARE(timeout->text(), QString("24h"));
        QVERIFY(!error->isVisible());
        QVERIFY(applyButton()->isEnabled());
    }
};

QTEST_MAIN(TestRulesPage)
#include "tst_rules_page.moc"

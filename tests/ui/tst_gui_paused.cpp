// The Paused tab (rule breakpoints) against a real in-process server: curl requests that match a
// `breakpoint` rule wait in the list, and the page's widgets decide them: an edited header resumed
// (the route and the record see the edit), an answer written in the Respond form, Abort › Reset,
// two paused at once (F8 resumes one, Ctrl+F8 the rest), the tab's count, a malformed edit's
// error inline, a timeout that takes the exchange away from under the editor, a body that is not
// UTF-8 kept byte for byte, and a response-stage pause with its status edited.
#include "mainwindow.h"
#include "paused/pausedpage.h"
#include "servercontroller.h"
#include "test_support.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

using namespace portico;
using portico::ui::MainWindow;
using portico::ui::PausedModel;
using portico::ui::PausedPage;
using portico::ui::ServerController;

namespace {

// /pause echoes the request's X-Test, method and body, so an edit made while paused is seen in
// the answer; /short pauses for at most 1 s; /answer pauses at the response stage.
const char* kConfig =
    "listen: [127.0.0.1:0]\n"
    "capture: true\n"
    "rules:\n"
    "  - name: pause\n"
    "    match: \"path:/pause\"\n"
    "    actions: [{breakpoint: {timeout: 30s}}]\n"
    "  - name: short\n"
    "    match: \"path:/short\"\n"
    "    actions: [{breakpoint: {timeout: 1s}}]\n"
    "  - name: answer\n"
    "    stage: response\n"
    "    match: \"path:/answer\"\n"
    "    actions: [{breakpoint: {timeout: 30s}}]\n"
    "vhosts:\n"
    "  - routes:\n"
    "      - path: /pause\n"
    "        respond: {body: \"x-test={{header.X-Test}} method={{method}} body={{body}}\"}\n"
    "      - path: /short\n"
    "        respond: {body: \"x-test={{header.X-Test}}\"}\n"
    "      - path: /answer\n"
    "        respond: {status: 200, headers: {X-From: route}, body: \"from the route\"}\n";

/// A curl run in the background: `--max-time 20`, the body on stdout, the status on stderr's last
/// line.
struct Curl {
    std::unique_ptr<QProcess> process = std::make_unique<QProcess>();

    void start(const QStringList& args) {
        process->setProgram("curl");
        process->setArguments(
            QStringList{"-sS", "--max-time", "20", "--noproxy", "*", "-w", "%{stderr}\n%{http_code}"} + args);
        process->start();
    }
    bool running() const { return process->state() != QProcess::NotRunning; }
    bool finished() {
        if (running()) process->waitForFinished(50);
        return !running();
    }
    int exitCode() const { return process->exitStatus() == QProcess::NormalExit ? process->exitCode() : -1; }
    QByteArray body() { return process->readAllStandardOutput(); }
    int status() {
        const QByteArray err = process->readAllStandardError();
        return err.mid(err.lastIndexOf('\n') + 1).trimmed().toInt();
    }
    ~Curl() {
        if (running()) {
            process->kill();
            process->waitForFinished(2000);
        }
    }
};

} // namespace

class TestGuiPaused : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;
    std::unique_ptr<MainWindow> m_window;

    PausedPage* page() const { return m_window->pausedPage(); }
    QString url(const QString& path) const { return m_server->firstHttpUrl() + path.mid(1); }
    QTabWidget* tabs() const { return qobject_cast<QTabWidget*>(m_window->centralWidget()); }
    QString tabTitle() const { return tabs()->tabText(tabs()->indexOf(page())); }

    template <class T> T* field(const QString& name) const {
        T* w = page()->findChild<T*>(name);
        if (!w) qWarning("no widget %s", qPrintable(name));
        return w;
    }

    /// The row of header `name` in `table`, -1 when it has none.
    static int headerRow(const QTableWidget* table, const QString& name) {
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 0) && table->item(r, 0)->text().compare(name, Qt::CaseInsensitive) == 0)
                return r;
        return -1;
    }

    /// The capture record of the newest exchange with `target`.
    std::optional<capture::Exchange> record(const std::string& target) {
        m_server->engine().flushCapture();
        const auto all = m_server->engine().recentExchanges(0);
        for (auto it = all.rbegin(); it != all.rend(); ++it)
            if (it->target == target) return m_server->engine().exchange(it->id);
        return std::nullopt;
    }

    void activate() {
        m_window->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    }

private slots:
    void initTestCase() {
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.path() + "/settings");
    }

    void init() {
        QFile f(m_dir.path() + "/portico.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(kConfig);
        f.close();
        m_server = std::make_unique<ServerController>();
        QVERIFY(m_server->engine().breakpointsEnabled());
        QString error;
        QVERIFY2(m_server->open(m_dir.path() + "/portico.yaml", &error, false), qPrintable(error));
        m_window = std::make_unique<MainWindow>(m_server.get());
        m_window->resize(1280, 800);
        m_window->show();
        activate();
        m_window->showTab("sites");
        QCOMPARE(page()->count(), 0);
        QCOMPARE(tabTitle(), QString("Paused"));
    }

    void cleanup() {
        if (m_server) m_server->engine().decideAllPaused({}); // no curl left waiting
        m_window.reset();
        m_server.reset();
    }

    // The empty state says how to pause something.
    void emptyStateExplains() {
        QVERIFY(m_window->showTab("paused"));
        auto* empty = field<QLabel>("pausedEmpty");
        QVERIFY(empty && empty->isVisible());
        QVERIFY2(empty->text().contains("breakpoint") && empty->text().contains("path:/checkout method:POST"),
                 qPrintable(empty->text()));
        QVERIFY(!field<QPushButton>("resumeAllButton")->isEnabled());
    }

    // (1) A header edited in the table, then Resume: the route answers with the edited value, and
    // the record lists the rule and carries the edited header. A refresh meanwhile keeps the edit.
    void editedHeaderIsResumed() {
        Curl curl;
        curl.start({"-H", "X-Test: original", url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        // A new pause brings the tab forward and selects it in the editor.
        QCOMPARE(tabs()->currentWidget(), page());
        QCOMPARE(tabTitle(), QString("Paused (1)"));
        const PausedModel* model = page()->model();
        const std::uint64_t id = model->at(0)->id;
        QCOMPARE(page()->selectedId(), id);
        QCOMPARE(model->data(model->index(0, PausedModel::Stage)).toString(), QString("request"));
        QCOMPARE(model->data(model->index(0, PausedModel::Rule)).toString(), QString("pause"));
        QCOMPARE(model->data(model->index(0, PausedModel::Method)).toString(), QString("GET"));
        QVERIFY(model->data(model->index(0, PausedModel::Url)).toString().endsWith("/pause"));
        QCOMPARE(field<QComboBox>("pausedMethod")->currentText(), QString("GET"));
        QCOMPARE(field<QLineEdit>("pausedTarget")->text(), QString("/pause"));
        QVERIFY(curl.running());

        auto* headers = field<QTableWidget>("pausedHeaders");
        const int row = headerRow(headers, "X-Test");
        QVERIFY(row >= 0);
        QCOMPARE(headers->item(row, 1)->text(), QString("original"));
        headers->item(row, 1)->setText("edited");
        // The list refreshes (the clocks, another exchange's change): the edit stays.
        page()->refresh();
        QTest::qWait(1100);
        QCOMPARE(headers->item(row, 1)->text(), QString("edited"));
        QCOMPARE(page()->selectedId(), id);

        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.exitCode(), 0);
        QCOMPARE(curl.status(), 200);
        QCOMPARE(curl.body(), QByteArray("x-test=edited method=GET body="));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 0, 10000);
        QCOMPARE(tabTitle(), QString("Paused"));
        QVERIFY2(page()->message().contains("resumed with your edits"), qPrintable(page()->message()));
        QVERIFY(!page()->messageIsError());

        std::optional<capture::Exchange> r;
        QTRY_VERIFY_WITH_TIMEOUT((r = record("/pause")).has_value(), 10000);
        QCOMPARE(r->requestHeader("X-Test"), std::string_view("edited"));
        // The record says which rule held it and what the user did.
        QVERIFY2(std::find(r->rules.begin(), r->rules.end(),
                           "pause: breakpoint (resumed with changes: headers)") != r->rules.end(),
                 capture::joinRuleNames(r->rules).c_str());
    }

    // (2) Respond…: the form is prefilled (200, text/plain); 418 with a body is what curl gets.
    void respondAnswers() {
        Curl curl;
        curl.start({url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        QTest::mouseClick(field<QPushButton>("respondButton"), Qt::LeftButton);
        QVERIFY(field<QWidget>("respondForm")->isVisible());
        auto* status = field<QSpinBox>("respondStatus");
        QCOMPARE(status->value(), 200);
        auto* headers = field<QTableWidget>("respondHeaders");
        const int type = headerRow(headers, "Content-Type");
        QVERIFY(type >= 0);
        QVERIFY(headers->item(type, 1)->text().startsWith("text/plain"));
        status->setValue(418);
        field<QPlainTextEdit>("respondBody")->setPlainText("short and stout\n");
        QTest::mouseClick(field<QPushButton>("respondAddHeader"), Qt::LeftButton);
        QCOMPARE(headers->rowCount(), 2);
        headers->item(1, 0)->setText("X-Teapot");
        headers->item(1, 1)->setText("yes");
        QTest::mouseClick(field<QPushButton>("respondSend"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.exitCode(), 0);
        QCOMPARE(curl.status(), 418);
        QCOMPARE(curl.body(), QByteArray("short and stout\n"));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 0, 10000);
        QVERIFY2(page()->message().contains("answered with 418"), qPrintable(page()->message()));
        std::optional<capture::Exchange> r;
        QTRY_VERIFY_WITH_TIMEOUT((r = record("/pause")).has_value(), 10000);
        QCOMPARE(r->status, 418);
        QCOMPARE(r->responseHeader("X-Teapot"), std::string_view("yes"));
    }

    // (3) Abort › Reset: curl sees the connection reset (56) or closed without an answer (52).
    void abortResets() {
        Curl curl;
        curl.start({url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        auto* reset = page()->findChild<QAction*>("abortReset");
        QVERIFY(reset);
        QVERIFY(field<QPushButton>("abortButton")->menu()->actions().contains(reset));
        reset->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QVERIFY2(
            curl.exitCode() == 56 || curl.exitCode() == 52,
            qPrintable(
                QString("curl exit %1: %2").arg(curl.exitCode()).arg(curl.process->readAllStandardError())));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 0, 10000);
        QVERIFY2(page()->message().contains("aborted"), qPrintable(page()->message()));
    }

    // (4, 5) Two paused at once: F8 resumes the selected one only, the other stays listed (and
    // selected next); Ctrl+F8 resumes the rest. The tab's title counts them.
    void twoPausedResumeOneThenAll() {
        QVERIFY(m_window->showTab("paused"));
        Curl a, b;
        a.start({"-H", "X-Test: a", url("/pause?n=1")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        b.start({"-H", "X-Test: b", url("/pause?n=2")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 2, 10000);
        QCOMPARE(tabTitle(), QString("Paused (2)"));
        const std::uint64_t first = page()->model()->at(0)->id, second = page()->model()->at(1)->id;
        QVERIFY(second > first);
        // The editor stays on the first (a new pause does not take the selection away).
        QCOMPARE(page()->selectedId(), first);
        QVERIFY(page()->select(second));
        QCOMPARE(field<QLineEdit>("pausedTarget")->text(), QString("/pause?n=2"));
        activate();
        page()->view()->setFocus();
        QTest::keyClick(page()->view(), Qt::Key_F8);
        QTRY_VERIFY_WITH_TIMEOUT(b.finished(), 10000);
        QCOMPARE(b.exitCode(), 0);
        QCOMPARE(b.body(), QByteArray("x-test=b method=GET body="));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        QCOMPARE(page()->model()->at(0)->id, first);
        QCOMPARE(page()->selectedId(), first);
        QCOMPARE(tabTitle(), QString("Paused (1)"));
        QTest::qWait(300);
        QVERIFY(a.running());

        QTest::keyClick(page()->view(), Qt::Key_F8, Qt::ControlModifier);
        QTRY_VERIFY_WITH_TIMEOUT(a.finished(), 10000);
        QCOMPARE(a.exitCode(), 0);
        QCOMPARE(a.body(), QByteArray("x-test=a method=GET body="));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 0, 10000);
        QCOMPARE(tabTitle(), QString("Paused"));
        QVERIFY(field<QLabel>("pausedEmpty")->isVisible());
    }

    // A malformed edit is refused inline (red, no dialog) and the exchange stays paused; fixed, it
    // resumes.
    void malformedEditIsShownInline() {
        Curl curl;
        curl.start({url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        field<QComboBox>("pausedMethod")->setCurrentText("NOT A METHOD");
        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QVERIFY(page()->messageIsError());
        QVERIFY2(page()->message().contains("method"), qPrintable(page()->message()));
        QVERIFY(field<QLabel>("pausedMessage")->isVisible());
        QCOMPARE(page()->count(), 1);
        QTest::qWait(300);
        QVERIFY(curl.running());
        field<QComboBox>("pausedMethod")->setCurrentText("PUT");
        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.body(), QByteArray("x-test= method=PUT body="));
        QVERIFY(!page()->messageIsError());
    }

    // An exchange that times out while it is being edited: the page says it is gone, and it went
    // on unchanged.
    void timedOutExchangeIsGone() {
        Curl curl;
        curl.start({"-H", "X-Test: kept", url("/short")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        const std::uint64_t id = page()->selectedId();
        QVERIFY(id != 0);
        auto* headers = field<QTableWidget>("pausedHeaders");
        const int row = headerRow(headers, "X-Test");
        QVERIFY(row >= 0);
        headers->item(row, 1)->setText("never sent");
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.body(), QByteArray("x-test=kept"));
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 0, 10000);
        QVERIFY2(page()->message().contains(QString("Exchange %1 is gone").arg(id)),
                 qPrintable(page()->message()));
        QVERIFY2(page()->message().contains("timeout"), qPrintable(page()->message()));
        QCOMPARE(page()->selectedId(), std::uint64_t(0));
    }

    // A body that is not UTF-8 is shown read-only with a note, and resumed byte for byte.
    void binaryBodyIsKept() {
        const QByteArray bytes("caf\xe9 \xff\xfe end", 11);
        QFile f(m_dir.path() + "/binary.bin");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
        f.close();
        Curl curl;
        curl.start({"-H", "Content-Type: application/octet-stream", "--data-binary", "@" + f.fileName(),
                    url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        QCOMPARE(field<QComboBox>("pausedMethod")->currentText(), QString("POST"));
        auto* body = field<QPlainTextEdit>("pausedBody");
        QVERIFY(body->isReadOnly());
        auto* note = field<QLabel>("pausedBodyNote");
        QVERIFY(note->isVisible());
        QVERIFY2(note->text().contains("UTF-8"), qPrintable(note->text()));
        QCOMPARE(page()->editedMessage()->body, std::string(bytes.constData(), std::size_t(bytes.size())));
        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.body(), QByteArray("x-test= method=POST body=") + bytes);
        QVERIFY2(page()->message().endsWith("resumed."), qPrintable(page()->message()));
    }

    // A response-stage pause shows the answer (status, headers, body); an edited status goes out.
    void responseStageStatusEdited() {
        Curl curl;
        curl.start({url("/answer")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        const PausedModel* model = page()->model();
        QCOMPARE(model->data(model->index(0, PausedModel::Stage)).toString(), QString("response"));
        auto* status = field<QSpinBox>("pausedStatus");
        QVERIFY(status->isVisible());
        QVERIFY(!field<QLineEdit>("pausedTarget")->isVisible());
        QCOMPARE(status->value(), 200);
        QCOMPARE(field<QPlainTextEdit>("pausedBody")->toPlainText(), QString("from the route"));
        QVERIFY(headerRow(field<QTableWidget>("pausedHeaders"), "X-From") >= 0);
        status->setValue(201);
        field<QPlainTextEdit>("pausedBody")->setPlainText("edited answer");
        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.exitCode(), 0);
        QCOMPARE(curl.status(), 201);
        QCOMPARE(curl.body(), QByteArray("edited answer"));
    }

    // Over HTTP/2 (h2c) only the stream waits; the summary says so, and it resumes.
    void http2StreamPauses() {
        Curl curl;
        curl.start({"--http2-prior-knowledge", "-H", "X-Test: h2", url("/pause")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        QCOMPARE(page()->model()->at(0)->httpVersion, 2);
        auto* summary = field<QLabel>("pausedSummary");
        QVERIFY2(summary->text().contains("HTTP/2"), qPrintable(summary->text()));
        QCOMPARE(field<QLineEdit>("pausedTarget")->text(), QString("/pause"));
        QTest::mouseClick(field<QPushButton>("resumeButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(curl.finished(), 10000);
        QCOMPARE(curl.exitCode(), 0);
        QCOMPARE(curl.body(), QByteArray("x-test=h2 method=GET body="));
    }

    // The window with one paused exchange selected, for the docs (PORTICO_SCREENSHOT_DIR).
    void screenshot() {
        const QByteArray dir = qgetenv("PORTICO_SCREENSHOT_DIR");
        if (dir.isEmpty()) QSKIP("PORTICO_SCREENSHOT_DIR is not set");
        Curl curl;
        curl.start({"-X", "POST", "-H", "Content-Type: application/json", "-H", "X-Test: checkout", "--data",
                    "{\"cart\": 42, \"coupon\": \"SPRING\"}", url("/pause?step=pay")});
        QTRY_COMPARE_WITH_TIMEOUT(page()->count(), 1, 10000);
        QTest::qWait(1500); // the clocks have ticked
        const QString file = QString::fromLocal8Bit(dir) + "/gui-paused.png";
        QVERIFY2(m_window->grab().save(file, "PNG"), qPrintable(file));
        qInfo("screenshot: %s", qPrintable(file));
    }
};

QTEST_MAIN(TestGuiPaused)
#include "tst_gui_paused.moc"

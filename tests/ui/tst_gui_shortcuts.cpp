// Every keyboard shortcut that docs/gui.md lists is pressed on the main window and does what the
// table says; no key is bound twice (Qt would print "Ambiguous shortcut overload" and do nothing);
// the Help menu's shortcut list, About box and guide; the title's mark for unapplied edits and the
// quit prompt's "Apply and quit".
#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "mainwindow.h"
#include "paused/pausedpage.h"
#include "rules/rulespage.h"
#include "servercontroller.h"
#include "sites/sitespage.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include "inspector/inspectorwidget.h"
#include "test_support.h"

#include <portico/load/runner.h>

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>
#include <QUrl>
#include <QtTest>

#include <functional>

using namespace portico;
using portico::ui::MainWindow;
using portico::ui::ServerController;

namespace {

QStringList g_warnings;
QtMessageHandler g_previous = nullptr;
void collect(QtMsgType type, const QMessageLogContext& context, const QString& text) {
    if (text.contains("Ambiguous shortcut")) g_warnings << text;
    if (g_previous) g_previous(type, context, text);
}

// The key cells of docs/gui.md's "Keyboard shortcuts" table, one entry per key sequence:
// "Ctrl+1 … Ctrl+5" is five, "Ctrl+T or Ctrl+Return, Ctrl+." three, "Space (in the table)" Space.
QStringList documentedKeys(QString& error) {
    QFile f(portico::test::sourceDir() + "/docs/gui.md");
    if (!f.open(QIODevice::ReadOnly)) {
        error = f.fileName() + ": cannot read";
        return {};
    }
    const QString text = QString::fromUtf8(f.readAll());
    const int start = text.indexOf("## Keyboard shortcuts");
    if (start < 0) {
        error = "docs/gui.md has no '## Keyboard shortcuts' section";
        return {};
    }
    const int end = text.indexOf("\n## ", start + 1);
    QStringList keys;
    for (const QString& line : text.mid(start, end < 0 ? -1 : end - start).split('\n')) {
        if (!line.startsWith("| ") || line.startsWith("| keys") || line.startsWith("| ---")) continue;
        QString cell = line.section('|', 1, 1).trimmed();
        cell.remove(QRegularExpression(R"(\s*\([^)]*\))")); // "(in the table)"
        const auto range = QRegularExpression(R"(^Ctrl\+(\d) … Ctrl\+(\d)$)").match(cell);
        if (range.hasMatch()) {
            for (int i = range.captured(1).toInt(); i <= range.captured(2).toInt(); ++i)
                keys << QString("Ctrl+%1").arg(i);
            continue;
        }
        for (QString k : cell.split(QRegularExpression(R"(, | or )"))) {
            k = k.trimmed();
            if (!k.isEmpty()) keys << k;
        }
    }
    return keys;
}

} // namespace

class TestGuiShortcuts : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;
    std::unique_ptr<MainWindow> m_window;
    QList<QUrl> m_opened; // what QDesktopServices was asked to open

public slots:
    void openUrl(const QUrl& url) { m_opened << url; }

private:
    QString configPath() const { return m_dir.path() + "/portico.yaml"; }

    // Presses `keys` on whatever has the focus in the window (as a user does).
    void press(const QString& keys) {
        const QKeySequence seq(keys);
        if (!m_window->isActiveWindow()) { // a closed dialog hands activation back asynchronously
            m_window->activateWindow();
            QTest::qWaitForWindowActive(m_window.get());
        }
        QWidget* target = QApplication::focusWidget() ? QApplication::focusWidget() : m_window.get();
        QTest::keySequence(target, seq);
    }

    // Presses `keys`, expecting a modal dialog; returns its title and closes it.
    QString pressForDialog(const QString& keys) {
        QString title;
        QTimer poll;
        poll.setInterval(50);
        connect(&poll, &QTimer::timeout, this, [&] {
            if (QWidget* modal = QApplication::activeModalWidget()) {
                title = modal->windowTitle();
                modal->close();
                if (auto* dialog = qobject_cast<QDialog*>(modal)) dialog->reject();
            }
        });
        poll.start();
        press(keys);
        QTest::qWaitFor([&] { return !title.isEmpty(); }, 5000);
        return title;
    }

    void changeRouteBody() {
        m_window->showTab("sites");
        m_window->sitesPage()->select(0, 0);
        auto* body = m_window->sitesPage()->findChild<QPlainTextEdit*>("respond.body");
        QVERIFY(body);
        body->setPlainText(body->toPlainText() + "!");
        QVERIFY(m_window->sitesPage()->hasChanges());
    }

    void sendOne() {
        load::Options o;
        load::RequestSpec spec;
        spec.url = (m_server->firstHttpUrl() + "hello").toStdString();
        o.requests.push_back(spec);
        o.connections = 1;
        o.count = 1;
        const auto result = load::run(o);
        QVERIFY2(result.requests.completed == 1, result.error.c_str());
        m_server->engine().flushCapture();
        auto* page = m_window->trafficPage();
        QTRY_VERIFY_WITH_TIMEOUT((page->poll(), page->model()->rowCount() >= 1), 5000);
    }

private slots:
    void initTestCase() {
        // Settings (the saved window size) in the scratch folder, not the user's.
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QVERIFY2(QSettings().fileName().startsWith(m_dir.path()), qPrintable(QSettings().fileName()));
        g_previous = qInstallMessageHandler(collect);
        QDesktopServices::setUrlHandler("file", this, "openUrl");
    }

    void cleanupTestCase() {
        QDesktopServices::unsetUrlHandler("file");
        qInstallMessageHandler(g_previous);
    }

    void init() {
        QFile f(configPath());
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("listen: [127.0.0.1:0]\ncapture: true\n"
                "rules:\n  - match: \"path:/hold\"\n    actions: [{breakpoint: {timeout: 30s}}]\n"
                "vhosts:\n  - routes:\n"
                "      - path: /hello\n        respond: {body: hi}\n"
                "      - path: /hold\n        respond: {body: held}\n");
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(configPath(), &error, false), qPrintable(error));
        m_window = std::make_unique<MainWindow>(m_server.get());
        m_window->resize(1200, 800);
        m_window->show();
        m_window->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        g_warnings.clear();
    }

    void cleanup() {
        if (m_window && m_window->loadTestPage()->isRunning()) m_window->loadTestPage()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!m_window || !m_window->loadTestPage()->isRunning(), 15000);
        if (m_window && m_window->sitesPage()->hasChanges()) m_window->sitesPage()->revert();
        m_window.reset();
        m_server.reset();
        QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
    }

    // The window fits a small screen: at QT_SCALE_FACTOR=2 on 1600×1000 (800×500 logical pixels)
    // the minimum size leaves Apply reachable; and at 1100 px wide the Sites form needs no
    // horizontal scroll bar.
    void windowFitsSmallScreens() {
        for (const char* tab : {"sites", "traffic", "load", "latency"}) {
            QVERIFY(m_window->showTab(tab));
            const QSize min = m_window->minimumSizeHint().expandedTo(m_window->minimumSize());
            QVERIFY2(min.width() <= 800 && min.height() <= 500,
                     qPrintable(QString("%1: %2×%3").arg(tab).arg(min.width()).arg(min.height())));
        }
        QVERIFY(m_window->showTab("sites"));
        m_window->resize(1100, 700);
        auto tree = m_window->sitesPage()->findChild<QTreeWidget*>();
        QVERIFY(tree && tree->topLevelItemCount() > 0 && tree->topLevelItem(0)->childCount() > 0);
        tree->setCurrentItem(tree->topLevelItem(0)->child(0)); // the route form, the widest
        QApplication::processEvents();
        for (auto* scroll : m_window->sitesPage()->findChildren<QScrollArea*>())
            if (scroll->isVisible())
                QVERIFY2(
                    !scroll->horizontalScrollBar()->isVisible(),
                    qPrintable(QString("needs %1 px more").arg(scroll->horizontalScrollBar()->maximum())));
    }

    // The size the user left comes back at the next start, also at QT_SCALE_FACTOR=2 (the
    // "ui/tst_gui_shortcuts@2x" run, a 1600×1000 screen); a first start fits the screen.
    void windowSizeComesBack() {
        QSettings settings;
        settings.remove("window/geometry");
        const QRect screen = m_window->screen()->availableGeometry();
        {
            MainWindow first(m_server.get());
            first.show();
            QVERIFY(QTest::qWaitForWindowExposed(&first));
            QVERIFY2(screen.contains(first.frameGeometry()), qPrintable(QString("%1×%2 on a %3×%4 screen")
                                                                            .arg(first.width())
                                                                            .arg(first.height())
                                                                            .arg(screen.width())
                                                                            .arg(screen.height())));
            const QSize wanted(std::min(760, screen.width() - 20), std::min(470, screen.height() - 20));
            first.resize(wanted);
            QTRY_COMPARE(first.size(), wanted);
            QVERIFY(first.close());
        }
        QVERIFY2(QSettings().contains("window/geometry"), "closing the window saved no geometry");
        MainWindow second(m_server.get());
        second.show();
        QVERIFY(QTest::qWaitForWindowExposed(&second));
        QTRY_COMPARE(second.size(),
                     QSize(std::min(760, screen.width() - 20), std::min(470, screen.height() - 20)));
    }

    // On every tab, each key sequence is bound once among the shortcuts that can fire there.
    void noKeyIsBoundTwice() {
        for (const char* tab : {"sites", "traffic", "load", "latency"}) {
            QVERIFY(m_window->showTab(tab));
            QMap<QString, QStringList> bound;
            for (QAction* a : m_window->findChildren<QAction*>())
                for (const QKeySequence& k : a->shortcuts())
                    if (!k.isEmpty()) bound[k.toString()] << "action " + a->text();
            for (QShortcut* s : m_window->findChildren<QShortcut*>()) {
                auto* owner = qobject_cast<QWidget*>(s->parent());
                if (!s->isEnabled() || !owner || !owner->isVisible()) continue;
                for (const QKeySequence& k : s->keys())
                    if (s->context() != Qt::WidgetShortcut)
                        bound[k.toString()] << "shortcut on " + owner->objectName();
            }
            for (auto it = bound.begin(); it != bound.end(); ++it)
                QVERIFY2(
                    it.value().size() == 1,
                    qPrintable(QString("%1 on the %2 tab: %3").arg(it.key(), tab, it.value().join(", "))));
        }
    }

    // The docs' table, pressed key by key. A documented key without an effect here fails, and so
    // does a key whose effect does not happen.
    void everyDocumentedShortcutWorks() {
        QString error;
        const QStringList documented = documentedKeys(error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(documented.size() >= 15);
        auto* traffic = m_window->trafficPage();
        auto* sites = m_window->sitesPage();
        auto* load = m_window->loadTestPage();
        const QMap<QString, std::function<void()>> effects = {
            {"Ctrl+1",
             [&] {
                 press("Ctrl+1");
                 QVERIFY(sites->isVisible());
             }},
            {"Ctrl+2",
             [&] {
                 press("Ctrl+2");
                 QVERIFY(traffic->isVisible());
             }},
            {"Ctrl+3",
             [&] {
                 press("Ctrl+3");
                 QVERIFY(m_window->rulesPage()->isVisible());
             }},
            {"Ctrl+4",
             [&] {
                 press("Ctrl+4");
                 QVERIFY(load->isVisible());
             }},
            {"Ctrl+5",
             [&] {
                 press("Ctrl+5");
                 QVERIFY(m_window->latencyPage()->isVisible());
             }},
            {"Ctrl+O", [&] { QCOMPARE(pressForDialog("Ctrl+O"), QString("Open config")); }},
            {"Ctrl+Shift+O", [&] { QCOMPARE(pressForDialog("Ctrl+Shift+O"), QString("Serve folder")); }},
            {"Ctrl+S",
             [&] {
                 changeRouteBody();
                 QVERIFY(m_window->isWindowModified()); // the title's [*] mark
                 press("Ctrl+S");
                 QTRY_VERIFY_WITH_TIMEOUT(!sites->hasChanges(), 3000);
                 QVERIFY(!m_window->isWindowModified());
                 QFile saved(configPath());
                 QVERIFY(saved.open(QIODevice::ReadOnly));
                 QVERIFY2(saved.readAll().contains("hi!"), "Ctrl+S did not save");
             }},
            {"Ctrl+R",
             [&] {
                 // Sites: revert the edits.
                 changeRouteBody();
                 press("Ctrl+R");
                 QTRY_VERIFY_WITH_TIMEOUT(!sites->hasChanges(), 3000);
                 // Traffic: resend the selected exchange.
                 m_window->showTab("traffic");
                 sendOne();
                 traffic->selectRow(0);
                 QSignalSpy finished(traffic->inspector(), &ui::InspectorWidget::resendFinished);
                 traffic->view()->setFocus();
                 press("Ctrl+R");
                 QVERIFY(finished.wait(10000));
                 QVERIFY(finished.front().front().toBool());
             }},
            {"Ctrl+F",
             [&] {
                 m_window->showTab("sites");
                 press("Ctrl+F");
                 QVERIFY(traffic->isVisible());
                 QVERIFY(qobject_cast<QLineEdit*>(QApplication::focusWidget()));
                 QCOMPARE(QApplication::focusWidget()->parentWidget() != nullptr, true);
                 QVERIFY(traffic->isAncestorOf(QApplication::focusWidget()));
             }},
            {"Ctrl+L",
             [&] {
                 m_window->showTab("traffic");
                 sendOne();
                 press("Ctrl+L");
                 QCOMPARE(traffic->model()->rowCount(), 0);
             }},
            {"Space",
             [&] {
                 m_window->showTab("traffic");
                 traffic->view()->setFocus();
                 const bool before = traffic->isPaused();
                 press("Space");
                 QCOMPARE(traffic->isPaused(), !before);
                 press("Space");
                 QCOMPARE(traffic->isPaused(), before);
             }},
            {"Ctrl+P",
             [&] {
                 const bool before = traffic->isPaused();
                 press("Ctrl+P");
                 QCOMPARE(traffic->isPaused(), !before);
                 press("Ctrl+P");
                 QCOMPARE(traffic->isPaused(), before);
             }},
            {"Ctrl+Shift+C",
             [&] {
                 m_window->showTab("traffic");
                 sendOne();
                 traffic->selectRow(0);
                 QApplication::clipboard()->clear();
                 press("Ctrl+Shift+C");
                 QVERIFY2(QApplication::clipboard()->text().startsWith("curl "),
                          qPrintable(QApplication::clipboard()->text()));
             }},
            {"Ctrl+E", [&] { QVERIFY(!pressForDialog("Ctrl+E").isEmpty()); }},
            {"Ctrl+T",
             [&] {
                 press("Ctrl+T");
                 QVERIFY(load->isVisible());
                 QTRY_VERIFY_WITH_TIMEOUT(load->isRunning(), 3000);
             }},
            {"Ctrl+.",
             [&] {
                 if (!load->isRunning()) press("Ctrl+T");
                 QTRY_VERIFY_WITH_TIMEOUT(load->isRunning(), 3000);
                 press("Ctrl+.");
                 QTRY_VERIFY_WITH_TIMEOUT(!load->isRunning(), 15000);
             }},
            {"Ctrl+Return",
             [&] {
                 if (load->isRunning()) load->stop();
                 QTRY_VERIFY_WITH_TIMEOUT(!load->isRunning(), 15000);
                 m_window->showTab("load");
                 press("Ctrl+Return");
                 QTRY_VERIFY_WITH_TIMEOUT(load->isRunning(), 3000);
                 press("Ctrl+Return");
                 QTRY_VERIFY_WITH_TIMEOUT(!load->isRunning(), 15000);
             }},
            {"F8",
             [&] {
                 // The Paused tab: F8 resumes the selected exchange.
                 m_window->showTab("paused");
                 QProcess curl;
                 curl.start("curl", {"-sS", "--max-time", "20", m_server->firstHttpUrl() + "hold"});
                 QTRY_COMPARE_WITH_TIMEOUT(m_server->engine().pausedExchanges().size(), std::size_t(1), 5000);
                 QTRY_VERIFY_WITH_TIMEOUT(
                     m_window->pausedPage()->findChild<QTreeView*>() &&
                         m_window->pausedPage()->findChild<QTreeView*>()->model()->rowCount() == 1,
                     5000);
                 press("F8");
                 QVERIFY(curl.waitForFinished(10000));
                 QCOMPARE(curl.readAllStandardOutput(), QByteArray("held"));
                 QVERIFY(m_server->engine().pausedExchanges().empty());
             }},
            {"Ctrl+F8",
             [&] {
                 m_window->showTab("paused");
                 QProcess a, b;
                 for (QProcess* p : {&a, &b})
                     p->start("curl", {"-sS", "--max-time", "20", m_server->firstHttpUrl() + "hold"});
                 QTRY_COMPARE_WITH_TIMEOUT(m_server->engine().pausedExchanges().size(), std::size_t(2), 5000);
                 QTRY_VERIFY_WITH_TIMEOUT(
                     m_window->pausedPage()->findChild<QTreeView*>()->model()->rowCount() == 2, 5000);
                 press("Ctrl+F8");
                 for (QProcess* p : {&a, &b}) {
                     QVERIFY(p->waitForFinished(10000));
                     QCOMPARE(p->readAllStandardOutput(), QByteArray("held"));
                 }
             }},
            {"F1",
             [&] {
                 m_opened.clear();
                 press("F1");
                 QCOMPARE(m_opened.size(), 1);
                 QVERIFY2(m_opened.front().toLocalFile().endsWith("/gui.md") &&
                              QFile::exists(m_opened.front().toLocalFile()),
                          qPrintable(m_opened.front().toString()));
             }},
            {"Ctrl+Q",
             [&] {
                 if (load->isRunning()) load->stop();
                 QTRY_VERIFY_WITH_TIMEOUT(!load->isRunning(), 15000);
                 press("Ctrl+Q");
                 QTRY_VERIFY_WITH_TIMEOUT(!m_window->isVisible(), 3000);
             }},
        };
        QStringList untested;
        for (const QString& key : documented)
            if (!effects.contains(key)) untested << key;
        QVERIFY2(untested.isEmpty(), qPrintable("documented but not tested: " + untested.join(", ")));
        for (const QString& key : documented) {
            qInfo("%s", qPrintable(key));
            effects[key]();
            if (QTest::currentTestFailed()) {
                qWarning("failed at %s", qPrintable(key));
                return;
            }
            if (!m_window->isVisible()) { // Ctrl+Q: bring it back for the keys after it
                m_window->show();
                m_window->activateWindow();
                QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
            }
        }
        // And the other way round: every menu shortcut is documented.
        for (const auto& [what, keys] : m_window->shortcuts())
            QVERIFY2(documented.contains(keys.toString()),
                     qPrintable(what + " " + keys.toString() + " is not in docs/gui.md"));
    }

    void helpMenuListsShortcutsAndVersions() {
        QString text;
        QTimer::singleShot(100, this, [&] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                text = box->text();
                box->reject();
            }
        });
        QMetaObject::invokeMethod(m_window.get(), "showShortcuts", Qt::DirectConnection);
        QVERIFY2(text.contains("Ctrl+S") && text.contains("Apply and save") && text.contains("Ctrl+Shift+C"),
                 qPrintable(text));
        text.clear();
        QTimer::singleShot(100, this, [&] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                text = box->text();
                box->reject();
            }
        });
        QMetaObject::invokeMethod(m_window.get(), "showAbout", Qt::DirectConnection);
        for (const char* name : {"Portico 0.", "Qt 6.", "OpenSSL 3.", "nghttp2 1.", "Boost 1."})
            QVERIFY2(text.contains(name), qPrintable(name + (": " + text)));
    }

    // Quitting with unapplied edits offers "Apply and quit": the edits are saved, the window closes.
    void quitOffersApplyAndQuit() {
        changeRouteBody();
        QTimer::singleShot(100, this, [] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget()))
                for (auto* b : box->buttons())
                    if (b->text() == "Apply and quit") b->click();
        });
        QVERIFY(m_window->close());
        QVERIFY(!m_window->sitesPage()->hasChanges());
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QVERIFY(saved.readAll().contains("hi!"));
    }
};

QTEST_MAIN(TestGuiShortcuts)
#include "tst_gui_shortcuts.moc"

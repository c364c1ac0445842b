// runGui: QApplication setup, the project to open (last one, or a copy of the demo), screenshots.
#include "gui.h"

#include "latency/latencypage.h"
#include "loadtest/loadtestpage.h"
#include "mainwindow.h"
#include "servercontroller.h"
#include "sites/sitespage.h"

#include <portico/engine/engine.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <cstdlib>

namespace portico::ui {

namespace {

QString bundledDemo() {
    const QString installed = QCoreApplication::applicationDirPath() + "/../share/portico/demo";
    if (QFileInfo::exists(installed + "/portico.yaml")) return QDir(installed).canonicalPath();
    return QStringLiteral(PORTICO_DEMO_DIR);
}

bool copyTree(const QString& from, const QString& to) {
    QDir().mkpath(to);
    QDirIterator it(from, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString src = it.next();
        const QString dst = to + "/" + QDir(from).relativeFilePath(src);
        QDir().mkpath(QFileInfo(dst).absolutePath());
        if (!QFile::exists(dst) && !QFile::copy(src, dst)) return false;
    }
    return true;
}

// The demo is copied before it is opened, so Apply never writes into the installation.
QString demoCopy(const QString& where) {
    if (!copyTree(bundledDemo(), where)) return {};
    return where + "/portico.yaml";
}

void waitMs(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

int screenshot(MainWindow& window, ServerController& server, const GuiOptions& options) {
    window.resize(1280, 800);
    window.show();
    waitMs(200);
    const QString tab = QString::fromStdString(options.tab).toLower();
    double seconds = options.demoTraffic;
    if (seconds <= 0 && (tab.startsWith("load") || tab == "latency")) seconds = 2;
    if (seconds > 0) {
        LoadTestPage* load = window.loadTestPage();
        load->findChild<QLineEdit*>("loadUrl")->setText(server.firstHttpUrl() + "api/hello/portico");
        load->findChild<QLineEdit*>("loadDuration")->setText(QString("%1ms").arg(qint64(seconds * 1000)));
        window.showTab("load");
        // The latency tab gets a second run with four times the connections, overlaid on the first.
        const int runs = tab == "latency" ? 2 : 1;
        for (int i = 0; i < runs; ++i) {
            QEventLoop loop;
            QObject::connect(load, &LoadTestPage::runFinished, &loop, &QEventLoop::quit);
            if (i > 0) load->findChild<QSpinBox*>("loadConnections")->setValue(64);
            if (load->start()) loop.exec();
        }
        if (runs > 1) {
            if (auto overlay = window.latencyPage()->findChild<QComboBox*>("latencyCompare"))
                overlay->setCurrentIndex(1);
        }
    }
    if (!tab.isEmpty() && !window.showTab(tab)) {
        std::fprintf(stderr, "portico: no tab '%s' (sites, load, latency)\n", options.tab.c_str());
        return 2;
    }
    if (tab.isEmpty() || tab == "sites") window.sitesPage()->select(0, 0);
    waitMs(400);
    const QString file = QString::fromStdString(options.screenshot);
    if (!window.grab().save(file, "PNG")) {
        std::fprintf(stderr, "portico: cannot write %s\n", options.screenshot.c_str());
        return 1;
    }
    std::printf("%s\n", options.screenshot.c_str());
    return 0;
}

} // namespace

int runGui(int argc, char** argv, const GuiOptions& options) {
    const bool shot = !options.screenshot.empty();
    if (shot && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
        qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setApplicationName("Portico");
    QApplication::setOrganizationName("Portico");
    QApplication::setApplicationVersion(engine::version());

    QTemporaryDir scratch;
    QString project = QString::fromStdString(options.project);
    QSettings settings;
    if (project.isEmpty() && !shot) project = settings.value("lastProject").toString();
    if (project.isEmpty() || !QFileInfo::exists(project)) {
        const QString where =
            shot ? scratch.path() + "/demo"
                 : QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/portico/demo";
        project = demoCopy(where);
    }

    ServerController server;
    QString error;
    if (!server.open(project, &error)) {
        if (shot) {
            std::fprintf(stderr, "portico: cannot open %s: %s\n", qPrintable(project), qPrintable(error));
            return 1;
        }
        QMessageBox::critical(nullptr, QObject::tr("Portico"),
                              QObject::tr("Cannot open %1:\n%2").arg(project, error));
        return 1;
    }
    if (!shot) settings.setValue("lastProject", QFileInfo(project).absoluteFilePath());

    MainWindow window(&server);
    if (shot) return screenshot(window, server, options);
    if (!options.tab.empty()) window.showTab(QString::fromStdString(options.tab));
    window.show();
    return app.exec();
}

} // namespace portico::ui

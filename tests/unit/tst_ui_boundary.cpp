// The desktop app opens no socket itself: nothing under ui/ includes a core header that does
// (load/runner.h, capture/replay.h) or the workers' internals, names a private core header
// (core/src), or calls load::run, load::runSuite, capture::replay or capture::checkReplayTarget;
// it goes through engine/engine.h and engine/jobs.h and includes data headers only. Every public
// core header is classified here, so a new one fails this suite until it is put on one side.
#include "test_support.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QMap>
#include <QRegularExpression>
#include <QSet>
#include <QtTest>

using namespace portico;

namespace {

// Public core headers the GUI may include: the engine's facade and jobs, and data (types, parsers,
// formatters, files). None of them declares a function that opens a socket.
// clang-format off
const QSet<QString> kAllowed = {
    "portico/engine/engine.h",
    "portico/engine/jobs.h",
    "portico/capture/copy_as.h",
    "portico/capture/exchange.h",
    "portico/capture/filter.h",
    "portico/capture/grpc.h",
    "portico/capture/har.h",
    "portico/capture/replay_types.h",
    "portico/capture/session_file.h",
    "portico/capture/store.h",
    "portico/config/config.h",
    "portico/config/reader.h",
    "portico/config/pattern.h",
    "portico/config/network.h",
    "portico/validate/load.h",
    "portico/validate/validate.h",
    "portico/config/writer.h",
    "portico/handlers/mime.h",
    "portico/http/message.h",
    "portico/http/path.h",
    "portico/http/ascii.h",
    "portico/http/url.h",
    "portico/http/json_text.h",
    "portico/http/spelling.h",
    "portico/http1/response_parser.h",
    "portico/http1/parser.h",
    "portico/load/from_capture.h",
    "portico/load/hdr_output.h",
    "portico/load/history.h",
    "portico/load/live.h",
    "portico/load/merge.h",
    "portico/load/options.h",
    "portico/load/report.h",
    "portico/load/result.h",
    "portico/load/suite.h",
    "portico/load/suite_file.h",
    "portico/load/thresholds.h",
    "portico/routing/router.h",
    "portico/rules/breakpoints.h", // data and the queue the engine owns; decided through engine.h
    "portico/rules/filter_syntax.h",
    "portico/rules/rules.h",
    "portico/stats/histogram.h",
    "portico/stats/live.h",
    "portico/stats/report.h",
    "portico/tls/local_ca.h",
    "portico/ws/websocket.h",
};
// clang-format on

// Public core headers the GUI must not include, and what to use instead.
const QMap<QString, QString> kForbidden = {
    {"portico/load/runner.h", "load::run and load::runSuite open sockets: use engine::runLoad and "
                              "engine::runLoadSuite (engine/jobs.h), data from load/live.h and load/suite.h"},
    {"portico/capture/replay.h", "capture::replay opens sockets: use engine::resend (engine/jobs.h), data "
                                 "from capture/replay_types.h and capture/copy_as.h"},
    {"portico/http2/session.h", "nghttp2 sessions belong to the server, the proxy, the load generator and "
                                "replay: the GUI goes through engine/engine.h and engine/jobs.h"},
    {"portico/handlers/dispatch.h", "the workers' request handling: the GUI goes through engine/engine.h"},
};

// Calls of the socket-opening functions (also through a using-declaration or a re-declaration).
const QRegularExpression
    kCalls(QStringLiteral("\\b(load::run|load::runSuite|capture::replay|capture::checkReplayTarget)\\s*\\("));
const QRegularExpression kInclude(QStringLiteral("^\\s*#\\s*include\\s*[<\"]([^>\"]+)[>\"]"));

struct Scan {
    QStringList violations;
    int includes = 0; ///< portico/ includes seen
};

// Checks one file's text. `dir` is the file's folder and `uiRoot` ui/ (where quoted includes are
// looked up), `coreSrc` core/src (private headers).
void scanText(const QString& name, const QString& text, const QDir& dir, const QDir& uiRoot,
              const QDir& coreSrc, Scan& scan) {
    const QStringList lines = text.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QString& line = lines[i];
        const QString where = QStringLiteral("%1:%2: ").arg(name).arg(i + 1);
        const auto m = kInclude.match(line);
        if (m.hasMatch()) {
            const QString path = m.captured(1);
            if (path.startsWith("portico/")) {
                ++scan.includes;
                if (kForbidden.contains(path))
                    scan.violations << where + path + ": " + kForbidden.value(path);
                else if (!kAllowed.contains(path))
                    scan.violations << where + path +
                                           ": not a header the GUI may include (add it to kAllowed "
                                           "in tests/unit/tst_ui_boundary.cpp if it is data only)";
            } else if (line.contains('"') && !dir.exists(path) && !uiRoot.exists(path) &&
                       coreSrc.exists(path)) {
                scan.violations << where + path + ": a private core header (core/src)";
            }
            continue;
        }
        const QString code = line.left(line.indexOf("//"));
        const auto call = kCalls.match(code);
        if (call.hasMatch())
            scan.violations << where + call.captured(1) + "(): opens sockets; use engine/jobs.h";
    }
}

} // namespace

class TestUiBoundary : public QObject {
    Q_OBJECT
    QDir root_{test::sourceDir()};

private slots:
    // The checker finds what it looks for (and nothing in allowed lines).
    void checkerFindsViolations() {
        const QDir ui(root_.filePath("ui")), core(root_.filePath("core/src"));
        Scan bad;
        scanText("x.cpp",
                 "#include <portico/load/runner.h>\n"
                 "  #  include \"portico/capture/replay.h\"\n"
                 "#include <portico/made/up.h>\n"
                 "#include \"client/connect.h\"\n"
                 "    auto r = load::run(o, &abort);\n"
                 "auto s = portico::load::runSuite (base, o);\n"
                 "auto x = capture::replay(e, o);\n",
                 ui, ui, core, bad);
        QCOMPARE(bad.violations.size(), 7);
        QCOMPARE(bad.includes, 3);
        QVERIFY(bad.violations[0].startsWith("x.cpp:1: portico/load/runner.h: load::run"));
        QVERIFY(bad.violations[3].contains("client/connect.h: a private core header"));
        Scan good;
        scanText("y.cpp",
                 "#include <portico/engine/jobs.h>\n"
                 "#include <portico/capture/replay_types.h>\n"
                 "#include \"inspector/inspectorwidget.h\"\n"
                 "auto r = engine::runLoad(o, cancel.get());\n"
                 "auto x = engine::resend(e, o); // not capture::replay(e, o)\n"
                 "capture::ReplayOptions options;\n",
                 ui, ui, core, good);
        QVERIFY2(good.violations.isEmpty(), qPrintable(good.violations.join('\n')));
        QCOMPARE(good.includes, 2);
    }

    // Every public core header is on one side or the other, and both lists name real headers.
    void everyCoreHeaderIsClassified() {
        const QDir include(root_.filePath("core/include"));
        QSet<QString> headers;
        QDirIterator it(include.path(), {"*.h"}, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext())
            headers << include.relativeFilePath(it.next());
        QVERIFY(headers.size() > 20);
        for (const QString& h : headers)
            QVERIFY2(
                kAllowed.contains(h) || kForbidden.contains(h),
                qPrintable(h + ": classify it in tests/unit/tst_ui_boundary.cpp (may the GUI include it?)"));
        for (const QString& h : kAllowed)
            QVERIFY2(headers.contains(h), qPrintable(h + ": listed but not in core/include"));
        for (const QString& h : kForbidden.keys())
            QVERIFY2(headers.contains(h), qPrintable(h + ": listed but not in core/include"));
    }

    // The GUI's sources.
    void uiOpensNoSockets() {
        const QDir ui(root_.filePath("ui")), core(root_.filePath("core/src"));
        QVERIFY2(ui.exists(), qPrintable(ui.path()));
        Scan scan;
        int files = 0;
        QDirIterator it(ui.path(), {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            QFile f(path);
            QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(path));
            ++files;
            scanText(root_.relativeFilePath(path), QString::fromUtf8(f.readAll()), QFileInfo(path).dir(), ui,
                     core, scan);
        }
        // Not vacuous: the GUI's sources were found and include core headers.
        QVERIFY2(files > 20, qPrintable(QString::number(files)));
        QVERIFY2(scan.includes > 20, qPrintable(QString::number(scan.includes)));
        QVERIFY2(scan.violations.isEmpty(), qPrintable("\n" + scan.violations.join('\n')));
    }
};

QTEST_GUILESS_MAIN(TestUiBoundary)
#include "tst_ui_boundary.moc"

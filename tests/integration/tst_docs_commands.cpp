// Every `portico` command shown in README.md and docs/*.md (```sh blocks) works as shown.
// everyDocumentedCommandParses: each is a command line the current binary accepts (run with
// PORTICO_CHECK_ARGS=1: parse, then exit 0; a bad flag or value → exit 2).
// everyDocumentedCommandRuns: each is run for real in a scratch folder that is also $HOME and holds
// $PORTICO_DATA_DIR, bounded in time: servers get free loopback ports in place of the documented
// ones, answer one real request with what the docs say they serve, and exit 0 on SIGTERM; load
// tests are aimed at a Portico server of the test and cut short; the rest run as written on real
// files (a recorded session, its HAR, the local CA). Commands that change the machine (`cert
// install`/`uninstall`) are only parsed. A failure names the doc's file:line and the command's output.
// (Config snippets: tst_config's docExamples.)
#include "test_support.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include <functional>

using namespace portico::test;

namespace {

struct DocCommand {
    QString where;      // "docs/cli.md:107"
    QString page;       // "docs/cli.md"
    QString text;       // as written (after joining continuation lines)
    QString program;    // "portico", "build/app/portico", ... (after a `sudo` or `taskset -c N` prefix)
    QStringList args;   // the words after the program
    QString yamlBefore; // the page's last valid ```yaml example above the command ("" if none)
};

// A file an ```sh block writes with a here-document (`cat > FILE <<'END'` … `END`).
struct DocFile {
    QString where;
    QString path;
    QByteArray text;
};

struct DocScan {
    QList<DocCommand> commands;
    QList<DocFile> files;
    QStringList skipped; // lines naming portico that a shell would have to interpret first
    QStringList others;  // plain commands of other programs (installers, wrk, apt, ...)
    QString defaultYaml; // the guide's first example, "Save this as portico.yaml"
};

// POSIX-shell-like word splitting for the simple commands docs show: '…' and "…" quoting,
// backslash escapes outside single quotes, `#` comments. Returns false for what a shell would
// have to run first ($(…), pipes, &&, redirections) — such lines are not plain portico commands.
bool splitWords(const QString& line, QStringList& words) {
    QString cur;
    bool inWord = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (c == '\'') {
            const qsizetype end = line.indexOf('\'', i + 1);
            if (end < 0) return false;
            cur += line.mid(i + 1, end - i - 1);
            i = end;
            inWord = true;
        } else if (c == '"') {
            qsizetype j = i + 1;
            for (; j < line.size() && line[j] != '"'; ++j) {
                if (line[j] == '$') return false;
                if (line[j] == '\\' && j + 1 < line.size()) ++j;
                cur += line[j];
            }
            if (j >= line.size()) return false;
            i = j;
            inWord = true;
        } else if (c == '\\' && i + 1 < line.size()) {
            cur += line[++i];
            inWord = true;
        } else if (c.isSpace()) {
            if (inWord) words << cur;
            cur.clear();
            inWord = false;
        } else if (c == '#' && !inWord) {
            break;
        } else if (QStringLiteral("|&;<>`$()").contains(c)) {
            return false;
        } else {
            cur += c;
            inWord = true;
        }
    }
    if (inWord) words << cur;
    return true;
}

DocScan scanDocs() {
    DocScan scan;
    QStringList files{"README.md"};
    for (const QString& f : QDir(sourceDir() + "/docs").entryList({"*.md"}, QDir::Files, QDir::Name))
        files << "docs/" + f;
    static const QRegularExpression heredoc(R"(^cat\s*>\s*(\S+)\s*<<-?\s*['"]?(\w+)['"]?$)");
    static const QRegularExpression background(R"([^&]&$)");
    for (const QString& rel : files) {
        QFile f(sourceDir() + "/" + rel);
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
        bool inBlock = false;
        QString lang, block, beforeFence, lastNonBlank, lastYaml;
        for (int i = 0; i < lines.size(); ++i) {
            const QString t = lines[i].trimmed();
            if (t.startsWith("```")) {
                if (!inBlock) {
                    inBlock = true;
                    lang = t.mid(3).trimmed();
                    block.clear();
                    beforeFence = lastNonBlank;
                } else {
                    inBlock = false;
                    if ((lang.toLower() == "yaml" || lang.toLower() == "yml") &&
                        beforeFence != "<!-- invalid -->") {
                        lastYaml = block;
                        if (rel == "docs/guide.md" && scan.defaultYaml.isEmpty()) scan.defaultYaml = block;
                    }
                }
                continue;
            }
            if (!inBlock) {
                if (!t.isEmpty()) lastNonBlank = t;
                continue;
            }
            if (lang != "sh" && lang != "bash" && lang != "console") {
                block += lines[i] + '\n';
                continue;
            }
            const int first = i;
            const QString where = QString("%1:%2").arg(rel).arg(first + 1);
            if (const auto m = heredoc.match(t); m.hasMatch()) {
                DocFile file{where, m.captured(1), {}};
                for (++i; i < lines.size() && lines[i].trimmed() != m.captured(2); ++i)
                    file.text += lines[i].toUtf8() + '\n';
                scan.files << file;
                continue;
            }
            QString text = t;
            while (text.endsWith('\\') && i + 1 < lines.size())
                text = text.chopped(1) + ' ' + lines[++i].trimmed();
            if (text.startsWith("$ ")) text = text.mid(2);
            QString run = text;
            if (run.startsWith("sudo ")) run = run.mid(5);
            // `cmd &` (started in the background for the next lines): for us, the same command.
            if (background.match(run).hasMatch()) run = run.chopped(1).trimmed();
            QStringList words;
            if (!splitWords(run, words) || words.isEmpty()) {
                if (text.contains("portico ")) scan.skipped << where + ": " + text;
                continue;
            }
            if (words.size() > 3 && words[0] == "taskset" && words[1] == "-c") words = words.mid(3);
            const QString program = words.front();
            if (program != "portico" && !program.endsWith("/portico")) {
                scan.others << where + ": " + text;
                continue;
            }
            scan.commands.push_back({where, rel, text, program, words.mid(1), lastYaml});
        }
    }
    return scan;
}

// What the shell (and the scratch folder) make of the words: `~/` is $HOME, the scratch folder;
// absolute /tmp/ paths move into it too, so a run never touches anything outside.
QString localPath(const QString& word, const QString& scratch) {
    if (word.startsWith("~/")) return scratch + word.mid(1);
    if (word.startsWith("/tmp/")) return scratch + word;
    return word;
}
QStringList localArgs(QStringList args, const QString& scratch) {
    for (QString& a : args)
        a = localPath(a, scratch);
    return args;
}

// The `listen:` list of a YAML config with every address replaced by 127.0.0.1 and a port from
// `nextPort` (one per address), so documented ports (8080, 8443, ...) never collide with anything.
QByteArray rewriteListen(const QByteArray& yaml, const std::function<std::uint16_t()>& nextPort) {
    static const QRegularExpression address(R"(((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9A-Fa-f:]+\]):(\d+))");
    QStringList lines = QString::fromUtf8(yaml).split('\n');
    bool inListen = false;
    for (QString& l : lines) {
        if (!l.isEmpty() && !l.front().isSpace() && !l.startsWith('-') && !l.startsWith('#'))
            inListen = l.startsWith("listen:");
        if (!inListen) continue;
        QString out;
        qsizetype at = 0;
        for (auto it = address.globalMatch(l); it.hasNext();) {
            const auto m = it.next();
            out += l.mid(at, m.capturedStart() - at) + QString("127.0.0.1:%1").arg(nextPort());
            at = m.capturedEnd();
        }
        l = out + l.mid(at);
    }
    return lines.join('\n').toUtf8();
}

bool writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

bool copyTree(const QString& from, const QString& to) {
    QDirIterator it(from, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString src = it.next();
        const QString dst = to + "/" + QDir(from).relativeFilePath(src);
        QDir().mkpath(QFileInfo(dst).path());
        QFile::remove(dst);
        if (!QFile::copy(src, dst)) return false;
    }
    return true;
}

const QByteArray kIndexMarker = "docs-run index page";

// The requests the bench and replay commands of the docs aim at (their paths, with the ports of
// this test's server in place of 8080 and 8443).
const char* kTargetConfig = R"(listen: [127.0.0.1:0, {address: 127.0.0.1:0, tls: auto}]
vhosts:
  - names: [localhost, 127.0.0.1]
    root: site
    routes:
      - path: /api/users/:id
        respond: {headers: {Content-Type: application/json}, body: '{"id": "{{param.id}}"}'}
      - path: /api/users
        respond: {file: mocks/users.json, headers: {Content-Type: application/json}}
      - path: /api
        respond: {headers: {Content-Type: application/json}, body: '{"ok": true}'}
      - {path: /a, respond: {body: a}}
      - {path: /b, respond: {body: b}}
      - {path: /plaintext, respond: {body: "Hello, World!"}}
      - path: /echo
        methods: [POST]
        respond: {headers: {Content-Type: application/json}, body: '{{body}}'}
)";

// How long a SIGTERMed command may take to exit 0. Sanitizer builds get longer: the GUI's exit
// with LeakSanitizer's check took over 5 s on a loaded 2-core machine.
constexpr int kExitMs = kSanitized ? 30000 : 5000;

QString sigtermProblem(int code) {
    if (code == -1) return "SIGTERM: the process was killed by a signal (expected exit 0)";
    if (code == -2) return QString("SIGTERM: still running after %1 s (expected exit 0)").arg(kExitMs / 1000);
    return QString("SIGTERM: exit %1 (expected 0)").arg(code);
}

// Runs the documented commands one by one in a scratch folder; collects failures.
class DocRunner {
public:
    QTemporaryDir dir;
    QString scratch;
    QProcessEnvironment env;
    QProcessEnvironment trustedEnv; // after `sudo portico cert install`: the system store trusts the CA
    std::unique_ptr<ServerProcess> target, suite;
    QString defaultYaml;
    QMap<QString, QByteArray> templates; // config files by local path, before the port rewrite
    QStringList failures, notRun, ran;

    bool setUp(const DocScan& scan, QString& why) {
        scratch = dir.path();
        defaultYaml = scan.defaultYaml;
        env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"PORTICO_CHECK_ARGS", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                 "DISPLAY", "WAYLAND_DISPLAY", "SSL_CERT_FILE", "SSL_CERT_DIR"})
            env.remove(name);
        env.insert("HOME", scratch);
        env.insert("PORTICO_DATA_DIR", scratch + "/data");
        env.insert("XDG_RUNTIME_DIR", scratch + "/run");
        env.insert("QT_QPA_PLATFORM", "offscreen");
        QDir().mkpath(scratch + "/run");
        QFile::setPermissions(scratch + "/run", QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);

        // The folders the commands serve (the current one, ~/site, ~/projects/site, site, ./site) and what
        // the guide's portico.yaml names next to them.
        for (const QString& root : {scratch, scratch + "/site", scratch + "/projects/site"}) {
            writeFile(root + "/index.html",
                      "<!doctype html><title>Docs</title><h1>" + kIndexMarker + "</h1>\n");
            writeFile(root + "/404.html", "<!doctype html><h1>not here</h1>\n");
            writeFile(root + "/50x.html", "<!doctype html><h1>server error</h1>\n");
            writeFile(root + "/app/index.html", "<!doctype html><h1>app</h1>\n");
            writeFile(root + "/style.css", "body { color: #333 }\n");
        }
        writeFile(scratch + "/mocks/users.json", R"([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Grace"}])");
        QDir().mkpath(scratch + "/logs");
        QDir().mkpath(scratch + "/docs/images");
        writeFile(scratch + "/payload.json", R"({"title": "water the plants", "done": false})");
        writeFile(scratch + "/target.yaml", kTargetConfig);
        if (!copyTree(sourceDir() + "/resources/bench-suite", scratch + "/resources/bench-suite")) {
            why = "cannot copy resources/bench-suite";
            return false;
        }
        QFile suiteConfig(scratch + "/resources/bench-suite/portico.yaml");
        if (!suiteConfig.open(QIODevice::ReadOnly)) return false;
        templates[suiteConfig.fileName()] = suiteConfig.readAll();
        for (const DocFile& f : scan.files)
            templates[localPath(f.path, scratch)] = f.text;

        // The local CA, as a user gets it for --cacert; and a system store that trusts it.
        if (auto r = run({"cert", "export", "ca.pem"}, env, 20000); r.exitCode != 0) {
            why = "portico cert export ca.pem: " + r.err;
            return false;
        }
        QFile system("/etc/ssl/certs/ca-certificates.crt"), ca(scratch + "/ca.pem");
        if (!ca.open(QIODevice::ReadOnly)) return false;
        writeFile(scratch + "/trusted.pem",
                  (system.open(QIODevice::ReadOnly) ? system.readAll() : "") + ca.readAll());
        trustedEnv = env;
        trustedEnv.insert("SSL_CERT_FILE", scratch + "/trusted.pem");

        // The servers load tests and replays are aimed at (port 0: no race).
        target = ServerProcess::exactly({"serve", "--config", "target.yaml", "--no-reload"}, env, scratch);
        suite =
            ServerProcess::exactly({"serve", "--config", sourceDir() + "/resources/bench-suite/portico.yaml",
                                    "--host", "127.0.0.1", "--port", "0", "--no-reload"},
                                   env, scratch);
        if (!target->waitReady(15000) || !target->tlsPort() || !target->plainPort()) {
            why = "target server: " + target->output();
            return false;
        }
        if (!suite->waitReady(15000)) {
            why = "bench-suite server: " + suite->output();
            return false;
        }

        // A real session (pages, JSON, a redirect, a 404) recorded through the guide's config, and
        // its HAR: what `har`, `replay` and `bench --from` read.
        writeFile(scratch + "/record.yaml", rewriteListen(defaultYaml.toUtf8(), [] { return 0; }));
        auto recorder = ServerProcess::exactly(
            {"serve", "--config", "record.yaml", "--no-reload", "--record", "session.db"}, env, scratch);
        if (!recorder->waitReady(15000)) {
            why = "recording server: " + recorder->output();
            return false;
        }
        for (const char* path : {"/", "/api/users", "/api/users/42", "/old", "/missing", "/style.css"})
            curlFetch({"http://127.0.0.1:" + QString::number(recorder->plainPort()) + path});
        if (recorder->terminate(10000) != 0 || !recorder->output().contains("recorded 6 exchange(s)")) {
            why = "recording server: " + recorder->output();
            return false;
        }
        if (auto r = run({"har", "export", "session.db", "session.har"}, env, 20000); r.exitCode != 0) {
            why = "portico har export session.db session.har: " + r.err;
            return false;
        }
        return true;
    }

    ProcessResult run(const QStringList& args, const QProcessEnvironment& e, int timeoutMs) {
        return runProcessIn(porticoBinary(), args, e, scratch, timeoutMs);
    }

    // "" when the process did what the doc says, else why not.
    static QString outcome(const ProcessResult& r) {
        if (r.timedOut) return "did not finish in time";
        if (r.exitCode != 0) return QString("exit %1").arg(r.exitCode);
        return {};
    }

    QString httpCheck(const QString& url, const QStringList& extra, const QByteArray& mustContain,
                      const QString& version = {}) {
        const CurlReply r = curlFetch(extra + QStringList{url});
        if (r.status < 200 || r.status > 299)
            return QString("GET %1: status %2 %3").arg(url).arg(r.status).arg(QString::fromUtf8(r.err));
        if (!mustContain.isEmpty() && !r.body.contains(mustContain))
            return QString("GET %1: body lacks '%2': %3")
                .arg(url, mustContain, QString::fromUtf8(r.body.left(300)));
        if (!version.isEmpty() && r.httpVersion != version)
            return QString("GET %1: HTTP/%2, expected HTTP/%3").arg(url, r.httpVersion, version);
        return {};
    }

    QString httpsCheck(std::uint16_t port, const QString& path, const QByteArray& mustContain) {
        const QString p = QString::number(port);
        return httpCheck(
            "https://localhost:" + p + path,
            {"--cacert", scratch + "/ca.pem", "--resolve", "localhost:" + p + ":127.0.0.1", "--http2"},
            mustContain, "2");
    }

    // A long-running `serve`: free ports in place of the documented ones, one request for what it
    // serves (over HTTPS too when it listens there), then SIGTERM → exit 0.
    QString serve(QStringList args, const QString& yaml) {
        QString config;
        bool hasPort = false;
        for (int i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--port" || args[i] == "-p" || args[i] == "--https-port") {
                args[i + 1] = QString::number(freePort());
                hasPort = true;
            }
            if (args[i] == "--config" || args[i] == "-c") config = args[i + 1];
        }
        // A folder without --port takes 8080 (or the next free one): give it a free one instead.
        if (config.isEmpty() && !hasPort) args << "--port" << QString::number(freePort());
        QByteArray configText;
        if (!config.isEmpty()) {
            const QString path = QFileInfo(QDir(scratch), config).absoluteFilePath();
            configText = templates.value(path, yaml.toUtf8());
            if (!writeFile(path, rewriteListen(configText, freePort))) return "cannot write " + path;
        }
        auto s = ServerProcess::exactly(args, env, scratch);
        if (!s->waitReady(15000)) return "did not start listening:\n" + QString::fromUtf8(s->output());
        // What it serves: a folder's index page; the root of a config with a root, else its first
        // literal route.
        QString path = "/";
        QByteArray marker = config.isEmpty() ? kIndexMarker : QByteArray();
        if (!configText.isEmpty() && !configText.contains("root:")) {
            static const QRegularExpression route(R"(path:\s*(/[\w./-]*)[,}\s])");
            path = route.match(QString::fromUtf8(configText)).captured(1);
        }
        QString problem;
        if (s->plainPort())
            problem = httpCheck(QString("http://127.0.0.1:%1%2").arg(s->plainPort()).arg(path), {}, marker);
        if (problem.isEmpty() && s->tlsPort()) problem = httpsCheck(s->tlsPort(), path, marker);
        const int code = s->terminate(kExitMs);
        const QString output = QString::fromUtf8(s->output());
        if (problem.isEmpty() && code != 0) problem = sigtermProblem(code);
        static const QRegularExpression recorded(R"(recorded (\d+) exchange\(s\))");
        if (problem.isEmpty() && args.contains("--record") && recorded.match(output).captured(1).toInt() < 1)
            problem = "no `recorded N exchange(s)` line";
        return problem.isEmpty() ? QString() : problem + "\n" + output;
    }

    // `portico` / `portico gui` without --screenshot: the window on the demo (its copy in
    // ~/.local/share/portico/demo, made here first with free ports), served over HTTP and HTTPS.
    QString gui(const QStringList& args) {
        const QString demo = scratch + "/.local/share/portico/demo";
        QDir(demo).removeRecursively();
        if (!copyTree(sourceDir() + "/resources/demo", demo)) return "cannot copy the demo";
        QList<std::uint16_t> ports;
        QFile f(demo + "/portico.yaml");
        if (!f.open(QIODevice::ReadOnly)) return "no demo config";
        const QByteArray yaml = rewriteListen(f.readAll(), [&] { return ports.emplace_back(freePort()); });
        f.close();
        if (ports.size() != 2 || !writeFile(demo + "/portico.yaml", yaml))
            return "unexpected demo listen list";
        auto s = ServerProcess::exactly(args, env, scratch);
        const QString url = QString("http://127.0.0.1:%1/").arg(ports[0]);
        QElapsedTimer t;
        t.start();
        while (curlFetch({"--max-time", "1", url}).status == 0 && t.elapsed() < 20000)
            QTest::qWait(200);
        QString problem = httpCheck(url, {}, "Portico");
        if (problem.isEmpty()) problem = httpsCheck(ports[1], "/", "Portico");
        const int code = s->terminate(kExitMs);
        if (problem.isEmpty() && code != 0) problem = sigtermProblem(code);
        // "opens its window on the last project": remembered for the next start.
        QFile settings(scratch + "/.config/Portico/Portico.conf");
        if (problem.isEmpty() &&
            (!settings.open(QIODevice::ReadOnly) || !settings.readAll().contains("lastProject")))
            problem = "the project was not remembered in ~/.config/Portico/Portico.conf";
        return problem.isEmpty() ? QString() : problem + "\n" + QString::fromUtf8(s->output());
    }

    // `gui --screenshot FILE` / `--measure-responsiveness N`: bounded runs of the window.
    QString guiBounded(QStringList args) {
        QString shot, tab;
        for (int i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--demo-traffic" || args[i] == "--measure-responsiveness")
                args[i + 1] = QString::number(std::min(args[i + 1].toDouble(), 0.5));
            if (args[i] == "--screenshot") shot = args[i + 1];
            if (args[i] == "--tab") tab = args[i + 1];
        }
        // The tabs that show traffic or load runs get 2 s of it per run by default (0.3 s per suite
        // route): shorter here, like bench's -d.
        if (!shot.isEmpty() && !tab.isEmpty() && tab != "sites" && !args.contains("--demo-traffic"))
            args << "--demo-traffic" << (tab == "suite" ? "0.1" : "0.5");
        if (!shot.isEmpty()) QFile::remove(QDir(scratch).filePath(shot));
        const auto r = run(args, env, 90000);
        if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + r.err;
        if (shot.isEmpty())
            return r.out.contains("under load") ? QString() : "no measurement printed:\n" + r.out;
        QFile png(QDir(scratch).filePath(shot));
        if (!png.open(QIODevice::ReadOnly)) return shot + " was not written";
        const QByteArray head = png.read(24);
        auto be32 = [&](int at) {
            return (quint32(quint8(head[at])) << 24) | (quint32(quint8(head[at + 1])) << 16) |
                   (quint32(quint8(head[at + 2])) << 8) | quint32(quint8(head[at + 3]));
        };
        if (head.size() < 24 || !head.startsWith("\x89PNG\r\n\x1a\n")) return shot + " is not a PNG";
        if (be32(16) != 1280 || be32(20) != 800)
            return QString("%1 is %2x%3, the docs say 1280x800").arg(shot).arg(be32(16)).arg(be32(20));
        return {};
    }

    // `bench`: aimed at this test's servers (the documented URL with their ports), cut short.
    QString bench(QStringList args, bool trusted) {
        if (args.contains("--history") || args.contains("--compare")) {
            const auto r = run(args, env, 20000);
            if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + r.err;
            return r.out.contains("http://127.0.0.1:") ? QString() : "no runs listed:\n" + r.out;
        }
        const bool isSuite = args.contains("--suite");
        // `-d5s`, `-n100` (attached values, as wrk users write them) → `-d 5s`, `-n 100`.
        static const QRegularExpression attached(R"(^-([dn])(\S+)$)");
        for (int i = 0; i < args.size(); ++i)
            if (const auto m = attached.match(args[i]); m.hasMatch()) {
                args[i] = "-" + m.captured(1);
                args.insert(i + 1, m.captured(2));
            }
        static const QRegularExpression url(
            R"(^(https?)://(127\.0\.0\.1|localhost|\[::1\])(?::\d+)?(/.*)?$)");
        bool hasUrl = false, bounded = false;
        QString json;
        for (int i = 1; i < args.size(); ++i) {
            const QString prev = args[i - 1];
            if (prev == "-d" || prev == "--duration") {
                args[i] = isSuite ? "100ms" : "500ms";
                bounded = true;
            } else if (prev == "--warmup") {
                args[i] = "100ms";
            } else if (prev == "-n" || prev == "--requests") {
                args[i] = QString::number(std::min(args[i].toLongLong(), 2000LL));
                bounded = true;
            } else if (prev == "--json") {
                json = args[i];
            } else if (args[i].contains("://")) {
                const auto m = url.match(args[i]);
                if (!m.hasMatch())
                    return args[i] + ": not a loopback URL; the test loads only its own servers";
                const bool tls = m.captured(1) == "https";
                const std::uint16_t port = isSuite ? suite->plainPort()
                                           : tls   ? target->tlsPort()
                                                   : target->plainPort();
                args[i] =
                    QString("%1://%2:%3%4").arg(m.captured(1), m.captured(2)).arg(port).arg(m.captured(3));
                hasUrl = true;
            }
        }
        if (isSuite && !hasUrl) args << QString("http://127.0.0.1:%1").arg(suite->plainPort());
        if (!bounded) args << "-d" << (isSuite ? "100ms" : "500ms");
        if (!json.isEmpty() && json != "-") QFile::remove(QDir(scratch).filePath(json));
        const auto r = run(args, trusted ? trustedEnv : env, 90000);
        const QString ran = "ran: portico " + args.join(' ');
        if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + ran + "\n" + r.out + r.err;
        if (!isSuite) {
            static const QRegularExpression counts(
                R"(Requests: (\d+) started = (\d+) completed \+ (\d+) failed)");
            static const QRegularExpression statuses(R"(Status codes: (.*))");
            const auto c = counts.match(QString::fromUtf8(r.out));
            if (!c.hasMatch() || c.captured(2).toLongLong() < 1 || c.captured(3).toLongLong() != 0)
                return "no successful requests\n" + ran + "\n" + r.out + r.err;
            for (const QString& s : statuses.match(QString::fromUtf8(r.out)).captured(1).split(", "))
                if (!s.startsWith('2')) return "non-2xx answers: " + s + "\n" + ran + "\n" + r.out;
        } else if (!r.out.contains("post-echo")) {
            return "no suite table\n" + ran + "\n" + r.out + r.err;
        }
        if (!json.isEmpty() && json != "-") {
            QFile f(QDir(scratch).filePath(json));
            const QJsonObject o =
                f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
            const bool ok = isSuite ? o["kind"].toString() == "suite"
                                    : o["requests"].toObject()["completed"].toInteger() > 0;
            if (!ok) return json + ": not the JSON result load-results.md describes\n" + ran;
        }
        return {};
    }

    QString har(const QStringList& args) {
        const auto r = run(args, env, 30000);
        if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + r.err;
        const QString out = args.value(3);
        QFile f(QDir(scratch).filePath(out));
        if (args.value(1) == "export" && out != "-") {
            const QJsonObject log = f.open(QIODevice::ReadOnly)
                                        ? QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()
                                        : QJsonObject();
            if (log["version"].toString() != "1.2" || log["entries"].toArray().size() < 6)
                return out + ": not a HAR 1.2 file with the recorded entries";
        } else if (args.value(1) == "import" && f.size() == 0) {
            return out + " was not written";
        }
        return {};
    }

    QString replay(QStringList args, bool trusted) {
        for (int i = 0; i + 1 < args.size(); ++i)
            if (args[i] == "--target") {
                QUrl u(args[i + 1]);
                if (u.host() != "127.0.0.1" && u.host() != "localhost") return args[i + 1] + ": not loopback";
                u.setPort(u.scheme() == "https" ? target->tlsPort() : target->plainPort());
                args[i + 1] = u.toString();
            }
        const auto r = run(args, trusted ? trustedEnv : env, 30000);
        if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + r.out + r.err;
        static const QRegularExpression summary(R"((\d+) replayed: (\d+) same, (\d+) changed, 0 failed)");
        const auto m = summary.match(QString::fromUtf8(r.out));
        if (!m.hasMatch() || m.captured(1).toInt() < 1) return "nothing replayed:\n" + r.out + r.err;
        return {};
    }

    QString plain(const QStringList& args, const QByteArray& mustPrint) {
        const auto r = run(args, env, 20000);
        if (QString o = outcome(r); !o.isEmpty()) return o + "\n" + r.err;
        return r.out.contains(mustPrint) ? QString() : "output lacks '" + mustPrint + "':\n" + r.out;
    }

    void runAll(const QList<DocCommand>& commands) {
        QSet<QString> trustedPages; // pages where a `cert install` came before
        QMap<QString, QString> done;
        for (const DocCommand& c : commands) {
            const QStringList args = localArgs(c.args, scratch);
            const QString sub = args.value(0);
            const bool trusted = trustedPages.contains(c.page);
            if (sub == "cert" && (args.value(1) == "install" || args.value(1) == "uninstall")) {
                notRun << c.where + ": " + c.text + " (changes the system trust store)";
                if (args.value(1) == "install") trustedPages << c.page;
                continue;
            }
            const QString key = args.join('\x1f') + (trusted ? "\x1f(trusted)" : "");
            if (done.contains(key)) {
                ran << c.where + ": same as " + done[key];
                continue;
            }
            done[key] = c.where;
            QElapsedTimer t;
            t.start();
            QString problem;
            if (sub == "serve" && (args.contains("--test") || args.contains("-t"))) {
                QString config = args.value(args.indexOf("--config") + 1);
                if (args.contains("--config"))
                    writeFile(
                        QFileInfo(QDir(scratch), config).absoluteFilePath(),
                        templates.value(QFileInfo(QDir(scratch), config).absoluteFilePath(),
                                        (c.yamlBefore.isEmpty() ? defaultYaml : c.yamlBefore).toUtf8()));
                problem = plain(args, ": ok");
            } else if (sub == "serve") {
                problem = serve(args, c.yamlBefore.isEmpty() ? defaultYaml : c.yamlBefore);
            } else if (sub.isEmpty() || (sub == "gui" && !args.contains("--screenshot") &&
                                         !args.contains("--measure-responsiveness"))) {
                problem = gui(args);
            } else if (sub == "gui") {
                problem = guiBounded(args);
            } else if (sub == "bench") {
                problem = bench(args, trusted);
            } else if (sub == "har") {
                problem = har(args);
            } else if (sub == "replay") {
                problem = replay(args, trusted);
            } else if (sub == "cert" && args.value(1) == "ca") {
                problem = plain(args, "SHA-256:");
            } else if (sub == "cert" && args.value(1) == "export") {
                problem = plain(args, "");
            } else if (sub == "version") {
                problem = plain(args, "portico ");
            } else if (sub == "help") {
                problem = plain(args, args.size() > 1 ? args[1].toUtf8() : "serve");
            } else {
                problem = "the test does not know how to run `" + sub + "`: teach it (tst_docs_commands.cpp)";
            }
            if (!problem.isEmpty())
                failures << QString("%1: %2\n    %3")
                                .arg(c.where, c.text, problem.trimmed().replace('\n', "\n    "));
            ran << QString("%1: %2 ms: %3").arg(c.where).arg(t.elapsed()).arg(c.text);
        }
    }
};

// Where the docs say the binary is: `portico` (on PATH, from the package) or BUILD/app/portico for
// a build folder some script of the repository makes.
QString badProgram(const QString& program) {
    if (program == "portico") return {};
    static const QRegularExpression form(R"(^([\w.-]+)/app/portico$)");
    const auto m = form.match(program);
    if (!m.hasMatch() || !porticoBinary().endsWith("/app/portico"))
        return program + ": not a path to the binary";
    static const QMap<QString, QPair<QString, QString>> builds{
        {"build", {"installers/dev.sh", "$here/build}"}},
        {"build-release", {"tests/perf/run.sh", "$here/build-release\""}},
    };
    const auto b = builds.find(m.captured(1));
    if (b == builds.end())
        return program + ": no script makes a '" + m.captured(1) + "' build folder (build, build-release)";
    QFile script(sourceDir() + "/" + b->first);
    if (!script.open(QIODevice::ReadOnly) || !script.readAll().contains(b->second.toUtf8()))
        return program + ": " + b->first + " no longer builds into " + m.captured(1);
    return {};
}

} // namespace

class TestDocsCommands : public QObject {
    Q_OBJECT

private slots:
    void everyDocumentedCommandParses() {
        const DocScan scan = scanDocs();
        const auto& commands = scan.commands;
        // The docs show over fifty portico commands; far fewer means the scan broke.
        QVERIFY2(commands.size() >= 50, qPrintable(QString("only %1 commands found").arg(commands.size())));
        for (const QString& s : scan.skipped)
            qInfo("not a plain command, not checked: %s", qPrintable(s));

        QTemporaryDir scratch;
        QVERIFY(scratch.isValid());
        // Files the commands name (relative names with an extension): empty ones are enough for
        // the parser's existence checks. Folders the commands serve: created.
        static const QRegularExpression fileName(
            R"(^[\w.-]+(/[\w.-]+)*\.(pem|crt|key|json|db|har|yaml|yml|txt|bin)$)");
        for (const auto& c : commands)
            for (const QString& a : c.args) {
                if (!fileName.match(a).hasMatch()) continue;
                const QString path = scratch.filePath(a);
                QDir().mkpath(QFileInfo(path).path());
                QFile f(path);
                if (!f.exists()) QVERIFY(f.open(QIODevice::WriteOnly));
            }

        QStringList failures;
        QSet<QString> subcommands;
        for (const auto& c : commands) {
            if (QString bad = badProgram(c.program); !bad.isEmpty()) failures << c.where + ": " + bad;
            QProcess p;
            p.setWorkingDirectory(scratch.path());
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert("PORTICO_CHECK_ARGS", "1");
            env.insert("PORTICO_DATA_DIR", scratch.filePath("data"));
            p.setProcessEnvironment(env);
            p.start(porticoBinary(), localArgs(c.args, scratch.path()));
            if (!p.waitForFinished(20000)) {
                p.kill();
                p.waitForFinished();
                failures << c.where + ": did not finish: " + c.text;
                continue;
            }
            if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
                failures << QString("%1: exit %2: %3\n    %4")
                                .arg(c.where)
                                .arg(p.exitCode())
                                .arg(c.text, QString::fromUtf8(p.readAllStandardError()).trimmed());
            if (!c.args.isEmpty()) subcommands << c.args.front();
        }
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join('\n')));
        // Every subcommand appears in the docs at least once.
        for (const char* sub : {"serve", "cert", "bench", "har", "replay", "gui", "version", "help"})
            QVERIFY2(subcommands.contains(sub), sub);
        qInfo("%lld documented commands accepted", static_cast<long long>(commands.size()));
    }

    void badCommandIsCaught() {
        // The check itself: a flag that does not exist is refused under PORTICO_CHECK_ARGS.
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_CHECK_ARGS", "1");
        p.setProcessEnvironment(env);
        p.start(porticoBinary(), {"serve", "--no-such-flag"});
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitCode(), 2);
        p.start(porticoBinary(), {"bench", "http://127.0.0.1:1/", "-c", "0"});
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitCode(), 2);
        // And the path forms: a build folder nothing makes is refused.
        QVERIFY(!badProgram("build-rel/app/portico").isEmpty());
        QVERIFY(badProgram("build/app/portico").isEmpty());
    }

    void everyDocumentedCommandRuns() {
        const DocScan scan = scanDocs();
        QVERIFY(scan.commands.size() >= 50);
        QVERIFY2(!scan.defaultYaml.isEmpty(), "docs/guide.md has no ```yaml example");
        for (const QString& s : scan.others)
            qInfo("not a portico command, not run: %s", qPrintable(s));
        DocRunner runner;
        QVERIFY(runner.dir.isValid());
        QElapsedTimer t;
        t.start();
        QString why;
        QVERIFY2(runner.setUp(scan, why), qPrintable(why));
        qInfo("fixtures (CA, target servers, a recorded session and its HAR): %lld ms",
              static_cast<long long>(t.elapsed()));
        runner.runAll(scan.commands);
        for (const QString& s : runner.ran)
            qInfo("ran %s", qPrintable(s));
        for (const QString& s : runner.notRun)
            qInfo("not run: %s", qPrintable(s));
        // Each failure in full (QVERIFY2 cuts long messages), then the list of places.
        QStringList places;
        for (const QString& f : runner.failures) {
            qWarning("%s", qPrintable(f));
            places << f.section(": ", 0, 0);
        }
        QVERIFY2(runner.failures.isEmpty(),
                 qPrintable(QString("%1 documented command(s) failed (details above): %2")
                                .arg(runner.failures.size())
                                .arg(places.join(", "))));
        QVERIFY(runner.target->terminate(kExitMs) == 0);
        QVERIFY(runner.suite->terminate(kExitMs) == 0);
        const auto repeats = runner.ran.filter(": same as ").size();
        qInfo("%lld documented commands run (and %lld repeats of one of them), %lld not run, in %lld ms",
              static_cast<long long>(runner.ran.size() - repeats), static_cast<long long>(repeats),
              static_cast<long long>(runner.notRun.size()), static_cast<long long>(t.elapsed()));
    }
};

QTEST_GUILESS_MAIN(TestDocsCommands)
#include "tst_docs_commands.moc"

// Every `portico` command shown in README.md and docs/*.md (```sh blocks) works as shown.
// everyDocumentedCommandParses: each is a command line the current binary accepts (run with
// PORTICO_CHECK_ARGS=1: parse, then exit 0; a bad flag or value → exit 2).
// everyDocumentedCommandRuns: each is run for real in a scratch folder that is also $HOME and holds
// $PORTICO_DATA_DIR, bounded in time: servers get free loopback ports in place of the documented
// ones, answer one real request with what the docs say they serve, and exit 0 on SIGTERM; load
// tests are aimed at a Portico server of the test and cut short; the rest run as written on real
// files (a recorded session, its HAR, the local CA). Commands that change the machine (`cert
// install`/`uninstall`) or open a browser (`proxy chromium`) are only parsed. A failure names the
// doc's file:line and the command's output.
// What the docs say agrees with what the code does: everyConfigNamesOnlyWhatThePageMade (a config
// a page runs names only files and folders an earlier step of that page made), the URLs each page
// shows for its servers against their "Listening on" lines (in everyDocumentedCommandRuns), and
// everyDocumentedDefaultHolds (configuration.md's defaults are the loader's; the flags' defaults
// the docs give are those of --help). Each check has a self-test fed a wrong snippet (…IsCaught).
// (Config snippets: tst_config's docExamples.)
#include "test_support.h"

#include <portico/config/writer.h>
#include <portico/validate/load.h>

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

#include <filesystem>
#include <functional>
#include <variant>

using namespace portico::test;

namespace {

struct DocCommand {
    QString where;      // "docs/cli.md:107"
    QString page;       // "docs/cli.md"
    int line = 0;       // 107
    QString text;       // as written (after joining continuation lines)
    QString program;    // "portico", "build/app/portico", ... (after a `sudo` or `taskset -c N` prefix)
    QStringList args;   // the words after the program
    QString yamlBefore; // the page's last valid ```yaml example above the command ("" if none)
};

// A file an ```sh block writes with a here-document (`cat > FILE <<'END'` … `END`).
struct DocFile {
    QString where;
    QString page;
    int line = 0;
    QString path;
    QByteArray text;
};

// Any other line of an ```sh block (`mkdir -p site`, `echo '[]' > mocks/users.json`, `wrk ...`).
struct DocShell {
    QString page;
    int line = 0;
    QString text;
};

struct DocScan {
    QList<DocCommand> commands;
    QList<DocFile> files;
    QStringList skipped;          // lines naming portico that a shell would have to interpret first
    QStringList others;           // plain commands of other programs (installers, wrk, apt, ...)
    QList<DocShell> shell;        // every line of an ```sh block that is not a portico command
    QMap<QString, QString> pages; // the text of each page, by its name
    QString defaultYaml;          // the guide's first example, "Save this as portico.yaml"
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

// Adds the ```sh commands, here-documents and other shell lines of one page (`rel`: "docs/guide.md").
void scanPage(const QString& rel, const QString& content, DocScan& scan) {
    static const QRegularExpression heredoc(R"(^cat\s*>\s*(\S+)\s*<<-?\s*['"]?(\w+)['"]?$)");
    static const QRegularExpression background(R"([^&]&$)");
    scan.pages[rel] = content;
    const QStringList lines = content.split('\n');
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
            DocFile file{where, rel, first + 1, m.captured(1), {}};
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
            if (text.contains("portico "))
                scan.skipped << where + ": " + text;
            else if (!text.isEmpty())
                scan.shell << DocShell{rel, first + 1, run};
            continue;
        }
        if (words.size() > 3 && words[0] == "taskset" && words[1] == "-c") words = words.mid(3);
        const QString program = words.front();
        if (program != "portico" && !program.endsWith("/portico")) {
            scan.others << where + ": " + text;
            scan.shell << DocShell{rel, first + 1, run};
            continue;
        }
        scan.commands.push_back({where, rel, first + 1, text, program, words.mid(1), lastYaml});
    }
}

DocScan scanDocs() {
    DocScan scan;
    QStringList files{"README.md"};
    for (const QString& f : QDir(sourceDir() + "/docs").entryList({"*.md"}, QDir::Files, QDir::Name))
        files << "docs/" + f;
    for (const QString& rel : files) {
        QFile f(sourceDir() + "/" + rel);
        if (f.open(QIODevice::ReadOnly)) scanPage(rel, QString::fromUtf8(f.readAll()), scan);
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

// The `listen:` list of a YAML config with every port replaced by one from `nextPort` (given the
// documented one), so documented ports (8080, 8443, ...) never collide with anything. Loopback hosts
// stay as written (the printed URLs are checked against the docs); any other becomes 127.0.0.1.
QByteArray rewriteListen(const QByteArray& yaml,
                         const std::function<std::uint16_t(std::uint16_t)>& nextPort) {
    static const QRegularExpression address(R"(((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9A-Fa-f:]+\]):(\d+))");
    static const QRegularExpression loopback(R"(^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$)");
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
            const QString host = loopback.match(m.captured(1)).hasMatch() ? m.captured(1) : "127.0.0.1";
            out +=
                l.mid(at, m.capturedStart() - at) +
                QString("%1:%2").arg(host).arg(nextPort(static_cast<std::uint16_t>(m.captured(2).toUInt())));
            at = m.capturedEnd();
        }
        l = out + l.mid(at);
    }
    return lines.join('\n').toUtf8();
}

// A "Listening on URL" line a documented server printed, with the port the docs gave it.
struct Printed {
    QString page;
    int line = 0; // of the command
    std::uint16_t documentedPort = 0;
    QString scheme, host; // as printed: "https", "localhost" / "127.0.0.1" / "[::1]"
};

// The listeners a server printed (`Listening on https://localhost:40123/`), by the documented port
// of each (`ports`: the port used → the one the docs show).
QList<Printed> printedListeners(const QByteArray& output, const QMap<std::uint16_t, std::uint16_t>& ports,
                                const DocCommand& c) {
    static const QRegularExpression listening(R"(Listening on (https?)://(\[[^\]]+\]|[^:/\s]+):(\d+)/)");
    QList<Printed> printed;
    for (auto it = listening.globalMatch(QString::fromUtf8(output)); it.hasNext();) {
        const auto m = it.next();
        const auto port = static_cast<std::uint16_t>(m.captured(3).toUInt());
        if (ports.contains(port)) printed.append({c.page, c.line, ports[port], m.captured(1), m.captured(2)});
    }
    return printed;
}

// Check 2: every loopback URL of a page (http(s)://localhost, *.localhost, 127.0.0.1 or [::1], with
// a port) that names the port of a server the page runs says what that server printed for it: its
// scheme, and its host (a `localhost` listener is 127.0.0.1 and [::1] on one port, so those and
// *.localhost names reach it too; a 127.0.0.1 one is not reached by `localhost`, which a client
// may try as ::1 first). The server is the page's last one above the URL on that port, else its
// first one below. URLs on ports no server of the page has (an upstream on 3000) are not checked.
QStringList urlMismatches(const QMap<QString, QString>& pages, const QList<Printed>& printed) {
    static const QRegularExpression url(
        R"(\b(https?)://(localhost|[\w.-]+\.localhost|127\.0\.0\.1|\[::1\]):(\d+))");
    QStringList failures;
    for (auto page = pages.cbegin(); page != pages.cend(); ++page) {
        const QStringList lines = page.value().split('\n');
        for (int i = 0; i < lines.size(); ++i)
            for (auto it = url.globalMatch(lines[i]); it.hasNext();) {
                const auto m = it.next();
                const auto port = static_cast<std::uint16_t>(m.captured(3).toUInt());
                int server = 0;
                for (const Printed& p : printed)
                    if (p.page == page.key() && p.documentedPort == port &&
                        (server == 0 || (p.line <= i + 1 ? (server > i + 1 || p.line > server)
                                                         : (server > i + 1 && p.line < server))))
                        server = p.line;
                if (server == 0) continue;
                const QString host = m.captured(2);
                bool agrees = false;
                QStringList shown;
                for (const Printed& p : printed) {
                    if (p.page != page.key() || p.line != server || p.documentedPort != port) continue;
                    shown << QString("%1://%2:%3/").arg(p.scheme, p.host).arg(port);
                    const bool viaLocalhost =
                        p.host == "localhost" &&
                        (host == "127.0.0.1" || host == "[::1]" || host.endsWith(".localhost"));
                    if (p.scheme == m.captured(1) && (p.host == host || viaLocalhost)) agrees = true;
                }
                if (!agrees)
                    failures
                        << QString("%1:%2: %3 disagrees with what the server of %1:%4 prints for port %5: %6")
                               .arg(page.key())
                               .arg(i + 1)
                               .arg(m.captured(0))
                               .arg(server)
                               .arg(port)
                               .arg(shown.join(", "));
            }
    }
    return failures;
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

// The files and folders a loaded config reads (absolute paths), each with the key that names it.
QList<QPair<QString, QString>> filesOfConfig(const portico::config::Config& config) {
    using namespace portico::config;
    QList<QPair<QString, QString>> files;
    auto add = [&](const QString& key, const std::string& path) {
        if (!path.empty()) files.append({key, QString::fromStdString(path)});
    };
    for (std::size_t i = 0; i < config.listen.size(); ++i)
        if (const auto& t = config.listen[i].tls; t && !t->autoCa) {
            add(QString("listen[%1].tls.cert").arg(i), t->files.cert);
            add(QString("listen[%1].tls.key").arg(i), t->files.key);
        }
    if (!config.accessLog.path.empty() && config.accessLog.path != "-")
        add("access_log.path (its folder)",
            std::filesystem::path(config.accessLog.path).parent_path().string());
    if (!config.capture.store.empty())
        add("capture.store (its folder)", std::filesystem::path(config.capture.store).parent_path().string());
    for (std::size_t v = 0; v < config.vhosts.size(); ++v) {
        const Vhost& vh = config.vhosts[v];
        const QString at = QString("vhosts[%1].").arg(v);
        if (vh.root) add(at + "root", vh.root->root);
        for (const auto& [status, page] : vh.errorPages)
            add(at + QString("error_pages.%1").arg(status), page);
        if (vh.tls) {
            add(at + "tls.cert", vh.tls->cert);
            add(at + "tls.key", vh.tls->key);
        }
        for (std::size_t r = 0; r < vh.routes.size(); ++r) {
            const QString route = at + QString("routes[%1].").arg(r);
            if (const auto* s = std::get_if<StaticAction>(&vh.routes[r].action))
                add(route + "static.root", s->root);
            if (const auto* m = std::get_if<RespondAction>(&vh.routes[r].action))
                add(route + "respond.file", m->bodyFile);
            if (const auto* p = std::get_if<ProxyAction>(&vh.routes[r].action))
                add(route + "grpc.descriptor_set", p->descriptorSet);
        }
    }
    return files;
}

// Check 1: what a documented config names exists when the page runs it. Each page is replayed in
// an empty folder (also $HOME) that holds only what the page made above each line: its
// here-documents, `mkdir`, `touch`, `... > FILE`, the files portico commands of the page write, and
// the config itself (the page's here-document for it, else its last ```yaml example above the
// command, which the reader was told to save). A config the page neither writes nor shows is the
// reader's own (cli.md's `--config portico.yaml`) unless the repository has it. The loader refuses
// most missing files itself; filesOfConfig covers every key that names one, whether it does or not.
QStringList unmadeFiles(const DocScan& scan) {
    QStringList failures;
    for (auto page = scan.pages.cbegin(); page != scan.pages.cend(); ++page) {
        QTemporaryDir dir;
        const QString home = dir.path();
        QMap<int, std::function<void()>> steps; // by line: each page's steps in order
        QSet<QString> fromHeredoc;
        for (const DocFile& f : scan.files)
            if (f.page == page.key())
                steps[f.line] = [&, f] {
                    const QString path = QDir(home).absoluteFilePath(localPath(f.path, home));
                    writeFile(path, f.text);
                    fromHeredoc << path;
                };
        static const QRegularExpression redirect(R"(^(.*?)\s*>>?\s*([^\s>|&;]+)$)");
        for (const DocShell& s : scan.shell)
            if (s.page == page.key())
                steps[s.line] = [&, s] {
                    QString text = s.text;
                    QByteArray content;
                    if (const auto m = redirect.match(text); m.hasMatch()) {
                        QStringList words;
                        if (splitWords(m.captured(1), words) && words.value(0) == "echo")
                            content = words.mid(1).join(' ').toUtf8() + '\n';
                        writeFile(QDir(home).absoluteFilePath(localPath(m.captured(2), home)), content);
                        text = m.captured(1);
                    }
                    QStringList words;
                    if (!splitWords(text, words) || words.isEmpty()) return;
                    for (const QString& w : words.mid(1)) {
                        if (w.startsWith('-')) continue;
                        const QString path = QDir(home).absoluteFilePath(localPath(w, home));
                        if (words[0] == "mkdir") QDir().mkpath(path);
                        if (words[0] == "touch" && !QFileInfo::exists(path)) writeFile(path, {});
                    }
                };
        for (const DocCommand& c : scan.commands) {
            if (c.page != page.key()) continue;
            steps[c.line] = [&, c] {
                const QStringList args = localArgs(c.args, home);
                auto file = [&](const QString& word) { return QDir(home).absoluteFilePath(word); };
                // What the command writes, for the steps below it.
                for (int i = 0; i + 1 < args.size(); ++i)
                    if (QStringList{"--record", "--json", "--screenshot"}.contains(args[i]) &&
                        args[i + 1] != "-" && !QFileInfo::exists(file(args[i + 1])))
                        writeFile(file(args[i + 1]), {});
                if ((args.value(0) == "har" && args.size() >= 4) ||
                    (args.value(0) == "cert" && args.value(1) == "export"))
                    writeFile(file(args.last()), {});
                if (args.value(0) != "serve" && args.value(0) != "gui") return;
                const qsizetype at = std::max(args.indexOf("--config"), args.indexOf("-c"));
                if (at < 0 || at + 1 >= args.size()) return;
                QString config = file(args[at + 1]);
                if (!fromHeredoc.contains(config)) {
                    if (!c.yamlBefore.isEmpty()) {
                        writeFile(config, c.yamlBefore.toUtf8());
                    } else if (QFileInfo::exists(sourceDir() + "/" + args[at + 1])) {
                        config = sourceDir() + "/" + args[at + 1];
                    } else {
                        return;
                    }
                }
                const auto loaded = portico::config::loadConfigFile(config.toStdString());
                QStringList problems;
                for (const auto& e : loaded.errors)
                    problems << QString::fromStdString(e.toString()).replace(home + "/", "");
                if (loaded.ok())
                    for (const auto& [key, path] : filesOfConfig(*loaded.config))
                        if (!QFileInfo::exists(path))
                            problems << QString("%1: %2 does not exist")
                                            .arg(key, QString(path).replace(home + "/", ""));
                if (!problems.isEmpty())
                    failures << QString("%1: %2: its config names what no step of the page above it makes (a "
                                        "here-document, mkdir, `> FILE`):\n    %3")
                                    .arg(c.where, c.text, problems.join("\n    "));
            };
        }
        for (const auto& step : steps)
            step();
    }
    return failures;
}

// Check 3: every default configuration.md's key tables give as a value (`| key | type | default |`
// rows whose default is in backticks: `auto`, `16KiB`, `[127.0.0.1:8080]`) is the loader's: the
// config with the key set to it equals (as configToYaml writes it) the config without the key, or
// with the key's section written empty (`capture: {}`: some sections switch on once written). The
// section is the heading above the table.
QStringList defaultMismatches(const QString& rel, const QString& content) {
    // Heading → the YAML around `KEY: VALUE` (%1), indented to fit.
    static const QMap<QString, QString> sections{
        {"top level", "%1\nvhosts: [{names: [localhost]}]\n"},
        {"http2", "http2:\n  %1\nvhosts: [{names: [localhost]}]\n"},
        {"limits", "limits:\n  %1\nvhosts: [{names: [localhost]}]\n"},
        {"access_log", "access_log:\n  %1\nvhosts: [{names: [localhost]}]\n"},
        {"capture", "capture:\n  %1\nvhosts: [{names: [localhost]}]\n"},
        {"compression", "compression:\n  %1\nvhosts: [{names: [localhost]}]\n"},
        {"vhosts", "vhosts:\n  - names: [localhost]\n    root: .\n    %1\n"},
        {"static",
         "vhosts:\n  - routes:\n      - path: /x\n        static:\n          root: .\n          %1\n"},
        {"respond",
         "vhosts:\n  - routes:\n      - path: /x\n        respond:\n          body: x\n          %1\n"},
        {"redirect",
         "vhosts:\n  - routes:\n      - path: /x\n        redirect:\n          to: /\n          %1\n"},
        {"proxy",
         "vhosts:\n  - routes:\n      - path: /x\n        proxy:\n          upstream: http://127.0.0.1:3000\n"
         "          %1\n"},
        {"websocket",
         "vhosts:\n  - routes:\n      - path: /x/:room\n        websocket:\n          subprotocols: [x]\n"
         "          %1\n"},
    };
    static const QRegularExpression heading(R"(^#+\s+(.*)$)");
    static const QRegularExpression row(R"(^\|\s*`([\w.]+)`\s*\|[^|]*\|\s*`([^`]+)`)");
    QTemporaryDir dir;
    auto written = [&](const QString& yaml, QString& error) -> QString {
        const auto r =
            portico::config::loadConfigText(yaml.toStdString(), "defaults.yaml", dir.path().toStdString());
        for (const auto& e : r.errors)
            error += QString::fromStdString(e.toString()) + "; ";
        return r.ok() ? QString::fromStdString(
                            portico::config::configToYaml(*r.config, dir.path().toStdString()))
                      : QString();
    };
    QStringList failures;
    QString section;
    bool keyTable = false, inBlock = false;
    const QStringList lines = content.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QString& l = lines[i];
        if (const auto m = heading.match(l); m.hasMatch() && !inBlock) {
            section = m.captured(1).trimmed().toLower();
            keyTable = false;
        }
        if (l.startsWith("```")) inBlock = !inBlock;
        if (inBlock) continue;
        if (l.startsWith("| key | type | default"))
            keyTable = true;
        else if (!l.startsWith('|'))
            keyTable = false;
        const auto m = row.match(QString(l).replace("\\|", "/")); // `a` \| `b` in a type cell
        if (!keyTable || !sections.contains(section) || !m.hasMatch()) continue;
        QString value = m.captured(2);
        if (QStringLiteral("-*&!|>%@").contains(value.front())) value = '"' + value + '"';
        const QString wrap = sections[section];
        const QString with = wrap.arg(m.captured(1) + ": " + value);
        QString error;
        const QString set = written(with, error);
        if (set.isEmpty()) {
            failures << QString("%1:%2: the documented default of `%3` (%4) does not load: %5")
                            .arg(rel)
                            .arg(i + 1)
                            .arg(m.captured(1), m.captured(2), error);
            continue;
        }
        // Without the key: the section absent (the top level: no line), or written empty.
        QString unused;
        const QString without =
            written(section == "top level" || wrap.startsWith("vhosts") ? wrap.arg("")
                                                                        : wrap.section('\n', 1).arg(""),
                    unused);
        const QString empty = wrap.startsWith("vhosts") || section == "top level"
                                  ? without
                                  : written(wrap.arg("{}").replace(":\n  {}", ": {}"), unused);
        if (set != without && set != empty)
            failures << QString("%1:%2: `%3` is documented to default to `%4`, but setting it changes the "
                                "loaded config:\n    %5")
                            .arg(rel)
                            .arg(i + 1)
                            .arg(m.captured(1), m.captured(2), QString(set).replace('\n', "\n    "));
    }
    return failures;
}

// The defaults `portico SUB --help` gives its flags ("--port" → {"8080"}): the first word after
// "default" in an option's description (CLI11 puts a long one on the next lines).
QMap<QString, QSet<QString>> helpDefaults() {
    static const QRegularExpression flag(R"(^\s*(?:-\w,)?(--[\w-]+))");
    static const QRegularExpression value(R"(\b[Dd]efault:?\s+`?([^\s`,;:)]+))");
    QMap<QString, QSet<QString>> defaults;
    for (const QStringList& sub : QList<QStringList>{{"serve"},
                                                     {"proxy"},
                                                     {"bench"},
                                                     {"replay"},
                                                     {"gui"},
                                                     {"har", "export"},
                                                     {"har", "import"},
                                                     {"cert", "export"}}) {
        QProcess p;
        p.start(porticoBinary(), sub + QStringList{"--help"});
        p.waitForFinished(20000);
        QString current, description;
        auto flush = [&] {
            if (const auto m = value.match(description); !current.isEmpty() && m.hasMatch())
                defaults[current] << m.captured(1);
        };
        for (const QString& l : QString::fromUtf8(p.readAllStandardOutput()).split('\n')) {
            if (const auto m = flag.match(l); m.hasMatch() && l.trimmed().startsWith('-')) {
                flush();
                current = m.captured(1);
                description = l.mid(m.capturedEnd());
            } else if (l.startsWith("      ")) {
                description += ' ' + l.trimmed();
            } else {
                flush();
                current.clear();
            }
        }
        flush();
    }
    return defaults;
}

// Check 3, the flags: a default the docs give a flag (cli.md's tables: "| `-p, --port N` | ...
// Default 8080 |"; prose: "(`--host`, default 127.0.0.1, ...") is the one its --help gives.
QStringList flagDefaultMismatches(const QString& rel, const QString& content,
                                  const QMap<QString, QSet<QString>>& help) {
    static const QRegularExpression code(R"(`([^`]*)`)");
    static const QRegularExpression flag(R"(--[\w-]+)");
    static const QRegularExpression value(R"(\b[Dd]efault:?\s+`?([^\s`,;:)]+))");
    QStringList failures;
    const QStringList lines = content.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QString& l = lines[i];
        // (flags, what is said of them): a table row's first cell and its second; else each `--flag`
        // span and the text up to the next one or the end of the sentence.
        QList<QPair<QStringList, QString>> clauses;
        if (l.startsWith('|')) {
            const QStringList cells = l.split(" | ");
            QStringList flags;
            for (auto it = flag.globalMatch(cells.value(0)); it.hasNext();)
                flags << it.next().captured(0);
            if (!flags.isEmpty()) clauses.append({flags, cells.value(1)});
        } else {
            QList<QRegularExpressionMatch> spans;
            for (auto it = code.globalMatch(l); it.hasNext();)
                if (const auto m = it.next(); flag.match(m.captured(1)).hasMatch()) spans << m;
            for (qsizetype s = 0; s < spans.size(); ++s) {
                const qsizetype end = s + 1 < spans.size() ? spans[s + 1].capturedStart() : l.size();
                QString said = l.mid(spans[s].capturedEnd(), end - spans[s].capturedEnd());
                if (const qsizetype stop = said.indexOf(". "); stop >= 0) said.truncate(stop);
                clauses.append({{flag.match(spans[s].captured(1)).captured(0)}, said});
            }
        }
        for (const auto& [flags, said] : clauses) {
            const auto m = value.match(said);
            if (!m.hasMatch()) continue;
            const QString documented = m.captured(1).endsWith('.') ? m.captured(1).chopped(1) : m.captured(1);
            for (const QString& f : flags)
                if (help.contains(f) && !help[f].contains(documented))
                    failures << QString("%1:%2: %3 is documented to default to %4; `portico --help` says %5")
                                    .arg(rel)
                                    .arg(i + 1)
                                    .arg(f, documented, QStringList(help[f].values()).join(" / "));
        }
    }
    return failures;
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
    QList<Printed> printed; // what the documented servers printed

    // The scratch folder as $HOME, an environment without the user's.
    void setUpEnvironment() {
        scratch = dir.path();
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
    }

    bool setUp(const DocScan& scan, QString& why) {
        setUpEnvironment();
        defaultYaml = scan.defaultYaml;

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
        writeFile(scratch + "/record.yaml",
                  rewriteListen(defaultYaml.toUtf8(), [](std::uint16_t) { return 0; }));
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
    // Its "Listening on" lines go to `printed`.
    QString serve(QStringList args, const QString& yaml, const DocCommand& c) {
        QString config;
        bool hasPort = false;
        QMap<std::uint16_t, std::uint16_t> ports; // the port used → the documented one
        auto portFor = [&](std::uint16_t documented) {
            const std::uint16_t port = freePort();
            ports[port] = documented;
            return port;
        };
        for (int i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--port" || args[i] == "-p" || args[i] == "--https-port") {
                args[i + 1] = QString::number(portFor(static_cast<std::uint16_t>(args[i + 1].toUInt())));
                hasPort = hasPort || args[i] != "--https-port";
            }
            if (args[i] == "--config" || args[i] == "-c") config = args[i + 1];
        }
        // A folder without --port takes 8080 (or the next free one): give it a free one instead.
        if (config.isEmpty() && !hasPort) args << "--port" << QString::number(portFor(8080));
        QByteArray configText;
        if (!config.isEmpty()) {
            const QString path = QFileInfo(QDir(scratch), config).absoluteFilePath();
            configText = templates.value(path, yaml.toUtf8());
            if (!writeFile(path, rewriteListen(configText, portFor))) return "cannot write " + path;
        }
        auto s = ServerProcess::exactly(args, env, scratch);
        if (!s->waitReady(15000)) return "did not start listening:\n" + QString::fromUtf8(s->output());
        printed += printedListeners(s->output(), ports, c);
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

    // `portico proxy`: on a free port instead of the documented one; its page for requests to
    // itself answers, and SIGTERM ends it (with its `recorded` line when it records).
    QString proxy(QStringList args, const DocCommand& c) {
        QMap<std::uint16_t, std::uint16_t> ports;
        bool hasPort = false;
        for (int i = 0; i + 1 < args.size(); ++i)
            if (args[i] == "--port" || args[i] == "-p") {
                const std::uint16_t port = freePort();
                ports[port] = static_cast<std::uint16_t>(args[i + 1].toUInt());
                args[i + 1] = QString::number(port);
                hasPort = true;
            }
        if (!hasPort) {
            const std::uint16_t port = freePort();
            ports[port] = 8000;
            args << "--port" << QString::number(port);
        }
        auto s = ServerProcess::exactly(args, env, scratch);
        if (!s->waitReady(15000)) return "did not start listening:\n" + QString::fromUtf8(s->output());
        printed += printedListeners(s->output(), ports, c);
        QString problem = httpCheck(QString("http://127.0.0.1:%1/").arg(s->plainPort()), {}, "forward proxy");
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
        const QByteArray yaml =
            rewriteListen(f.readAll(), [&](std::uint16_t) { return ports.emplace_back(freePort()); });
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
        QMap<QString, QList<Printed>> printedBy; // by command, for its repeats
        for (const DocCommand& c : commands) {
            const QStringList args = localArgs(c.args, scratch);
            const QString sub = args.value(0);
            const bool trusted = trustedPages.contains(c.page);
            if (sub == "proxy" && args.value(1) == "chromium") {
                notRun << c.where + ": " + c.text + " (opens a browser: tst_proxy_chromium runs it)";
                continue;
            }
            if (sub == "cert" && (args.value(1) == "install" || args.value(1) == "uninstall")) {
                notRun << c.where + ": " + c.text + " (changes the system trust store)";
                if (args.value(1) == "install") trustedPages << c.page;
                continue;
            }
            const QString key = args.join('\x1f') + (trusted ? "\x1f(trusted)" : "");
            if (done.contains(key)) {
                ran << c.where + ": same as " + done[key];
                for (Printed p : printedBy[key]) {
                    p.page = c.page;
                    p.line = c.line;
                    printed << p;
                }
                continue;
            }
            done[key] = c.where;
            const qsizetype printedBefore = printed.size();
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
                problem = serve(args, c.yamlBefore.isEmpty() ? defaultYaml : c.yamlBefore, c);
            } else if (sub.isEmpty() || (sub == "gui" && !args.contains("--screenshot") &&
                                         !args.contains("--measure-responsiveness"))) {
                problem = gui(args);
            } else if (sub == "gui") {
                problem = guiBounded(args);
            } else if (sub == "proxy") {
                problem = proxy(args, c);
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
            printedBy[key] = printed.mid(printedBefore);
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
        for (const char* sub : {"serve", "proxy", "cert", "bench", "har", "replay", "gui", "version", "help"})
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

    void everyConfigNamesOnlyWhatThePageMade() {
        const DocScan scan = scanDocs();
        const QStringList failures = unmadeFiles(scan);
        for (const QString& f : failures)
            qWarning("%s", qPrintable(f));
        QVERIFY2(failures.isEmpty(), qPrintable(QString("%1 documented config(s) name files no step made "
                                                        "(details above)")
                                                    .arg(failures.size())));
    }

    void unmadeFileIsCaught() {
        // The guide's §4 as it was: a config serving site/ and mocks/users.json, which no step made.
        const QString config = "```yaml\nlisten: [localhost:8080]\nvhosts:\n  - names: [localhost]\n"
                               "    root: site\n    routes:\n"
                               "      - {path: /users, respond: {file: mocks/users.json}}\n```\n\n"
                               "```sh\nportico serve --config portico.yaml\n```\n";
        DocScan bad;
        scanPage("docs/bad.md", config, bad);
        QStringList failures = unmadeFiles(bad);
        QCOMPARE(failures.size(), 1);
        QVERIFY2(failures[0].startsWith("docs/bad.md:11: ") && failures[0].contains("mocks/users.json") &&
                     failures[0].contains("site"),
                 qPrintable(failures[0]));
        // The folder made, the file not: still caught.
        DocScan half;
        scanPage("docs/half.md", "```sh\nmkdir -p site/app mocks\n```\n\n" + config, half);
        failures = unmadeFiles(half);
        QCOMPARE(failures.size(), 1);
        QVERIFY2(failures[0].startsWith("docs/half.md:15: ") && failures[0].contains("mocks/users.json"),
                 qPrintable(failures[0]));
        // Made with `echo ... >`, or with a here-document: nothing to report.
        DocScan good;
        scanPage("docs/good.md",
                 "```sh\nmkdir -p site mocks\necho '[{\"id\": 1}]' > mocks/users.json\n```\n\n" + config,
                 good);
        QVERIFY2(unmadeFiles(good).isEmpty(), qPrintable(unmadeFiles(good).join('\n')));
        DocScan heredoc;
        scanPage("docs/heredoc.md",
                 "```sh\nmkdir site\ncat > mocks/users.json <<'END'\n[]\nEND\n```\n\n" + config, heredoc);
        QVERIFY2(unmadeFiles(heredoc).isEmpty(), qPrintable(unmadeFiles(heredoc).join('\n')));
    }

    void wrongUrlIsCaught() {
        // A server on 127.0.0.1 shown as localhost (the guide's https://localhost:8443/ as it was), and
        // with the wrong scheme; on localhost, its loopback addresses and *.localhost names agree.
        auto mismatches = [](const QString& listen, const QString& urls, QStringList& failures) {
            DocScan scan;
            scanPage("docs/urls.md",
                     "```yaml\nlisten: [" + listen +
                         "]\nvhosts:\n  - routes: [{path: /hi, respond: {body: hi}}]\n```\n\n"
                         "```sh\nportico serve --config portico.yaml\n```\n\n" +
                         urls + "\n",
                     scan);
            DocRunner runner;
            runner.setUpEnvironment();
            runner.defaultYaml = scan.commands.value(0).yamlBefore;
            runner.runAll(scan.commands);
            if (!runner.failures.isEmpty()) return false;
            failures = urlMismatches(scan.pages, runner.printed);
            return true;
        };
        QStringList failures;
        QVERIFY(
            mismatches("127.0.0.1:8080",
                       "Open http://127.0.0.1:8080/hi, not http://localhost:8080/hi;\n"
                       "https://127.0.0.1:8080/hi is not served; http://127.0.0.1:3000/ is another server.",
                       failures));
        QCOMPARE(failures.size(), 2);
        QVERIFY2(failures[0].startsWith("docs/urls.md:11: http://localhost:8080") &&
                     failures[0].contains("http://127.0.0.1:8080/"),
                 qPrintable(failures[0]));
        QVERIFY2(failures[1].startsWith("docs/urls.md:12: https://127.0.0.1:8080"), qPrintable(failures[1]));
        QVERIFY(mismatches("localhost:8080",
                           "http://localhost:8080/hi, http://127.0.0.1:8080/hi, http://[::1]:8080/hi and "
                           "http://docs.localhost:8080/ reach it; https://localhost:8080/ does not.",
                           failures));
        QCOMPARE(failures.size(), 1);
        QVERIFY2(failures[0].startsWith("docs/urls.md:11: https://localhost:8080"), qPrintable(failures[0]));
    }

    void everyDocumentedDefaultHolds() {
        QFile f(sourceDir() + "/docs/configuration.md");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(f.readAll());
        QStringList failures = defaultMismatches("docs/configuration.md", text);
        const auto help = helpDefaults();
        QVERIFY2(help.value("--port").contains("8080"), "no defaults read from `portico serve --help`");
        const DocScan scan = scanDocs();
        for (auto page = scan.pages.cbegin(); page != scan.pages.cend(); ++page)
            failures += flagDefaultMismatches(page.key(), page.value(), help);
        for (const QString& m : failures)
            qWarning("%s", qPrintable(m));
        QVERIFY2(failures.isEmpty(),
                 qPrintable(QString("%1 documented default(s) are not the loader's (details above)")
                                .arg(failures.size())));
        // The tables were read: far fewer rows with a default than today's ~60 means the scan broke.
        static const QRegularExpression rows(R"(\n\| `[\w.]+` \|[^|\n]*\| `)");
        QVERIFY(text.count(rows) >= 40);
    }

    void wrongDefaultIsCaught() {
        const QString page =
            "## Top level\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n"
            "| `listen` | list | `[127.0.0.1:8080]` | the default before `localhost` |\n"
            "| `server_header` | bool | `true` | |\n\n"
            "## limits\n\n| key | type | default | range | when exceeded |\n"
            "| --- | --- | --- | --- | --- |\n| `max_header_count` | integer | `99` | 1..128 | 431 |\n"
            "| `header_timeout` | duration | `10s` | > 0 | 408 |\n\n"
            "## capture\n\n| key | type | default | range / meaning |\n| --- | --- | --- | --- |\n"
            "| `enabled` | bool | `false` (`true` once the section is written) | |\n\n"
            "## access_log\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n"
            "| `format` | `combined` \\| `json` \\| `off` | `combined` | |\n"
            "| `path` | file or `-` | `-` | |\n";
        const QStringList failures = defaultMismatches("docs/defaults.md", page);
        QCOMPARE(failures.size(), 2);
        QVERIFY2(failures[0].startsWith("docs/defaults.md:5: `listen`"), qPrintable(failures[0]));
        QVERIFY2(failures[1].startsWith("docs/defaults.md:12: `max_header_count`"), qPrintable(failures[1]));
        // A flag's: configuration.md's "Serving a folder" as it was, and a cli.md-style row.
        const QString flags =
            "uses one listener (`--host`, default 0.0.0.0, and `--port`, default 8080) and\n"
            "| `-c, --connections N` | connections to keep open (default 12) |\n"
            "| `-m, --method M` | request method (default `GET`) |\n";
        const QStringList wrong = flagDefaultMismatches("docs/flags.md", flags, helpDefaults());
        QCOMPARE(wrong.size(), 2);
        QVERIFY2(wrong[0].startsWith("docs/flags.md:1: --host") && wrong[0].contains("localhost"),
                 qPrintable(wrong[0]));
        QVERIFY2(wrong[1].startsWith("docs/flags.md:2: --connections"), qPrintable(wrong[1]));
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
        // The URLs the pages show for their servers, against what those servers printed.
        const QStringList urls = urlMismatches(scan.pages, runner.printed);
        for (const QString& u : urls)
            qWarning("%s", qPrintable(u));
        QVERIFY2(urls.isEmpty(), qPrintable(QString("%1 documented URL(s) disagree with the servers' "
                                                    "\"Listening on\" lines (details above)")
                                                .arg(urls.size())));
        QVERIFY(runner.printed.size() >= 10); // the docs run a dozen servers; none seen means a broken scan
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

// Every `portico` command shown in README.md and docs/*.md (```sh blocks) is a command line the
// current binary accepts: each is run with PORTICO_CHECK_ARGS=1 (parse, then exit 0; a bad flag,
// a value out of range or a missing file named by an option → exit 2) in a scratch folder holding
// the files the commands name. A renamed flag, a removed subcommand or a typo in the docs fails
// here with the doc's file:line. (Config snippets: tst_config's docExamples.)
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
struct DocCommand {
    QString where; // "docs/cli.md:107"
    QString text;  // as written (after joining continuation lines)
    QStringList args;
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

QList<DocCommand> docCommands(QStringList& skipped) {
    QStringList files{"README.md"};
    for (const QString& f : QDir(sourceDir() + "/docs").entryList({"*.md"}, QDir::Files, QDir::Name))
        files << "docs/" + f;
    QList<DocCommand> out;
    for (const QString& rel : files) {
        QFile f(sourceDir() + "/" + rel);
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
        bool inSh = false;
        for (int i = 0; i < lines.size(); ++i) {
            const QString t = lines[i].trimmed();
            if (t.startsWith("```")) {
                inSh = !inSh && (t == "```sh" || t == "```bash" || t == "```console");
                continue;
            }
            if (!inSh) continue;
            const int first = i;
            QString text = t;
            while (text.endsWith('\\') && i + 1 < lines.size())
                text = text.chopped(1) + ' ' + lines[++i].trimmed();
            if (text.startsWith("$ ")) text = text.mid(2);
            if (text.startsWith("sudo ")) text = text.mid(5);
            QStringList words;
            if (!splitWords(text, words) || words.isEmpty()) {
                if (text.contains("portico "))
                    skipped << QString("%1:%2: %3").arg(rel).arg(first + 1).arg(text);
                continue;
            }
            const QString program = words.front();
            if (program != "portico" && !program.endsWith("/portico")) continue;
            out.push_back({QString("%1:%2").arg(rel).arg(first + 1), text, words.mid(1)});
        }
    }
    return out;
}
} // namespace

class TestDocsCommands : public QObject {
    Q_OBJECT

private slots:
    void everyDocumentedCommandParses() {
        QStringList skipped;
        const auto commands = docCommands(skipped);
        // The docs show over fifty portico commands; far fewer means the scan broke.
        QVERIFY2(commands.size() >= 50, qPrintable(QString("only %1 commands found").arg(commands.size())));
        for (const QString& s : skipped)
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
            QProcess p;
            p.setWorkingDirectory(scratch.path());
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert("PORTICO_CHECK_ARGS", "1");
            env.insert("PORTICO_DATA_DIR", scratch.filePath("data"));
            p.setProcessEnvironment(env);
            p.start(porticoBinary(), c.args);
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
    }
};

QTEST_GUILESS_MAIN(TestDocsCommands)
#include "tst_docs_commands.moc"

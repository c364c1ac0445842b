// `portico cert` as a user runs it, against a temporary data directory: `ca` and `export` checked
// with the openssl tool, `install`/`uninstall` against a temporary "system" CA directory, a
// recording update-ca-certificates and a fake certutil (the PORTICO_SYSTEM_CA_DIR and
// PORTICO_UPDATE_CA_COMMAND test hooks; never the real trust store), permission errors, sudo.
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

using namespace portico::test;

namespace {

void writeFile(const QString& path, const QByteArray& bytes, QFileDevice::Permissions perms = {}) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
    f.close();
    if (perms) QVERIFY(f.setPermissions(perms));
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

const QFileDevice::Permissions kExecutable =
    QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner | QFileDevice::ReadGroup |
    QFileDevice::ExeGroup | QFileDevice::ReadOther | QFileDevice::ExeOther;

/// A sandbox for one test: data dir, "system" CA dir, recording update command, HOME, PATH.
struct Sandbox {
    QTemporaryDir tmp;
    QString data, sysDir, updateLog, updateScript, home, bin;

    Sandbox() {
        data = tmp.filePath("data");
        sysDir = tmp.filePath("system-ca");
        home = tmp.filePath("home");
        bin = tmp.filePath("bin"); // PATH: holds no certutil unless a test puts one there
        updateLog = tmp.filePath("update.log");
        updateScript = tmp.filePath("update-ca-certificates");
        QDir().mkpath(sysDir);
        QDir().mkpath(home);
        QDir().mkpath(bin);
        // Records each call and what the system CA directory held at that moment.
        writeFile(updateScript,
                  "#!/bin/sh\nif [ -e '" + sysDir.toUtf8() +
                      "/portico-local-ca.crt' ]; then s=present; else " +
                      "s=absent; fi\necho \"called $s\" >> '" + updateLog.toUtf8() + "'\n",
                  kExecutable);
    }

    QProcessEnvironment env() const {
        auto e = QProcessEnvironment::systemEnvironment();
        e.insert("PORTICO_DATA_DIR", data);
        // Both hooks always set: the tests may run as root and must never touch the real store.
        e.insert("PORTICO_SYSTEM_CA_DIR", sysDir);
        e.insert("PORTICO_UPDATE_CA_COMMAND", updateScript);
        e.insert("HOME", home);
        e.insert("PATH", bin);
        e.remove("XDG_DATA_HOME");
        e.remove("SUDO_UID");
        return e;
    }

    QStringList updateCalls() const {
        QStringList lines = QString::fromUtf8(readFile(updateLog)).split('\n', Qt::SkipEmptyParts);
        return lines;
    }
    QString systemFile() const { return sysDir + "/portico-local-ca.crt"; }
};

ProcessResult run(const QProcessEnvironment& env, const QStringList& args, const QString& program = {}) {
    ProcessResult r;
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program.isEmpty() ? porticoBinary() : program, args);
    if (!p.waitForStarted(10000)) {
        r.err = "failed to start";
        return r;
    }
    p.closeWriteChannel();
    if (!p.waitForFinished(30000)) {
        r.timedOut = true;
        p.kill();
        p.waitForFinished(5000);
    }
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    if (!r.timedOut && p.exitStatus() == QProcess::NormalExit) r.exitCode = p.exitCode();
    return r;
}

QByteArray diag(const ProcessResult& r) {
    return "exit " + QByteArray::number(r.exitCode) + "\nout:\n" + r.out + "\nerr:\n" + r.err;
}

/// The value after `label` on its own line of `out` ("SHA-256:     AB:..").
QString field(const QByteArray& out, const QString& label) {
    auto m = QRegularExpression("^" + QRegularExpression::escape(label) + "\\s+(.+)$",
                                QRegularExpression::MultilineOption)
                 .match(QString::fromUtf8(out));
    return m.hasMatch() ? m.captured(1).trimmed() : QString();
}

QString opensslFingerprint(const QString& certFile) {
    auto r = runProcess("openssl", {"x509", "-noout", "-fingerprint", "-sha256", "-in", certFile});
    // "sha256 Fingerprint=AB:CD:..." (the case of the prefix varies between versions)
    return QString::fromUtf8(r.out).section('=', 1).trimmed().toUpper();
}

/// A fake certutil keeping one marker file per database: -A writes "NICK|TRUST|FILE", -D removes
/// it (failing when absent, like certutil), -L lists it in certutil's column layout. Every call is
/// appended to `log` with the caller's uid.
QByteArray fakeCertutil(const QString& log) {
    return "#!/bin/sh\n"
           "PATH=/usr/bin:/bin\n"
           "echo \"uid=$(id -u) $*\" >> '" +
           log.toUtf8() +
           "'\n"
           "db= op= nick= trust= file=\n"
           "while [ $# -gt 0 ]; do case \"$1\" in\n"
           "  -d) db=${2#sql:}; shift;; -n) nick=$2; shift;; -t) trust=$2; shift;; -i) file=$2; shift;;\n"
           "  -A|-D|-L) op=$1;; esac; shift; done\n"
           "m=\"$db/portico-test-marker\"\n"
           "case $op in\n"
           "  -A) echo \"$nick|$trust|$file\" > \"$m\";;\n"
           "  -D) [ -e \"$m\" ] && [ \"$(cut -d'|' -f1 \"$m\")\" = \"$nick\" ] || exit 255; rm \"$m\";;\n"
           "  -L) printf '\\nCertificate Nickname                                         Trust Attributes\\n"
           "                                                             SSL,S/MIME,JAR/XPI\\n\\n'\n"
           "      printf 'Some Other CA                                                CT,C,C\\n'\n"
           "      [ -e \"$m\" ] && printf '%-60s %s\\n' \"$(cut -d'|' -f1 \"$m\")\" 'C,,';;\n"
           "esac\nexit 0\n";
}

} // namespace

class TestCertCli : public QObject {
    Q_OBJECT
private slots:
    void caPrintsPathAndFingerprint() {
        Sandbox s;
        auto r = run(s.env(), {"cert", "ca"});
        QVERIFY2(r.exitCode == 0, diag(r));
        const QString certPath = s.data + "/ca/ca.crt";
        QCOMPARE(field(r.out, "Certificate:"), certPath);
        QCOMPARE(field(r.out, "Private key:"), s.data + "/ca/ca.key");
        QVERIFY2(r.err.contains("created a new local CA"), r.err);
        const QString fp = field(r.out, "SHA-256:");
        QVERIFY2(QRegularExpression("^([0-9A-F]{2}:){31}[0-9A-F]{2}$").match(fp).hasMatch(), qPrintable(fp));
        QCOMPARE(fp, opensslFingerprint(certPath));
        QCOMPARE(QFileInfo(s.data + "/ca/ca.key").permissions() & 0x0077, QFileDevice::Permissions{});

        // Second run: the same CA, nothing created.
        auto again = run(s.env(), {"cert", "ca"});
        QVERIFY2(again.exitCode == 0, diag(again));
        QCOMPARE(field(again.out, "SHA-256:"), fp);
        QVERIFY(!again.err.contains("created"));
    }

    void exportWritesAVerifiableCertificate() {
        Sandbox s;
        const QString file = s.tmp.filePath("exported.pem");
        auto r = run(s.env(), {"cert", "export", file});
        QVERIFY2(r.exitCode == 0, diag(r));
        QCOMPARE(readFile(file), readFile(s.data + "/ca/ca.crt"));
        auto v = runProcess("openssl", {"verify", "-CAfile", file, file});
        QVERIFY2(v.exitCode == 0 && v.out.contains(": OK"), v.out + v.err);
        QCOMPARE(opensslFingerprint(file), field(run(s.env(), {"cert", "ca"}).out, "SHA-256:"));

        auto toStdout = run(s.env(), {"cert", "export", "-"});
        QVERIFY2(toStdout.exitCode == 0, diag(toStdout));
        QCOMPARE(toStdout.out, readFile(file));

        auto bad = run(s.env(), {"cert", "export", s.tmp.filePath("no/such/dir/ca.pem")});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.startsWith("portico: cannot write ") && bad.err.contains("no/such/dir/ca.pem"),
                 bad.err);
    }

    void usageErrors() {
        Sandbox s;
        QCOMPARE(run(s.env(), {"cert"}).exitCode, 2);
        QCOMPARE(run(s.env(), {"cert", "export"}).exitCode, 2);
        QCOMPARE(run(s.env(), {"cert", "frobnicate"}).exitCode, 2);
        QCOMPARE(run(s.env(), {"cert", "ca", "extra"}).exitCode, 2);
        auto help = run(s.env(), {"help", "cert"});
        QCOMPARE(help.exitCode, 0);
        for (const char* sub : {"ca", "export", "install", "uninstall"})
            QVERIFY2(help.out.contains(sub), help.out);
        QVERIFY(!QFileInfo::exists(s.data)); // usage errors create nothing
    }

    void corruptCaIsReported() {
        Sandbox s;
        QCOMPARE(run(s.env(), {"cert", "ca"}).exitCode, 0);
        writeFile(s.data + "/ca/ca.key", "garbage\n");
        for (const QStringList& args :
             {QStringList{"cert", "ca"}, QStringList{"cert", "export", s.tmp.filePath("x")},
              QStringList{"cert", "install"}}) {
            auto r = run(s.env(), args);
            QVERIFY2(r.exitCode == 1, diag(r));
            QVERIFY2(r.err.startsWith("portico: " + s.data.toUtf8() + "/ca/ca.key: "), r.err);
        }
        QVERIFY(!QFileInfo::exists(s.tmp.filePath("x")));
        QVERIFY(!QFileInfo::exists(s.systemFile()));
        QVERIFY(s.updateCalls().isEmpty());
    }

    void installAndUninstallWithoutCertutil() {
        Sandbox s;
        auto r = run(s.env(), {"cert", "install"});
        QVERIFY2(r.exitCode == 0, diag(r));
        QCOMPARE(readFile(s.systemFile()), readFile(s.data + "/ca/ca.crt"));
        QCOMPARE(QFileInfo(s.systemFile()).permissions() &
                     (QFileDevice::ReadOther | QFileDevice::WriteOther | QFileDevice::WriteGroup),
                 QFileDevice::ReadOther); // 0644
        QCOMPARE(s.updateCalls(), QStringList{"called present"});
        QVERIFY2(r.out.contains("certutil not found"), r.out);
        QVERIFY2(r.out.contains("portico cert uninstall"), r.out);
        QVERIFY2(r.out.contains(field(run(s.env(), {"cert", "ca"}).out, "SHA-256:").toUtf8()), r.out);
        QCOMPARE(QDir(s.sysDir).entryList(QDir::Files), QStringList{"portico-local-ca.crt"}); // no temp left

        // Installing again is harmless.
        QVERIFY(run(s.env(), {"cert", "install"}).exitCode == 0);
        QCOMPARE(s.updateCalls().size(), 2);

        auto u = run(s.env(), {"cert", "uninstall"});
        QVERIFY2(u.exitCode == 0, diag(u));
        QVERIFY(!QFileInfo::exists(s.systemFile()));
        QCOMPARE(s.updateCalls(), (QStringList{"called present", "called present", "called absent"}));

        // Nothing left to remove: no rebuild of the bundle.
        auto again = run(s.env(), {"cert", "uninstall"});
        QVERIFY2(again.exitCode == 0 && again.out.contains("not present"), diag(again));
        QCOMPARE(s.updateCalls().size(), 3);
        QVERIFY(QFileInfo::exists(s.data + "/ca/ca.crt")); // uninstall leaves the CA itself alone
    }

    void failingUpdateCommandIsAnError() {
        Sandbox s;
        writeFile(s.updateScript, "#!/bin/sh\necho boom >&2\nexit 3\n", kExecutable);
        auto r = run(s.env(), {"cert", "install"});
        QVERIFY2(r.exitCode == 1, diag(r));
        QVERIFY2(r.err.contains("failed (exit status 3)"), r.err);

        auto env = s.env();
        env.insert("PORTICO_UPDATE_CA_COMMAND", s.tmp.filePath("no-such-program"));
        auto missing = run(env, {"cert", "uninstall"});
        QVERIFY2(missing.exitCode == 1, diag(missing));
        QVERIFY2(missing.err.contains("cannot run") && missing.err.contains("No such file or directory"),
                 missing.err);
    }

    void installAndUninstallWithCertutil() {
        Sandbox s;
        const QString log = s.tmp.filePath("certutil.log");
        writeFile(s.bin + "/certutil", fakeCertutil(log), kExecutable);
        const QString chromeDb = s.home + "/.pki/nssdb";
        const QString firefoxDb = s.home + "/.mozilla/firefox/abcd.default-esr";
        QDir().mkpath(chromeDb);
        writeFile(firefoxDb + "/cert9.db", "");
        QDir().mkpath(s.home + "/.mozilla/firefox/not-a-profile"); // no cert9.db: left alone

        auto r = run(s.env(), {"cert", "install"});
        QVERIFY2(r.exitCode == 0, diag(r) + readFile(log));
        const QString cn = field(run(s.env(), {"cert", "ca"}).out, "Subject:").mid(3); // after "CN="
        QVERIFY(cn.startsWith("Portico Local Development CA ("));
        const QByteArray expected = (cn + "|C,,|" + s.data + "/ca/ca.crt\n").toUtf8();
        QCOMPARE(readFile(chromeDb + "/portico-test-marker"), expected);
        QCOMPARE(readFile(firefoxDb + "/portico-test-marker"), expected);
        QVERIFY(!QFileInfo::exists(s.home + "/.mozilla/firefox/not-a-profile/portico-test-marker"));
        QVERIFY2(r.out.contains("NSS: added to sql:" + chromeDb.toUtf8()), r.out);
        QVERIFY(QFileInfo::exists(s.systemFile()));
        QVERIFY2(
            readFile(log).contains(" -d sql:" + chromeDb.toUtf8() + " -A -t C,, -n " + cn.toUtf8() + " -i "),
            readFile(log));

        auto u = run(s.env(), {"cert", "uninstall"});
        QVERIFY2(u.exitCode == 0, diag(u) + readFile(log));
        QVERIFY(!QFileInfo::exists(chromeDb + "/portico-test-marker"));
        QVERIFY(!QFileInfo::exists(firefoxDb + "/portico-test-marker"));
        QVERIFY(!QFileInfo::exists(s.systemFile()));
        QVERIFY2(u.out.contains("NSS: removed \"" + cn.toUtf8() + "\" from sql:" + chromeDb.toUtf8()), u.out);
        QVERIFY2(!readFile(log).contains("-n Some Other CA"), readFile(log)); // other CAs untouched

        // Uninstall works without a CA (e.g. after the data directory was deleted) and creates none.
        QVERIFY(run(s.env(), {"cert", "install"}).exitCode == 0);
        QVERIFY(QDir(s.data).removeRecursively());
        auto orphan = run(s.env(), {"cert", "uninstall"});
        QVERIFY2(orphan.exitCode == 0, diag(orphan));
        QVERIFY(!QFileInfo::exists(chromeDb + "/portico-test-marker"));
        QVERIFY(!QFileInfo::exists(s.systemFile()));
        QVERIFY(!QFileInfo::exists(s.data));
    }

    void notPermittedSaysToUseSudo() {
        Sandbox s;
        QString program;
        QStringList prefix;
        if (::geteuid() == 0) {
            // Root may write anywhere: run portico as nobody, which may not write the root-owned
            // 0755 "system" directory, but may use the (opened-up) sandbox.
            program = QStandardPaths::findExecutable("setpriv");
            if (program.isEmpty()) QSKIP("running as root without setpriv");
            prefix = {"--reuid=65534", "--regid=65534", "--clear-groups", porticoBinary()};
            QVERIFY(QFile::setPermissions(s.tmp.path(), QFileDevice::Permissions(0x7777)));
            for (const QString& d : {s.home, s.bin})
                QVERIFY(QFile::setPermissions(d, QFileDevice::Permissions(0x7777)));
            QVERIFY(::chmod(s.sysDir.toUtf8().constData(), 0755) == 0);
            QVERIFY(::chmod(s.updateLog.toUtf8().constData(), 0666) == 0 || !QFileInfo::exists(s.updateLog));
        } else {
            QVERIFY(::chmod(s.sysDir.toUtf8().constData(), 0555) == 0);
        }
        auto install = run(s.env(), prefix + QStringList{"cert", "install"}, program);
        QVERIFY2(install.exitCode == 1, diag(install));
        QVERIFY2(install.err.contains("cannot write " + s.sysDir.toUtf8()) &&
                     install.err.contains("Permission denied"),
                 install.err);
        QVERIFY2(install.err.contains("rerun as `sudo portico cert install`"), install.err);
        QVERIFY(!QFileInfo::exists(s.systemFile()));
        QVERIFY(s.updateCalls().isEmpty());

        // A file put there by root cannot be removed either.
        QVERIFY(::chmod(s.sysDir.toUtf8().constData(), 0755) == 0);
        writeFile(s.systemFile(), "x");
        if (::geteuid() != 0) QVERIFY(::chmod(s.sysDir.toUtf8().constData(), 0555) == 0);
        auto uninstall = run(s.env(), prefix + QStringList{"cert", "uninstall"}, program);
        QVERIFY2(uninstall.exitCode == 1, diag(uninstall));
        QVERIFY2(uninstall.err.contains("rerun as `sudo portico cert uninstall`"), uninstall.err);
        QVERIFY(QFileInfo::exists(s.systemFile()));
        QVERIFY(s.updateCalls().isEmpty());
        ::chmod(s.sysDir.toUtf8().constData(), 0755); // so QTemporaryDir can clean up
    }

    void underSudoTheCaBelongsToTheInvokingUser() {
        if (::geteuid() != 0) QSKIP("needs root (simulates `sudo` by setting SUDO_UID)");
        Sandbox s;
        QVERIFY(QFile::setPermissions(s.tmp.path(), QFileDevice::Permissions(0x7777)));
        auto env = s.env();
        env.insert("SUDO_UID", "65534"); // nobody
        auto r = run(env, {"cert", "install"});
        QVERIFY2(r.exitCode == 0, diag(r));
        struct stat st {};
        QVERIFY(::stat((s.data + "/ca/ca.key").toUtf8().constData(), &st) == 0);
        QCOMPARE(st.st_uid, uid_t(65534));
        QCOMPARE(st.st_mode & 0777, mode_t(0600));
        QVERIFY(::stat((s.data + "/ca").toUtf8().constData(), &st) == 0);
        QCOMPARE(st.st_uid, uid_t(65534));
        QVERIFY(QFileInfo::exists(s.systemFile())); // the privileged part ran as root
        QVERIFY2(r.out.contains("sudo portico cert uninstall"), r.out);
        QVERIFY(run(env, {"cert", "uninstall"}).exitCode == 0);
        QVERIFY(!QFileInfo::exists(s.systemFile()));
    }
};

QTEST_GUILESS_MAIN(TestCertCli)
#include "tst_cert_cli.moc"

// The Debian package: cpack builds it from this build tree, then it is extracted (dpkg-deb -x)
// and inspected the way a user's system would see it, and the extracted binary runs.
#include "test_support.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

class TestPackage : public QObject {
    Q_OBJECT
    QTemporaryDir out_;
    QString deb_;
    QString root_; // extracted tree

private slots:
    void initTestCase() {
        auto r = runProcess("cpack",
                            {"-G", "DEB", "-B", out_.path(), "--config", buildDir() + "/CPackConfig.cmake"},
                            {}, 240000);
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        const QStringList debs = QDir(out_.path()).entryList({"portico_*.deb"});
        QCOMPARE(debs.size(), 1);
        deb_ = out_.filePath(debs.first());
        root_ = out_.filePath("root");
        auto x = runProcess("dpkg-deb", {"-x", deb_, root_});
        QCOMPARE(x.exitCode, 0);
    }

    void controlFields() {
        auto r = runProcess("dpkg-deb", {"-f", deb_, "Package", "Version", "Depends", "Section"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("Package: portico"), r.out.constData());
        QVERIFY(r.out.contains("Version: " PORTICO_VERSION));
        // Computed from the binary (dpkg-shlibdeps): the libraries Portico links must be there.
        for (const char* lib : {"libssl3", "libnghttp2-14", "libyaml-cpp0.7", "libpcre2-8-0", "libbrotli1"})
            QVERIFY2(r.out.contains(lib),
                     qPrintable(QString("Depends lacks %1:\n%2").arg(lib, QString(r.out))));
    }

    void filesInPlace_data() {
        QTest::addColumn<QString>("path");
        for (const char* p : {"usr/bin/portico", "usr/share/applications/dev.portico.Portico.desktop",
                              "usr/share/metainfo/dev.portico.Portico.metainfo.xml",
                              "usr/share/icons/hicolor/scalable/apps/dev.portico.Portico.svg",
                              "usr/share/icons/hicolor/48x48/apps/dev.portico.Portico.png",
                              "usr/share/icons/hicolor/256x256/apps/dev.portico.Portico.png",
                              "usr/share/man/man1/portico.1.gz", "usr/share/doc/portico/configuration.md",
                              "usr/share/doc/portico/copyright", "usr/share/doc/portico/changelog.gz",
                              "usr/share/portico/demo/portico.yaml"})
            QTest::newRow(p) << QString(p);
    }
    void filesInPlace() {
        QFETCH(QString, path);
        QVERIFY2(QFileInfo::exists(root_ + "/" + path), qPrintable(path));
    }

    void extractedBinaryRuns() {
        auto r = runProcess(root_ + "/usr/bin/portico", {"version"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.trimmed(), QByteArray("portico " PORTICO_VERSION));
        // Stripped: no debug sections in the packaged binary.
        auto s = runProcess("readelf", {"-S", root_ + "/usr/bin/portico"});
        QVERIFY(!s.out.contains(".debug_info"));
    }

    // lintian (Debian policy checks) finds no error and no warning; info-level tags are allowed.
    void lintianClean() {
        auto r = runProcess("lintian", {"--tag-display-limit", "0", deb_}, {}, 240000);
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        for (const QByteArray& line : r.out.split('\n'))
            QVERIFY2(!line.startsWith("E:") && !line.startsWith("W:"), line.constData());
    }

    void manPageRenders() {
        auto r = runProcess(
            "sh", {"-c", "zcat '" + root_ + "/usr/share/man/man1/portico.1.gz' | groff -man -Tutf8 -P-cbu"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("PORTICO SERVE"));
        QVERIFY(r.out.contains("--https-port"));
        QVERIFY2(r.err.isEmpty(), r.err.constData()); // groff warnings go to stderr
    }

    void desktopFilesValidate() {
        auto a = runProcess("appstreamcli", {"validate", "--no-net",
                                             root_ + "/usr/share/metainfo/dev.portico.Portico.metainfo.xml"});
        if (a.exitCode == -1 && a.err.isEmpty() && a.out.isEmpty()) QSKIP("appstreamcli is not installed");
        QVERIFY2(a.exitCode == 0, (a.out + a.err).constData());
        QFile desktop(root_ + "/usr/share/applications/dev.portico.Portico.desktop");
        QVERIFY(desktop.open(QIODevice::ReadOnly));
        const QByteArray d = desktop.readAll();
        QVERIFY(d.contains("Exec=portico\n"));
        QVERIFY(d.contains("Icon=dev.portico.Portico\n"));
    }
};

QTEST_GUILESS_MAIN(TestPackage)
#include "tst_package.moc"

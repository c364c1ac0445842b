// Cross-site reads of the dev server (the webpack-dev-server and Vite advisories): a page on another
// site that loads the app's files with <script src> sends `Sec-Fetch-Site: cross-site` and
// `Sec-Fetch-Mode: no-cors`; Portico answers 403 to those by default, over HTTP/1.1 and HTTP/2,
// for static files, mocks and proxied routes alike, and serves them on a vhost that sets
// `cross_site_subresources: true`. Same-site and same-origin loads, navigations and CORS requests
// pass, and no response carries `Access-Control-Allow-Origin: *`.
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;

class TestCrossSite : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine upstream_, engine_;
    std::uint16_t port_ = 0;

    test::CurlReply get(const QString& host, const QString& path, const QStringList& fields,
                        bool h2 = false) {
        QStringList args{"-H", "Host: " + host};
        for (const QString& f : fields)
            args << "-H" << f;
        if (h2) args << "--http2-prior-knowledge";
        args << "-D"
             << "-" << QString("http://127.0.0.1:%1%2").arg(port_).arg(path);
        return test::curlFetch(args);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY(QDir(dir_.path()).mkpath("site"));
        QFile js(dir_.filePath("site/app.js"));
        QVERIFY(js.open(QIODevice::WriteOnly));
        js.write("const secret = 1;\n");
        js.close();
        auto up = config::loadConfigText("listen: ['127.0.0.1:0']\nvhosts:\n  - routes:\n"
                                         "      - path: /up/x\n        respond: {body: upstream}\n",
                                         "up.yaml", dir_.path().toStdString());
        QVERIFY(up.ok());
        std::string error;
        QVERIFY2(upstream_.start(up.config, error), error.c_str());
        const std::string yaml =
            "listen: ['127.0.0.1:0']\nvhosts:\n"
            "  - names: [app.localhost]\n    default: true\n    root: site\n    routes:\n"
            "      - path: /mock\n        respond: {body: mock}\n"
            "      - path: /up/*\n        proxy: 'http://127.0.0.1:" +
            std::to_string(upstream_.endpoints().front().port) +
            "'\n"
            "  - names: [cdn.localhost]\n    root: site\n    cross_site_subresources: true\n";
        auto r = config::loadConfigText(yaml, "t.yaml", dir_.path().toStdString());
        if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
        QVERIFY(r.ok());
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    void crossSiteNoCorsRefused() {
        const QStringList crossSite{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors",
                                    "Sec-Fetch-Dest: script"};
        for (bool h2 : {false, true})
            for (const char* path : {"/app.js", "/mock", "/up/x"}) {
                auto r = get("app.localhost", path, crossSite, h2);
                QVERIFY2(r.status == 403,
                         (QByteArray(path) + (h2 ? " h2: " : ": ") + r.body + r.err).constData());
                QVERIFY2(!r.body.contains("secret") && !r.body.contains("upstream"), r.body.constData());
            }
        // Lower-case values are the same tokens (field names and these values are ASCII-insensitive).
        auto lower =
            get("app.localhost", "/app.js", {"sec-fetch-site: Cross-Site", "sec-fetch-mode: No-Cors"});
        QCOMPARE(lower.status, 403);
    }

    void otherLoadsServed() {
        const QList<QStringList> allowed{
            {},                                                         // curl, no metadata
            {"Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: no-cors"}, // the app's own page
            {"Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: no-cors"},   // another localhost port
            {"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate"}, // a link followed
            {"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors", "Origin: http://x.test"}, // CORS decides
            {"Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate"}, // typed in the bar
        };
        for (const QStringList& fields : allowed) {
            auto r = get("app.localhost", "/app.js", fields);
            QVERIFY2(r.status == 200, (fields.join(", ") + ": " + r.err).toUtf8().constData());
            QVERIFY(r.body.contains("secret"));
            QVERIFY2(!r.body.contains("Access-Control-Allow-Origin: *"), r.body.constData());
        }
    }

    void vhostMayAllowThem() {
        auto r = get("cdn.localhost", "/app.js", {"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"});
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("secret"));
    }

    void configKeyIsChecked() {
        auto bad = config::loadConfigText("vhosts:\n  - cross_site_subresources: maybe\n", "bad.yaml",
                                          dir_.path().toStdString());
        QVERIFY(!bad.ok());
        QVERIFY2(bad.errors.front().toString().find("bad.yaml:2:") != std::string::npos,
                 bad.errors.front().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(TestCrossSite)
#include "tst_cross_site.moc"

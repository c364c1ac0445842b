// Static file serving: MIME types (MIM-01), index files, directory redirects and listings, SPA
// fallback, dotfiles, path confinement and symlinks (PTH-05, PTH-06), HEAD (HED-01), methods, cache.
#include "handlers_test_util.h"

#include <portico/handlers/mime.h>
#include <portico/http/path.h>

#include <QTemporaryDir>
#include <QtTest>

#include <thread>

using namespace portico;
using namespace portico::test;
using Kind = http::Response::BodyKind;

class StaticFilesTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    QString root_;
    QString outside_;

    http::Response get(Site& site, const std::string& target, const std::string& method = "GET") {
        TestRequest req(target, method);
        handlers::WorkerState worker;
        http::Response res;
        run(site.config, fallbackResult(), req, worker, res);
        return res;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        root_ = tmp_.path() + "/root";
        outside_ = tmp_.path() + "/outside";
        QVERIFY(writeFile(root_, "a.txt", "hello\n"));
        QVERIFY(writeFile(root_, "app.mjs", "export const x = 1;\n"));
        QVERIFY(writeFile(root_, "app.js", "var x;\n"));
        QVERIFY(writeFile(root_, "APP2.JS", "var y;\n"));
        QVERIFY(writeFile(root_, "mod.wasm", QByteArray("\0asm\1\0\0\0", 8)));
        QVERIFY(writeFile(root_, "nobody.html", "<!doctype html><title>t</title>\n"));
        QVERIFY(writeFile(root_, "style.css", "body{}\n"));
        QVERIFY(writeFile(root_, "logo.svg", "<svg/>\n"));
        QVERIFY(writeFile(root_, "data.json", "{}\n"));
        QVERIFY(writeFile(root_, "app.js.map", "{}\n"));
        QVERIFY(writeFile(root_, "site.webmanifest", "{}\n"));
        QVERIFY(writeFile(root_, "pic.avif", "AVIF"));
        QVERIFY(writeFile(root_, "pic.png", "PNG"));
        QVERIFY(writeFile(root_, "font.woff2", "WOFF2"));
        QVERIFY(writeFile(root_, "blob.xyz", "???"));
        QVERIFY(writeFile(root_, "Makefile", "all:\n"));
        QVERIFY(writeFile(root_, ".env", "TOKEN=1\n"));
        QVERIFY(writeFile(root_, ".git/config", "[core]\n"));
        QVERIFY(writeFile(root_, ".well-known/security.txt", "Contact: x\n"));
        QVERIFY(writeFile(root_, "sub/index.html", "<p>sub</p>\n"));
        QVERIFY(writeFile(root_, "sub/other.txt", "other\n"));
        QVERIFY(writeFile(root_, "list/b.txt", "b"));
        QVERIFY(writeFile(root_, "list/A.txt", "A"));
        QVERIFY(writeFile(root_, "list/<b>&'x\".txt", "x"));
        QVERIFY(writeFile(root_, "list/zdir/f.txt", "f"));
        QVERIFY(writeFile(root_, "list/adir/f.txt", "f"));
        QVERIFY(writeFile(root_, "list/.hidden", "h"));
        QVERIFY(writeFile(root_, "index.html", "<p>home</p>\n"));
        QVERIFY(writeFile(root_, "space name.txt", "spaced\n"));
        QVERIFY(writeFile(root_, "inner/real.txt", "real\n"));
        QVERIFY(writeFile(outside_, "secret.txt", "secret\n"));
        QVERIFY(writeFile(outside_, "index.html", "outside index\n"));
        QByteArray big(300 * 1024, '\0');
        for (int i = 0; i < big.size(); ++i)
            big[i] = static_cast<char>((i * 131) % 251);
        QVERIFY(writeFile(root_, "big.bin", big));
        // Symlinks: out of the root (file and folder), and two staying inside (relative, absolute).
        QVERIFY(QFile::link(outside_, root_ + "/out"));
        QVERIFY(QFile::link(outside_ + "/secret.txt", root_ + "/secret-link.txt"));
        QCOMPARE(::symlink("inner/real.txt", (root_ + "/rel-link.txt").toUtf8().constData()), 0);
        QVERIFY(QFile::link(root_ + "/inner/real.txt", root_ + "/abs-link.txt"));
        QCOMPARE(::symlink("inner", (root_ + "/inner-dir").toUtf8().constData()), 0);
        // A listed folder with links of every kind.
        QVERIFY(writeFile(root_, "links/plain.txt", "plain\n"));
        QVERIFY(QFile::link(outside_, root_ + "/links/out"));
        QVERIFY(QFile::link(outside_ + "/secret.txt", root_ + "/links/secret.txt"));
        QCOMPARE(::symlink("../inner/real.txt", (root_ + "/links/rel.txt").toUtf8().constData()), 0);
        QVERIFY(QFile::link(root_ + "/inner", root_ + "/links/abs-dir"));
        QCOMPARE(::symlink("nowhere", (root_ + "/links/dangling").toUtf8().constData()), 0);
    }

    void mimeTable_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("type");
        QTest::newRow("mjs (MIM-01)") << "app.mjs"
                                      << "text/javascript; charset=utf-8";
        QTest::newRow("js") << "app.js"
                            << "text/javascript; charset=utf-8";
        QTest::newRow("JS uppercase") << "APP2.JS"
                                      << "text/javascript; charset=utf-8";
        QTest::newRow("wasm (MIM-01)") << "mod.wasm"
                                       << "application/wasm";
        QTest::newRow("txt") << "a.txt"
                             << "text/plain; charset=utf-8";
        QTest::newRow("html") << "nobody.html"
                              << "text/html; charset=utf-8";
        QTest::newRow("css") << "style.css"
                             << "text/css; charset=utf-8";
        QTest::newRow("svg") << "logo.svg"
                             << "image/svg+xml";
        QTest::newRow("json") << "data.json"
                              << "application/json";
        QTest::newRow("map") << "app.js.map"
                             << "application/json";
        QTest::newRow("webmanifest") << "site.webmanifest"
                                     << "application/manifest+json";
        QTest::newRow("avif") << "pic.avif"
                              << "image/avif";
        QTest::newRow("png") << "pic.png"
                             << "image/png";
        QTest::newRow("woff2") << "font.woff2"
                               << "font/woff2";
        QTest::newRow("unknown") << "blob.xyz"
                                 << "application/octet-stream";
        QTest::newRow("no extension") << "Makefile"
                                      << "application/octet-stream";
    }
    void mimeTable() {
        QFETCH(QString, file);
        QFETCH(QString, type);
        Site site(root_);
        auto res = get(site, "/" + file.toStdString());
        QCOMPARE(res.status, 200);
        QCOMPARE(hv(res, "Content-Type"), type);
        bool unknown = type == "application/octet-stream";
        QCOMPARE(hv(res, "X-Content-Type-Options"), unknown ? QString("nosniff") : QString());
        QCOMPARE(headerCount(res, "Content-Type"), 1);
    }

    void mimeCompressibleFlags() {
        QVERIFY(handlers::mimeFor("x.js").compressible);
        QVERIFY(handlers::mimeFor("x.wasm").compressible);
        QVERIFY(handlers::mimeFor("x.svg").compressible);
        QVERIFY(handlers::mimeFor("x.webmanifest").compressible);
        QVERIFY(!handlers::mimeFor("x.png").compressible);
        QVERIFY(!handlers::mimeFor("x.woff2").compressible);
        QVERIFY(!handlers::mimeFor(".env").known);
        QVERIFY(handlers::isCompressibleType("application/vnd.api+json; charset=utf-8"));
    }

    void smallFileIsSharedFromCache() {
        Site site(root_);
        handlers::WorkerState worker;
        http::Response res;
        TestRequest req("/a.txt");
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 200);
        QCOMPARE(res.bodyKind(), Kind::Shared);
        QCOMPARE(bodyOf(res), std::string("hello\n"));
        QCOMPARE(hv(res, "Accept-Ranges"), QString("bytes"));
        const char* first = res.bodyView().data();
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.bodyView().data(), first); // same cached bytes, no copy
    }

    void largeFileIsFileBody() {
        Site site(root_);
        auto res = get(site, "/big.bin");
        QCOMPARE(res.status, 200);
        QCOMPARE(res.bodyKind(), Kind::File);
        QCOMPARE(res.bodyLength(), std::uint64_t(300 * 1024));
        QCOMPARE(res.fileOffset(), std::uint64_t(0));
        QFile f(root_ + "/big.bin");
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(bodyOf(res) == f.readAll().toStdString());
    }

    void changedFileIsReread() {
        Site site(root_);
        handlers::WorkerState worker;
        http::Response res;
        QVERIFY(writeFile(root_, "changing.txt", "one\n"));
        TestRequest req("/changing.txt");
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(bodyOf(res), std::string("one\n"));
        QString etag = hv(res, "ETag");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        QVERIFY(writeFile(root_, "changing.txt", "two!\n"));
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(bodyOf(res), std::string("two!\n"));
        QVERIFY(hv(res, "ETag") != etag);
    }

    void indexFile() {
        Site site(root_);
        auto res = get(site, "/sub/");
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("<p>sub</p>\n"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/html; charset=utf-8"));
        res = get(site, "/");
        QCOMPARE(bodyOf(res), std::string("<p>home</p>\n"));
        site.root().index = {"missing.html", "other.txt"};
        res = get(site, "/sub/");
        QCOMPARE(bodyOf(res), std::string("other\n"));
    }

    void directoryWithoutSlashRedirects() {
        Site site(root_);
        auto res = get(site, "/sub?x=1&y=%20");
        QCOMPARE(res.status, 301);
        QCOMPARE(hv(res, "Location"), QString("/sub/?x=1&y=%20"));
        res = get(site, "/sub");
        QCOMPARE(hv(res, "Location"), QString("/sub/"));
        // The encoded form goes back to the client, not the decoded one.
        TestRequest req("/my dir");
        req.setRawPath("/my%20dir");
        QVERIFY(writeFile(root_, "my dir/index.html", "x"));
        handlers::WorkerState worker;
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 301);
        QCOMPARE(hv(res, "Location"), QString("/my%20dir/"));
    }

    // Open redirect through the directory redirect (serve-static CVE-2015-1164): the Location is
    // built from the normalised path, never from the raw one.
    void directoryRedirectIsNeverAnotherHost_data() {
        QTest::addColumn<QString>("raw");
        QTest::addColumn<QString>("query");
        QTest::addColumn<QString>("location");
        QTest::newRow("///host/..//dir") << "///evil.example/..//images"
                                         << ""
                                         << "/images/";
        QTest::newRow("//dir") << "//sub"
                               << ""
                               << "/sub/";
        QTest::newRow("//dir?query") << "//sub"
                                     << "x=1&y=%2F"
                                     << "/sub/?x=1&y=%2F";
        QTest::newRow("/\\host (encoded backslash)") << "/%5Cevil.example"
                                                     << ""
                                                     << "/%5Cevil.example/";
        QTest::newRow("space") << "/my%20dir"
                               << ""
                               << "/my%20dir/";
        QTest::newRow("percent") << "/100%25%20done"
                                 << ""
                                 << "/100%25%20done/";
        QTest::newRow("? and # in the name") << "/q%3F%23x"
                                             << ""
                                             << "/q%3F%23x/";
        QTest::newRow("non-ASCII") << "/caf%C3%A9"
                                   << ""
                                   << "/caf%C3%A9/";
        QTest::newRow("sub-delims kept") << "/a+b(c)@d:e"
                                         << ""
                                         << "/a+b(c)@d:e/";
        QTest::newRow("nested //") << "/images//nested"
                                   << ""
                                   << "/images/nested/";
    }
    void directoryRedirectIsNeverAnotherHost() {
        QFETCH(QString, raw);
        QFETCH(QString, query);
        QFETCH(QString, location);
        for (const char* dir : {"images/nested", "sub", "my dir", "100% done", "q?#x", "caf\xC3\xA9",
                                "a+b(c)@d:e", "\\evil.example"})
            QVERIFY(QDir().mkpath(root_ + "/" + QString::fromUtf8(dir)));
        std::string path;
        QCOMPARE(http::normalizePath(raw.toStdString(), path), http::PathError::None);
        QVERIFY(!path.starts_with("//"));
        Site site(root_);
        TestRequest req(raw.toStdString() + (query.isEmpty() ? "" : "?" + query.toStdString()));
        req.setDecodedPath(path);
        handlers::WorkerState worker;
        http::Response res;
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 301);
        QCOMPARE(hv(res, "Location"), location);
        QVERIFY(!hv(res, "Location").startsWith("//"));
        QVERIFY(!hv(res, "Location").contains("://"));
    }

    void directoryListing() {
        Site site(root_);
        auto res = get(site, "/list/");
        QCOMPARE(res.status, 404); // listing is off by default
        site.root().listing = true;
        res = get(site, "/list/");
        QCOMPARE(res.status, 200);
        QCOMPARE(hv(res, "Content-Type"), QString("text/html; charset=utf-8"));
        std::string html = bodyOf(res);
        QVERIFY(html.find(".hidden") == std::string::npos);
        QVERIFY(html.find("<b>&") == std::string::npos); // names are escaped
        QVERIFY(html.find("&lt;b&gt;&amp;&#39;x&quot;.txt") != std::string::npos);
        QVERIFY(html.find("href=\"%3Cb%3E%26%27x%22.txt\"") != std::string::npos);
        QVERIFY(html.find("href=\"../\"") != std::string::npos);
        // Directories first, each group sorted.
        std::size_t adir = html.find(">adir/<"), zdir = html.find(">zdir/<"), a = html.find(">A.txt<"),
                    b = html.find(">b.txt<");
        QVERIFY(adir != std::string::npos && zdir != std::string::npos && a != std::string::npos &&
                b != std::string::npos);
        QVERIFY(adir < zdir);
        QVERIFY(zdir < a);
        QVERIFY(a < b);
        // A folder with an index still gets its index.
        res = get(site, "/sub/");
        QCOMPARE(bodyOf(res), std::string("<p>sub</p>\n"));
    }

    void spaFallback() {
        Site site(root_);
        site.root().spaFallback = "/index.html";
        auto res = get(site, "/app/users/42");
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("<p>home</p>\n"));
        QCOMPARE(hv(res, "Content-Type"), QString("text/html; charset=utf-8"));
        res = get(site, "/missing.js"); // like `serve -s`: every miss gets the app shell
        QCOMPARE(res.status, 200);
        res = get(site, "/a.txt"); // real files still win
        QCOMPARE(bodyOf(res), std::string("hello\n"));
        res = get(site, "/list/"); // a folder without index or listing falls back too
        QCOMPARE(bodyOf(res), std::string("<p>home</p>\n"));
        res = get(site, "/.env"); // hidden files are never replaced by the shell
        QCOMPARE(res.status, 404);
        res = get(site, "/nothing", "POST");
        QCOMPARE(res.status, 405);
        site.root().spaFallback = "/gone.html";
        res = get(site, "/app/users/42");
        QCOMPARE(res.status, 404);
    }

    void dotfilesAreHidden() {
        Site site(root_);
        QCOMPARE(get(site, "/.env").status, 404);
        QCOMPARE(get(site, "/.git/config").status, 404);
        QCOMPARE(get(site, "/.git/").status, 404);
        QCOMPARE(get(site, "/list/.hidden").status, 404);
        auto res = get(site, "/.well-known/security.txt");
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("Contact: x\n"));
    }

    void nulAndBadPaths() {
        Site site(root_);
        TestRequest req;
        std::string withNul("/a.txt\0.png", 11);
        req.setPath(withNul);
        handlers::WorkerState worker;
        http::Response res;
        run(site.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 400); // PTH-05: never a.txt's bytes
        QVERIFY(bodyOf(res).find("hello") == std::string::npos);
        QCOMPARE(get(site, "/a.txt/").status, 404);
        QCOMPARE(get(site, "/space name.txt").status, 200);
    }

    void symlinksLeavingRootAreRefused() {
        Site site(root_);
        // PTH-06: a link to a file outside, a file through a linked folder, the folder itself.
        QCOMPARE(get(site, "/secret-link.txt").status, 404);
        QCOMPARE(get(site, "/out/secret.txt").status, 404);
        QCOMPARE(get(site, "/out/").status, 404);
        QCOMPARE(get(site, "/out").status, 404); // no redirect that would reveal the folder
        site.root().listing = true;
        QCOMPARE(get(site, "/out/").status, 404);
        // Nor are they listed.
        auto listed = get(site, "/links/");
        QCOMPARE(listed.status, 200);
        std::string html = bodyOf(listed);
        QVERIFY(html.find("href=\"out") == std::string::npos);
        QVERIFY(html.find("secret") == std::string::npos);
        QVERIFY(html.find("dangling") == std::string::npos);
        QVERIFY(html.find("href=\"plain.txt\"") != std::string::npos);
        QVERIFY(html.find("href=\"rel.txt\"") != std::string::npos);
        QVERIFY(html.find("href=\"abs-dir/\"") != std::string::npos); // absolute, inside: a folder
        // Every listed entry is really served.
        for (const char* p : {"/links/plain.txt", "/links/rel.txt", "/links/abs-dir/real.txt"})
            QCOMPARE(get(site, p).status, 200);
        // Links that stay inside the root keep working (pnpm-style node_modules).
        auto res = get(site, "/rel-link.txt");
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("real\n"));
        QCOMPARE(get(site, "/abs-link.txt").status, 200);
        QCOMPARE(get(site, "/inner-dir/real.txt").status, 200);
    }

    void followSymlinksAllowsThem() {
        Site site(root_);
        site.root().followSymlinks = true;
        auto res = get(site, "/out/secret.txt");
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("secret\n"));
        QCOMPARE(get(site, "/secret-link.txt").status, 200);
        QCOMPARE(bodyOf(get(site, "/out/")), std::string("outside index\n"));
        site.root().listing = true;
        std::string html = bodyOf(get(site, "/links/"));
        QVERIFY(html.find("href=\"out/\"") != std::string::npos);
        QVERIFY(html.find("href=\"secret.txt\"") != std::string::npos);
        QVERIFY(html.find("dangling") == std::string::npos);
    }

    void cacheDoesNotCrossConfinementRules() {
        Site open(root_), strict(root_);
        open.root().followSymlinks = true;
        handlers::WorkerState worker; // one worker cache shared by both vhost settings
        http::Response res;
        TestRequest req("/out/secret.txt");
        run(open.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 200);
        run(strict.config, fallbackResult(), req, worker, res);
        QCOMPARE(res.status, 404);
    }

    void headMatchesGet() {
        Site site(root_);
        auto getRes = get(site, "/big.bin");
        auto headRes = get(site, "/big.bin", "HEAD");
        QCOMPARE(headRes.status, 200);
        QCOMPARE(headRes.bodyLength(), getRes.bodyLength()); // the connection derives Content-Length
        QCOMPARE(std::string(headRes.fieldBlock()), std::string(getRes.fieldBlock()));
        getRes = get(site, "/a.txt");
        headRes = get(site, "/a.txt", "HEAD");
        QCOMPARE(std::string(headRes.fieldBlock()), std::string(getRes.fieldBlock()));
        QCOMPARE(headRes.bodyLength(), std::uint64_t(6));
    }

    void onlyGetAndHead() {
        Site site(root_);
        auto res = get(site, "/a.txt", "POST");
        QCOMPARE(res.status, 405);
        QCOMPARE(hv(res, "Allow"), QString("GET, HEAD, OPTIONS"));
        res = get(site, "/a.txt", "DELETE");
        QCOMPARE(res.status, 405);
        res = get(site, "/a.txt", "OPTIONS");
        QCOMPARE(res.status, 204);
        QCOMPARE(hv(res, "Allow"), QString("GET, HEAD, OPTIONS"));
    }

    void missingFileAndRoot() {
        Site site(root_);
        QCOMPARE(get(site, "/nope.txt").status, 404);
        QCOMPARE(get(site, "/nope/deeper/").status, 404);
        Site gone(tmp_.path() + "/does-not-exist");
        QCOMPARE(get(gone, "/a.txt").status, 404);
        Site none; // a vhost without a root
        QCOMPARE(get(none, "/a.txt").status, 404);
    }

    void staticRouteWithWildcard() {
        Site site;
        config::Route route;
        config::StaticAction s;
        s.root = (root_ + "/sub").toStdString();
        route.action = s;
        auto rr = matched(route);
        rr.params[0] = {"*", "other.txt"};
        rr.paramCount = 1;
        TestRequest req("/assets/other.txt");
        handlers::WorkerState worker;
        http::Response res;
        run(site.config, rr, req, worker, res);
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("other\n"));
        // Without a wildcard the whole path is looked up under the root, as nginx's `root`.
        config::Route plain;
        s.root = root_.toStdString();
        plain.action = s;
        TestRequest req2("/sub/other.txt");
        run(site.config, matched(plain), req2, worker, res);
        QCOMPARE(bodyOf(res), std::string("other\n"));
    }

    void rootWithTrailingSlash() {
        Site site(root_ + "/");
        QCOMPARE(bodyOf(get(site, "/a.txt")), std::string("hello\n"));
        QCOMPARE(get(site, "/out/secret.txt").status, 404);
    }
};

QTEST_APPLESS_MAIN(StaticFilesTest)
#include "tst_static_files.moc"

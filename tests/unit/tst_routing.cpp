// Unit tests for portico::routing: vhost selection, route precedence, methods and the allocation-free match.
#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <QtTest>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

// Global allocation counter: counts only on a thread that switched counting on, so Qt's own
// threads (if any) cannot disturb the allocation test. Every form of operator new and delete is
// replaced, so that no allocation escapes the count and (under ASan) new and delete stay paired.
namespace {
std::atomic<long> gAllocations{0};
thread_local bool tCounting = false;

void* countedAlloc(std::size_t size, std::size_t alignment = 0) noexcept {
    if (tCounting) gAllocations.fetch_add(1, std::memory_order_relaxed);
    if (size == 0) size = 1;
    if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void* countedAllocOrThrow(std::size_t size, std::size_t alignment = 0) {
    if (void* p = countedAlloc(size, alignment)) return p;
    throw std::bad_alloc();
}
} // namespace

void* operator new(std::size_t n) { return countedAllocOrThrow(n); }
void* operator new[](std::size_t n) { return countedAllocOrThrow(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void* operator new(std::size_t n, std::align_val_t a) { return countedAllocOrThrow(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return countedAllocOrThrow(n, std::size_t(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return countedAlloc(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return countedAlloc(n, std::size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace portico;
using config::MatchKind;
using routing::Router;
using routing::RouteResult;

namespace {

/// A route identified by `name`; the respond body repeats the name so a dispatch would show it.
config::Route makeRoute(MatchKind kind, std::string path, std::string name, std::uint32_t methods = 0) {
    config::Route r;
    r.kind = kind;
    r.path = std::move(path);
    r.spec = r.path;
    r.methods = methods;
    r.name = name;
    config::RespondAction respond;
    respond.body = name;
    r.action = respond;
    return r;
}

/// A router pattern route (`path:`).
config::Route pat(std::string path, std::string name, std::uint32_t methods = 0) {
    return makeRoute(MatchKind::Pattern, std::move(path), std::move(name), methods);
}

/// An nginx `location` route, modifier included: "= /", "^~ /images/", "~* \\.png$", "/docs/".
config::Route loc(std::string spec, std::string name, std::uint32_t methods = 0) {
    MatchKind kind = MatchKind::Prefix;
    std::string path = spec;
    auto strip = [&](std::string_view modifier, MatchKind k) {
        if (spec.rfind(std::string(modifier) + " ", 0) != 0) return false;
        kind = k;
        path = spec.substr(modifier.size() + 1);
        return true;
    };
    strip("=", MatchKind::Exact) || strip("^~", MatchKind::PrefixNoRegex) ||
        strip("~*", MatchKind::RegexCaseless) || strip("~", MatchKind::Regex);
    auto r = makeRoute(kind, path, std::move(name), methods);
    r.spec = spec;
    return r;
}

std::uint32_t bits(std::initializer_list<http::Method> methods) {
    std::uint32_t mask = 0;
    for (auto m : methods)
        mask |= http::methodBit(m);
    return mask;
}

config::Config oneVhost(std::vector<config::Route> routes, bool withRoot = false) {
    config::Config c;
    config::Vhost v;
    v.names = {"localhost"};
    v.routes = std::move(routes);
    if (withRoot) {
        v.root.emplace();
        v.root->root = "/srv/site";
    }
    c.vhosts.push_back(std::move(v));
    return c;
}

/// One line per outcome, so a failing row shows what happened instead of just "false":
/// "user name=ann", "405 GET, HEAD, OPTIONS", "options POST, OPTIONS", "fallback", "404".
QString describe(const RouteResult& r) {
    switch (r.kind) {
    case RouteResult::Kind::Matched: {
        QString s = QString::fromStdString(r.route->name);
        for (std::size_t i = 0; i < r.paramCount; ++i)
            s += QStringLiteral(" %1=%2").arg(
                QString::fromUtf8(r.params[i].name.data(), r.params[i].name.size()),
                QString::fromUtf8(r.params[i].value.data(), r.params[i].value.size()));
        return s;
    }
    case RouteResult::Kind::Fallback:
        return QStringLiteral("fallback");
    case RouteResult::Kind::NotFound:
        return QStringLiteral("404");
    case RouteResult::Kind::MethodNotAllowed:
        return QStringLiteral("405 ") + QString::fromStdString(http::allowHeaderValue(r.allow));
    case RouteResult::Kind::Options:
        return QStringLiteral("options ") + QString::fromStdString(http::allowHeaderValue(r.allow));
    }
    return QStringLiteral("?");
}

QString route(const Router& router, const QString& path, http::Method method = http::Method::Get) {
    std::string p = path.toStdString();
    return describe(router.match(0, method, p));
}

} // namespace

class TestRouting : public QObject {
    Q_OBJECT

private slots:
    void nginxDocumentationExample_data();
    void nginxDocumentationExample();
    void nginxLoc02_data();
    void nginxLoc02();
    void routerPatterns_data();
    void routerPatterns();
    void precedenceAcrossKinds_data();
    void precedenceAcrossKinds();
    void methods_data();
    void methods();
    void fallbackAndNotFound();
    void paramViewsPointIntoPath();
    void vhosts_data();
    void vhosts();
    void vhostFallbacks();
    void regexes_data();
    void regexes();
    void regexOverLimitFallsThrough();
    void regexesFromSeveralThreads();
    void allocationFree();
};

// http://nginx.org/en/docs/http/ngx_http_core_module.html#location, with its documented answers.
void TestRouting::nginxDocumentationExample_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    QTest::newRow("/") << "/"
                       << "A";
    QTest::newRow("/index.html") << "/index.html"
                                 << "B";
    QTest::newRow("/documents/document.html") << "/documents/document.html"
                                              << "C";
    QTest::newRow("/images/1.gif") << "/images/1.gif"
                                   << "D";
    QTest::newRow("/documents/1.jpg") << "/documents/1.jpg"
                                      << "E";
    // Not in the documentation's list, but implied by it: regexes beat plain prefixes.
    QTest::newRow("/x/1.JPEG") << "/x/1.JPEG"
                               << "E";
}

void TestRouting::nginxDocumentationExample() {
    QFETCH(QString, path);
    QFETCH(QString, expected);
    static const auto config = oneVhost({
        loc("= /", "A"),
        loc("/", "B"),
        loc("/documents/", "C"),
        loc("^~ /images/", "D"),
        loc("~* \\.(gif|jpg|jpeg)$", "E"),
    });
    Router router(config);
    QCOMPARE(route(router, path), expected);
}

// /work/shared/cases/README.md, LOC-02 (string-prefix semantics, as nginx).
void TestRouting::nginxLoc02_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    const char* rows[][2] = {
        {"/", "A"},
        {"/x", "B"},
        {"/coffee", "C"},
        {"/coffeebar", "C"},    // a prefix is a string prefix, not a segment prefix
        {"/images/a.png", "D"}, // ^~ skips the regexes
        {"/x/a.png", "E"},
        {"/IMAGES/a.png", "E"}, // prefixes are case-sensitive, ~* is not
        {"/docs/a.md", "G"},    // the first matching regex beats the longest prefix
        {"/docs/a.txt", "F"},
        {"/docs/a.PNG", "E"}, // regexes in declaration order: E before G
    };
    for (const auto& row : rows)
        QTest::newRow(row[0]) << QString(row[0]) << QString(row[1]);
}

void TestRouting::nginxLoc02() {
    QFETCH(QString, path);
    QFETCH(QString, expected);
    static const auto config = oneVhost({
        loc("= /", "A"),
        loc("/", "B"),
        loc("/coffee", "C"),
        loc("^~ /images/", "D"),
        loc("~* \\.(png|jpg)$", "E"),
        loc("/docs/", "F"),
        loc("~ ^/docs/.*\\.md$", "G"),
    });
    Router router(config);
    QCOMPARE(route(router, path), expected);
}

void TestRouting::routerPatterns_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    const char* rows[][2] = {
        {"/", "root"},
        {"/users/me", "me"}, // literal beats :param although declared after it
        {"/users/me/", "me"},
        {"/users/ann", "user name=ann"},
        {"/users/ann/", "user name=ann"}, // trailing slash still reaches the param route
        {"/users/ann/posts/42", "post name=ann id=42"},
        {"/users/me/posts/7", "post name=me id=7"}, // backtracks from the literal "me"
        {"/users/me/settings", "settings"},
        {"/users/ann/settings", "catchall *=users/ann/settings"},
        {"/users", "catchall *=users"}, // :name needs one non-empty segment
        {"/users/", "catchall *=users/"},
        {"/users/ann/posts", "catchall *=users/ann/posts"},
        {"/about", "about"},
        {"/about/", "about"},
        {"/aboutx", "catchall *=aboutx"},
        {"/About", "catchall *=About"}, // patterns are case-sensitive
        {"/docs", "docs"},              // the pattern's own trailing slash is ignored
        {"/docs/", "docs"},
        {"/files/a/b/c.txt", "files *=a/b/c.txt"},
        {"/files/a/b/", "files *=a/b/"},
        {"/files/", "files *="},
        {"/files", "files *="},
        {"/a/x/y", "a1 *=x/y"}, // same shape: the first declared wins
        {"/a", "a1 *="},
        {"/b/1/z/z", "bp1 p=1 *=z/z"}, // same shape, other param names: first declared
        {"/b/1", "bp1 p=1 *="},
        {"/c/lit/x", "clit *=x"}, // segment by segment: the literal at segment 2 decides
        {"/c/other/end", "cparam q=other"},
        {"/c/other/x", "404"}, // "/c/:q/end" does not match, and nothing else catches "/c/..."
        {"/nothing/here", "catchall *=nothing/here"},
    };
    for (const auto& row : rows)
        QTest::newRow(row[0]) << QString(row[0]) << QString(row[1]);
}

void TestRouting::routerPatterns() {
    QFETCH(QString, path);
    QFETCH(QString, expected);
    // Declared in an unhelpful order on purpose: precedence must not depend on it.
    static const auto config = [] {
        auto c = oneVhost({
            pat("/users/:name", "user"),
            pat("/users/me", "me"),
            pat("/users/:name/posts/:id", "post"),
            pat("/about", "about"),
            pat("/", "root"),
            pat("/files/*", "files"),
            pat("/a/*", "a1"),
            pat("/a/*", "a2"),
            pat("/b/:p/*", "bp1"),
            pat("/b/:q/*", "bq2"),
            pat("/users/me/settings", "settings"),
            pat("/docs/", "docs"),
            pat("/*", "catchall"),
        });
        // A second vhost without the catch-all for the "/c" rows.
        return c;
    }();
    static const auto configC = oneVhost({
        pat("/c/:q/end", "cparam"),
        pat("/c/lit/*", "clit"),
    });
    Router router(config);
    Router routerC(configC);
    QCOMPARE(route(path.startsWith("/c/") ? routerC : router, path), expected);
}

void TestRouting::precedenceAcrossKinds_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    const char* rows[][2] = {
        {"/x", "exact"},                        // = beats a pattern
        {"/x/", "patX"},                        // = is strict about the trailing slash; the pattern is not
        {"/static/a.png", "patStatic f=a.png"}, // a pattern beats a regex and a ^~ prefix
        {"/static/a/b.png", "rx"}, // no pattern; "^~ /stat" is not the longest prefix, so regexes run
        {"/static/a/b.txt", "prefixStatic"},
        {"/stats.png", "noRegex"}, // the longest prefix is ^~: no regex
        {"/zzz", "root"},
    };
    for (const auto& row : rows)
        QTest::newRow(row[0]) << QString(row[0]) << QString(row[1]);
}

void TestRouting::precedenceAcrossKinds() {
    QFETCH(QString, path);
    QFETCH(QString, expected);
    static const auto config = oneVhost({
        loc("~ \\.png$", "rx"),
        loc("/", "root"),
        loc("/static/", "prefixStatic"),
        loc("^~ /stat", "noRegex"),
        pat("/static/:f", "patStatic"),
        pat("/x", "patX"),
        loc("= /x", "exact"),
    });
    Router router(config);
    QCOMPARE(route(router, path), expected);
}

void TestRouting::methods_data() {
    QTest::addColumn<QString>("method");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    const char* rows[][3] = {
        {"GET", "/items/1", "getItem id=1"},
        {"HEAD", "/items/1", "getItem id=1"}, // HEAD falls back to GET
        {"DELETE", "/items/1", "delItem id=1"},
        {"POST", "/items/1", "405 GET, HEAD, DELETE, OPTIONS"},
        {"OPTIONS", "/items/1", "options GET, HEAD, DELETE, OPTIONS"},
        {"GET", "/items/special", "getItem id=special"}, // the PUT-only literal does not block :id
        {"PUT", "/items/special", "putSpecial"},
        {"PATCH", "/items/special", "405 GET, HEAD, PUT, DELETE, OPTIONS"},
        {"GET", "/items", "405 POST, OPTIONS"},
        {"HEAD", "/items", "405 POST, OPTIONS"},
        {"POST", "/items/", "postItems"},
        {"GET", "/head", "getHead"},
        {"HEAD", "/head", "headOnly"}, // an explicit HEAD route beats the GET fallback
        {"PATCH", "/any", "any"},      // methods 0 = every method
        {"OPTIONS", "/any", "any"},    // ... including OPTIONS, which it then handles itself
        {"PURGE", "/any", "any"},
        {"OPTIONS", "/opts", "opts"},
        {"GET", "/opts", "405 OPTIONS"},
        {"GET", "/ex", "405 POST, OPTIONS"},
        {"POST", "/ex", "exPost"},
        {"GET", "/pre/x", "preGet"},
        {"HEAD", "/pre/x", "preGet"},
        {"POST", "/pre/x", "405 GET, HEAD, OPTIONS"},
        {"POST", "/pre/a.cgi", "cgiPost"},
        {"GET", "/pre/a.cgi", "preGet"}, // the regex does not take GET: the longest prefix does
        {"PUT", "/pre/a.cgi", "405 GET, HEAD, POST, OPTIONS"},
        {"OPTIONS", "/pre/a.cgi", "options GET, HEAD, POST, OPTIONS"},
        {"GET", "/missing", "404"},
        {"OPTIONS", "/missing", "404"},
    };
    for (const auto& row : rows)
        QTest::newRow(qPrintable(QString("%1 %2").arg(row[0], row[1])))
            << QString(row[0]) << QString(row[1]) << QString(row[2]);
}

void TestRouting::methods() {
    QFETCH(QString, method);
    QFETCH(QString, path);
    QFETCH(QString, expected);
    using M = http::Method;
    static const auto config = oneVhost({
        pat("/items/:id", "getItem", bits({M::Get})),
        pat("/items/:id", "delItem", bits({M::Delete})),
        pat("/items", "postItems", bits({M::Post})),
        pat("/items/special", "putSpecial", bits({M::Put})),
        pat("/head", "getHead", bits({M::Get})),
        pat("/head", "headOnly", bits({M::Head})),
        pat("/any", "any"),
        pat("/opts", "opts", bits({M::Options})),
        loc("= /ex", "exPost", bits({M::Post})),
        loc("/pre/", "preGet", bits({M::Get})),
        loc("~ \\.cgi$", "cgiPost", bits({M::Post})),
    });
    Router router(config);
    QCOMPARE(route(router, path, http::methodFromToken(method.toStdString())), expected);
}

void TestRouting::fallbackAndNotFound() {
    using M = http::Method;
    const auto withRoot = oneVhost({pat("/api/:x", "api", bits({M::Post}))}, true);
    Router rooted(withRoot);
    QCOMPARE(route(rooted, "/index.html"), QStringLiteral("fallback"));
    QCOMPARE(route(rooted, "/"), QStringLiteral("fallback"));
    // The path exists for POST: 405 rather than a static file.
    QCOMPARE(route(rooted, "/api/1"), QStringLiteral("405 POST, OPTIONS"));
    QCOMPARE(route(rooted, "/api/1", M::Post), QStringLiteral("api x=1"));

    const auto bare = oneVhost({});
    Router empty(bare);
    QCOMPARE(route(empty, "/"), QStringLiteral("404"));
    QCOMPARE(route(empty, "/x", M::Options), QStringLiteral("404"));

    const auto noVhosts = config::Config{};
    Router none(noVhosts);
    QCOMPARE(none.selectVhost("localhost", 8080), std::size_t(0));
}

void TestRouting::paramViewsPointIntoPath() {
    const auto config = oneVhost({pat("/u/:a/:b/*", "r")});
    Router router(config);
    const std::string path = "/u/one/two/three/four";
    auto r = router.match(0, http::Method::Get, path);
    QCOMPARE(r.kind, RouteResult::Kind::Matched);
    QCOMPARE(r.paramCount, std::size_t(3));
    QCOMPARE(r.param("a"), std::string_view("one"));
    QCOMPARE(r.param("b"), std::string_view("two"));
    QCOMPARE(r.param("*"), std::string_view("three/four"));
    QCOMPARE(r.param("missing"), std::string_view());
    for (std::size_t i = 0; i < r.paramCount; ++i) {
        QVERIFY(r.params[i].value.data() >= path.data());
        QVERIFY(r.params[i].value.data() + r.params[i].value.size() <= path.data() + path.size());
    }
}

void TestRouting::vhosts_data() {
    QTest::addColumn<QString>("host");
    QTest::addColumn<int>("port");
    QTest::addColumn<int>("expected");
    QTest::newRow("exact") << "a.test" << 8080 << 0;
    QTest::newRow("exact with port") << "a.test:8080" << 8080 << 0;
    QTest::newRow("case-insensitive") << "A.TeSt" << 8080 << 0;
    QTest::newRow("trailing dot") << "a.test." << 8080 << 0;
    QTest::newRow("trailing dot and port") << "a.test.:8080" << 8080 << 0;
    QTest::newRow("wildcard") << "x.a.test" << 8080 << 1;
    QTest::newRow("wildcard, two labels") << "y.x.a.test" << 8080 << 1;
    QTest::newRow("longer wildcard suffix wins") << "z.b.a.test" << 8080 << 2;
    QTest::newRow("*.b.a.test does not match b.a.test") << "b.a.test" << 8080 << 1;
    QTest::newRow("wildcard case-insensitive") << "X.B.A.TEST:8080" << 8080 << 2;
    QTest::newRow("suffix must follow a dot") << "xa.test" << 8080 << 5;
    QTest::newRow("localhost.") << "localhost." << 8080 << 3;
    QTest::newRow("localhost on 8080") << "localhost:8080" << 8080 << 3;
    QTest::newRow("port-bound vhost beats unbound") << "localhost:9090" << 9090 << 4;
    QTest::newRow("IPv6 literal with port") << "[::1]:8080" << 8080 << 6;
    QTest::newRow("IPv6 literal") << "[::1]" << 8080 << 6;
    QTest::newRow("IPv6 literal, configured bracketed") << "[fe80::1]:80" << 8080 << 9;
    QTest::newRow("mixed-case name in config") << "mixed.case.TEST" << 8080 << 7;
    QTest::newRow("unknown → default") << "unknown.test" << 8080 << 5;
    QTest::newRow("no Host → default") << "" << 8080 << 5;
    QTest::newRow("port-bound name, other port → default") << "only9090.test" << 8080 << 5;
    QTest::newRow("port-bound name, its port") << "only9090.test:9090" << 9090 << 8;
    QTest::newRow("Host port is not the connection's port") << "only9090.test:9090" << 8080 << 5;
}

void TestRouting::vhosts() {
    QFETCH(QString, host);
    QFETCH(int, port);
    QFETCH(int, expected);
    static const auto config = [] {
        config::Config c;
        auto add = [&](std::vector<std::string> names, std::optional<std::uint16_t> p = {},
                       bool def = false) {
            config::Vhost v;
            v.names = std::move(names);
            v.port = p;
            v.isDefault = def;
            c.vhosts.push_back(std::move(v));
        };
        add({"a.test"});                 // 0
        add({"*.a.test"});               // 1
        add({"*.b.a.test"});             // 2
        add({"localhost"});              // 3
        add({"localhost"}, 9090);        // 4
        add({"default.test"}, {}, true); // 5
        add({"::1"});                    // 6
        add({"Mixed.Case.Test"});        // 7
        add({"only9090.test"}, 9090);    // 8
        add({"[fe80::1]"});              // 9
        return c;
    }();
    Router router(config);
    QCOMPARE(router.selectVhost(host.toStdString(), static_cast<std::uint16_t>(port)), std::size_t(expected));
}

void TestRouting::vhostFallbacks() {
    auto vhost = [](std::vector<std::string> names, std::optional<std::uint16_t> port = {},
                    bool def = false) {
        config::Vhost v;
        v.names = std::move(names);
        v.port = port;
        v.isDefault = def;
        return v;
    };
    { // No default: the first vhost.
        config::Config c;
        c.vhosts = {vhost({"a.test"}), vhost({"b.test"})};
        Router router(c);
        QCOMPARE(router.selectVhost("zzz", 8080), std::size_t(0));
        QCOMPARE(router.selectVhost("b.test", 8080), std::size_t(1));
    }
    { // No default: the first vhost this port may use.
        config::Config c;
        c.vhosts = {vhost({"a.test"}, 9090), vhost({"b.test"})};
        Router router(c);
        QCOMPARE(router.selectVhost("a.test", 8080), std::size_t(1));
        QCOMPARE(router.selectVhost("a.test", 9090), std::size_t(0));
    }
    { // One default per port.
        config::Config c;
        c.vhosts = {vhost({"a.test"}), vhost({"d1"}, {}, true), vhost({"d2"}, 9090, true)};
        Router router(c);
        QCOMPARE(router.selectVhost("zzz", 8080), std::size_t(1));
        QCOMPARE(router.selectVhost("zzz", 9090), std::size_t(2));
    }
    { // A vhost without names matches any Host, after exact and wildcard names.
        config::Config c;
        c.vhosts = {vhost({"a.test"}), vhost({}), vhost({"*.b.test"}), vhost({"d"}, {}, true)};
        Router router(c);
        QCOMPARE(router.selectVhost("a.test", 80), std::size_t(0));
        QCOMPARE(router.selectVhost("x.b.test", 80), std::size_t(2));
        QCOMPARE(router.selectVhost("elsewhere", 80), std::size_t(1));
    }
    { // "*" is the least specific wildcard; exact names still win.
        config::Config c;
        c.vhosts = {vhost({"*"}), vhost({"*.a.test"}), vhost({"a.test"})};
        Router router(c);
        QCOMPARE(router.selectVhost("x.a.test", 80), std::size_t(1));
        QCOMPARE(router.selectVhost("a.test", 80), std::size_t(2));
        QCOMPARE(router.selectVhost("other", 80), std::size_t(0));
    }
    { // A bound vhost also wins among wildcards of equal length.
        config::Config c;
        c.vhosts = {vhost({"*.a.test"}), vhost({"*.a.test"}, 8443)};
        Router router(c);
        QCOMPARE(router.selectVhost("x.a.test:8443", 8443), std::size_t(1));
        QCOMPARE(router.selectVhost("x.a.test", 8080), std::size_t(0));
    }
}

// Regex routes are PCRE2 (as nginx) with match and depth limits: a path that made std::regex
// recurse once per character (SIGSEGV) or backtrack forever now gets an answer. A regex over a
// limit does not match. Each row's vhost has only the route `spec` (named "rx") and no root.
void TestRouting::regexes_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<QString>("expected");
    const QString p1 = "~ ^/p1/((a|b)|(c|d))*$";
    const QString md = "~ ^/docs/.*\\.md$";
    const QString p3 = "~ ^/p3/([a-z]+/?)*\\.md$";
    const QString p3Unanchored = "~ ([a-z]+/?)*\\.md$";
    auto many = [](const char* head, int n, char c, const char* tail = "") {
        return QByteArray(head) + QByteArray(n, c) + QByteArray(tail);
    };
    // A group repeated once per character: within the limits for a short path, over them (so not
    // matched) for a long one. std::regex crashed the server on 8,000 characters.
    QTest::newRow("p1 short") << p1 << QByteArray("/p1/abcdcbad") << "rx";
    QTest::newRow("p1 200") << p1 << many("/p1/", 200, 'c') << "rx";
    QTest::newRow("p1 8000 over the depth limit") << p1 << many("/p1/", 8000, 'a') << "404";
    QTest::newRow("p1 8000 mixed") << p1 << QByteArray("/p1/") + QByteArray("abcd").repeated(2000) << "404";
    // `.*` does not nest: long paths still match (std::regex crashed on ~30,000 characters).
    QTest::newRow("md 30000") << md << many("/docs/", 30000, 'a', ".md") << "rx";
    QTest::newRow("md 30000, no .md") << md << many("/docs/", 30000, 'a') << "404";
    QTest::newRow("md 8000 with slashes")
        << md << QByteArray("/docs/") + QByteArray("ab/").repeated(2700) + ".md"
        << "rx";
    // Catastrophic backtracking: std::regex never returned on 40 characters. PCRE2 either sees at
    // once that no match is possible (no ".md" at all) or stops at the match limit.
    QTest::newRow("p3 matches") << p3 << QByteArray("/p3/a/bc/def.md") << "rx";
    QTest::newRow("p3 40") << p3 << many("/p3/", 40, 'a') << "404";
    QTest::newRow("p3 40, over the match limit") << p3 << many("/p3/", 40, 'a', "!.md") << "404";
    QTest::newRow("p3 2000") << p3 << many("/p3/", 2000, 'a') << "404";
    QTest::newRow("p3 2000, over the match limit") << p3 << many("/p3/", 2000, 'a', "!.md") << "404";
    QTest::newRow("unanchored 2000, over the match limit")
        << p3Unanchored << many("/p3/", 2000, 'a', "!.md") << "404";
    QTest::newRow("unanchored 8000, over the match limit")
        << p3Unanchored << many("/p3/", 8000, 'a', "!.md") << "404";
    // ~* is case-insensitive, ~ is not.
    QTest::newRow("~* lower") << "~* ^/readme\\.MD$" << QByteArray("/readme.md") << "rx";
    QTest::newRow("~* mixed") << "~* ^/readme\\.MD$" << QByteArray("/ReadMe.Md") << "rx";
    QTest::newRow("~ is case-sensitive") << "~ ^/readme\\.MD$" << QByteArray("/README.md") << "404";
    QTest::newRow("~ (?i) inline flag") << "~ (?i)^/readme\\.MD$" << QByteArray("/README.md") << "rx";
    // PCRE2 (nginx) syntax.
    QTest::newRow("lookahead refuses") << "~ ^/(?!admin)" << QByteArray("/admin/users") << "404";
    QTest::newRow("lookahead accepts") << "~ ^/(?!admin)" << QByteArray("/public/users") << "rx";
    QTest::newRow("\\d") << "~ ^/api/v\\d+/" << QByteArray("/api/v12/items") << "rx";
    QTest::newRow("\\d refuses letters") << "~ ^/api/v\\d+/" << QByteArray("/api/vx/items") << "404";
    QTest::newRow("named group, possessive")
        << "~ ^/(?<slug>[a-z-]++)$" << QByteArray("/hello-world") << "rx";
    QTest::newRow("unanchored search") << "~ \\.php$" << QByteArray("/a/b/index.php") << "rx";
    // Bytes, not UTF-8: `.` is one byte, and an invalid UTF-8 byte is just a byte.
    QTest::newRow("bytes: é is two") << "~ ^/caf.$" << QByteArray("/caf\xc3\xa9") << "404";
    QTest::newRow("bytes: é is two, ..") << "~ ^/caf..$" << QByteArray("/caf\xc3\xa9") << "rx";
    QTest::newRow("bytes: invalid UTF-8") << "~ ^/.$" << QByteArray("/\xff") << "rx";
}

void TestRouting::regexes() {
    QFETCH(QString, spec);
    QFETCH(QByteArray, path);
    QFETCH(QString, expected);
    const auto config = oneVhost({loc(spec.toStdString(), "rx")});
    Router router(config);
    const std::string p = path.toStdString();
    QCOMPARE(describe(router.match(0, http::Method::Get, p)), expected);
}

// A regex over a limit is "no match" for that route only: the next regex in declaration order,
// then the longest prefix, then the root decide, as for any regex that does not match.
void TestRouting::regexOverLimitFallsThrough() {
    const auto config = oneVhost(
        {
            loc("~ ^/p1/((a|b)|(c|d))*$", "p1"),
            loc("~ ^/p3/([a-z]+/?)*\\.md$", "p3"),
            loc("~ ^/p1/a", "p1a"),
            loc("/p3/", "p3Prefix"),
        },
        true);
    Router router(config);
    auto at = [&](const QByteArray& path) {
        const std::string p = path.toStdString();
        return describe(router.match(0, http::Method::Get, p));
    };
    QCOMPARE(at("/p1/abcd"), QStringLiteral("p1"));
    QCOMPARE(at("/p1/" + QByteArray(8000, 'a')), QStringLiteral("p1a")); // the next regex
    QCOMPARE(at("/p1/" + QByteArray(8000, 'b')), QStringLiteral("fallback"));
    QCOMPARE(at("/p3/x.md"), QStringLiteral("p3"));
    QCOMPARE(at("/p3/" + QByteArray(2000, 'a') + "!.md"), QStringLiteral("p3Prefix")); // the prefix
    QCOMPARE(at("/elsewhere"), QStringLiteral("fallback"));
}

// Router::match is const and shared by the workers: regex matching keeps per-thread state only.
void TestRouting::regexesFromSeveralThreads() {
    const auto config = oneVhost({
        loc("~ ^/p1/((a|b)|(c|d))*$", "p1"),
        loc("~* \\.(png|jpg)$", "img"),
        loc("~ ^/docs/.*\\.md$", "md"),
        loc("/", "root"),
    });
    Router router(config);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/p1/abcd", "p1"},
        {"/x/a.PNG", "img"},
        {"/docs/" + std::string(5000, 'a') + ".md", "md"},
        {"/p1/" + std::string(5000, 'a'), "root"},
        {"/p1/" + std::string(40, 'a') + ".jpg", "img"},
    };
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 500; ++i) {
                const auto& [path, name] = cases[static_cast<std::size_t>(i + t) % cases.size()];
                auto r = router.match(0, http::Method::Get, path);
                if (r.kind != RouteResult::Kind::Matched || r.route->name != name) ++wrong;
            }
        });
    for (auto& thread : threads)
        thread.join();
    QCOMPARE(wrong.load(), 0);
}

void TestRouting::allocationFree() {
    using M = http::Method;
    const auto config = oneVhost(
        {
            pat("/", "root"),
            pat("/users/:name", "user", bits({M::Get})),
            pat("/users/me", "me"),
            pat("/users/:name/posts/:id", "post"),
            pat("/files/*", "files"),
            pat("/only-post", "onlyPost", bits({M::Post})),
            loc("= /healthz", "health"),
            loc("/assets/", "assets"),
            loc("^~ /img/", "img"),
            loc("/", "prefixRoot", bits({M::Get})),
        },
        true);
    Router router(config);
    const std::vector<std::string> paths = {
        "/",        "/users/ann",     "/users/me/",    "/users/ann/posts/42", "/files/a/b/c.txt",
        "/healthz", "/assets/app.js", "/img/logo.png", "/nowhere/at/all",     "/only-post",
    };
    const M methods[] = {M::Get, M::Head, M::Post, M::Options};

    // The counter works: a heap allocation inside the window is seen.
    tCounting = true;
    auto* probe = new std::string(100, 'x');
    tCounting = false;
    delete probe;
    QVERIFY(gAllocations.load() > 0);

    std::size_t checksum = 0;
    gAllocations = 0;
    tCounting = true;
    for (int i = 0; i < 1000; ++i) {
        const auto& path = paths[i % paths.size()];
        auto r = router.match(router.selectVhost("LocalHost.:8080", 8080), methods[i % 4], path);
        checksum += static_cast<std::size_t>(r.kind) + r.paramCount + (r.route ? r.route->name.size() : 0);
    }
    tCounting = false;
    QCOMPARE(gAllocations.load(), 0L);
    QVERIFY(checksum > 0);

    // The same look-ups give the expected answers (checked outside the counting window).
    QCOMPARE(route(router, "/users/ann/posts/42"), QStringLiteral("post name=ann id=42"));
    QCOMPARE(route(router, "/img/logo.png", M::Head), QStringLiteral("img"));
    QCOMPARE(route(router, "/only-post"), QStringLiteral("prefixRoot"));
    QCOMPARE(route(router, "/users/ann", M::Post), QStringLiteral("405 GET, HEAD, OPTIONS"));
    // The GET-only "/" prefix covers every path, so POST anywhere unclaimed is a 405, not the root.
    QCOMPARE(route(router, "/nowhere/at/all", M::Post), QStringLiteral("405 GET, HEAD, OPTIONS"));
}

QTEST_APPLESS_MAIN(TestRouting)
#include "tst_routing.moc"

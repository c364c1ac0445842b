// The core's folders depend on each other one way (shared/DESIGN.md, "layout v2"; the core
// redesign issue): read from every #include under core/src and core/include/portico,
// - no file in a bottom folder (http, config, io, tls, http1, http2, client) includes anything
//   from a top one (server, serve, proxy, capture, load, validate, engine);
// - every include points down the order docs/architecture.md gives (kOrder), so no two folders
//   include each other, directly or through others (no cycle).
// Edges the redesign has not removed yet are listed in kPending with the reason; an edge missing
// from the list fails, and so does a listed edge that is gone (take it off the list).
#include "test_support.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QMap>
#include <QRegularExpression>
#include <QSet>
#include <QtTest>

namespace {

const QSet<QString> kBottom = {"http", "config", "io", "tls", "http1", "http2", "client"};
// validate sits above the modules whose checks it calls (routing, tls, capture, http1) and below
// engine; as a top folder, nothing at the bottom may include it.
const QSet<QString> kTop = {"server", "serve", "proxy", "capture", "load", "validate", "engine"};

// The folders bottom to top (docs/architecture.md, "Which folder may include which"): a file may
// include from its own folder and from folders earlier in this list, never from a later one.
// Folders on one line share a rank and include nothing from each other.
const QList<QStringList> kOrder = {
    {"http"},
    {"config"},
    {"tls"},
    {"io"},
    {"http1", "http2"},
    {"client"},
    {"stats", "routing", "rules"},
    {"handlers"},
    {"capture"},
    {"ws"},
    {"proxy"},
    {"serve"},
    {"server"},
    {"load"},
    {"validate"},
    {"engine"},
};

int rankOf(const QString& folder) {
    for (int i = 0; i < kOrder.size(); ++i)
        if (kOrder[i].contains(folder)) return i;
    return -1;
}

// Folder edges (from → to) still to remove, and why they exist today.
// None today: the WebSocket session and the proxy tunnel reach their worker through
// io::SessionHost, so server/ (the sessions, workers) only includes ws/ and proxy/, never the reverse.
const QMap<QString, QString> kPending = {};

// The folder a core file belongs to.
QString folderOf(const QString& relative) {
    // src/<folder>/..., include/portico/<folder>/...
    const QStringList parts = relative.split('/');
    if (parts.size() >= 3 && parts[0] == "src") return parts[1];
    if (parts.size() >= 4 && parts[0] == "include") return parts[2];
    return {};
}

// Every folder → folders it includes from (itself left out).
QMap<QString, QSet<QString>> folderEdges(const QDir& core, QStringList& where) {
    static const QRegularExpression include(QStringLiteral("^\\s*#\\s*include\\s*[<\"]([^>\"]+)[>\"]"));
    QMap<QString, QSet<QString>> edges;
    QDirIterator it(core.path(), {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString file = it.next();
        const QString rel = core.relativeFilePath(file);
        const QString from = folderOf(rel);
        if (from.isEmpty()) continue;
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
        for (int i = 0; i < lines.size(); ++i) {
            const auto m = include.match(lines[i]);
            if (!m.hasMatch()) continue;
            const QString path = m.captured(1);
            QString to;
            if (path.startsWith("portico/"))
                to = path.section('/', 1, 1);
            else if (path.contains('/') && core.exists("src/" + path))
                to = path.section('/', 0, 0);
            if (to.isEmpty() || to == from) continue;
            if (!edges[from].contains(to)) where << QString("%1:%2 %3->%4").arg(rel).arg(i + 1).arg(from, to);
            edges[from].insert(to);
        }
    }
    return edges;
}

// Folders on a cycle through `edges` (Tarjan would do; the graph has about twenty nodes).
bool reaches(const QMap<QString, QSet<QString>>& edges, const QString& from, const QString& to) {
    QSet<QString> seen;
    QStringList stack{from};
    while (!stack.isEmpty()) {
        const QString n = stack.takeLast();
        for (const QString& next : edges.value(n)) {
            if (next == to) return true;
            if (!seen.contains(next)) {
                seen.insert(next);
                stack << next;
            }
        }
    }
    return false;
}

} // namespace

class TestCoreLayers : public QObject {
    Q_OBJECT
    QDir core_{portico::test::sourceDir() + "/core"};

private slots:
    void bottomFoldersIncludeNothingFromTheTop() {
        QStringList where;
        const auto edges = folderEdges(core_, where);
        QVERIFY(edges.size() >= 10);
        QStringList bad;
        for (auto it = edges.begin(); it != edges.end(); ++it)
            for (const QString& to : it.value())
                if (kBottom.contains(it.key()) && kTop.contains(to) &&
                    !kPending.contains(it.key() + "->" + to))
                    for (const QString& w : where)
                        if (w.endsWith(' ' + it.key() + "->" + to)) bad << w;
        QVERIFY2(bad.isEmpty(), qPrintable(bad.join('\n')));
    }

    void noCycleBetweenFolders() {
        QStringList where;
        auto edges = folderEdges(core_, where);
        // Every pending edge still exists (else it comes off the list).
        for (auto it = kPending.begin(); it != kPending.end(); ++it) {
            const QString from = it.key().section("->", 0, 0), to = it.key().section("->", 1, 1);
            QVERIFY2(edges.value(from).contains(to),
                     qPrintable(it.key() + " is gone: take it off kPending in tst_core_layers.cpp"));
        }
        // Without the pending edges, no folder reaches itself.
        for (auto it = kPending.begin(); it != kPending.end(); ++it)
            edges[it.key().section("->", 0, 0)].remove(it.key().section("->", 1, 1));
        QStringList cycles;
        for (auto it = edges.begin(); it != edges.end(); ++it)
            for (const QString& to : it.value())
                if (reaches(edges, to, it.key()))
                    for (const QString& w : where)
                        if (w.endsWith(' ' + it.key() + "->" + to)) cycles << w + " (on a cycle)";
        QVERIFY2(cycles.isEmpty(), qPrintable(cycles.join('\n')));
    }

    // Every folder of core/ has a place in kOrder, and every include points down it.
    void includesFollowTheOrder() {
        QStringList where;
        const auto edges = folderEdges(core_, where);
        QStringList unplaced, upward;
        for (const QString& d : QDir(core_.path() + "/src").entryList(QDir::Dirs | QDir::NoDotAndDotDot))
            if (rankOf(d) < 0) unplaced << d;
        QVERIFY2(unplaced.isEmpty(), qPrintable("folders missing from kOrder: " + unplaced.join(", ")));
        int checked = 0;
        for (auto it = edges.begin(); it != edges.end(); ++it)
            for (const QString& to : it.value()) {
                ++checked;
                if (rankOf(to) < rankOf(it.key())) continue;
                for (const QString& w : where)
                    if (w.endsWith(' ' + it.key() + "->" + to)) upward << w;
            }
        QVERIFY(checked >= 50); // the include pattern finds the edges
        QVERIFY2(upward.isEmpty(), qPrintable("includes against the order:\n" + upward.join('\n')));
    }

    // The server's workers, listeners and sessions live in server/; net/ (which was both the
    // bottom and the top layer) is gone.
    void serverHoldsTheWorkersAndSessions() {
        QVERIFY(!core_.exists("src/net"));
        for (const char* f : {"src/server/worker.h", "src/server/snapshot.h", "src/server/connection.h",
                              "src/server/h2_connection.h", "src/server/access_log.h"})
            QVERIFY2(core_.exists(f), f);
    }

    // The new folders of the redesign exist and hold what moved there.
    void ioHoldsTheTransport() {
        for (const char* f : {"src/io/transport.h", "src/io/io_buffer.h", "src/io/drained.h",
                              "src/io/slot_allocator.h", "src/io/h2_mem.h"})
            QVERIFY2(core_.exists(f), f);
        QVERIFY(!core_.exists("src/net/transport.h"));
    }

    // Only serve/ chooses vhosts and routes: no other folder of the core calls the router's
    // selectVhost or match (the sessions call serve::serve and its head-only questions).
    void onlyServeRoutes() {
        QVERIFY(core_.exists("src/serve/serve.h"));
        static const QRegularExpression routing(
            QStringLiteral("\\b(selectVhost|router\\.match|router\\(\\)\\.match)\\s*\\("));
        QStringList where;
        QDirIterator it(core_.filePath("src"), {"*.cpp", "*.h"}, QDir::Files, QDirIterator::Subdirectories);
        int servesCalls = 0;
        while (it.hasNext()) {
            const QString file = it.next();
            const QString folder = folderOf(core_.relativeFilePath(file));
            QFile f(file);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QString text = QString::fromUtf8(f.readAll());
            if (folder == "serve") {
                servesCalls += int(text.count(routing));
                continue;
            }
            if (folder == "routing") continue; // the router itself
            if (text.contains(routing)) where << core_.relativeFilePath(file);
        }
        QVERIFY(servesCalls >= 3); // the pattern finds what serve/ does
        QVERIFY2(where.isEmpty(), qPrintable("routes outside serve/: " + where.join(", ")));
    }
};

QTEST_APPLESS_MAIN(TestCoreLayers)
#include "tst_core_layers.moc"

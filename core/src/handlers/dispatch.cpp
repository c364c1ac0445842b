// dispatch(): runs the routed action, then applies the vhost's error pages, extra headers and the
// Server switch; also the per-worker state the handlers keep.
#include <portico/handlers/dispatch.h>

#include "handlers/actions.h"
#include "handlers/file_cache.h"
#include "handlers/http_util.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

namespace portico::handlers {
namespace {

// The file path a static route serves: the wildcard's capture when the route has one ("/assets/*"
// serves root/app.js for /assets/app.js, like Express's static mount), else the whole path (like
// nginx's `root`).
Produced runStatic(const Exchange& ex, const config::StaticAction& action, http::Response& res) {
    const routing::RouteResult& rr = ex.route;
    for (std::size_t i = 0; i < rr.paramCount; ++i) {
        if (rr.params[i].name != "*") continue;
        std::string_view rest = rr.params[i].value;
        while (!rest.empty() && rest.front() == '/')
            rest.remove_prefix(1);
        // Keep the request's trailing slash: it decides between a directory redirect and its index.
        bool slash = ex.request.path.ends_with('/');
        PathBuf mapped;
        if (!rest.empty() || slash) mapped.push('/');
        mapped.append(rest);
        if (slash && !mapped.view().ends_with('/')) mapped.push('/');
        if (!mapped.ok()) return fail(404, res);
        return serveStatic(ex, action, mapped.view(), res);
    }
    return serveStatic(ex, action, ex.request.path, res);
}

Produced runRoute(const Exchange& ex, http::Response& res) {
    const config::Route* route = ex.route.route;
    if (!route) return fail(500, res); // a Matched result without a route is a router bug
    if (const auto* s = std::get_if<config::StaticAction>(&route->action)) return runStatic(ex, *s, res);
    if (const auto* r = std::get_if<config::RespondAction>(&route->action)) return respond(ex, *r, res);
    if (const auto* d = std::get_if<config::RedirectAction>(&route->action)) return redirect(ex, *d, res);
    if (const auto* p = std::get_if<config::ProxyAction>(&route->action)) {
        res.forward = p; // the connection forwards the request (proxy/forward.h)
        return Produced::Response;
    }
    if (std::holds_alternative<config::WebSocketAction>(route->action)) {
        // HTTP/1.1 upgrades never get here (serve() hands them to the session); this is HTTP/2,
        // which has no WebSocket bootstrap here (RFC 8441 is not offered).
        Produced p = fail(426, res);
        res.addHeader("Upgrade", "websocket");
        return p;
    }
    return fail(500, res);
}

// Adds `headers`, replacing a field of the same name the action (or the vhost) produced; repeated
// names within one list all stay (e.g. several Link fields).
// Sec-Fetch-Site: cross-site with Sec-Fetch-Mode: no-cors (Fetch Metadata, W3C). One pass over the
// fields: both names are 14 bytes long, so most fields end at the size test.
bool crossSiteNoCors(const http::Request& req) {
    bool crossSite = false, noCors = false;
    for (const http::Header& h : req.headers) {
        if (h.name.size() != 14) continue;
        if (http::iequals(h.name, "sec-fetch-site"))
            crossSite = http::iequals(h.value, "cross-site");
        else if (http::iequals(h.name, "sec-fetch-mode"))
            noCors = http::iequals(h.value, "no-cors");
    }
    return crossSite && noCors;
}

void applyHeaders(const config::HeaderList& headers, http::Response& res) {
    for (std::size_t i = 0; i < headers.size(); ++i) {
        bool repeated = false;
        for (std::size_t j = 0; j < i && !repeated; ++j)
            repeated = http::iequals(headers[j].first, headers[i].first);
        if (repeated)
            res.addHeader(headers[i].first, headers[i].second);
        else
            res.setHeader(headers[i].first, headers[i].second);
    }
}

// Swaps Portico's plain error text for the vhost's page for that status, if it has one and it can
// be read (otherwise the plain page stays: an error page must not fail the error).
void applyErrorPage(const Exchange& ex, http::Response& res) {
    auto it = ex.vhost.errorPages.find(res.status);
    if (it == ex.vhost.errorPages.end()) return;
    auto page = ex.worker.files().loadWhole(it->second);
    if (!page) return;
    res.setSharedBody(page, page->data);
    res.setHeader("Content-Type", page->mime.type);
}

std::uint64_t seed() {
    std::random_device rd;
    auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ now;
}

} // namespace

namespace {
constexpr std::size_t kStatMemoSlots = 64; // direct-mapped by path hash
}

struct WorkerState::StatMemo {
    std::string path; // capacity kept: no allocation once warm
    struct ::stat st {};
    int rc = 0;
    int err = 0;
    std::uint64_t turn = 0;
};

WorkerState::WorkerState()
    : files_(std::make_unique<FileCache>()), stats_(std::make_unique<StatMemo[]>(kStatMemoSlots)),
      rng_(seed()) {}

int WorkerState::statFile(const char* path, std::size_t len, struct ::stat& st) {
    if (turn_ == 0) return ::stat(path, &st);
    std::uint64_t h = 1469598103934665603ull; // FNV-1a
    for (std::size_t i = 0; i < len; ++i)
        h = (h ^ static_cast<unsigned char>(path[i])) * 1099511628211ull;
    StatMemo& m = stats_[h % kStatMemoSlots];
    if (m.turn == turn_ && m.path.size() == len && std::memcmp(m.path.data(), path, len) == 0) {
        if (m.rc != 0) errno = m.err;
        st = m.st;
        return m.rc;
    }
    m.rc = ::stat(path, &m.st);
    m.err = m.rc != 0 ? errno : 0;
    m.path.assign(path, len);
    m.turn = turn_;
    st = m.st;
    if (m.rc != 0) errno = m.err;
    return m.rc;
}

WorkerState::~WorkerState() = default;

double WorkerState::random() {
    // splitmix64: tiny, fast and good enough for latency jitter and fault rolls.
    std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

void errorResponse(int status, http::Response& res) {
    res.status = status;
    res.setHeader("Content-Type", "text/plain; charset=utf-8");
    std::string& body = res.ownedBody();
    char code[4] = {static_cast<char>('0' + status / 100 % 10), static_cast<char>('0' + status / 10 % 10),
                    static_cast<char>('0' + status % 10), ' '};
    body.append(code, 4);
    body.append(http::reasonPhrase(status));
    body.push_back('\n');
}

void dispatch(const Exchange& ex, http::Response& res) {
    Produced produced = Produced::Response;
    const config::Route* route = nullptr;
    // A page on another site loading this one as a script, style or image (Fetch Metadata): refused
    // before any action, a proxied one included.
    const bool refused = !ex.vhost.crossSiteSubresources && crossSiteNoCors(ex.request);
    if (refused)
        produced = fail(403, res);
    else
        switch (ex.route.kind) {
        case routing::RouteResult::Kind::Matched:
            route = ex.route.route;
            produced = runRoute(ex, res);
            break;
        case routing::RouteResult::Kind::Fallback:
            produced = ex.vhost.root ? serveStatic(ex, *ex.vhost.root, ex.request.path, res) : fail(404, res);
            break;
        case routing::RouteResult::Kind::NotFound:
            produced = fail(404, res);
            break;
        case routing::RouteResult::Kind::MethodNotAllowed:
            produced = fail(405, res);
            // We answer OPTIONS for every path (204 below), so it is always allowed.
            res.addHeader("Allow",
                          http::allowHeaderValue(ex.route.allow | http::methodBit(http::Method::Options)));
            break;
        case routing::RouteResult::Kind::Options:
            res.status = 204;
            res.addHeader("Allow",
                          http::allowHeaderValue(ex.route.allow | http::methodBit(http::Method::Options)));
            break;
        }
    if (res.fate == http::Response::Fate::Drop) return;
    if (produced == Produced::GeneratedError) applyErrorPage(ex, res);
    applyHeaders(ex.vhost.headers, res);
    if (route) applyHeaders(route->headers, res);
    // Live reload: the browser revalidates what it cached (validators still give 304), else the
    // reload after an edit runs a script it still holds as fresh (Vite and live-server do the same).
    if (ex.vhost.liveReload && !res.forward && !res.hasHeader("Cache-Control"))
        res.addHeader("Cache-Control", "no-cache");
    res.serverHeader = route && route->serverHeader ? *route->serverHeader
                       : ex.vhost.serverHeader      ? *ex.vhost.serverHeader
                                                    : ex.config.serverHeader;
}

} // namespace portico::handlers

// Reads vhosts, their routes (path:/location: matching, methods) and route groups; the route
// actions are read in read_actions.cpp.
#include "reader_impl.h"

#include <portico/config/pattern.h>
#include <portico/config/writer.h>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace portico::config::detail {

namespace {

constexpr std::string_view kVhostKeys[] = {"names",
                                           "port",
                                           "default",
                                           "root",
                                           "index",
                                           "listing",
                                           "spa_fallback",
                                           "follow_symlinks",
                                           "headers",
                                           "error_pages",
                                           "server_header",
                                           "routes",
                                           "tls",
                                           "live_reload",
                                           "cross_site_subresources"};
constexpr Keys kVhostNotYet{}; // every vhost key of the design is supported
constexpr std::string_view kRouteKeys[] = {"path",    "location",      "group",  "methods", "name",
                                           "headers", "server_header", "static", "respond", "redirect",
                                           "proxy",   "websocket",     "grpc",   "fastcgi"};
constexpr Keys kRouteNotYet{}; // every route action of the design is supported
constexpr std::string_view kGroupKeys[] = {"prefix", "routes"};

constexpr int kMaxGroupDepth = 16;

/// Joins a group prefix and a route path: "/api" + "/users" → "/api/users"; "/api" + "/" → "/api"
/// for patterns and exact paths (which name one resource) and "/api/" for prefixes.
std::string joinPrefix(const std::string& prefix, const std::string& path, MatchKind kind) {
    if (prefix.empty()) return path;
    std::string base = prefix;
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    if (path == "/" && (kind == MatchKind::Pattern || kind == MatchKind::Exact))
        return base.empty() ? "/" : base;
    return base + path;
}

constexpr std::uint32_t kAllMethods = [] {
    std::uint32_t m = 0;
    for (unsigned i = 0; i < static_cast<unsigned>(http::Method::Other); ++i)
        m |= 1u << i;
    return m;
}();

} // namespace

void Reader::readVhost(const Value& v, Vhost& vh, std::vector<SourceMap::RouteSource>& sources) {
    vh.where = locate(v.mark);
    StaticAction st;
    std::optional<Value> rootValue;
    std::vector<Entry> needRoot;
    std::optional<Value> routesValue;
    bool isMap = readMap(
        v, kVhostKeys,
        [&](const Entry& e) {
            const Value& val = e.value;
            if (e.key == "root") {
                rootValue = val;
                readStaticKey(e, st);
            } else if (e.key == "index" || e.key == "listing" || e.key == "spa_fallback" ||
                       e.key == "follow_symlinks") {
                needRoot.push_back(e);
                readStaticKey(e, st);
            } else if (e.key == "names") {
                auto names = strings(val);
                if (!names) return true;
                for (std::size_t i = 0; i < names->size(); ++i) {
                    Value at = val.node.IsSequence()
                                   ? Value{val.node[i], item(val.path, i), val.node[i].Mark()}
                                   : val;
                    std::string n = lower((*names)[i]);
                    if (!n.empty() && n.back() == '.') n.pop_back();
                    std::string_view bare = n;
                    if (bare.starts_with("*.")) bare.remove_prefix(2);
                    in6_addr a6{};
                    std::string inner(bare.size() > 2 && bare.front() == '[' && bare.back() == ']'
                                          ? bare.substr(1, bare.size() - 2)
                                          : bare);
                    bool bracketed = inet_pton(AF_INET6, inner.c_str(), &a6) == 1; // an IPv6 literal
                    // Labels are non-empty (RFC 1034 §3.1): no leading dot, no '..', and at most the
                    // one trailing dot already removed ('..' would otherwise load as '.', which the
                    // writer saves and the loader then refuses).
                    bool labels = !bare.starts_with('.') && !bare.ends_with('.') &&
                                  bare.find("..") == std::string_view::npos;
                    bool ok = !bare.empty() &&
                              (bracketed || (labels && std::all_of(bare.begin(), bare.end(), [](char c) {
                                                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                                        c == '-' || c == '.' || c == '_';
                                             })));
                    if (n == "*")
                        vh.names.push_back(n); // the least specific wildcard (see routing/router.h)
                    else if (!bracketed && n.find(':') != std::string::npos)
                        error(at, "names do not carry a port; use `port:` for '" + n + "'");
                    else if (!ok)
                        error(at, "'" + (*names)[i] +
                                      "' is not a host name (labels of letters, digits, '-' and '_' "
                                      "joined by single dots, optionally starting with '*.')");
                    else
                        vh.names.push_back(n);
                }
            } else if (e.key == "port") {
                if (auto p = integer(val, 1, 65535)) vh.port = static_cast<std::uint16_t>(*p);
            } else if (e.key == "default") {
                if (auto b = boolean(val)) vh.isDefault = *b;
            } else if (e.key == "headers") {
                if (auto h = headers(val, nullptr)) vh.headers = std::move(*h);
            } else if (e.key == "error_pages") {
                readMap(val, {}, [&](const Entry& page) {
                    int code = 0;
                    auto [end, ec] =
                        std::from_chars(page.key.data(), page.key.data() + page.key.size(), code);
                    if (ec != std::errc{} || end != page.key.data() + page.key.size() || code < 400 ||
                        code > 599) {
                        errorAtKey(page,
                                   "error_pages keys are statuses from 400 to 599, got '" + page.key + "'");
                        return true;
                    }
                    if (auto file = absolute(page.value)) vh.errorPages[code] = *file;
                    return true;
                });
            } else if (e.key == "server_header") {
                if (auto b = boolean(val)) vh.serverHeader = *b;
            } else if (e.key == "routes") {
                routesValue = val;
            } else if (e.key == "live_reload") {
                if (auto b = boolean(val)) vh.liveReload = *b;
            } else if (e.key == "cross_site_subresources") {
                if (auto b = boolean(val)) vh.crossSiteSubresources = *b;
            } else if (e.key == "tls") {
                if (!val.node.IsMap())
                    error(val, "expected {cert: FILE, key: FILE}, got " + describe(val.node));
                else
                    vh.tls = readTlsFiles(val);
            } else {
                return false;
            }
            return true;
        },
        kVhostNotYet);
    if (!isMap) return;
    if (rootValue) {
        if (!st.root.empty()) vh.root = st;
    } else {
        for (const Entry& e : needRoot)
            errorAtKey(e, "'" + e.key + "' applies to the vhost's `root`, which is not set");
    }
    if (routesValue) readRoutes(*routesValue, GroupContext{}, vh.routes, sources);
}

void Reader::readRoutes(const Value& v, const GroupContext& group, std::vector<Route>& out,
                        std::vector<SourceMap::RouteSource>& sources) {
    auto items = list(v, false);
    if (!items) return;
    for (const Value& item : *items)
        readRoute(item, group, out, sources);
}

bool Reader::parseMatch(const Entry& e, const GroupContext& group, Route& r, RouteShape& shape) {
    auto spec = string(e.value);
    if (!spec) return false;
    bool location = e.key == "location";
    std::string rest = *spec;
    MatchKind kind = location ? MatchKind::Prefix : MatchKind::Pattern;
    struct Modifier {
        std::string_view text;
        MatchKind kind;
    };
    static constexpr Modifier kModifiers[] = {{"= ", MatchKind::Exact},
                                              {"^~ ", MatchKind::PrefixNoRegex},
                                              {"~* ", MatchKind::RegexCaseless},
                                              {"~ ", MatchKind::Regex}};
    for (const Modifier& m : kModifiers) {
        if (rest.starts_with(m.text)) {
            kind = m.kind;
            rest = rest.substr(m.text.size());
            rest.erase(0, rest.find_first_not_of(' '));
            break;
        }
    }
    if (rest.empty()) {
        error(e.value, "empty " + e.key);
        return false;
    }
    if (group.depth > 0 && (kind == MatchKind::Regex || kind == MatchKind::RegexCaseless)) {
        error(e.value,
              "regex routes cannot be inside a group (a prefix cannot be prepended to a regex); move it "
              "out of the group and write the prefix into the regex");
        return false;
    }
    if (group.prefixHasParams && kind != MatchKind::Pattern) {
        error(e.value, "only `path:` patterns can be inside a group whose prefix has parameters");
        return false;
    }
    std::string path = joinPrefix(group.prefix, rest, kind);
    switch (kind) {
    case MatchKind::Pattern: {
        // Reported by validate; the reader only needs the parameters for {{param.NAME}}.
        PatternShape ps;
        shape.pattern = path.starts_with("/");
        shape.unknown = !checkPattern(path, ps).empty();
        shape.params = std::move(ps.params);
        shape.wildcard = ps.wildcard;
        break;
    }
    case MatchKind::Exact:
    case MatchKind::Prefix:
    case MatchKind::PrefixNoRegex:
        if (!path.starts_with("/")) {
            std::string hint;
            if (location && (path.starts_with("=") || path.starts_with("^~") || path.starts_with("~")))
                hint = " (put a space after the modifier)";
            else if (location && path.starts_with("@"))
                hint = " (named locations are not supported)";
            error(e.value, e.key + " must start with '/' (after any modifier), got '" + *spec + "'" + hint);
            return false;
        }
        break;
    case MatchKind::Regex:
    case MatchKind::RegexCaseless:
        break; // compiled by validate, as the router will compile it
    }
    r.kind = kind;
    r.path = path;
    r.spec = group.depth > 0 ? matchSpec(kind, path) : *spec;
    return true;
}

std::optional<std::uint32_t> Reader::methods(const Value& v) {
    auto items = list(v, true);
    if (!items) return std::nullopt;
    if (items->empty()) {
        error(v, "empty methods list; leave `methods` out to allow every method");
        return std::nullopt;
    }
    std::uint32_t mask = 0;
    bool ok = true;
    for (const Value& item : *items) {
        auto s = string(item);
        if (!s) {
            ok = false;
            continue;
        }
        http::Method m = http::methodFromToken(*s);
        if (m == http::Method::Other) {
            std::string hint;
            if (http::methodFromToken(upper(*s)) != http::Method::Other)
                hint = " (did you mean '" + upper(*s) + "'? methods are case-sensitive)";
            error(item,
                  "unknown method '" + *s + "'" + hint + "; known: " + http::allowHeaderValue(kAllMethods));
            ok = false;
            continue;
        }
        mask |= http::methodBit(m);
    }
    if (!ok) return std::nullopt;
    return mask;
}

void Reader::readRoute(const Value& v, const GroupContext& group, std::vector<Route>& out,
                       std::vector<SourceMap::RouteSource>& sources) {
    if (!v.node.IsMap()) {
        error(v, "expected a route (a map with path:, location: or group:), got " + describe(v.node));
        return;
    }
    Route r;
    r.where = locate(v.mark);
    std::optional<Entry> match, action;
    std::vector<Entry> others;
    std::optional<std::uint32_t> methodMask;
    bool methodsSeen = false;
    std::optional<Value> headersValue;
    readMap(
        v, kRouteKeys,
        [&](const Entry& e) {
            if (e.key == "path" || e.key == "location" || e.key == "group") {
                if (match)
                    errorAtKey(
                        e, "a route takes exactly one of path, location or group; this one already has '" +
                               match->key + "'");
                else
                    match = e;
                return true;
            }
            if (actionKind(e.key)) {
                if (action)
                    errorAtKey(e, "a route takes exactly one action; this one already has '" + action->key +
                                      "'");
                else
                    action = e;
                return true;
            }
            others.push_back(e);
            if (e.key == "methods") {
                methodsSeen = true;
                methodMask = methods(e.value);
            } else if (e.key == "name") {
                if (auto s = string(e.value)) r.name = *s;
            } else if (e.key == "headers") {
                headersValue = e.value;
            } else if (e.key == "server_header") {
                if (auto b = boolean(e.value)) r.serverHeader = *b;
            } else {
                others.pop_back();
                return false;
            }
            return true;
        },
        kRouteNotYet,
        " (this version supports static, respond, redirect, proxy, grpc, fastcgi and websocket)");
    bool unsupported = std::any_of(std::begin(kRouteNotYet), std::end(kRouteNotYet),
                                   [&](std::string_view k) { return bool(v.node[std::string(k)]); });
    if (!match) {
        error(v, "a route needs one of `path:` (router pattern), `location:` (nginx syntax) or `group:`");
        return;
    }
    if (match->key == "group") {
        if (action) others.push_back(*action);
        for (const Entry& o : others)
            errorAtKey(o, "a group entry takes only `group:`; put '" + o.key + "' on the routes inside it");
        readGroup(match->value, group, out, sources);
        return;
    }
    RouteShape shape;
    bool matchOk = parseMatch(*match, group, r, shape);
    if (!matchOk) shape.unknown = true;
    if (headersValue) {
        if (auto h = headers(*headersValue, nullptr)) r.headers = std::move(*h);
    }
    if (methodMask) r.methods = *methodMask;
    if (action) {
        const ActionKind* kind = actionKind(action->key);
        if (auto a = (this->*kind->read)(*action, shape))
            r.action = std::move(*a);
        else
            r.action = kind->empty(); // partial config: the kind as written, its values at their defaults
    } else if (!unsupported) {
        error(v, "a route needs an action: static, respond, redirect, proxy, grpc, fastcgi or websocket");
    }
    // A route with a broken action still takes part in the duplicate check, so one run reports
    // both; any error refuses the whole config anyway.
    if (!matchOk || (methodsSeen && !methodMask)) return;
    out.push_back(std::move(r));
    sources.push_back(SourceMap::RouteSource{v.path, match->key});
}

void Reader::readGroup(const Value& v, const GroupContext& group, std::vector<Route>& out,
                       std::vector<SourceMap::RouteSource>& sources) {
    if (!v.node.IsMap()) {
        error(v, "expected {prefix: /api, routes: [...]}, got " + describe(v.node));
        return;
    }
    if (group.depth >= kMaxGroupDepth) {
        error(v, "groups are nested too deeply");
        return;
    }
    std::optional<GroupContext> inner;
    std::optional<Value> routes;
    readMap(v, kGroupKeys, [&](const Entry& e) {
        if (e.key == "prefix") {
            auto p = string(e.value);
            if (!p) return true;
            PatternShape shape;
            std::string problem;
            if (!p->starts_with("/")) {
                error(e.value, "group prefix must start with '/', got '" + *p + "'");
            } else if (p->find('*') != std::string::npos) {
                error(e.value, "group prefix cannot contain '*'");
            } else if (problem = checkPattern(joinPrefix(group.prefix, *p, MatchKind::Pattern), shape);
                       !problem.empty()) {
                error(e.value, problem); // the group's routes are not read: they would all repeat it
            } else {
                inner = GroupContext{joinPrefix(group.prefix, *p, MatchKind::Pattern),
                                     group.prefixHasParams || !shape.params.empty(), group.depth + 1};
            }
        } else if (e.key == "routes") {
            routes = e.value;
        } else {
            return false;
        }
        return true;
    });
    if (!v.node["prefix"]) error(v, "group needs a `prefix:` (e.g. /api)");
    if (!routes) error(v, "group needs `routes:`");
    if (inner && routes) readRoutes(*routes, *inner, out, sources);
}

} // namespace portico::config::detail

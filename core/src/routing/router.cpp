// Compiles a config snapshot into per-vhost routing tables and answers vhost and route look-ups.
#include <portico/routing/router.h>

#include "routing/regex.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace portico::routing {

namespace {

using config::MatchKind;
using config::Route;

constexpr std::uint32_t kGetBit = http::methodBit(http::Method::Get);
constexpr std::uint32_t kHeadBit = http::methodBit(http::Method::Head);
constexpr std::uint32_t kOptionsBit = http::methodBit(http::Method::Options);
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = lower(c);
    return out;
}

// `name` is already lower case, so only the request's side is folded (no buffer needed).
bool equalsFolded(std::string_view name, std::string_view host) {
    if (name.size() != host.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (name[i] != lower(host[i])) return false;
    return true;
}

// The host part of a Host field value: port removed, IPv6 brackets removed (so that "[::1]:8080"
// and a configured "::1" or "[::1]" meet), one trailing dot removed (an FQDN "localhost." names
// the same host). Works on views only: vhost selection runs for every request.
std::string_view hostOnly(std::string_view host) {
    if (!host.empty() && host.front() == '[') {
        auto close = host.find(']');
        return close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1);
    }
    // More than one colon is a bare IPv6 literal (not valid in Host, but seen): nothing to strip.
    auto colon = host.find(':');
    if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos)
        host = host.substr(0, colon);
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    return host;
}

// What the request's method lets a route accept. HEAD is a GET without the body (RFC 9110 §9.3.2),
// so a GET route serves it when no route for the same pattern names HEAD itself.
struct MethodWant {
    std::uint32_t bit = 0;
    bool head = false;

    bool accepts(std::uint32_t methods) const {
        return methods == 0 || (methods & bit) || (head && (methods & kGetBit));
    }
};

// Index of the route in `items` (routes sharing one pattern, in declaration order) that serves the
// method: an explicit method match first, then HEAD → GET. When none does, their methods join
// `allow` so that a 405 can list them.
template <class Item, class RouteOf>
std::size_t pickByMethod(const std::vector<Item>& items, RouteOf routeOf, MethodWant want,
                         std::uint32_t& allow) {
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto m = routeOf(items[i])->methods;
        if (m == 0 || (m & want.bit)) return i;
    }
    if (want.head)
        for (std::size_t i = 0; i < items.size(); ++i)
            if (routeOf(items[i])->methods & kGetBit) return i;
    for (const auto& item : items)
        allow |= routeOf(item)->methods;
    return kNone;
}

const Route* self(const Route* r) { return r; }

/// A router pattern that ends at some node, with the names of its captures in path order.
struct PatternRoute {
    const Route* route = nullptr;
    std::vector<std::string_view> names; ///< views into route->path, or "*"
};

/// One segment position of the pattern tree. Children are tried literal, then `:param`, then the
/// trailing `*`, which gives the documented segment-by-segment precedence by plain backtracking.
struct PatternNode {
    std::vector<std::pair<std::string, std::unique_ptr<PatternNode>>> literals; ///< sorted by key
    std::unique_ptr<PatternNode> param; ///< shared by every ":name" here; names live in the routes
    std::vector<PatternRoute> here;     ///< patterns that end at this node
    std::vector<PatternRoute> wildcard; ///< patterns whose trailing "*" starts at this node

    const PatternNode* findLiteral(std::string_view segment) const {
        auto it = std::lower_bound(literals.begin(), literals.end(), segment,
                                   [](const auto& entry, std::string_view key) { return entry.first < key; });
        return it != literals.end() && it->first == segment ? it->second.get() : nullptr;
    }

    PatternNode& literalChild(std::string_view segment) {
        auto it = std::lower_bound(literals.begin(), literals.end(), segment,
                                   [](const auto& entry, std::string_view key) { return entry.first < key; });
        if (it == literals.end() || it->first != segment)
            it = literals.emplace(it, std::string(segment), std::make_unique<PatternNode>());
        return *it->second;
    }
};

const Route* routeOfPattern(const PatternRoute& p) { return p.route; }

/// Match-time state of one pattern search; lives on the caller's stack.
struct PatternWalk {
    MethodWant want;
    struct Capture {
        const char* data;
        std::size_t size;
    };
    Capture values[kMaxParams]; // [0, count) are set; trivial, so not zeroed per match
    std::size_t count = 0;
    std::uint32_t allow = 0;
    const PatternRoute* found = nullptr;

    bool tryRoutes(const std::vector<PatternRoute>& routes) {
        auto i = pickByMethod(routes, routeOfPattern, want, allow);
        if (i == kNone) return false;
        found = &routes[i];
        return true;
    }
};

// `rest` is the path still to match, without its leading '/'. On success the captures stay in
// `walk.values` (nothing is popped on the way out).
bool walkPattern(const PatternNode& node, std::string_view rest, PatternWalk& walk) {
    if (rest.empty()) {
        if (walk.tryRoutes(node.here)) return true;
    } else {
        auto slash = rest.find('/');
        auto segment = rest.substr(0, slash);
        // "ann/" leaves "" like "ann" does: a trailing slash still reaches "/users/:name".
        auto after = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
        if (const auto* child = node.findLiteral(segment); child && walkPattern(*child, after, walk))
            return true;
        if (node.param && !segment.empty() && walk.count < kMaxParams) {
            walk.values[walk.count++] = {segment.data(), segment.size()};
            if (walkPattern(*node.param, after, walk)) return true;
            --walk.count;
        }
    }
    if (!node.wildcard.empty() && walk.count < kMaxParams) {
        walk.values[walk.count++] = {rest.data(), rest.size()};
        if (walk.tryRoutes(node.wildcard)) return true;
        --walk.count;
    }
    return false;
}

/// `= /exact` routes that share one path, in declaration order.
struct ExactGroup {
    std::string_view path;
    std::vector<const Route*> routes;
};

/// A vhost name prepared for comparison: lower case, no port, brackets or trailing dot.
struct HostName {
    std::string text; ///< the exact name, or for "*.a.test" the suffix ".a.test"
    bool wildcard = false;
};

} // namespace

/// One vhost's compiled tables. Built once per config snapshot and only read afterwards, so
/// workers share it without locks.
class CompiledVhost {
public:
    explicit CompiledVhost(const config::Vhost& vhost) : vhost_(vhost) {
        for (const auto& name : vhost.names) {
            std::string_view n = name;
            bool wildcard = n.starts_with('*');
            // "*" alone keeps an empty suffix: the least specific wildcard, any non-empty host.
            if (wildcard) {
                n.remove_prefix(1);
                if (n.ends_with('.')) n.remove_suffix(1);
            } else {
                n = hostOnly(n);
            }
            names_.push_back({lowered(n), wildcard});
        }
        for (const auto& route : vhost.routes)
            add(route);
        std::sort(exact_.begin(), exact_.end(),
                  [](const ExactGroup& a, const ExactGroup& b) { return a.path < b.path; });
        // Longest first, declaration order among equals: the first accepting match is nginx's
        // "longest matching prefix".
        std::stable_sort(prefixes_.begin(), prefixes_.end(),
                         [](const Route* a, const Route* b) { return a->path.size() > b->path.size(); });
    }

    const config::Vhost& vhost() const { return vhost_; }

    bool catchAll() const { return vhost_.names.empty(); }

    bool eligible(std::uint16_t localPort) const { return !vhost_.port || *vhost_.port == localPort; }

    bool boundToPort() const { return vhost_.port.has_value(); }

    bool hasExactName(std::string_view host) const {
        for (const auto& n : names_)
            if (!n.wildcard && equalsFolded(n.text, host)) return true;
        return false;
    }

    /// Length of the longest wildcard suffix matching `host` (+1, so that "*" scores 1), or 0.
    std::size_t wildcardScore(std::string_view host) const {
        std::size_t best = 0;
        for (const auto& n : names_) {
            // "*.a.test" needs at least one label before ".a.test": never "a.test" itself.
            if (!n.wildcard || host.size() <= n.text.size()) continue;
            if (equalsFolded(n.text, host.substr(host.size() - n.text.size())))
                best = std::max(best, n.text.size() + 1);
        }
        return best;
    }

    RouteResult match(http::Method method, std::string_view path) const {
        RouteResult result;
        MethodWant want{http::methodBit(method), method == http::Method::Head};
        std::uint32_t allow = 0;

        // 1. "= /exact"
        auto group = std::lower_bound(exact_.begin(), exact_.end(), path,
                                      [](const ExactGroup& g, std::string_view p) { return g.path < p; });
        if (group != exact_.end() && group->path == path) {
            auto i = pickByMethod(group->routes, self, want, allow);
            if (i != kNone) {
                matched(result, group->routes[i]);
                return result;
            }
        }

        // 2. Router patterns.
        PatternWalk walk;
        walk.want = want;
        std::string_view rest = path.starts_with('/') ? path.substr(1) : path;
        if (walkPattern(patterns_, rest, walk)) {
            const auto& names = walk.found->names;
            assert(names.size() == walk.count);
            result.paramCount = std::min(names.size(), walk.count);
            for (std::size_t i = 0; i < result.paramCount; ++i)
                result.params[i] = {names[i], std::string_view(walk.values[i].data, walk.values[i].size)};
            matched(result, walk.found->route);
            return result;
        }
        allow |= walk.allow;

        // 3. nginx locations.
        const Route* longest = nullptr;
        for (const Route* r : prefixes_) {
            if (!path.starts_with(std::string_view(r->path))) continue;
            if (want.accepts(r->methods)) {
                longest = r;
                break;
            }
            allow |= r->methods;
        }
        if (longest && longest->kind == MatchKind::PrefixNoRegex) {
            matched(result, longest);
            return result;
        }
        for (const auto& [regex, r] : regexes_) {
            // A search over the match or depth limit counts as no match: the next route decides.
            if (regex.search(path) != Regex::Result::Match) continue;
            if (want.accepts(r->methods)) {
                matched(result, r);
                return result;
            }
            allow |= r->methods;
        }
        if (longest) {
            matched(result, longest);
            return result;
        }

        // 4. Nothing serves this method. A route that serves the path for other methods means the
        // resource exists, so 405 (or the OPTIONS answer) beats the static fallback.
        if (allow != 0) {
            allow |= kOptionsBit;
            if (allow & kGetBit) allow |= kHeadBit;
            result.allow = allow;
            result.kind = method == http::Method::Options ? RouteResult::Kind::Options
                                                          : RouteResult::Kind::MethodNotAllowed;
        } else {
            result.kind = vhost_.root ? RouteResult::Kind::Fallback : RouteResult::Kind::NotFound;
        }
        return result;
    }

private:
    // Every return of match() names `result`, so it is built in the caller's object (NRVO)
    // instead of being copied out (540 bytes).
    static void matched(RouteResult& result, const Route* route) {
        result.kind = RouteResult::Kind::Matched;
        result.route = route;
    }

    void add(const Route& route) {
        switch (route.kind) {
        case MatchKind::Pattern:
            addPattern(route);
            break;
        case MatchKind::Exact: {
            auto it = std::find_if(exact_.begin(), exact_.end(),
                                   [&](const ExactGroup& g) { return g.path == route.path; });
            if (it == exact_.end()) it = exact_.insert(exact_.end(), ExactGroup{route.path, {}});
            it->routes.push_back(&route);
            break;
        }
        case MatchKind::Prefix:
        case MatchKind::PrefixNoRegex:
            prefixes_.push_back(&route);
            break;
        case MatchKind::Regex:
        case MatchKind::RegexCaseless: {
            Regex::CompileError error;
            auto regex = Regex::compile(route.path, route.kind == MatchKind::RegexCaseless, &error);
            if (!regex)
                throw std::invalid_argument("invalid regular expression '" + route.path + "' at offset " +
                                            std::to_string(error.offset) + ": " + error.message);
            regexes_.emplace_back(std::move(*regex), &route);
            break;
        }
        }
    }

    void addPattern(const Route& route) {
        PatternNode* node = &patterns_;
        PatternRoute entry{&route, {}};
        std::string_view rest = route.path;
        std::vector<std::string_view> segments;
        while (!rest.empty()) {
            auto slash = rest.find('/');
            auto segment = rest.substr(0, slash);
            // Empty segments (leading or trailing slash) carry no meaning: "/docs/" is "/docs".
            if (!segment.empty()) segments.push_back(segment);
            rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
        }
        for (std::size_t i = 0; i < segments.size(); ++i) {
            auto segment = segments[i];
            bool last = i + 1 == segments.size();
            if (segment == "*" && last) {
                entry.names.push_back("*");
                checkParamCount(route, entry.names.size());
                node->wildcard.push_back(std::move(entry));
                return;
            }
            if ((segment.size() > 1 && segment.front() == ':') || segment == "*") {
                // A "*" before the last segment cannot swallow the rest: it stands for one segment.
                entry.names.push_back(segment == "*" ? segment : segment.substr(1));
                if (!node->param) node->param = std::make_unique<PatternNode>();
                node = node->param.get();
            } else {
                node = &node->literalChild(segment);
            }
        }
        checkParamCount(route, entry.names.size());
        node->here.push_back(std::move(entry));
    }

    static void checkParamCount(const Route& route, std::size_t count) {
        if (count > kMaxParams)
            throw std::invalid_argument("route pattern has more than 16 parameters: " + route.path);
    }

    const config::Vhost& vhost_;
    std::vector<HostName> names_;
    std::vector<ExactGroup> exact_; ///< sorted by path
    PatternNode patterns_;
    std::vector<const Route*> prefixes_;                  ///< Prefix and PrefixNoRegex, longest first
    std::vector<std::pair<Regex, const Route*>> regexes_; ///< declaration order
};

Router::Router(const config::Config& config) : config_(config) {
    vhosts_.reserve(config.vhosts.size());
    for (const auto& vhost : config.vhosts)
        vhosts_.push_back(std::make_unique<CompiledVhost>(vhost));
}

Router::~Router() = default;

std::size_t Router::selectVhost(std::string_view host, std::uint16_t localPort) const {
    // One vhost (`portico serve DIR`, most dev configs): every step below would choose it, or none
    // and then the final fallback, which is it too.
    if (vhosts_.size() == 1) return 0;
    host = hostOnly(host);
    // Each step keeps the first candidate, except that a vhost bound to this port beats an unbound
    // one of the same rank: binding a vhost to a port is the more specific statement.
    std::size_t exact = kNone, wildcard = kNone, any = kNone, fallback = kNone, firstEligible = kNone;
    std::size_t wildcardScore = 0;
    auto better = [&](std::size_t current, std::size_t candidate) {
        return current == kNone || (vhosts_[candidate]->boundToPort() && !vhosts_[current]->boundToPort());
    };
    for (std::size_t i = 0; i < vhosts_.size(); ++i) {
        const CompiledVhost& v = *vhosts_[i];
        if (!v.eligible(localPort)) continue;
        if (firstEligible == kNone) firstEligible = i;
        if (!host.empty() && v.hasExactName(host) && better(exact, i)) exact = i;
        if (auto score = host.empty() ? 0 : v.wildcardScore(host); score > 0) {
            if (score > wildcardScore || (score == wildcardScore && better(wildcard, i))) {
                wildcard = i;
                wildcardScore = score;
            }
        }
        if (v.catchAll() && better(any, i)) any = i;
        if (v.vhost().isDefault && better(fallback, i)) fallback = i;
    }
    for (auto choice : {exact, wildcard, any, fallback, firstEligible})
        if (choice != kNone) return choice;
    return 0;
}

RouteResult Router::match(std::size_t vhostIndex, http::Method method, std::string_view path) const {
    assert(vhostIndex < vhosts_.size());
    if (vhostIndex >= vhosts_.size()) return {};
    return vhosts_[vhostIndex]->match(method, path);
}

} // namespace portico::routing

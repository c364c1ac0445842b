// Virtual-host selection and route matching over one config snapshot.
#pragma once

#include <portico/config/config.h>
#include <portico/config/pattern.h>
#include <portico/http/message.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace portico::routing {

/// A captured path parameter; views point into the path passed to `match`.
struct Param {
    std::string_view name; ///< "name" for ":name", "*" for a wildcard
    std::string_view value;
};

inline constexpr std::size_t kMaxParams = config::kMaxRouteParams;

/// Room for kMaxParams captures, indexed like an array. Not zeroed when made: a RouteResult is
/// made for every request, and zeroing these 512 bytes (and copying them out of the match) took
/// three quarters of the route match's time in an HTTP/2 profile. Only [0, paramCount) of the
/// RouteResult holding it is meaningful; the rest is indeterminate and must not be read.
class Params {
public:
    Params() {} // NOLINT(modernize-use-equals-default): `= default` would zero `items_` in `Params{}`
    Param& operator[](std::size_t i) { return items_[i]; }
    const Param& operator[](std::size_t i) const { return items_[i]; }

private:
    union {
        Param items_[kMaxParams];
    };
};

struct RouteResult {
    enum class Kind : std::uint8_t {
        Matched,          ///< `route` is set
        Fallback,         ///< no route; the vhost's static root should serve the path
        NotFound,         ///< 404
        MethodNotAllowed, ///< 405; `allow` holds the methods that would match
        Options,          ///< OPTIONS with no route handling it: answer 204 with `allow`
    };
    Kind kind = Kind::NotFound;
    const config::Route* route = nullptr;
    Params params; ///< [0, paramCount) are set
    std::size_t paramCount = 0;
    std::uint32_t allow = 0; ///< http::methodBit mask (HEAD included whenever GET is)

    /// Value of parameter `name`, or "" when absent.
    std::string_view param(std::string_view name) const {
        for (std::size_t i = 0; i < paramCount; ++i)
            if (params[i].name == name) return params[i].value;
        return {};
    }
};

class CompiledVhost;

/// The routing tables for one config snapshot. Immutable after construction; safe to share
/// between workers.
///
/// Vhost selection: the Host field (port stripped, case-insensitive, trailing dot ignored, IPv6
/// brackets removed so "[::1]:8080" meets a name "::1" or "[::1]") is matched against exact names
/// first, then `*.suffix` wildcards (longest suffix wins; "*.a.test" matches "x.a.test" and
/// "y.x.a.test" but not "a.test"; a bare "*" is the least specific wildcard), then vhosts with no
/// names (they match any Host). A vhost with `port` only matches requests that arrived on that
/// port, and beats a vhost without `port` of the same rank; otherwise the first declared wins.
/// No match → the vhost marked default, else the first vhost this port may use, else index 0.
///
/// Route precedence within a vhost (one total order, documented in docs/configuration.md):
///  1. `= /exact` routes (the whole path, case-sensitive; a trailing slash is significant).
///  2. Router patterns (`path:`): segment by segment a literal beats `:param` beats `*`, with
///     backtracking ("/users/me/posts" reaches "/users/:name/posts" when "/users/me" has no
///     "posts" child). `:name` takes one non-empty segment; a trailing `*` takes the rest of the
///     path, slashes included, possibly empty ("/files/*" matches "/files" and "/files/" with
///     "*" = ""), captured as "*". Between patterns of the same shape the first declared wins. A
///     trailing slash in the request or the pattern is ignored ("/users/ann/" → "/users/:name",
///     "/about/" → "/about").
///  3. nginx locations: the longest plain or `^~` prefix is remembered; if it is `^~`, it wins;
///     otherwise regex routes (`~`, `~*`: PCRE2 as in nginx, bytes not UTF, unanchored search) are
///     tried in declaration order and the first match wins; otherwise the remembered longest prefix
///     wins. Prefixes are case-sensitive string prefixes, as in nginx ("/coffee" matches
///     "/coffeebar"). Every regex search runs under PCRE2's match limit (100000) and depth limit
///     (1000; JIT code has a fixed 32 KiB stack instead): a regex that exceeds PCRE2's match or
///     depth limit is treated as not matching, so the next regex, then the longest prefix, decides.
///     No path can crash or hang a worker.
///  4. No route: Fallback if the vhost has a root, else NotFound.
/// A route whose `methods` exclude the request's method does not match (`methods` 0 = every
/// method); HEAD also matches routes that allow GET, but among routes of one pattern (or one
/// exact path) a route naming HEAD beats a GET route. If some route matched the path for other
/// methods only → MethodNotAllowed, or Options for an OPTIONS request, even when the vhost has a
/// root; `allow` then also holds OPTIONS, and HEAD whenever it holds GET.
///
/// Cost: `match` allocates nothing for Exact, Pattern and Prefix routes; regex routes are tried
/// only when steps 1-2 and a `^~` prefix did not decide, are compiled once (JIT when available),
/// and use per-thread PCRE2 match data, so only a worker's first regex search allocates.
class Router {
public:
    /// Compiles `config` (which must outlive the Router). Regexes were validated by the loader
    /// (with the same PCRE2 flags); an invalid one here, or a pattern with more than kMaxParams
    /// captures, throws std::invalid_argument (programmer errors).
    explicit Router(const config::Config& config);
    ~Router();
    Router(const Router&) = delete;
    Router& operator=(const Router&) = delete;

    /// Index into config.vhosts of the vhost for `host` (a Host field value, possibly with
    /// ":port") on a connection that arrived on `localPort`. Never fails when vhosts exist.
    std::size_t selectVhost(std::string_view host, std::uint16_t localPort) const;

    /// Matches decoded, normalised `path` (see http/path.h) for `method` in vhost `vhostIndex`
    /// (< config().vhosts.size(), asserted; NotFound otherwise). Param views point into `path`.
    RouteResult match(std::size_t vhostIndex, http::Method method, std::string_view path) const;

    const config::Config& config() const { return config_; }

private:
    const config::Config& config_;
    std::vector<std::unique_ptr<CompiledVhost>> vhosts_;
};

} // namespace portico::routing

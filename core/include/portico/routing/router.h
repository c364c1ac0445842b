// Virtual-host selection and route matching over one config snapshot.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

namespace portico::routing {

/// A captured path parameter; views point into the path passed to `match`.
struct Param {
    std::string_view name;   ///< "name" for ":name", "*" for a wildcard
    std::string_view value;
};

inline constexpr std::size_t kMaxParams = 16;

struct RouteResult {
    enum class Kind : std::uint8_t {
        Matched,           ///< `route` is set
        Fallback,          ///< no route; the vhost's static root should serve the path
        NotFound,          ///< 404
        MethodNotAllowed,  ///< 405; `allow` holds the methods that would match
        Options,           ///< OPTIONS with no route handling it: answer 204 with `allow`
    };
    Kind kind = Kind::NotFound;
    const config::Route* route = nullptr;
    std::array<Param, kMaxParams> params{};
    std::size_t paramCount = 0;
    std::uint32_t allow = 0;  ///< http::methodBit mask (HEAD included whenever GET is)

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
/// Vhost selection: the Host field (port stripped, case-insensitive, trailing dot ignored) is
/// matched against exact names first, then `*.suffix` wildcards (longest suffix wins; "*.a.test"
/// matches "x.a.test" and "y.x.a.test" but not "a.test"); a vhost with `port` only matches
/// requests that arrived on that port. No match → the vhost marked default, else the first.
///
/// Route precedence within a vhost (one total order, documented in docs/configuration.md):
///  1. `= /exact` routes.
///  2. Router patterns (`path:`): segment by segment a literal beats `:param` beats `*`; between
///     two wildcard patterns of the same specificity, the first declared wins. A trailing slash
///     in the request still reaches a pattern without one ("/users/ann/" → "/users/:name").
///  3. nginx locations: the longest plain or `^~` prefix is remembered; if it is `^~`, it wins;
///     otherwise regex routes (`~`, `~*`) are tried in declaration order and the first match wins;
///     otherwise the remembered longest prefix wins. Prefixes are string prefixes, as in nginx.
///  4. No route: Fallback if the vhost has a root, else NotFound.
/// A route whose `methods` exclude the request's method does not match; HEAD also matches routes
/// that allow GET. If some route matched the path for other methods only → MethodNotAllowed,
/// or Options for an OPTIONS request.
class Router {
public:
    /// Compiles `config` (which must outlive the Router). Regexes were validated by the loader;
    /// an invalid one here throws std::regex_error (programmer error).
    explicit Router(const config::Config& config);
    ~Router();
    Router(const Router&) = delete;
    Router& operator=(const Router&) = delete;

    /// Index into config.vhosts of the vhost for `host` (a Host field value, possibly with
    /// ":port") on a connection that arrived on `localPort`. Never fails when vhosts exist.
    std::size_t selectVhost(std::string_view host, std::uint16_t localPort) const;

    /// Matches decoded, normalised `path` for `method` in vhost `vhostIndex`.
    RouteResult match(std::size_t vhostIndex, http::Method method, std::string_view path) const;

    const config::Config& config() const { return config_; }

private:
    const config::Config& config_;
    std::vector<std::unique_ptr<CompiledVhost>> vhosts_;
};

}  // namespace portico::routing

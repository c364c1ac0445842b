// Fuzz target: the route-pattern compiler and matcher. The first line of the input is a route
// (`path:` or `location:` syntax, including `~`/`~*` PCRE2 regexes and `:param` patterns), the
// next lines are request paths. The route goes through the config loader (validation, regex
// compile) and the router; each path is normalised (http/path.h) and matched. Invariants: a
// refused route has a located error; parameter values point into the matched path.
#include "fuzz_support.h"

#include <portico/http/path.h>
#include <portico/routing/router.h>
#include <portico/validate/load.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto nl = input.find('\n');
    const std::string_view spec = input.substr(0, nl);
    const std::string_view rest = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    // A YAML double-quoted scalar written as JSON (a YAML subset); bytes that are not UTF-8 become U+FFFD.
    const std::string quoted =
        nlohmann::json(std::string(spec)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const char* key : {"path", "location"}) {
        const std::string yaml = std::string("listen: [127.0.0.1:0]\nvhosts:\n  - routes:\n      - ") + key +
                                 ": " + quoted + "\n        respond: {status: 204}\n";
        auto r = config::loadConfigText(yaml, "fuzz.yaml", "/nonexistent-portico-fuzz");
        if (!r.ok()) {
            PORTICO_FUZZ_CHECK(!r.errors.empty() && r.errors.front().where.line >= 1);
            continue;
        }
        routing::Router router(*r.config);
        std::string_view paths = rest;
        for (int n = 0; n < 16 && !paths.empty(); ++n) {
            const auto end = paths.find('\n');
            const std::string_view raw = paths.substr(0, end);
            paths = end == std::string_view::npos ? std::string_view() : paths.substr(end + 1);
            std::string path;
            if (http::normalizePath(raw, path) != http::PathError::None) continue;
            for (auto method : {http::Method::Get, http::Method::Post, http::Method::Options}) {
                const auto m = router.match(0, method, path);
                PORTICO_FUZZ_CHECK(m.paramCount <= routing::kMaxParams);
                for (std::size_t i = 0; i < m.paramCount; ++i) {
                    const auto v = m.params[i].value;
                    PORTICO_FUZZ_CHECK(v.empty() || (v.data() >= path.data() &&
                                                     v.data() + v.size() <= path.data() + path.size()));
                }
                if (m.kind == routing::RouteResult::Kind::Matched) PORTICO_FUZZ_CHECK(m.route != nullptr);
            }
        }
    }
    return 0;
}

// Router path patterns ("/users/:id", "/assets/*") as text: their parameters and whether they are
// well formed. Shared by the reader (group prefixes, {{param.NAME}} templates), validate (route
// patterns) and the router.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace portico::config {

/// Captures a pattern may have: parameters plus a trailing '*' (routing::Params has this room).
inline constexpr std::size_t kMaxRouteParams = 16;

/// The parameters of a pattern, in order, and whether it ends in '*'.
struct PatternShape {
    std::vector<std::string> params; ///< "id" for ":id"
    bool wildcard = false;
};

/// Checks `pattern` (after any group prefix is joined): it starts with '/', has no empty segment,
/// parameters are ":identifier" and distinct, '*' is only the whole last segment, at most
/// kMaxRouteParams captures. Returns "" and fills `shape`, or the error message (the text of
/// docs/configuration.md's errors, e.g. "a path pattern must start with '/', got 'x'").
std::string checkPattern(const std::string& pattern, PatternShape& shape);

} // namespace portico::config

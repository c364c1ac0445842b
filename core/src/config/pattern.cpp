// Router path patterns checked as text (see portico/config/pattern.h).
#include <portico/config/pattern.h>

#include <algorithm>
#include <string_view>

namespace portico::config {

namespace {

bool isIdentifier(std::string_view s) {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

} // namespace

std::string checkPattern(const std::string& pattern, PatternShape& shape) {
    if (!pattern.starts_with("/")) {
        std::string hint;
        for (std::string_view m : {"=", "^~", "~*", "~"})
            if (pattern.starts_with(m) && pattern.size() > m.size() && pattern[m.size()] != ' ') {
                hint = " (put a space after the modifier: '" + std::string(m) + " " +
                       pattern.substr(m.size()) + "')";
                break;
            }
        return "a path pattern must start with '/', got '" + pattern + "'" + hint;
    }
    std::size_t start = 1;
    while (true) {
        std::size_t slash = pattern.find('/', start);
        bool last = slash == std::string::npos;
        std::string seg = pattern.substr(start, last ? std::string::npos : slash - start);
        if (seg.empty() && !last)
            return "empty segment ('//') in '" + pattern + "'; request paths never contain one";
        if (seg.starts_with(":")) {
            std::string name = seg.substr(1);
            if (!isIdentifier(name))
                return "parameter ':" + name + "' in '" + pattern +
                       "' needs a name made of letters, digits and '_' (e.g. :id)";
            if (std::find(shape.params.begin(), shape.params.end(), name) != shape.params.end())
                return "parameter ':" + name + "' appears twice in '" + pattern + "'";
            shape.params.push_back(name);
        } else if (seg.find('*') != std::string::npos) {
            if (seg != "*" || !last)
                return "'*' is only allowed as the whole last segment (e.g. /assets/*), got '" + pattern +
                       "'";
            shape.wildcard = true;
        }
        if (shape.params.size() + (shape.wildcard ? 1 : 0) > kMaxRouteParams)
            return "'" + pattern + "' has more than " + std::to_string(kMaxRouteParams) + " parameters";
        if (last) break;
        start = slash + 1;
    }
    return {};
}

} // namespace portico::config

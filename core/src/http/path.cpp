// Request path decoding and dot-segment removal, so that routing and the file handler see one
// canonical path and can never be walked out of a root by an encoded "..".
#include <portico/http/ascii.h>
#include <portico/http/path.h>

namespace portico::http {

namespace {

// True when `raw` (which starts with '/') is already in normal form: nothing to decode ('%'), no
// NUL, and no segment that is empty or starts with '.' except an empty last one (a trailing
// slash). Most request paths are; normalizePath then copies them as they are.
bool alreadyNormal(std::string_view raw) {
    const char* p = raw.data();
    const char* const end = p + raw.size();
    for (; p != end; ++p) {
        const char c = *p;
        if (c == '%' || c == '\0') return false;
        if (c == '/' && p + 1 != end && (p[1] == '/' || p[1] == '.')) return false;
    }
    return true;
}

} // namespace

PathError normalizePath(std::string_view raw, std::string& out) {
    out.clear();
    if (raw.empty() || raw.front() != '/') return PathError::NotAbsolute;
    if (alreadyNormal(raw)) {
        out.assign(raw);
        return PathError::None;
    }

    // Pass 1: decode exactly once. After this every '/' in `out` was a literal '/' in `raw`,
    // because "%2F" is refused: decoding it would merge or split segments behind the router's back
    // (RFC 3986 §2.2). '+' is not special in a path and stays '+'.
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '%') {
            int hi = i + 2 < raw.size() ? hexValue(raw[i + 1]) : -1;
            int lo = hi >= 0 ? hexValue(raw[i + 2]) : -1;
            if (lo < 0) return PathError::BadEncoding;
            c = static_cast<char>(hi * 16 + lo);
            if (c == '/') return PathError::EncodedSlash;
            i += 2;
        }
        if (c == '\0') return PathError::Nul; // would truncate a name at the filesystem call
        out.push_back(c);
    }

    // Pass 2: remove_dot_segments (RFC 3986 §5.2.4) in place on the decoded path, so that "%2e%2e"
    // counts as "..". Writing never overtakes reading, since each output segment comes from an
    // input segment at or after it. Empty segments ("//") are dropped.
    std::size_t w = 0; // out[0, w) is the result so far, always "" or "/seg/seg"
    std::size_t r = 0;
    const std::size_t n = out.size();
    bool trailingSlash = false;
    while (r < n) {
        // out[r] == '/'; the segment runs to the next '/' or the end.
        std::size_t segStart = r + 1;
        std::size_t segEnd = out.find('/', segStart);
        if (segEnd == std::string::npos) segEnd = n;
        std::size_t len = segEnd - segStart;
        bool last = segEnd == n;
        if (len == 0) {
            trailingSlash = last; // "/a/" keeps its slash; "//" in the middle collapses
        } else if (len == 1 && out[segStart] == '.') {
            trailingSlash = last; // "/a/." names the directory "/a/"
        } else if (len == 2 && out[segStart] == '.' && out[segStart + 1] == '.') {
            if (w == 0) return PathError::AboveRoot;
            w = out.rfind('/', w - 1); // drop the previous output segment
            trailingSlash = last;
        } else {
            out[w++] = '/';
            // memmove semantics: w <= segStart, so a forward copy is safe.
            for (std::size_t k = segStart; k < segEnd; ++k)
                out[w++] = out[k];
            trailingSlash = false;
        }
        r = segEnd;
    }
    if (w == 0 || trailingSlash) out[w++] = '/';
    out.resize(w);
    return PathError::None;
}

} // namespace portico::http

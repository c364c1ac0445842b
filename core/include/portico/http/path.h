// Request-target path decoding and normalisation (RFC 3986 §5.2.4, §2.1), used before routing.
#pragma once

#include <string>
#include <string_view>

namespace portico::http {

/// Outcome of `normalizePath`.
enum class PathError {
    None,
    BadEncoding,  ///< '%' not followed by two hex digits → 400
    Nul,          ///< decodes to a NUL byte → 400
    EncodedSlash, ///< "%2F" / "%2f" (would change segment boundaries) → 400
    NotAbsolute,  ///< does not start with '/' → 400
    AboveRoot,    ///< ".." would climb above "/" → 400
};

/// Percent-decodes `raw` exactly once into `out` and removes dot segments ("/./", "/../") as
/// RFC 3986 §5.2.4 does, also for dot segments that were percent-encoded ("%2e%2e"). Repeated
/// slashes are collapsed into one. A trailing slash is kept. `out` is cleared first and reuses its
/// capacity. Returns PathError::None on success; on error `out` is unspecified.
PathError normalizePath(std::string_view raw, std::string& out);

} // namespace portico::http

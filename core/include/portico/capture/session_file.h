// Reading a recorded session from disk, whatever its format: a SQLite session file written by
// `portico serve --record` (capture/store.h) or a HAR 1.2 file (capture/har.h).
#pragma once

#include <portico/capture/exchange.h>

#include <string>
#include <vector>

namespace portico::capture {

/// Loads every exchange of `path`, oldest first. The format is told by content: a file starting
/// with "SQLite format 3\0" is opened as a session file, one starting with '{' (after a BOM and
/// white space) or named *.har / *.json is parsed as HAR; anything else is refused as "corrupt or
/// not a session file". On failure returns an empty vector and sets `error` to one line naming the
/// file and, for HAR, the position ("in.har:1:42: expected ',' or '}'"); `error` stays empty on
/// success (an empty session is not an error).
std::vector<Exchange> loadSessionFile(const std::string& path, std::string& error);

} // namespace portico::capture

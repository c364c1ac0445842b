// Content types for static files by file extension, and which types are worth compressing.
#pragma once

#include <string_view>

namespace portico::handlers {

/// What Portico knows about a file's media type.
struct MimeInfo {
    std::string_view type;     ///< full Content-Type value, e.g. "text/javascript; charset=utf-8"
    bool compressible = false; ///< worth gzip/Brotli (text, JS, JSON, SVG, Wasm, XML, manifests, raw fonts)
    bool known = false;        ///< false → "application/octet-stream"; send X-Content-Type-Options: nosniff
};

/// Media type for `fileName` by its last extension, compared case-insensitively. Text types carry
/// "; charset=utf-8". `.js`/`.mjs`/`.cjs` give "text/javascript" (RFC 9239), `.wasm`
/// "application/wasm", `.webmanifest` "application/manifest+json". Unknown or missing extensions
/// give {"application/octet-stream", false, false}. Never allocates.
MimeInfo mimeFor(std::string_view fileName);

/// True for Content-Type values worth compressing: text/*, JavaScript, JSON and *+json, XML and
/// *+xml, image/svg+xml, application/wasm. Parameters (";charset=…") are ignored.
bool isCompressibleType(std::string_view contentType);

} // namespace portico::handlers

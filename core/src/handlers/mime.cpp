// The built-in extension → media type table used by the static file handler.
#include <portico/handlers/mime.h>
#include <portico/http/ascii.h>

#include <cstddef>

namespace portico::handlers {
namespace {

struct Entry {
    std::string_view ext;
    std::string_view type;
};

// Text types carry an explicit charset so browsers do not guess (dev sites are UTF-8).
constexpr Entry kTable[] = {
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"xhtml", "application/xhtml+xml"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"cjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"jsonld", "application/ld+json"},
    {"webmanifest", "application/manifest+json"},
    {"wasm", "application/wasm"},
    {"txt", "text/plain; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"vtt", "text/vtt; charset=utf-8"},
    {"ics", "text/calendar; charset=utf-8"},
    {"yaml", "text/yaml; charset=utf-8"},
    {"yml", "text/yaml; charset=utf-8"},
    {"xml", "application/xml"},
    {"rss", "application/rss+xml"},
    {"atom", "application/atom+xml"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/x-icon"},
    {"bmp", "image/bmp"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
    {"eot", "application/vnd.ms-fontobject"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"ogv", "video/ogg"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"oga", "audio/ogg"},
    {"wav", "audio/wav"},
    {"m4a", "audio/mp4"},
    {"flac", "audio/flac"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tar", "application/x-tar"},
};

constexpr std::string_view kOctetStream = "application/octet-stream";

using http::istartsWith;
constexpr auto iequal = [](std::string_view a, std::string_view b) { return http::iequals(a, b); };

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && iequal(s.substr(s.size() - suffix.size()), suffix);
}

} // namespace

MimeInfo mimeFor(std::string_view fileName) {
    std::size_t slash = fileName.find_last_of('/');
    std::string_view base = slash == std::string_view::npos ? fileName : fileName.substr(slash + 1);
    std::size_t dot = base.find_last_of('.');
    // "Makefile" and ".env" have no extension in the sense that matters here.
    if (dot == std::string_view::npos || dot == 0) return {kOctetStream, false, false};
    std::string_view ext = base.substr(dot + 1);
    for (const auto& e : kTable)
        if (iequal(e.ext, ext)) return {e.type, isCompressibleType(e.type), true};
    return {kOctetStream, false, false};
}

bool isCompressibleType(std::string_view contentType) {
    std::string_view t = contentType.substr(0, contentType.find(';'));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
        t.remove_suffix(1);
    if (istartsWith(t, "text/")) return true;
    if (endsWith(t, "+json") || endsWith(t, "+xml")) return true;
    return iequal(t, "application/javascript") || iequal(t, "application/json") ||
           iequal(t, "application/xml") || iequal(t, "application/wasm") || iequal(t, "font/ttf") ||
           iequal(t, "font/otf") || iequal(t, "image/x-icon") || iequal(t, "image/bmp");
}

} // namespace portico::handlers

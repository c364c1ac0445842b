// JSON text written by hand where a document is built on the hot path or streamed (the access log,
// load results, history, the live-reload file list): string literals per RFC 8259 §7. Documents
// that are read, or written once, use nlohmann_json instead.
#pragma once

#include <string>
#include <string_view>

namespace portico::http {

/// What happens to bytes ≥ 0x7F.
enum class JsonBytes {
    Utf8,  ///< passed through: the text is UTF-8 (config values, URLs we built, names)
    Ascii, ///< escaped as \u00XX (DEL as \u007f): bytes from the wire, which need not be UTF-8
};

/// Appends `s` as a JSON string literal: quotes; `"` `\` as \" \\; \n \r \t; other controls as
/// \u00XX.
void appendJsonString(std::string& out, std::string_view s, JsonBytes bytes = JsonBytes::Utf8);

/// `s` as a JSON string literal (quotes included).
inline std::string jsonString(std::string_view s, JsonBytes bytes = JsonBytes::Utf8) {
    std::string out;
    appendJsonString(out, s, bytes);
    return out;
}

} // namespace portico::http

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

/// The backslash escapes that JSON, C (protoc's text format), Python and JavaScript string literals
/// share: `\n` `\r` `\t`, and a backslash before `\` and before each byte in `quotes` (the
/// literal's quote characters, e.g. "\"" for JSON). Returns false, appending nothing, for any other
/// byte; the caller writes it (as itself or in its language's numeric escape).
inline bool appendBackslashEscape(std::string& out, unsigned char c, std::string_view quotes) {
    switch (c) {
    case '\n':
        out += "\\n";
        return true;
    case '\r':
        out += "\\r";
        return true;
    case '\t':
        out += "\\t";
        return true;
    case '\\':
        out += "\\\\";
        return true;
    default:
        if (quotes.find(static_cast<char>(c)) == std::string_view::npos) return false;
        out += '\\';
        out += static_cast<char>(c);
        return true;
    }
}

/// `s` as a JSON string literal (quotes included).
inline std::string jsonString(std::string_view s, JsonBytes bytes = JsonBytes::Utf8) {
    std::string out;
    appendJsonString(out, s, bytes);
    return out;
}

} // namespace portico::http

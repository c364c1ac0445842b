// Pretty-printing JSON as it was sent: the text itself re-indented, every token kept as written.
//
// Why not a JSON library: QJsonDocument sorts keys, drops duplicate keys and turns numbers into
// doubles (12345678901234567890 → 12345678901234567000, 1.10 → 1.1); nlohmann::ordered_json keeps
// key order but still merges duplicate keys and re-prints numbers from their parsed value. A viewer
// must show what was on the wire, so this is a small tokenizer over the bytes: it checks the RFC 8259
// grammar and copies each token (strings with their escapes, number literals, literals) unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::ui {

struct JsonPretty {
    bool ok = false;
    std::string text;       ///< when ok: the value re-indented (2 spaces a level), no final newline
    std::size_t offset = 0; ///< when not ok: the byte (from 0) where the text stops being JSON
    std::string error;      ///< when not ok: why, e.g. "expected ',' or ']', found '}'"
    bool truncated = false; ///< when not ok: the text ended where JSON needed more (a prefix of JSON)
    bool tooLarge = false;  ///< when not ok: valid so far, but the indented text would exceed the bound
};

/// Bound on the indented text (deep nesting multiplies the indentation): 32 MiB.
inline constexpr std::size_t kJsonPrettyMaxOutput = std::size_t(32) << 20;

/// `text` re-indented when it is one JSON value (RFC 8259: any value at the top, UTF-8, white space
/// around it), with key order, duplicate keys, number literals and string escapes as written; empty
/// objects and arrays print as {} and []. Otherwise not ok, with where and why. Linear in the input;
/// gives up (tooLarge) once the output would pass `maxOutput` bytes.
JsonPretty prettyPrintJson(std::string_view text, std::size_t maxOutput = kJsonPrettyMaxOutput);

/// Whether `text` is one JSON value (the same check, without building the output).
bool isJson(std::string_view text);

} // namespace portico::ui

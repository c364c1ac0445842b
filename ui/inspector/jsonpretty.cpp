// The JSON tokenizer and re-indenter: one pass, an explicit stack (no recursion, so no depth limit
// beyond the output bound), tokens copied from the input.
#include "jsonpretty.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace portico::ui {

namespace {

constexpr int kIndent = 2;

bool isDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool isHex(unsigned char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Printer {
public:
    Printer(std::string_view in, std::string* out, std::size_t maxOutput)
        : m_in(in), m_out(out), m_max(maxOutput) {}

    JsonPretty run() {
        enum class Want { Value, Key, Colon, CommaOrClose, End };
        Want want = Want::Value;
        const auto afterValue = [&] { return m_stack.empty() ? Want::End : Want::CommaOrClose; };
        for (;;) {
            skipSpace();
            if (m_pos == m_in.size()) {
                if (want == Want::End) break;
                fail(want == Want::Value && m_stack.empty() ? "the text has no JSON value"
                     : want == Want::Value                  ? "expected a value"
                     : want == Want::Key                    ? "expected a key (a string)"
                     : want == Want::Colon                  ? "expected ':'"
                     : m_stack.back() == '{'                ? "expected ',' or '}'"
                                                            : "expected ',' or ']'");
                break;
            }
            const unsigned char c = static_cast<unsigned char>(m_in[m_pos]);
            switch (want) {
            case Want::Value:
                if (c == '{' || c == '[') {
                    const char close = c == '{' ? '}' : ']';
                    ++m_pos;
                    skipSpace();
                    if (m_pos < m_in.size() && m_in[m_pos] == close) { // {} or [], white space dropped
                        ++m_pos;
                        put(c == '{' ? std::string_view("{}") : std::string_view("[]"));
                        want = afterValue();
                        break;
                    }
                    m_stack.push_back(char(c));
                    putChar(char(c));
                    newline();
                    want = c == '{' ? Want::Key : Want::Value;
                } else if (c == '"') {
                    if (!string()) break;
                    want = afterValue();
                } else if (c == '-' || isDigit(c)) {
                    if (!number()) break;
                    want = afterValue();
                } else if (c == 't' || c == 'f' || c == 'n') {
                    if (!literal(c == 't' ? "true" : c == 'f' ? "false" : "null")) break;
                    want = afterValue();
                } else {
                    failFound("expected a value");
                }
                break;
            case Want::Key:
                if (c != '"') {
                    failFound("expected a key (a string)");
                    break;
                }
                if (!string()) break;
                want = Want::Colon;
                break;
            case Want::Colon:
                if (c != ':') {
                    failFound("expected ':'");
                    break;
                }
                ++m_pos;
                put(": ");
                want = Want::Value;
                break;
            case Want::CommaOrClose: {
                const bool object = m_stack.back() == '{';
                if (c == ',') {
                    ++m_pos;
                    putChar(',');
                    newline();
                    want = object ? Want::Key : Want::Value;
                } else if (c == (object ? '}' : ']')) {
                    ++m_pos;
                    m_stack.pop_back();
                    newline();
                    putChar(char(c));
                    want = afterValue();
                } else {
                    failFound(object ? "expected ',' or '}'" : "expected ',' or ']'");
                }
                break;
            }
            case Want::End:
                failFound("expected the end of the text after the value");
                break;
            }
            if (m_failed) break;
        }
        JsonPretty result;
        result.ok = !m_failed;
        if (m_failed) {
            result.offset = m_errorAt;
            result.error = std::move(m_error);
            result.truncated = !m_tooLarge && m_errorAt == m_in.size();
            result.tooLarge = m_tooLarge;
        }
        return result;
    }

private:
    void skipSpace() {
        while (m_pos < m_in.size() && isSpace(static_cast<unsigned char>(m_in[m_pos])))
            ++m_pos;
    }

    void fail(std::string why, std::size_t at) {
        if (m_failed) return;
        m_failed = true;
        m_errorAt = at;
        m_error = std::move(why);
    }
    void fail(std::string why) { fail(std::move(why), m_pos); }
    /// `why`, found <what is at `at`>.
    void failFound(std::string why, std::size_t at) {
        if (at >= m_in.size()) {
            fail(why + ", the text ends", at);
            return;
        }
        const unsigned char c = static_cast<unsigned char>(m_in[at]);
        char found[16];
        if (c >= 0x20 && c < 0x7f)
            std::snprintf(found, sizeof found, "'%c'", c);
        else
            std::snprintf(found, sizeof found, "byte 0x%02x", unsigned(c));
        fail(why + ", found " + found, at);
    }
    void failFound(std::string why) { failFound(std::move(why), m_pos); }

    void put(std::string_view token) {
        if (!m_out) return;
        m_out->append(token);
        checkBound();
    }
    void putChar(char c) { put(std::string_view(&c, 1)); }
    void newline() {
        if (!m_out) return;
        m_out->push_back('\n');
        m_out->append(m_stack.size() * kIndent, ' ');
        checkBound();
    }
    void checkBound() {
        if (m_out->size() <= m_max || m_failed) return;
        m_tooLarge = true;
        fail("indented it would exceed " + std::to_string(m_max >> 20) + " MiB", m_pos);
    }

    /// A string token from the '"' at m_pos: escapes checked, no control characters, UTF-8.
    bool string() {
        const std::size_t start = m_pos;
        std::size_t i = m_pos + 1;
        const std::size_t n = m_in.size();
        for (;;) {
            if (i >= n) {
                fail("the text ends inside a string", n);
                return false;
            }
            const unsigned char c = static_cast<unsigned char>(m_in[i]);
            if (c == '"') break;
            if (c == '\\') {
                if (i + 1 >= n) {
                    fail("the text ends inside a string", n);
                    return false;
                }
                const char e = m_in[i + 1];
                if (e == 'u') {
                    for (std::size_t k = i + 2; k < i + 6; ++k) {
                        if (k >= n) {
                            fail("the text ends inside a string", n);
                            return false;
                        }
                        if (!isHex(static_cast<unsigned char>(m_in[k]))) {
                            failFound("\\u needs 4 hex digits", k);
                            return false;
                        }
                    }
                    i += 6;
                } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                           e == 'r' || e == 't') {
                    i += 2;
                } else {
                    failFound("invalid escape in a string", i + 1);
                    return false;
                }
            } else if (c < 0x20) {
                char why[64];
                std::snprintf(why, sizeof why, "control character U+%04X in a string (must be escaped)",
                              unsigned(c));
                fail(why, i);
                return false;
            } else if (c < 0x80) {
                ++i;
            } else {
                const std::size_t len = utf8Length(i);
                if (len == 0) return false;
                i += len;
            }
        }
        m_pos = i + 1;
        put(m_in.substr(start, m_pos - start));
        return true;
    }

    /// The length of the well-formed UTF-8 sequence at `i` (Unicode table 3-7), or 0 after fail().
    std::size_t utf8Length(std::size_t i) {
        const auto at = [&](std::size_t k) {
            return k < m_in.size() ? static_cast<unsigned char>(m_in[k]) : 0x100u;
        };
        const unsigned c = at(i);
        std::size_t len = 0;
        unsigned lo = 0x80, hi = 0xbf; // range of the second byte
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
        }
        if (len == 0) {
            fail("invalid UTF-8 in a string", i);
            return 0;
        }
        for (std::size_t k = 1; k < len; ++k) {
            const unsigned b = at(i + k);
            if (b == 0x100u) {
                fail("the text ends inside a string", m_in.size());
                return 0;
            }
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) {
                fail("invalid UTF-8 in a string", i);
                return 0;
            }
        }
        return len;
    }

    /// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?, copied as written.
    bool number() {
        const std::size_t start = m_pos;
        std::size_t i = m_pos;
        const std::size_t n = m_in.size();
        const auto digit = [&](std::size_t k) {
            return k < n && isDigit(static_cast<unsigned char>(m_in[k]));
        };
        if (m_in[i] == '-') ++i;
        if (i < n && m_in[i] == '0') {
            ++i;
        } else if (digit(i)) {
            while (digit(i))
                ++i;
        } else {
            failFound("expected a digit in a number", i);
            return false;
        }
        if (i < n && m_in[i] == '.') {
            ++i;
            if (!digit(i)) {
                failFound("expected a digit after '.' in a number", i);
                return false;
            }
            while (digit(i))
                ++i;
        }
        if (i < n && (m_in[i] == 'e' || m_in[i] == 'E')) {
            ++i;
            if (i < n && (m_in[i] == '+' || m_in[i] == '-')) ++i;
            if (!digit(i)) {
                failFound("expected a digit in a number's exponent", i);
                return false;
            }
            while (digit(i))
                ++i;
        }
        m_pos = i;
        put(m_in.substr(start, i - start));
        return true;
    }

    bool literal(std::string_view word) {
        for (std::size_t k = 0; k < word.size(); ++k) {
            if (m_pos + k >= m_in.size() || m_in[m_pos + k] != word[k]) {
                failFound("expected " + std::string(word), m_pos + k);
                return false;
            }
        }
        m_pos += word.size();
        put(word);
        return true;
    }

    std::string_view m_in;
    std::string* m_out;
    std::size_t m_max;
    std::size_t m_pos = 0;
    std::vector<char> m_stack; // '{' and '[' still open
    bool m_failed = false;
    bool m_tooLarge = false;
    std::size_t m_errorAt = 0;
    std::string m_error;
};

} // namespace

JsonPretty prettyPrintJson(std::string_view text, std::size_t maxOutput) {
    std::string out;
    out.reserve(std::min(maxOutput, text.size() + text.size() / 2 + 16));
    JsonPretty result = Printer(text, &out, maxOutput).run();
    if (result.ok) result.text = std::move(out);
    return result;
}

bool isJson(std::string_view text) { return Printer(text, nullptr, 0).run().ok; }

} // namespace portico::ui

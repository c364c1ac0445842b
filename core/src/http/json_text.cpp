// appendJsonString: the one JSON string escaper.
#include <portico/http/json_text.h>

namespace portico::http {

void appendJsonString(std::string& out, std::string_view s, JsonBytes bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (unsigned char c : s) {
        if (appendBackslashEscape(out, c, "\"")) continue;
        if (c < 0x20 || (c >= 0x7f && bytes == JsonBytes::Ascii)) {
            const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
            out.append(esc, sizeof esc);
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

} // namespace portico::http

// Small allocation-free helpers the handlers share: HTTP dates, entity-tag lists, path buffers.
#pragma once

#include <portico/http/message.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace portico::handlers {

/// Writes `secondsSinceEpoch` as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 §5.6.7)
/// into `out` (at least 29 bytes) and returns the view.
std::string_view formatHttpDate(std::int64_t secondsSinceEpoch, char* out);

/// Parses an HTTP-date (IMF-fixdate, obsolete RFC 850 and asctime forms, RFC 9110 §5.6.7) into
/// seconds since the epoch; nullopt if it is none of them.
std::optional<std::int64_t> parseHttpDate(std::string_view text);

/// True if the comma-separated entity-tag list `list` (If-Match / If-None-Match, RFC 9110 §8.8.3)
/// matches `etag`: "*" matches anything; `weak` selects weak comparison (W/ prefixes ignored)
/// instead of strong comparison (weak tags never match) as §8.8.3.2 defines.
bool etagListMatches(std::string_view list, std::string_view etag, bool weak);

/// Appends `text` with &, <, >, " and ' escaped, for HTML bodies (listings, redirect pages).
void appendHtmlEscaped(std::string& out, std::string_view text);

/// Trims spaces and tabs (OWS) from both ends.
std::string_view trimOws(std::string_view s);

/// Fixed-capacity, NUL-terminated path builder on the stack: file names are built per request
/// without touching the heap. Appends fail (and poison the buffer) beyond kCapacity bytes.
class PathBuf {
public:
    static constexpr std::size_t kCapacity = 4096;
    bool append(std::string_view s) {
        if (!ok_ || len_ + s.size() >= kCapacity) return ok_ = false;
        std::memcpy(data_ + len_, s.data(), s.size());
        len_ += s.size();
        data_[len_] = '\0';
        return true;
    }
    bool push(char c) { return append(std::string_view(&c, 1)); }
    /// Keeps the first `n` bytes; also clears a failed append made after them.
    void truncate(std::size_t n) {
        if (n <= len_) {
            len_ = n;
            ok_ = true;
        }
        data_[len_] = '\0';
    }
    void clear() {
        len_ = 0;
        ok_ = true;
        data_[0] = '\0';
    }
    bool ok() const { return ok_; }
    std::size_t size() const { return len_; }
    const char* c_str() const { return data_; }
    std::string_view view() const { return {data_, len_}; }

private:
    char data_[kCapacity] = {};
    std::size_t len_ = 0;
    bool ok_ = true;
};

} // namespace portico::handlers

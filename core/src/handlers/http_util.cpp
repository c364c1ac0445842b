// HTTP-date formatting/parsing and entity-tag comparison for conditional requests (RFC 9110 §13).
#include "handlers/http_util.h"

#include <ctime>

namespace portico::handlers {
namespace {

constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void put2(char* p, int v) {
    p[0] = static_cast<char>('0' + v / 10 % 10);
    p[1] = static_cast<char>('0' + v % 10);
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        char c = s[pos + i];
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

int monthIndex(std::string_view s) {
    for (int i = 0; i < 12; ++i)
        if (s == kMonths[i]) return i;
    return -1;
}

bool parseTime(std::string_view s, std::size_t pos, int& h, int& m, int& sec) {
    return pos + 8 <= s.size() && digits(s, pos, 2, h) && s[pos + 2] == ':' && digits(s, pos + 3, 2, m) &&
           s[pos + 5] == ':' && digits(s, pos + 6, 2, sec) && h < 24 && m < 60 && sec < 61;
}

std::optional<std::int64_t> toEpoch(int year, int mon, int day, int h, int m, int s) {
    if (day < 1 || day > 31 || mon < 0) return std::nullopt;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = mon;
    tm.tm_mday = day;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    return static_cast<std::int64_t>(::timegm(&tm));
}

} // namespace

std::string_view formatHttpDate(std::int64_t secondsSinceEpoch, char* out) {
    std::time_t t = static_cast<std::time_t>(secondsSinceEpoch);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    std::memcpy(out, kDays[tm.tm_wday], 3);
    out[3] = ',';
    out[4] = ' ';
    put2(out + 5, tm.tm_mday);
    out[7] = ' ';
    std::memcpy(out + 8, kMonths[tm.tm_mon], 3);
    out[11] = ' ';
    int year = tm.tm_year + 1900;
    put2(out + 12, year / 100);
    put2(out + 14, year % 100);
    out[16] = ' ';
    put2(out + 17, tm.tm_hour);
    out[19] = ':';
    put2(out + 20, tm.tm_min);
    out[22] = ':';
    put2(out + 23, tm.tm_sec);
    std::memcpy(out + 25, " GMT", 4);
    return {out, 29};
}

std::optional<std::int64_t> parseHttpDate(std::string_view s) {
    s = trimOws(s);
    int day = 0, year = 0, h = 0, m = 0, sec = 0;
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    if (s.size() == 29 && s[3] == ',' && s[4] == ' ' && s.substr(25) == " GMT") {
        if (!digits(s, 5, 2, day) || s[7] != ' ' || s[11] != ' ' || !digits(s, 12, 4, year) || s[16] != ' ' ||
            !parseTime(s, 17, h, m, sec))
            return std::nullopt;
        return toEpoch(year, monthIndex(s.substr(8, 3)), day, h, m, sec);
    }
    // asctime: "Sun Nov  6 08:49:37 1994"
    if (s.size() == 24 && s[3] == ' ' && s[7] == ' ') {
        std::string_view d = s.substr(8, 2);
        if (d[0] == ' ') d.remove_prefix(1);
        if (!digits(d, 0, d.size(), day) || s[10] != ' ' || !parseTime(s, 11, h, m, sec) || s[19] != ' ' ||
            !digits(s, 20, 4, year))
            return std::nullopt;
        return toEpoch(year, monthIndex(s.substr(4, 3)), day, h, m, sec);
    }
    // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit year: 50 years rule, RFC 9110 §5.6.7)
    std::size_t comma = s.find(", ");
    if (comma != std::string_view::npos && s.size() == comma + 24 && s.substr(s.size() - 4) == " GMT") {
        std::size_t p = comma + 2;
        if (!digits(s, p, 2, day) || s[p + 2] != '-' || s[p + 6] != '-' || !digits(s, p + 7, 2, year) ||
            s[p + 9] != ' ' || !parseTime(s, p + 10, h, m, sec))
            return std::nullopt;
        year += year < 70 ? 2000 : 1900;
        return toEpoch(year, monthIndex(s.substr(p + 3, 3)), day, h, m, sec);
    }
    return std::nullopt;
}

void appendHtmlEscaped(std::string& out, std::string_view text) {
    for (char ch : text) {
        switch (ch) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += ch;
        }
    }
}

std::string_view trimOws(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

bool etagListMatches(std::string_view list, std::string_view etag, bool weak) {
    std::string_view want = etag;
    bool wantWeak = false;
    if (want.starts_with("W/")) {
        want.remove_prefix(2);
        wantWeak = true;
    }
    if (!weak && wantWeak) return false;
    // Opaque tags may contain commas, so walk quoted strings instead of splitting on ','.
    std::size_t i = 0;
    while (i < list.size()) {
        char c = list[i];
        if (c == ' ' || c == '\t' || c == ',') {
            ++i;
            continue;
        }
        if (c == '*') return true;
        bool itemWeak = false;
        if (list.substr(i, 2) == "W/") {
            itemWeak = true;
            i += 2;
        }
        if (i >= list.size() || list[i] != '"') return false; // malformed: nothing after it counts
        std::size_t close = list.find('"', i + 1);
        if (close == std::string_view::npos) return false;
        std::string_view item = list.substr(i, close + 1 - i);
        i = close + 1;
        if (!weak && itemWeak) continue;
        if (item == want) return true;
    }
    return false;
}

} // namespace portico::handlers

// Zero-copy HTTP/1.1 request-head parser and incremental chunked decoder (RFC 9112), hot path: no
// allocation, no regex, one pass with memchr over each line.
#include <portico/http1/parser.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace portico::http1 {
namespace {

using http::iequals;

// Byte classes, one table lookup per byte instead of chains of comparisons.
enum : std::uint8_t {
    kTchar = 1,      // RFC 9110 §5.6.2 token
    kFieldValue = 2, // field-vchar / SP / HTAB (RFC 9110 §5.5)
    kTarget = 4,     // request-target byte we accept (no CTL, SP, '#'; obs-text tolerated)
    kHost = 8,       // reg-name / IP-literal / port bytes (RFC 3986 §3.2.2), no '@'
    kQdtext = 16,    // RFC 9110 §5.6.4 qdtext
};

constexpr std::array<std::uint8_t, 256> makeClasses() {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 256; ++c) {
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool digit = c >= '0' && c <= '9';
        std::uint8_t v = 0;
        if (http::isTchar(static_cast<char>(c))) v |= kTchar;
        if (c == '\t' || (c >= 0x20 && c != 0x7f)) v |= kFieldValue;
        if (c > 0x20 && c != 0x7f && c != '#') v |= kTarget;
        if (alpha || digit ||
            std::string_view("-._~%!$&'()*+,;=:[]").find(static_cast<char>(c)) != std::string_view::npos)
            v |= kHost;
        if (c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) ||
            c >= 0x80)
            v |= kQdtext;
        t[static_cast<std::size_t>(c)] = v;
    }
    return t;
}
constexpr auto kClass = makeClasses();

inline bool is(char c, std::uint8_t cls) { return (kClass[static_cast<unsigned char>(c)] & cls) != 0; }
inline bool isWs(char c) { return c == ' ' || c == '\t'; }

inline int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string_view trimOws(std::string_view s) {
    while (!s.empty() && isWs(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && isWs(s.back()))
        s.remove_suffix(1);
    return s;
}

// Calls f(element) for each comma-separated list element with OWS trimmed (RFC 9110 §5.6.1),
// empty elements included so that callers can decide whether they are tolerable.
template <typename F> bool forEachElement(std::string_view list, F&& f) {
    for (;;) {
        std::size_t comma = list.find(',');
        if (!f(trimOws(list.substr(0, comma)))) return false;
        if (comma == std::string_view::npos) return true;
        list.remove_prefix(comma + 1);
    }
}

// Word-at-a-time check that no byte of [p, p+8) is below `lo` or equal to `eq1` / `eq2`; may report
// false positives (the caller then checks that word byte by byte), never false negatives.
inline bool wordMaybeBad(const char* p, std::uint8_t lo, std::uint8_t eq1, std::uint8_t eq2) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull;
    constexpr std::uint64_t kHighs = 0x8080808080808080ull;
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    auto hasZero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
    std::uint64_t below = (x - kOnes * lo) & ~x & kHighs;
    return (below | hasZero(x ^ (kOnes * eq1)) | hasZero(x ^ (kOnes * eq2))) != 0;
}

// True if every byte of `s` is in `cls`, where `cls` rejects only bytes below `lo`, `eq1` and `eq2`
// (the table may let some of those back in, like HTAB in field values). Field values are the bulk
// of a head, so this is the parser's hot loop: 8 bytes per step, the exact table only on suspicion.
bool allOfFast(std::string_view s, std::uint8_t cls, std::uint8_t lo, std::uint8_t eq1, std::uint8_t eq2) {
    const char* p = s.data();
    const std::size_t n = s.size();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (!wordMaybeBad(p + i, lo, eq1, eq2)) continue;
        for (std::size_t k = i; k < i + 8; ++k)
            if (!is(p[k], cls)) return false;
    }
    for (; i < n; ++i)
        if (!is(p[i], cls)) return false;
    return true;
}

bool allOf(std::string_view s, std::uint8_t cls) {
    for (char c : s)
        if (!is(c, cls)) return false;
    return true;
}

// Parses one field line (without its line end): `name ":" OWS value OWS`. Returns a reason on error.
// A leading SP/HTAB is obs-fold (or whitespace before the first field), which RFC 9112 §5.2 lets us
// reject; whitespace before the colon must be rejected (§5.1) because another hop might strip it.
const char* parseFieldLine(std::string_view line, http::Header& out) {
    if (isWs(line.front())) return "obs-fold or whitespace-led field line";
    std::size_t i = 0;
    while (i < line.size() && is(line[i], kTchar))
        ++i;
    if (i == line.size() || line[i] != ':') return "invalid field name";
    if (i == 0) return "empty field name";
    std::string_view value = trimOws(line.substr(i + 1));
    if (!allOfFast(value, kFieldValue, 0x20, 0x7f, 0x7f)) return "invalid character in field value";
    out = {line.substr(0, i), value};
    return nullptr;
}

bool parseDigits(std::string_view s, std::uint64_t& v) {
    if (s.empty()) return false;
    v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
        v = v * 10 + d;
    }
    return true;
}

// Host field value or absolute-form authority: host [":" port], no userinfo (RFC 9110 §4.2.4, §7.2).
bool validAuthority(std::string_view a) { return http::validAuthority(a); }

ParseStatus fail(ParseError& error, int status, const char* reason) {
    error.status = status;
    error.reason = reason;
    return ParseStatus::Error;
}

// Splits an origin-form or absolute-form path part into rawPath and query.
void splitQuery(std::string_view pathAndQuery, RequestHead& head) {
    std::size_t q = pathAndQuery.find('?');
    head.rawPath = pathAndQuery.substr(0, q);
    head.query = q == std::string_view::npos ? std::string_view{} : pathAndQuery.substr(q + 1);
}

// Classifies the request-target (RFC 9112 §3.2). Returns a reason on error.
const char* parseTarget(RequestHead& head) {
    std::string_view t = head.target;
    if (t.front() == '/') {
        if (head.method == http::Method::Connect) return "CONNECT needs authority-form";
        splitQuery(t, head);
        return nullptr;
    }
    if (head.method == http::Method::Connect) {
        if (!validAuthority(t)) return "invalid authority-form target";
        head.authority = t;
        return nullptr;
    }
    if (t == "*") {
        if (head.method != http::Method::Options) return "asterisk-form is only for OPTIONS";
        head.rawPath = t;
        return nullptr;
    }
    std::size_t sep = t.find("://");
    if (sep == std::string_view::npos) return "invalid request-target";
    std::string_view scheme = t.substr(0, sep);
    if (!iequals(scheme, "http") && !iequals(scheme, "https")) return "unsupported scheme in absolute-form";
    std::string_view rest = t.substr(sep + 3);
    std::size_t end = rest.find_first_of("/?");
    head.authority = rest.substr(0, end);
    if (head.authority.empty() || !validAuthority(head.authority))
        return "invalid authority in absolute-form";
    if (end == std::string_view::npos) {
        head.rawPath = "/"; // RFC 9112 §3.2.1: an empty path is "/"; a static view stays valid.
        return nullptr;
    }
    rest.remove_prefix(end);
    if (rest.front() == '?') {
        head.rawPath = "/";
        head.query = rest.substr(1);
        return nullptr;
    }
    splitQuery(rest, head);
    return nullptr;
}

// Parses "METHOD SP target SP HTTP/x.y" (RFC 9112 §3). Single SPs only: lenient whitespace parsing
// is a MAY in §3 and a classic source of disagreement between hops.
ParseStatus parseRequestLine(std::string_view line, RequestHead& head, ParseError& error) {
    std::size_t i = 0;
    while (i < line.size() && is(line[i], kTchar))
        ++i;
    if (i == 0 || i == line.size() || line[i] != ' ') return fail(error, 400, "invalid method");
    head.methodToken = line.substr(0, i);
    head.method = http::methodFromToken(head.methodToken);
    ++i;
    std::size_t j = line.find(' ', i);
    head.target = line.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (head.target.empty()) return fail(error, 400, "invalid request-target");
    if (!allOfFast(head.target, kTarget, 0x21, 0x7f, '#'))
        return fail(error, 400, "invalid character in request-target");
    // RFC 9112 §3: 505 is for a well-formed version this server does not support; a line with no
    // HTTP-version at all ("GET /", or a body's leftovers read as a request line) is malformed.
    if (j == std::string_view::npos) return fail(error, 400, "request line without HTTP-version");
    std::string_view v = line.substr(j + 1);
    if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' ||
        v[7] > '9')
        return fail(error, 400, "malformed HTTP-version");
    if (v[5] != '1' || v[7] > '1') return fail(error, 505, "unsupported HTTP version");
    head.versionMinor = v[7] - '0';
    if (const char* r = parseTarget(head)) return fail(error, 400, r);
    return ParseStatus::Complete;
}

// What the field lines said about framing and connection handling, folded as they arrive.
struct HeadFacts {
    int hostCount = 0;
    bool haveLength = false;
    bool haveTe = false;
    bool teChunked = false; // the last coding seen so far is chunked
    bool teOther = false;   // a coding other than chunked came before it
    bool connClose = false;
    bool connKeepAlive = false;
    bool connUpgrade = false;
    bool upgradeField = false;
    bool expect100 = false;
};

ParseStatus applyField(const http::Header& h, RequestHead& head, HeadFacts& f, ParseError& error) {
    std::string_view n = h.name;
    // Dispatch on length first so that most fields cost one switch and no comparison.
    switch (n.size()) {
    case 4:
        if (iequals(n, "host")) {
            if (++f.hostCount > 1) return fail(error, 400, "multiple Host fields");
            if (!validAuthority(h.value)) return fail(error, 400, "invalid Host");
            head.host = h.value;
        }
        break;
    case 6:
        if (iequals(n, "expect") && iequals(h.value, "100-continue")) f.expect100 = true;
        break;
    case 7:
        if (iequals(n, "upgrade")) f.upgradeField = true;
        break;
    case 10:
        if (iequals(n, "connection")) {
            forEachElement(h.value, [&](std::string_view t) {
                if (iequals(t, "close"))
                    f.connClose = true;
                else if (iequals(t, "keep-alive"))
                    f.connKeepAlive = true;
                else if (iequals(t, "upgrade"))
                    f.connUpgrade = true;
                return true;
            });
        }
        break;
    case 14:
        if (iequals(n, "content-length")) {
            // RFC 9110 §8.6: 1*DIGIT; a list of identical values may be accepted as that value.
            bool ok = forEachElement(h.value, [&](std::string_view t) {
                std::uint64_t v = 0;
                if (!parseDigits(t, v)) return false;
                if (f.haveLength && v != head.contentLength) return false;
                f.haveLength = true;
                head.contentLength = v;
                return true;
            });
            if (!ok) return fail(error, 400, "invalid or conflicting Content-Length");
        }
        break;
    case 17:
        if (iequals(n, "transfer-encoding")) {
            f.haveTe = true;
            const char* bad = nullptr;
            int badStatus = 400;
            forEachElement(h.value, [&](std::string_view t) {
                if (t.empty()) return true; // empty list elements are ignored (RFC 9110 §5.6.1)
                if (f.teChunked) {
                    // Chunked twice is invalid framing (§6.1 MUST NOT); another coding after chunked
                    // means chunked is not final, so the length cannot be determined: 400 (§6.3).
                    bool twice = iequals(t, "chunked");
                    bad = twice ? "chunked applied twice" : "transfer coding after chunked";
                    badStatus = 400;
                    return false;
                }
                if (iequals(t, "chunked")) {
                    f.teChunked = true;
                } else {
                    // A coding with parameters is still one coding; only its syntax matters here.
                    std::string_view name = t.substr(0, t.find(';'));
                    if (!allOf(trimOws(name), kTchar) || trimOws(name).empty()) {
                        bad = "invalid transfer coding";
                        return false;
                    }
                    f.teOther = true;
                }
                return true;
            });
            if (bad) return fail(error, badStatus, bad);
        }
        break;
    default:
        break;
    }
    return ParseStatus::Complete;
}

ParseStatus finishHead(RequestHead& head, const HeadFacts& f, const ParserLimits& limits, ParseError& error) {
    if (f.hostCount == 0 && head.versionMinor == 1) return fail(error, 400, "missing Host");
    if (!head.authority.empty()) head.host = head.authority; // RFC 9112 §3.2.2: the target wins
    if (f.haveTe) {
        if (head.versionMinor == 0) return fail(error, 400, "Transfer-Encoding in HTTP/1.0");
        if (f.haveLength) return fail(error, 400, "both Content-Length and Transfer-Encoding");
        if (!f.teChunked && !f.teOther) return fail(error, 400, "empty Transfer-Encoding");
        // RFC 9112 §6.3: chunked not final → the body length is unknowable → 400 and close.
        if (!f.teChunked) return fail(error, 400, "transfer coding other than a final chunked");
        // RFC 9112 §6.1: a coding we do not implement (before the final chunked) → 501.
        if (f.teOther) return fail(error, 501, "unsupported transfer coding before chunked");
        head.framing = RequestHead::Framing::Chunked;
    } else if (f.haveLength) {
        if (head.contentLength > limits.maxBodyBytes) return fail(error, 413, "Content-Length above limit");
        head.framing = RequestHead::Framing::ContentLength;
    }
    bool v11 = head.versionMinor == 1;
    head.keepAlive = !f.connClose && (v11 || f.connKeepAlive);
    head.upgrade = v11 && f.connUpgrade && f.upgradeField; // RFC 9110 §7.8: ignore Upgrade in 1.0
    head.expectContinue = v11 && f.expect100;              // RFC 9110 §10.1.1: ignore it in 1.0
    return ParseStatus::Complete;
}

} // namespace

ParseStatus parseHead(std::string_view buffer, const ParserLimits& limits, RequestHead& head,
                      std::size_t& consumed, ParseError& error) {
    // Reset field by field: assigning a fresh RequestHead would clear the 4 KiB header array.
    head.method = http::Method::Get;
    head.methodToken = head.target = head.rawPath = head.query = head.authority = head.host = {};
    head.versionMinor = 1;
    head.headerCount = 0;
    head.framing = RequestHead::Framing::None;
    head.contentLength = 0;
    head.keepAlive = true;
    head.expectContinue = false;
    head.upgrade = false;

    const char* base = buffer.data();
    const std::size_t n = buffer.size();
    const std::size_t maxFields = std::min(limits.maxHeaderCount, kMaxHeaders);
    // A head that is not complete after maxHeaderBytes bytes can only end up longer than the limit.
    auto incomplete = [&](std::size_t lineStart, bool requestLine) {
        if (requestLine && n - lineStart >= limits.maxRequestLineBytes)
            return fail(error, 414, "request line too long");
        if (requestLine && lineStart < n) {
            // Bytes that cannot begin a method (a TLS ClientHello, binary junk) are refused now,
            // not after header_timeout: the request line must start with a token (§3).
            std::size_t i = lineStart;
            if (base[i] == '\r') {
                if (i + 1 < n) return fail(error, 400, "bare CR before the request line");
            } else {
                for (; i < n && base[i] != ' '; ++i)
                    if (!is(base[i], kTchar))
                        return fail(error, 400, "request line does not start with a method");
            }
        }
        if (n >= limits.maxHeaderBytes) return fail(error, 431, "request head too large");
        return ParseStatus::Incomplete;
    };

    std::size_t pos = 0;
    bool haveRequestLine = false;
    HeadFacts facts;
    for (;;) {
        const char* lf = pos < n ? static_cast<const char*>(std::memchr(base + pos, '\n', n - pos)) : nullptr;
        if (!lf) return incomplete(pos, !haveRequestLine);
        std::size_t lineEnd = static_cast<std::size_t>(lf - base);
        std::size_t next = lineEnd + 1;
        // CRLF or bare LF (RFC 9112 §2.2); any other CR fails the character checks below.
        std::size_t contentEnd = (lineEnd > pos && base[lineEnd - 1] == '\r') ? lineEnd - 1 : lineEnd;
        std::string_view line(base + pos, contentEnd - pos);

        if (!haveRequestLine) {
            if (next - pos > limits.maxRequestLineBytes) return fail(error, 414, "request line too long");
            if (next >= limits.maxHeaderBytes) return fail(error, 431, "request head too large");
            pos = next;
            if (line.empty()) continue; // leading empty lines are skipped (§2.2)
            if (parseRequestLine(line, head, error) == ParseStatus::Error) {
                // What a bad line held is not a method and URL to report; a well-formed line with an
                // unsupported version (505) is.
                if (error.status != 505) head.methodToken = head.target = head.rawPath = head.query = {};
                return ParseStatus::Error;
            }
            haveRequestLine = true;
            continue;
        }
        if (line.empty()) {
            if (next > limits.maxHeaderBytes) return fail(error, 431, "request head too large");
            if (finishHead(head, facts, limits, error) == ParseStatus::Error) return ParseStatus::Error;
            consumed = next;
            return ParseStatus::Complete;
        }
        // The empty line still has to follow, so the head will be at least next + 1 bytes long.
        if (next >= limits.maxHeaderBytes) return fail(error, 431, "request head too large");
        if (head.headerCount >= maxFields) return fail(error, 431, "too many header fields");
        http::Header& h = head.headers[head.headerCount];
        if (const char* r = parseFieldLine(line, h)) return fail(error, 400, r);
        ++head.headerCount;
        if (applyField(h, head, facts, error) == ParseStatus::Error) return ParseStatus::Error;
        pos = next;
    }
}

void ChunkedDecoder::reset(std::uint64_t maxBody, std::size_t maxTrailerBytes) {
    state_ = State::Size;
    chunkRemaining_ = 0;
    total_ = 0;
    maxBody_ = maxBody;
    maxTrailerBytes_ = maxTrailerBytes;
    sizeDigits_ = 0;
    extBytes_ = 0;
    trailerCount_ = 0;
}

const char* ChunkedDecoder::extensionByte(char c) {
    // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ) (RFC 9112 §7.1.1),
    // chunk-ext-val = token / quoted-string. BWS may only precede ';' or '=', not the line end.
    if (state_ == State::SizeExtQuoted) {
        if (c == '"')
            state_ = State::SizeExtAfterQuoted;
        else if (c == '\\')
            state_ = State::SizeExtEscape;
        else if (!is(c, kQdtext))
            return "invalid quoted chunk-ext value";
        return nullptr;
    }
    if (state_ == State::SizeExtEscape) { // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
        if (!is(c, kFieldValue)) return "invalid quoted-pair in chunk-ext";
        state_ = State::SizeExtQuoted;
        return nullptr;
    }
    // Where each kind of byte leads from the other extension states (Failed: refused, with `why`).
    struct Next {
        State token, space, semicolon, equals, cr, quote;
        const char* why;
    };
    constexpr State F = State::Failed;
    static constexpr Next kNext[] = {
        // {after a tchar, a space or tab (BWS), ';', '=', CR, '"'; why anything else is refused}
        {F, State::SizeExt, State::SizeExtName, F, F, F, "invalid chunk-ext"},            // SizeExt: only ';'
        {State::SizeExtInName, State::SizeExtName, F, F, F, F, "invalid chunk-ext name"}, // SizeExtName
        {State::SizeExtInName, State::SizeExtAfterName, State::SizeExtName, State::SizeExtVal, State::SizeLf,
         F, "invalid chunk-ext name"}, // SizeExtInName
        {F, State::SizeExtAfterName, State::SizeExtName, State::SizeExtVal, F, F,
         "invalid chunk-ext"}, // AfterName
        {State::SizeExtToken, State::SizeExtVal, F, F, F, State::SizeExtQuoted,
         "invalid chunk-ext value"}, // Val
        {State::SizeExtToken, State::SizeExt, State::SizeExtName, F, State::SizeLf, F,
         "invalid chunk-ext value"}, // SizeExtToken
        {F, F, F, F, F, F, nullptr}, // SizeExtQuoted (above)
        {F, F, F, F, F, F, nullptr}, // SizeExtEscape (above)
        {F, State::SizeExt, State::SizeExtName, F, State::SizeLf, F,
         "invalid chunk-ext"}, // SizeExtAfterQuoted
    };
    static_assert(std::size(kNext) ==
                  static_cast<int>(State::SizeExtAfterQuoted) - static_cast<int>(State::SizeExt) + 1);
    const Next& next = kNext[static_cast<int>(state_) - static_cast<int>(State::SizeExt)];
    const State to = is(c, kTchar) ? next.token
                     : isWs(c)     ? next.space
                     : c == ';'    ? next.semicolon
                     : c == '='    ? next.equals
                     : c == '\r'   ? next.cr
                     : c == '"'    ? next.quote
                                   : F;
    if (to == F) return c == '\n' ? "bare LF in chunk-ext" : next.why;
    state_ = to;
    return nullptr;
}

ChunkedDecoder::Status ChunkedDecoder::decode(std::string_view in, std::string& out, std::size_t& consumed,
                                              ParseError& error) {
    // Chunk extensions are ignored but still consume bytes; bound them so a peer cannot make us
    // read an endless chunk line (cf. CVE-2023-39326).
    constexpr std::size_t kMaxExtBytes = 4096;
    // Leading zeros are legal, so the digit count is bounded separately from the value.
    constexpr std::size_t kMaxSizeDigits = 64;

    std::size_t p = 0;
    const std::size_t n = in.size();
    auto failAt = [&](int status, const char* reason) {
        state_ = State::Failed;
        error.status = status;
        error.reason = reason;
        consumed = p;
        return Status::Error;
    };
    if (state_ == State::Failed) return failAt(400, "chunked decoder already failed");
    if (state_ == State::Done) {
        consumed = 0;
        return Status::Done;
    }

    while (p < n) {
        const char c = in[p];
        if (state_ >= State::SizeExt && state_ <= State::SizeExtAfterQuoted && ++extBytes_ > kMaxExtBytes)
            return failAt(400, "chunk extensions too long");
        switch (state_) {
        case State::Size:
            if (int d = hexValue(c); d >= 0) {
                if (chunkRemaining_ > (std::numeric_limits<std::uint64_t>::max() >> 4))
                    return failAt(400, "chunk size overflows");
                if (++sizeDigits_ > kMaxSizeDigits) return failAt(400, "chunk size too long");
                chunkRemaining_ = (chunkRemaining_ << 4) | static_cast<std::uint64_t>(d);
                break;
            }
            if (sizeDigits_ == 0) return failAt(400, "invalid chunk size");
            if (c == '\r')
                state_ = State::SizeLf;
            else if (c == ';')
                state_ = State::SizeExtName;
            else if (isWs(c))
                state_ = State::SizeExt;
            else if (c == '\n')
                return failAt(400, "bare LF in chunk-size line");
            else
                return failAt(400, "invalid chunk size");
            break;
        case State::SizeExt:
        case State::SizeExtName:
        case State::SizeExtInName:
        case State::SizeExtAfterName:
        case State::SizeExtVal:
        case State::SizeExtToken:
        case State::SizeExtQuoted:
        case State::SizeExtEscape:
        case State::SizeExtAfterQuoted:
            if (const char* why = extensionByte(c)) return failAt(400, why);
            break;
        case State::SizeLf:
            if (c != '\n') return failAt(400, "chunk-size line not ended by CRLF");
            if (chunkRemaining_ > maxBody_ - total_) return failAt(413, "chunked body above limit");
            state_ = chunkRemaining_ == 0 ? State::Trailer : State::Data;
            break;
        case State::Data: {
            std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(chunkRemaining_, n - p));
            out.append(in.data() + p, take);
            chunkRemaining_ -= take;
            total_ += take;
            p += take;
            if (chunkRemaining_ == 0) state_ = State::DataCr;
            continue;
        }
        case State::DataCr:
            if (c != '\r') return failAt(400, "chunk data not followed by CRLF");
            state_ = State::DataLf;
            break;
        case State::DataLf:
            if (c != '\n') return failAt(400, "chunk data not followed by CRLF");
            state_ = State::Size;
            sizeDigits_ = 0;
            extBytes_ = 0;
            break;
        case State::Trailer:
            return decodeTrailers(in, p, consumed, error);
        case State::Done:
        case State::Failed:
            break; // handled before the loop
        }
        ++p;
    }
    if (state_ == State::Trailer) return decodeTrailers(in, p, consumed, error);
    consumed = p;
    return Status::NeedMore;
}

ChunkedDecoder::Status ChunkedDecoder::decodeTrailers(std::string_view in, std::size_t start,
                                                      std::size_t& consumed, ParseError& error) {
    // Parsed from scratch on each call, and only once the whole section is present, so that every
    // trailer view points into the `in` of the call that returns Done.
    const char* base = in.data();
    const std::size_t n = in.size();
    std::size_t pos = start;
    trailerCount_ = 0;
    auto failWith = [&](int status, const char* reason) {
        state_ = State::Failed;
        error.status = status;
        error.reason = reason;
        consumed = pos;
        return Status::Error;
    };
    for (;;) {
        const char* lf = pos < n ? static_cast<const char*>(std::memchr(base + pos, '\n', n - pos)) : nullptr;
        if (!lf) {
            // The final CRLF is not counted against the limit; a lone pending CR may be its start.
            if (n - start > 1 && n - start - 1 > maxTrailerBytes_)
                return failWith(431, "trailer section too large");
            consumed = start;
            return Status::NeedMore;
        }
        std::size_t lineEnd = static_cast<std::size_t>(lf - base);
        // Trailer lines belong to the chunked framing, so they get the same CRLF-only rule.
        if (lineEnd == pos || base[lineEnd - 1] != '\r')
            return failWith(400, "trailer line not ended by CRLF");
        std::string_view line(base + pos, lineEnd - 1 - pos);
        if (line.empty()) {
            state_ = State::Done;
            consumed = lineEnd + 1;
            return Status::Done;
        }
        if (lineEnd + 1 - start > maxTrailerBytes_) return failWith(431, "trailer section too large");
        if (trailerCount_ >= trailers_.size()) return failWith(431, "too many trailer fields");
        if (const char* r = parseFieldLine(line, trailers_[trailerCount_])) return failWith(400, r);
        ++trailerCount_;
        pos = lineEnd + 1;
    }
}

} // namespace portico::http1

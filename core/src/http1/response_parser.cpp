// ResponseParser: the head is parsed once it is whole; bodies are counted, or handed out as views.
#include <portico/http/message.h>
#include <portico/http1/response_parser.h>

#include <cstring>

namespace portico::http1 {

namespace {

constexpr auto trim = http::trimOws;

// Calls fn(token) for each comma-separated, trimmed, non-empty token of a list field (RFC 9110 §5.6.1).
template <class F> void forEachToken(std::string_view v, F&& fn) {
    while (!v.empty()) {
        const auto comma = v.find(',');
        const auto tok = trim(v.substr(0, comma));
        if (!tok.empty()) fn(tok);
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
    }
}

// Offset just past the empty line that ends a head in data[0..size), or 0 if not there yet.
// CRLF line ends, bare LF tolerated (RFC 9112 §2.2).
std::size_t findHeadEnd(const char* data, std::size_t size, std::size_t from) {
    const char* p = data + from;
    const char* end = data + size;
    while (p < end) {
        auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (!nl) return 0;
        const char* next = nl + 1;
        if (next < end && *next == '\n') return static_cast<std::size_t>(next + 1 - data);
        if (next + 1 < end && next[0] == '\r' && next[1] == '\n')
            return static_cast<std::size_t>(next + 2 - data);
        if (next >= end || (next + 1 >= end && *next == '\r')) return 0;
        p = next;
    }
    return 0;
}

// 1*DIGIT, at most 2^64-1; false otherwise.
bool parseDecimal(std::string_view s, std::uint64_t& out) {
    if (s.empty()) return false;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        const auto d = static_cast<unsigned>(c - '0');
        if (v > (~0ull - d) / 10) return false;
        v = v * 10 + d;
    }
    out = v;
    return true;
}

// A Transfer-Encoding value: every transfer-coding a token with well-formed parameters
// (transfer-coding = token *( OWS ";" OWS transfer-parameter ), RFC 9112 §7). `chunked`: the last
// coding is a bare "chunked"; `teOther`: it is something else (any coding seen sets one of them
// per token, the last one wins); `other`: some coding other than chunked was seen. False when the
// value is malformed or empty.
bool readTransferEncoding(std::string_view value, bool& chunked, bool& teOther, bool& other) {
    bool ok = true;
    forEachToken(value, [&](std::string_view tok) {
        const std::string_view name = trim(tok.substr(0, tok.find(';')));
        ok = ok && http::isToken(name);
        for (auto semi = tok.find(';'); semi != std::string_view::npos; semi = tok.find(';', semi + 1)) {
            const std::string_view param = tok.substr(semi + 1, tok.find(';', semi + 1) - semi - 1);
            const auto eq = param.find('=');
            ok = ok && eq != std::string_view::npos && http::isToken(trim(param.substr(0, eq))) &&
                 !trim(param.substr(eq + 1)).empty();
        }
        chunked = http::iequals(name, "chunked") && name.size() == tok.size();
        teOther = !chunked;
        if (teOther) other = true;
    });
    return ok && (chunked || teOther);
}

// The message body length of `h` (RFC 9112 §6.3), and whether the connection can be reused after it.
void setFraming(ResponseHead& h, bool headRequest, bool chunked, bool teOther) {
    if (h.status < 200 || headRequest || h.status == 204 || h.status == 304) {
        h.framing = ResponseHead::Framing::None;
    } else if (chunked || teOther) {
        // Transfer-Encoding overrides Content-Length; the pair smells of smuggling: no reuse.
        if (h.contentLength) h.keepAlive = false;
        h.framing = chunked ? ResponseHead::Framing::Chunked : ResponseHead::Framing::UntilClose;
        if (teOther) h.keepAlive = false;
    } else if (h.contentLength) {
        h.framing = *h.contentLength ? ResponseHead::Framing::ContentLength : ResponseHead::Framing::None;
    } else {
        h.framing = ResponseHead::Framing::UntilClose;
        h.keepAlive = false;
    }
}

} // namespace

void ResponseParser::begin(bool headRequest, Deliver deliver) {
    head_ = ResponseHead{};
    body_ = {};
    state_ = State::Head;
    deliver_ = deliver;
    headRequest_ = headRequest;
    remaining_ = 0;
    scanned_ = 0;
    trailers_ = 0;
    error_ = "";
}

ResponseParser::Status ResponseParser::parseHead(const char* data, std::size_t size, std::size_t& used) {
    const std::size_t end = findHeadEnd(data, size, scanned_ > 3 ? scanned_ - 3 : 0);
    if (!end) {
        scanned_ = size;
        if (size >= kMaxHead) return fail("response head larger than 64 KiB");
        return Status::NeedMore;
    }
    if (end > kMaxHead) return fail("response head larger than 64 KiB");
    scanned_ = 0;
    std::string_view head(data, end);
    // Status line: HTTP/1.x SP 3DIGIT [SP reason] (RFC 9112 §4).
    if (head.size() < 12 || head.substr(0, 7) != "HTTP/1." || head[7] < '0' || head[7] > '9' ||
        head[8] != ' ')
        return fail("not an HTTP/1.x status line");
    int st = 0;
    for (int i = 9; i < 12; ++i) {
        if (head[i] < '0' || head[i] > '9') return fail("malformed status code");
        st = st * 10 + (head[i] - '0');
    }
    if (st < 100 || st > 599) return fail("status code out of range");
    ResponseHead h;
    h.status = st;
    h.versionMinor = head[7] - '0';
    const bool http10 = h.versionMinor == 0;
    h.keepAlive = !http10;
    auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (line.back() == '\r') line.remove_suffix(1);
    if (line.size() > 12) {
        if (line[12] != ' ') return fail("malformed status line");
        h.reason = line.substr(13);
    }
    head.remove_prefix(nl + 1);
    const char* fieldsBegin = head.data();
    const char* fieldsEnd = fieldsBegin;
    bool chunked = false, teOther = false;
    while (!head.empty()) {
        nl = head.find('\n');
        line = head.substr(0, nl);
        const char* lineEnd = head.data() + (nl == std::string_view::npos ? head.size() : nl + 1);
        head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;
        fieldsEnd = lineEnd;
        const auto colon = line.find(':');
        // field-name = token, no whitespace before the colon (RFC 9112 §5.1); a line starting with
        // whitespace is obs-fold (§5.2), which a proxy answers with 502.
        if (colon == std::string_view::npos || !http::isToken(line.substr(0, colon)))
            return fail("malformed field line");
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = trim(line.substr(colon + 1));
        // CR, LF and NUL are never valid in a field value (RFC 9110 §5.5); forwarded, a bare CR
        // could split the response for a lenient client.
        if (value.find_first_of(std::string_view("\r\0", 2)) != std::string_view::npos)
            return fail("invalid character in a field value");
        if (http::iequals(name, "content-length")) {
            bool ok = !value.empty();
            forEachToken(value, [&](std::string_view tok) {
                std::uint64_t v = 0;
                if (!parseDecimal(tok, v) || (h.contentLength && *h.contentLength != v))
                    ok = false;
                else
                    h.contentLength = v;
            });
            if (!ok || !h.contentLength) return fail("invalid Content-Length");
        } else if (http::iequals(name, "transfer-encoding")) {
            if (!readTransferEncoding(value, chunked, teOther, h.otherCodings))
                return fail("invalid Transfer-Encoding");
        } else if (http::iequals(name, "connection")) {
            h.connection = value;
            forEachToken(value, [&](std::string_view tok) {
                if (http::iequals(tok, "close"))
                    h.keepAlive = false;
                else if (http::iequals(tok, "keep-alive") && http10)
                    h.keepAlive = true;
            });
        }
    }
    h.fields = std::string_view(fieldsBegin, static_cast<std::size_t>(fieldsEnd - fieldsBegin));
    used = end;
    setFraming(h, headRequest_, chunked, teOther);
    head_ = h;
    switch (h.framing) {
    case ResponseHead::Framing::None:
        state_ = State::End;
        break;
    case ResponseHead::Framing::ContentLength:
        remaining_ = *h.contentLength;
        state_ = State::Body;
        break;
    case ResponseHead::Framing::Chunked:
        state_ = State::ChunkSize;
        break;
    case ResponseHead::Framing::UntilClose:
        state_ = State::UntilClose;
        break;
    }
    if (h.interim()) state_ = State::Head; // the final response follows
    return Status::Head;
}

ResponseParser::Status ResponseParser::parse(const char* data, std::size_t size, std::size_t& consumed) {
    consumed = 0;
    const bool events = deliver_ == Deliver::Events;
    for (;;) {
        const char* p = data + consumed;
        const std::size_t avail = size - consumed;
        switch (state_) {
        case State::Idle:
            if (error_[0]) return Status::Error;
            return fail("bytes without a request");
        case State::Head: {
            std::size_t used = 0;
            const Status s = parseHead(p, avail, used);
            if (s != Status::Head) return s;
            consumed += used;
            if (head_.status == 101) {
                if (!events) return fail("unexpected 101 Switching Protocols");
                state_ = State::Idle; // the bytes that follow are the new protocol's
                return s;
            }
            if (events) return s;
            continue; // an interim head: the next one; else the body
        }
        case State::End:
            state_ = State::Idle;
            return Status::Complete;
        case State::Body:
        case State::ChunkData: {
            if (avail == 0) return Status::NeedMore;
            const auto take = static_cast<std::size_t>(remaining_ < avail ? remaining_ : avail);
            consumed += take;
            remaining_ -= take;
            if (remaining_ == 0) state_ = state_ == State::Body ? State::End : State::ChunkDataEnd;
            if (events) {
                body_ = std::string_view(p, take);
                return Status::Body;
            }
            continue;
        }
        case State::ChunkSize: {
            // chunk-size [BWS ; chunk-ext] CRLF (RFC 9112 §7.1)
            auto* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
            if (!nl) {
                if (avail > 4096) return fail("chunk-size line too long");
                return Status::NeedMore;
            }
            if (nl == p || nl[-1] != '\r') return fail("chunk-size line not ended by CRLF");
            std::uint64_t v = 0;
            const char* q = p;
            int digits = 0;
            for (; q < nl - 1; ++q) {
                const char c = *q;
                const int d = (c >= '0' && c <= '9')   ? c - '0'
                              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                       : -1;
                if (d < 0) break;
                if (++digits > 15) return fail("chunk size too large");
                v = v * 16 + static_cast<unsigned>(d);
            }
            while (q < nl - 1 && (*q == ' ' || *q == '\t'))
                ++q;
            if (!digits || (q < nl - 1 && *q != ';')) return fail("malformed chunk-size line");
            consumed += static_cast<std::size_t>(nl + 1 - p);
            remaining_ = v;
            state_ = v ? State::ChunkData : State::Trailers;
            continue;
        }
        case State::ChunkDataEnd: {
            if (avail && p[0] != '\r') return fail("chunk data not followed by CRLF");
            if (avail < 2) return Status::NeedMore;
            if (p[1] != '\n') return fail("chunk data not followed by CRLF");
            consumed += 2;
            state_ = State::ChunkSize;
            continue;
        }
        case State::Trailers: {
            auto* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
            if (!nl) {
                if (trailers_ + avail > kMaxHead) return fail("trailer section too large");
                return Status::NeedMore;
            }
            const auto n = static_cast<std::size_t>(nl + 1 - p);
            if (nl == p || nl[-1] != '\r') return fail("trailer line not ended by CRLF");
            consumed += n;
            if (n == 2) {
                state_ = State::Idle;
                return Status::Complete;
            }
            trailers_ += n;
            if (trailers_ > kMaxHead) return fail("trailer section too large");
            const std::string_view line(p, n - 2);
            const auto colon = line.find(':');
            if (colon == std::string_view::npos || colon == 0) return fail("malformed trailer line");
            continue;
        }
        case State::UntilClose:
            consumed += avail;
            if (events && avail) {
                body_ = std::string_view(p, avail);
                return Status::Body;
            }
            return Status::NeedMore;
        }
    }
}

} // namespace portico::http1

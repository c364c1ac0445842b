// ResponseParser: the head is parsed once it is complete; bodies are skipped in place.
#include "response_parser.h"

#include <cstring>
#include <string_view>

namespace portico::load {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool ieq(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != b[i]) return false; // b is lower case
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// Calls fn(token) for each comma-separated, trimmed, non-empty token of a list field (RFC 9110 §5.6.1).
template <class F> void forEachToken(std::string_view v, F&& fn) {
    while (!v.empty()) {
        auto comma = v.find(',');
        auto tok = trim(v.substr(0, comma));
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

} // namespace

void ResponseParser::begin(bool headRequest) {
    state_ = State::Head;
    headRequest_ = headRequest;
    keepAlive_ = true;
    status_ = 0;
    remaining_ = 0;
    scanned_ = 0;
    error_ = "";
}

ResponseParser::Status ResponseParser::parseHead(const char* data, std::size_t size, std::size_t& used,
                                                 bool& interim) {
    interim = false;
    const std::size_t end = findHeadEnd(data, size, scanned_ > 3 ? scanned_ - 3 : 0);
    if (!end) {
        scanned_ = size;
        if (size >= kMaxHead) return fail("response head larger than 64 KiB");
        return Status::NeedMore;
    }
    if (end > kMaxHead) return fail("response head larger than 64 KiB");
    used = end;
    scanned_ = 0;
    std::string_view head(data, end);
    // Status line: HTTP/1.x SP 3DIGIT [SP reason] (RFC 9112 §4).
    if (head.size() < 12 || head.substr(0, 7) != "HTTP/1." || head[7] < '0' || head[7] > '9' ||
        head[8] != ' ')
        return fail("malformed status line");
    int st = 0;
    for (int i = 9; i < 12; ++i) {
        if (head[i] < '0' || head[i] > '9') return fail("malformed status code");
        st = st * 10 + (head[i] - '0');
    }
    if (st < 100 || st > 599) return fail("status code out of range");
    status_ = st;
    const bool http10 = head[7] == '0';
    keepAlive_ = !http10;
    bool chunked = false, haveLength = false, teOther = false;
    std::uint64_t length = 0;
    auto nl = head.find('\n');
    head.remove_prefix(nl + 1);
    while (!head.empty()) {
        nl = head.find('\n');
        std::string_view line = head.substr(0, nl);
        head.remove_prefix(nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) return fail("malformed field line");
        std::string_view name = line.substr(0, colon);
        std::string_view value = trim(line.substr(colon + 1));
        if (name.size() == 14 && ieq(name, "content-length")) {
            std::uint64_t v = 0;
            if (value.empty()) return fail("bad Content-Length");
            for (char c : value) {
                if (c < '0' || c > '9' || v > (~0ull - 9) / 10) return fail("bad Content-Length");
                v = v * 10 + static_cast<unsigned>(c - '0');
            }
            if (haveLength && v != length) return fail("conflicting Content-Length");
            haveLength = true;
            length = v;
        } else if (name.size() == 17 && ieq(name, "transfer-encoding")) {
            chunked = false;
            forEachToken(value, [&](std::string_view tok) {
                chunked = ieq(tok, "chunked");
                teOther = !chunked;
            });
        } else if (name.size() == 10 && ieq(name, "connection")) {
            forEachToken(value, [&](std::string_view tok) {
                if (ieq(tok, "close"))
                    keepAlive_ = false;
                else if (ieq(tok, "keep-alive") && http10)
                    keepAlive_ = true;
            });
        }
    }
    if (st < 200) {
        if (st == 101) return fail("unexpected 101 Switching Protocols");
        interim = true; // 1xx: the real response follows
        return Status::NeedMore;
    }
    // Message body length, RFC 9112 §6.3.
    if (headRequest_ || st == 204 || st == 304) {
        state_ = State::Idle;
        return Status::Complete;
    }
    if (chunked) {
        state_ = State::ChunkSize;
    } else if (teOther) {
        state_ = State::UntilClose;
        keepAlive_ = false;
    } else if (haveLength) {
        if (length == 0) {
            state_ = State::Idle;
            return Status::Complete;
        }
        remaining_ = length;
        state_ = State::Body;
    } else {
        state_ = State::UntilClose;
        keepAlive_ = false;
    }
    return Status::NeedMore;
}

ResponseParser::Status ResponseParser::parse(const char* data, std::size_t size, std::size_t& consumed) {
    consumed = 0;
    for (;;) {
        const char* p = data + consumed;
        const std::size_t avail = size - consumed;
        switch (state_) {
        case State::Idle:
            return fail("bytes without a request");
        case State::Head: {
            std::size_t used = 0;
            bool interim = false;
            Status s = parseHead(p, avail, used, interim);
            if (s == Status::Error) return s;
            if (s == Status::NeedMore && used == 0) return s; // head incomplete
            consumed += used;
            if (s == Status::Complete) return s;
            if (interim) begin(headRequest_);
            continue;
        }
        case State::Body: {
            const std::uint64_t take = remaining_ < avail ? remaining_ : avail;
            consumed += static_cast<std::size_t>(take);
            remaining_ -= take;
            if (remaining_ == 0) {
                state_ = State::Idle;
                return Status::Complete;
            }
            return Status::NeedMore;
        }
        case State::ChunkSize: {
            // chunk-size [chunk-ext] CRLF (RFC 9112 §7.1)
            auto* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
            if (!nl) {
                if (avail > 4096) return fail("chunk-size line too long");
                return Status::NeedMore;
            }
            std::uint64_t v = 0;
            const char* q = p;
            int digits = 0;
            for (; q < nl; ++q) {
                const char c = lower(*q);
                int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
                if (d < 0) break;
                if (++digits > 15) return fail("chunk size too large");
                v = v * 16 + static_cast<unsigned>(d);
            }
            if (!digits || (q < nl && *q != ';' && *q != '\r' && *q != ' ' && *q != '\t'))
                return fail("malformed chunk-size line");
            consumed += static_cast<std::size_t>(nl + 1 - p);
            remaining_ = v;
            state_ = v ? State::ChunkData : State::Trailers;
            continue;
        }
        case State::ChunkData: {
            const std::uint64_t take = remaining_ < avail ? remaining_ : avail;
            consumed += static_cast<std::size_t>(take);
            remaining_ -= take;
            if (remaining_) return Status::NeedMore;
            state_ = State::ChunkDataEnd;
            continue;
        }
        case State::ChunkDataEnd: {
            if (avail == 0) return Status::NeedMore;
            if (p[0] == '\n') {
                consumed += 1;
            } else if (p[0] == '\r') {
                if (avail < 2) return Status::NeedMore;
                if (p[1] != '\n') return fail("chunk data not followed by CRLF");
                consumed += 2;
            } else {
                return fail("chunk data not followed by CRLF");
            }
            state_ = State::ChunkSize;
            continue;
        }
        case State::Trailers: {
            auto* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
            if (!nl) {
                if (avail > kMaxHead) return fail("trailer section too large");
                return Status::NeedMore;
            }
            const bool empty = nl == p || (nl == p + 1 && p[0] == '\r');
            consumed += static_cast<std::size_t>(nl + 1 - p);
            if (empty) {
                state_ = State::Idle;
                return Status::Complete;
            }
            continue;
        }
        case State::UntilClose:
            consumed = size;
            return Status::NeedMore;
        }
    }
}

} // namespace portico::load

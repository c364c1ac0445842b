// The HTTP/1.1 response parser (RFC 9112 §4 status line, §5 fields, §6 message body length, §7.1
// chunked coding), the one every client side uses: the reverse proxy's upstream exchanges, the load
// generator and replay. Incremental and allocation-free; head and body are reported as views into
// the bytes given to `parse`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace portico::http1 {

/// A response head: views into the buffer `ResponseParser::parse` returned `Head` for, valid while
/// those bytes are unchanged.
struct ResponseHead {
    int status = 0;       ///< 100..599
    int versionMinor = 1; ///< HTTP/1.x minor version (any digit)
    std::string_view reason;
    /// The field lines as received, each with its line end (CRLF, or a bare LF), without the empty
    /// line that ends the head. Every line has a non-empty name followed by ':'.
    std::string_view fields;
    /// The last Connection field's value ("" if none), for the hop-by-hop fields it names.
    std::string_view connection;
    /// Content-Length (a list of identical values counts as one, RFC 9110 §8.6); unset if absent.
    std::optional<std::uint64_t> contentLength;
    /// How the body ends (RFC 9112 §6.3): none (HEAD, 1xx, 204, 304, Content-Length: 0), after
    /// Content-Length bytes, at the last chunk, or at the connection's close.
    enum class Framing : std::uint8_t { None, ContentLength, Chunked, UntilClose } framing = Framing::None;
    /// Transfer-Encoding names a coding other than chunked ("gzip, chunked", "chunked, gzip"): the
    /// body is framed as the last coding says, but its bytes are still coded (a proxy that does
    /// not decode them answers 502, as nginx does).
    bool otherCodings = false;
    /// Whether the connection may carry another exchange (RFC 9112 §9.3: 1.1 unless "close", 1.0
    /// only with "keep-alive"; never after a close-delimited body or when Transfer-Encoding and
    /// Content-Length arrive together, §6.3 item 3).
    bool keepAlive = true;
    /// A 1xx other than 101: a final response follows (RFC 9110 §15.2).
    bool interim() const { return status >= 100 && status < 200 && status != 101; }
};

/// Calls `fn(name, value)` for each line of `ResponseHead::fields`, the value without surrounding
/// spaces and tabs.
template <class Fn> void forEachResponseField(std::string_view fields, Fn&& fn) {
    while (!fields.empty()) {
        auto nl = fields.find('\n');
        std::string_view line = fields.substr(0, nl);
        fields.remove_prefix(nl == std::string_view::npos ? fields.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        fn(line.substr(0, colon), value);
    }
}

/// Parses one response after another from a connection's bytes.
///
/// Use: `begin()` before each response, then `parse()` over the unconsumed bytes (the caller keeps
/// what was not consumed at the front and appends what arrives) until it returns `Complete`.
/// With `Deliver::Events` it stops at each event: `Head` for every head (interim 1xx and 101
/// included; after an interim one, calling `parse` again reads the next head; after 101 the
/// bytes that follow are the new protocol's and the parser is done), `Body` for each piece of body
/// (the decoded bytes of a chunk, views into the input). With `Deliver::CountOnly` (the load
/// generator) heads and bodies are checked and skipped, interim responses skipped, and 101 is an
/// error; only `NeedMore`, `Complete` and `Error` are returned.
///
/// Errors (`error()` says which): a status line that is not `HTTP/1.<digit> <3 digits>`, a status
/// outside 100..599, a field line without a token name directly followed by ':' (so obs-fold too,
/// RFC 9112 §5.2), a field value with CR or NUL, a head over `kMaxHead` bytes, a
/// Content-Length that is not 1*DIGIT (or a list of equal values) or overflows 64 bits, differing
/// Content-Lengths, a chunk-size line that is not 1-15 hex digits (then BWS, ';' extensions) ended by
/// CRLF, chunk data not followed by CRLF, a trailer section over `kMaxHead` bytes. A head's lines may
/// end in a bare LF (RFC 9112 §2.2); chunked framing needs CRLF.
class ResponseParser {
public:
    enum class Status : std::uint8_t { NeedMore, Head, Body, Complete, Error };
    enum class Deliver : std::uint8_t { CountOnly, Events };

    /// Largest response head (status line + fields) accepted, bytes; also the trailer section's cap.
    static constexpr std::size_t kMaxHead = 64 * 1024;

    /// Starts a response; `headRequest`: the request was HEAD, so no body follows (RFC 9110 §9.3.2).
    void begin(bool headRequest, Deliver deliver = Deliver::CountOnly);
    /// Parses from `data[0..size)`; `consumed` is set to the bytes used. A head is consumed only
    /// once it is whole. NeedMore: everything usable was consumed; call again with the rest plus
    /// new bytes. Head: `head()` describes it (its views point into `data`). Body: `body()` is the
    /// next piece. Complete: the response ended at `data[consumed]`. Error: see `error()`.
    Status parse(const char* data, std::size_t size, std::size_t& consumed);

    /// At end of input: true if the response is delimited by the close and therefore complete now.
    bool completesAtEof() const { return state_ == State::UntilClose; }
    /// True between `begin` and the end of the response.
    bool started() const { return state_ != State::Idle; }
    /// True once the final head was parsed (head() describes it) until the response ends.
    bool headDone() const { return state_ != State::Idle && state_ != State::Head; }

    const ResponseHead& head() const { return head_; }
    std::string_view body() const { return body_; }
    int status() const { return head_.status; }
    bool keepAlive() const { return head_.keepAlive; }
    const char* error() const { return error_; }

private:
    enum class State : std::uint8_t {
        Idle,
        Head,
        Body,
        ChunkSize,
        ChunkData,
        ChunkDataEnd,
        Trailers,
        UntilClose,
        End // the response ended: the next parse returns Complete
    };
    Status fail(const char* why) {
        error_ = why;
        state_ = State::Idle;
        return Status::Error;
    }
    Status parseHead(const char* data, std::size_t size, std::size_t& used);

    ResponseHead head_;
    std::string_view body_;
    State state_ = State::Idle;
    Deliver deliver_ = Deliver::CountOnly;
    bool headRequest_ = false;
    std::uint64_t remaining_ = 0;
    std::size_t scanned_ = 0;  // head bytes already searched for the empty line
    std::size_t trailers_ = 0; // trailer bytes so far
    const char* error_ = "";
};

} // namespace portico::http1

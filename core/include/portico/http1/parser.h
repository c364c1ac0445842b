// Zero-copy HTTP/1.1 request parser (RFC 9112): request line, field lines, message framing, chunked.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace portico::http1 {

/// Parser limits. Each has a documented default and the status sent when it is exceeded.
struct ParserLimits {
    std::size_t maxRequestLineBytes = 8 * 1024;    ///< request line incl. CRLF → 414 URI Too Long
    std::size_t maxHeaderBytes = 16 * 1024;        ///< whole head (request line + fields) → 431
    std::size_t maxHeaderCount = 100;              ///< field lines (≤ kMaxHeaders) → 431
    std::uint64_t maxBodyBytes = 10 * 1024 * 1024; ///< decoded body → 413 Content Too Large
};

/// Hard capacity of the per-request field array (also caps trailers).
inline constexpr std::size_t kMaxHeaders = config::kMaxHeaderCount;

/// A parse failure: the status to answer with (400, 413, 414, 431, 501, 505) and a short reason for
/// logs. Every error closes the connection after the response (the framing can no longer be trusted).
struct ParseError {
    int status = 400;
    const char* reason = "";
};

/// The head of a request: views into the buffer given to `parseHead`, valid while it is unchanged.
struct RequestHead {
    http::Method method = http::Method::Get;
    std::string_view methodToken;
    std::string_view target;
    std::string_view rawPath; ///< origin-form path (or the path of an absolute-form target)
    std::string_view query;
    std::string_view authority; ///< from an absolute-form target, else ""
    std::string_view host;      ///< the Host field value (the authority wins if absolute-form)
    int versionMinor = 1;       ///< HTTP/1.x minor version (0 or 1)
    std::array<http::Header, kMaxHeaders> headers;
    std::size_t headerCount = 0;

    enum class Framing : std::uint8_t { None, ContentLength, Chunked };
    Framing framing = Framing::None;
    std::uint64_t contentLength = 0;
    bool keepAlive = true;       ///< per RFC 9112 §9.3 (1.1 default on, 1.0 needs keep-alive, close wins)
    bool expectContinue = false; ///< "Expect: 100-continue" present
    bool upgrade = false;        ///< Connection: upgrade with an Upgrade field
};

enum class ParseStatus : std::uint8_t { Complete, Incomplete, Error };

/// Parses one request head from the start of `buffer` (RFC 9112 §2-§6, §9.3). Allocates nothing.
/// Complete: `head` is filled and `consumed` is the head's length including the empty line (and any
/// skipped leading empty lines); the body, if any, starts at `buffer[consumed]`.
/// Incomplete: more bytes are needed. Limits are still checked against what is there: a request line
/// with no line end within `maxRequestLineBytes` is 414 at once, a buffer of `maxHeaderBytes` bytes
/// without the end of the head is 431 at once. `head` and `consumed` are then unspecified.
/// Error: `error` says what to answer; the connection must be closed after the response.
///
/// Leading empty lines before a request line are skipped (RFC 9112 §2.2) and count toward
/// `maxHeaderBytes`. Bare LF is accepted as a line end in the head (§2.2 MAY), a bare CR never is.
/// Request-target: origin-form, absolute-form (http/https only; `authority` then wins over Host and
/// an empty path reads as "/"), authority-form for CONNECT only, "*" for OPTIONS only (rawPath "*").
/// CTLs, SP, '#' and a userinfo '@' in the authority are rejected; bytes >= 0x80 are tolerated (raw
/// UTF-8 links). Rejected with 400: a malformed request line, obs-fold (§5.2), whitespace between
/// field name and colon (§5.1), invalid token or field-value characters (CTLs other than HTAB, incl.
/// NUL and DEL), a missing Host in 1.1, several Hosts or an invalid Host (§3.2), Content-Length that is
/// not a list of 1*DIGIT, overflows 64 bits or differs between copies (identical copies, "5, 5" or two
/// lines of 5, are accepted as RFC 9110 §8.6 allows), both Content-Length and Transfer-Encoding (§6.3),
/// Transfer-Encoding in HTTP/1.0 (§6.1), an empty or syntactically invalid Transfer-Encoding, chunked
/// applied twice (§6.1), a Transfer-Encoding whose final coding is not chunked ("gzip", "chunked,
/// gzip": the length cannot be determined, §6.3 item 4). 501: chunked preceded by a coding we do not
/// implement ("gzip, chunked", §6.1). 505: a version other than
/// HTTP/1.0 or HTTP/1.1 (also "HTTP/1.2"), including an HTTP/0.9 request line without a version.
/// 413: Content-Length above `maxBodyBytes`. 414, 431 per `limits` (431 also for more than
/// min(maxHeaderCount, kMaxHeaders) field lines). "Expect: 100-continue" (case-insensitive) sets
/// `expectContinue` in 1.1 only (RFC 9110 §10.1.1); other expectations are ignored.
ParseStatus parseHead(std::string_view buffer, const ParserLimits& limits, RequestHead& head,
                      std::size_t& consumed, ParseError& error);

/// Incremental decoder for the chunked transfer coding (RFC 9112 §7.1). Allocates nothing beyond
/// appending to `out`. Chunk extensions are checked against the §7.1.1 grammar and ignored (at most
/// 4 KiB of them per chunk line, else 400); chunk lines and trailer lines must end in CRLF (a bare LF
/// is 400, see CVE-2025-22871); a chunk size that overflows 64 bits is 400; a decoded size above
/// `maxBody` is 413 as soon as the chunk-size line announcing it is complete. Trailer fields are
/// kept as views into the input, including fields RFC 9110 §6.5.1 forbids in trailers (Host,
/// Content-Length, ...): the caller must never merge them into the header section. More than 32
/// trailer fields, or trailer field lines totalling more than `maxTrailerBytes` bytes (the final
/// CRLF not counted), is 431.
class ChunkedDecoder {
public:
    enum class Status : std::uint8_t { Done, NeedMore, Error };

    /// Restart for a new message; `maxBody` bounds the decoded size (→ 413).
    void reset(std::uint64_t maxBody, std::size_t maxTrailerBytes = 16 * 1024);

    /// Decodes from `in`, appending body bytes to `out`. `consumed` tells how many bytes of `in`
    /// were used; call again with the unconsumed rest plus new data when NeedMore. The trailer
    /// section is only parsed once it is wholly in `in`: until then NeedMore stops `consumed` at its
    /// start. On Done, `consumed` ends right after the final CRLF (pipelined bytes stay unread) and
    /// the trailers (if any) point into `in` as passed to this call, so they stay valid while that
    /// buffer is unchanged. After Error the decoder stays failed until `reset`.
    Status decode(std::string_view in, std::string& out, std::size_t& consumed, ParseError& error);

    std::span<const http::Header> trailers() const { return {trailers_.data(), trailerCount_}; }

private:
    // SizeExt* walk the chunk-ext grammar: SizeExt = BWS that must be followed by ';', Name = after
    // ';', AfterName = BWS that must be followed by ';' or '=', Val = after '=', Quoted/Escape =
    // inside a quoted-string.
    enum class State : std::uint8_t {
        Size,
        SizeExt,
        SizeExtName,
        SizeExtInName,
        SizeExtAfterName,
        SizeExtVal,
        SizeExtToken,
        SizeExtQuoted,
        SizeExtEscape,
        SizeExtAfterQuoted,
        SizeLf,
        Data,
        DataCr,
        DataLf,
        Trailer,
        Done,
        Failed
    };
    Status decodeTrailers(std::string_view in, std::size_t start, std::size_t& consumed, ParseError& error);
    // One byte of a chunk extension: nullptr after moving on, else why it is refused (400).
    const char* extensionByte(char c);
    State state_ = State::Size;
    std::uint64_t chunkRemaining_ = 0;
    std::uint64_t total_ = 0;
    std::uint64_t maxBody_ = 0;
    std::size_t maxTrailerBytes_ = 0;
    std::size_t sizeDigits_ = 0;
    std::size_t extBytes_ = 0;
    std::array<http::Header, 32> trailers_{};
    std::size_t trailerCount_ = 0;
};

} // namespace portico::http1

// Zero-copy HTTP/1.1 request parser (RFC 9112): request line, field lines, message framing, chunked.
#pragma once

#include <portico/http/message.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace portico::http1 {

/// Parser limits. Each has a documented default and the status sent when it is exceeded.
struct ParserLimits {
    std::size_t maxRequestLineBytes = 8 * 1024;  ///< request line incl. CRLF → 414 URI Too Long
    std::size_t maxHeaderBytes = 16 * 1024;      ///< whole head (request line + fields) → 431
    std::size_t maxHeaderCount = 100;            ///< field lines (≤ kMaxHeaders) → 431
    std::uint64_t maxBodyBytes = 10 * 1024 * 1024;  ///< decoded body → 413 Content Too Large
};

/// Hard capacity of the per-request field array (also caps trailers).
inline constexpr std::size_t kMaxHeaders = 128;

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
    std::string_view rawPath;  ///< origin-form path (or the path of an absolute-form target)
    std::string_view query;
    std::string_view authority;  ///< from an absolute-form target, else ""
    std::string_view host;       ///< the Host field value (the authority wins if absolute-form)
    int versionMinor = 1;        ///< HTTP/1.x minor version (0 or 1)
    std::array<http::Header, kMaxHeaders> headers;
    std::size_t headerCount = 0;

    enum class Framing : std::uint8_t { None, ContentLength, Chunked };
    Framing framing = Framing::None;
    std::uint64_t contentLength = 0;
    bool keepAlive = true;        ///< per RFC 9112 §9.3 (1.1 default on, 1.0 needs keep-alive, close wins)
    bool expectContinue = false;  ///< "Expect: 100-continue" present
    bool upgrade = false;         ///< Connection: upgrade with an Upgrade field
};

enum class ParseStatus : std::uint8_t { Complete, Incomplete, Error };

/// Parses one request head from the start of `buffer` (RFC 9112 §2-§6, §9.3).
/// Complete: `head` is filled and `consumed` is the head's length including the empty line.
/// Incomplete: more bytes are needed (limits are still checked against what is there).
/// Error: `error` says what to answer. Leading empty lines before a request line are skipped
/// (RFC 9112 §2.2). Bare LF is accepted as a line end in the head, never bare CR. Rejected with 400:
/// obs-fold, whitespace between field name and colon, invalid token or field-value characters, a
/// missing Host in 1.1, several Hosts, Content-Length that is not 1*DIGIT or differs between copies,
/// both Content-Length and Transfer-Encoding; 501 for a transfer coding other than a final
/// "chunked"; 505 for a version other than HTTP/1.0 or HTTP/1.1; 414, 431 per `limits`.
ParseStatus parseHead(std::string_view buffer, const ParserLimits& limits, RequestHead& head,
                      std::size_t& consumed, ParseError& error);

/// Incremental decoder for the chunked transfer coding (RFC 9112 §7.1). Chunk extensions are
/// parsed and ignored; chunk lines must end in CRLF (a bare LF is an error, see CVE-2025-22871);
/// trailer fields are kept as views into the input.
class ChunkedDecoder {
public:
    enum class Status : std::uint8_t { Done, NeedMore, Error };

    /// Restart for a new message; `maxBody` bounds the decoded size (→ 413).
    void reset(std::uint64_t maxBody, std::size_t maxTrailerBytes = 16 * 1024);

    /// Decodes from `in`, appending body bytes to `out`. `consumed` tells how many bytes of `in`
    /// were used; call again with the unconsumed rest plus new data when NeedMore. On Done, the
    /// trailers (if any) are available via `trailers()` and point into `in` as passed to this call,
    /// so the caller must keep the whole chunked message contiguous until it has used them.
    Status decode(std::string_view in, std::string& out, std::size_t& consumed, ParseError& error);

    std::span<const http::Header> trailers() const { return {trailers_.data(), trailerCount_}; }

private:
    enum class State : std::uint8_t { Size, SizeExt, SizeLf, Data, DataCr, DataLf, Trailer, Done };
    State state_ = State::Size;
    std::uint64_t chunkRemaining_ = 0;
    std::uint64_t total_ = 0;
    std::uint64_t maxBody_ = 0;
    std::size_t maxTrailerBytes_ = 0;
    std::size_t sizeDigits_ = 0;
    std::array<http::Header, 32> trailers_{};
    std::size_t trailerCount_ = 0;
};

}  // namespace portico::http1

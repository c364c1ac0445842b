// Incremental HTTP/1.1 response parser for the load generator (RFC 9112 §4, §6, §7): status line,
// the three fields that frame a message, Content-Length / chunked / close-delimited bodies. Body
// bytes are counted and skipped, never stored. Allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace portico::load {

class ResponseParser {
public:
    enum class Status : std::uint8_t { NeedMore, Complete, Error };

    /// Largest response head (status line + fields) accepted, bytes.
    static constexpr std::size_t kMaxHead = 64 * 1024;

    /// Starts a response; `headRequest`: the request was HEAD, so no body follows (RFC 9110 §9.3.2).
    void begin(bool headRequest);
    /// Parses from `data[0..size)`; `consumed` is set to the bytes used (head bytes only once the
    /// whole head is there). Complete: the response ended at `data[consumed]`. NeedMore: everything
    /// usable was consumed; call again with the rest plus new bytes. Error: see `error()`.
    /// Interim 1xx responses (except 101, an error) are skipped.
    Status parse(const char* data, std::size_t size, std::size_t& consumed);
    /// At end of input: true if the response is delimited by the close and therefore complete now.
    bool completesAtEof() const { return state_ == State::UntilClose; }
    /// True once any byte of the current response was consumed or the head is being waited for.
    bool started() const { return state_ != State::Idle; }

    int status() const { return status_; }
    /// Whether the connection may carry another exchange (RFC 9112 §9.3).
    bool keepAlive() const { return keepAlive_; }
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
        UntilClose
    };
    Status fail(const char* why) {
        error_ = why;
        return Status::Error;
    }
    Status parseHead(const char* data, std::size_t size, std::size_t& used, bool& interim);

    State state_ = State::Idle;
    bool headRequest_ = false;
    bool keepAlive_ = true;
    int status_ = 0;
    std::uint64_t remaining_ = 0;
    std::size_t scanned_ = 0; // head bytes already searched for the empty line
    const char* error_ = "";
};

} // namespace portico::load

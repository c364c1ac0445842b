// WebSocket framing pieces (RFC 6455 §5) and permessage-deflate (RFC 7692) on zlib.
#pragma once

#include <portico/ws/websocket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

typedef struct z_stream_s z_stream;

namespace portico::ws {

constexpr std::size_t kMaxServerHeader = 10; ///< FIN/opcode byte, length byte, 8-byte extended length

/// Writes the header of an unmasked server frame with FIN set (RFC 6455 §5.2) to `p` (room for
/// kMaxServerHeader bytes); RSV1 marks a compressed message (RFC 7692 §6). Returns its length.
inline std::size_t writeHeader(char* p, Opcode op, std::uint64_t len, bool rsv1 = false) {
    p[0] = static_cast<char>(0x80 | (rsv1 ? 0x40 : 0) | static_cast<std::uint8_t>(op));
    if (len < 126) {
        p[1] = static_cast<char>(len);
        return 2;
    }
    if (len <= 0xffff) {
        p[1] = 126;
        p[2] = static_cast<char>(len >> 8);
        p[3] = static_cast<char>(len);
        return 4;
    }
    p[1] = 127;
    for (int i = 0; i < 8; ++i)
        p[2 + i] = static_cast<char>(len >> (56 - 8 * i));
    return 10;
}

/// XORs `n` bytes at `p` with the 4-byte masking key (§5.3), in place, 8 bytes at a time.
inline void unmask(char* p, std::size_t n, const unsigned char key[4]) {
    std::uint32_t k32;
    std::memcpy(&k32, key, 4);
    const std::uint64_t k64 = (static_cast<std::uint64_t>(k32) << 32) | k32;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        w ^= k64;
        std::memcpy(p + i, &w, 8);
    }
    for (; i < n; ++i)
        p[i] = static_cast<char>(p[i] ^ key[i & 3]);
}

/// Raw-deflate compressor for outgoing messages with server_no_context_takeover (RFC 7692 §7.1.1.1):
/// every message starts from an empty window, so one compressor per worker thread serves every
/// session (no per-connection deflate memory).
class Deflater {
public:
    explicit Deflater(int windowBits = 15);
    ~Deflater();
    Deflater(const Deflater&) = delete;
    Deflater& operator=(const Deflater&) = delete;
    /// Appends the compressed `in` to `out` without the trailing 00 00 FF FF (§7.2.1). False on a
    /// zlib error (then `out` is unchanged).
    bool compress(std::string_view in, std::string& out);
    /// The calling thread's instance for `windowBits` (9..15).
    static Deflater& local(int windowBits = 15);

private:
    z_stream* z_;
};

/// Raw-inflate decompressor for incoming messages (window 2^15, so any client_max_window_bits).
class Inflater {
public:
    enum class Result : std::uint8_t { Ok, TooBig, Error };
    explicit Inflater(bool noContextTakeover);
    ~Inflater();
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;
    /// Appends the decompressed `in` (a frame's payload) to `out`; `final` adds the 00 00 FF FF tail
    /// (§7.2.2) and ends the message. TooBig once `out` would exceed `limit` bytes.
    Result inflate(std::string_view in, bool final, std::string& out, std::uint64_t limit);
    /// For an observer that only looks (proxy tunnels): inflates `in` (a piece of a frame's
    /// payload) into a small scratch buffer, appends what falls within the message's first `keep`
    /// bytes to `prefix` and counts every byte in `total` (the message's size so far). `final` adds
    /// the 00 00 FF FF tail and ends the message. Memory stays bounded whatever the ratio; TooBig
    /// once `total` passes `limit` (the stream is then out of step: drop the Inflater).
    Result skim(std::string_view in, bool final, std::string& prefix, std::size_t keep, std::uint64_t& total,
                std::uint64_t limit);

private:
    Result run(const unsigned char* p, std::size_t n, std::string& out, std::uint64_t limit);
    Result runSkim(const unsigned char* p, std::size_t n, std::string& prefix, std::size_t keep,
                   std::uint64_t& total, std::uint64_t limit);
    z_stream* z_;
    bool noContext_;
    bool ended_ = false; // this message's deflate stream had its final block (BFINAL)
};

} // namespace portico::ws

// Passive reading of one direction of a WebSocket connection Portico only relays (the `ws: true`
// tunnel): frames are parsed as the bytes pass, in pieces of any size, and never changed.
#pragma once

#include <portico/ws/websocket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace portico::ws {

class Inflater;

/// One whole data message (a fragmented one once, at its last frame) or one control frame.
struct ObservedMessage {
    Opcode opcode = Opcode::Text; ///< Text/Binary for data, Close/Ping/Pong for control frames
    std::string_view prefix;      ///< the first bytes of the payload, unmasked and inflated
    std::uint64_t size = 0;       ///< the whole payload in bytes, after inflating
    bool compressed = false;      ///< sent with permessage-deflate (RSV1 on its first frame)
};

/// An incremental RFC 6455 §5 frame parser for one direction that only watches: it reads the
/// frames out of the bytes it is fed and reports each message, keeping at most `prefixBytes` of
/// a payload (copies are unmasked, the fed bytes are not touched). With permessage-deflate
/// (RFC 7692) compressed messages are inflated with bounded memory (zlib's 32 KiB window and the
/// prefix; the rest is counted and dropped) to learn their size and prefix; a message that
/// inflates to more than `maxInflated` bytes stops the observer.
///
/// Anything that is not a valid frame sequence from that side (reserved bits or opcodes, masking
/// the wrong way for the direction, control frames fragmented or over 125 bytes, a continuation
/// out of place, RSV1 without permessage-deflate, bad compressed data) stops it for good: feed()
/// returns false from then on and error() says why. It never throws.
class FrameObserver {
public:
    struct Options {
        bool fromClient = false; ///< client frames are masked, server frames are not (§5.1, §5.3)
        bool deflate = false;    ///< permessage-deflate was negotiated in the 101
        std::size_t prefixBytes = 0;
        std::uint64_t maxInflated = 64ull << 20; ///< bytes of one inflated message
    };
    using OnMessage = std::function<void(const ObservedMessage&)>;

    FrameObserver(const Options& options, OnMessage onMessage);
    ~FrameObserver();
    FrameObserver(const FrameObserver&) = delete;
    FrameObserver& operator=(const FrameObserver&) = delete;

    /// The next bytes of the direction. Calls onMessage for every message completed in them.
    /// False once the stream is not readable as frames (sticky).
    bool feed(std::string_view bytes);
    bool failed() const { return state_ == State::Failed; }
    /// Why it stopped ("" while it runs).
    const std::string& error() const { return error_; }
    /// Bytes fed before it stopped (or so far).
    std::uint64_t offset() const { return offset_; }

private:
    enum class State : std::uint8_t { Header, Payload, Failed };
    bool fail(std::string_view why);
    /// True for Inflater::Result::Ok; fails the observer for the others (`result` is an
    /// Inflater::Result, passed as its value so that this header does not need the inflater's).
    bool inflated(int result);
    bool startHeader(); // the first two header bytes are in
    bool startFrame();  // the whole header is in
    bool payload(std::string_view chunk);
    bool endFrame();
    void unmaskedCopy(std::string_view chunk, std::uint64_t at, char* out) const;

    Options options_;
    OnMessage onMessage_;
    State state_ = State::Header;
    std::string error_;
    std::uint64_t offset_ = 0;
    // The frame being read.
    unsigned char head_[14] = {};
    std::size_t have_ = 0;
    std::size_t need_ = 2;
    std::uint8_t op_ = 0;
    bool fin_ = false;
    bool rsv1_ = false;
    unsigned char key_[4] = {};
    std::uint64_t length_ = 0;
    std::uint64_t got_ = 0;
    std::string control_; // a control frame's payload (≤ 125 bytes)
    // The data message being read (one or more frames).
    bool inMessage_ = false;
    Opcode msgOp_ = Opcode::Text;
    bool msgCompressed_ = false;
    std::uint64_t msgSize_ = 0;
    std::string prefix_;
    std::unique_ptr<Inflater> inflater_;
};

} // namespace portico::ws

// WebSocket (RFC 6455, permessage-deflate RFC 7692): the shapes other modules see. The sessions
// themselves are private to the core (core/src/ws/); the engine facade exposes their statistics
// (Engine::webSocketStats) and a per-message hook for the capture (Engine::setWebSocketHook).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::ws {

/// Frame opcodes (RFC 6455 §5.2, §11.8). 3-7 and 11-15 are reserved and fail the connection (1002).
enum class Opcode : std::uint8_t { Continuation = 0, Text = 1, Binary = 2, Close = 8, Ping = 9, Pong = 10 };

/// Close status codes Portico sends (RFC 6455 §7.4.1). 1005, 1006 and 1015 are never put on the
/// wire (§7.4.1: they only report conditions locally).
enum CloseCode : std::uint16_t {
    kCloseNormal = 1000,        ///< echoed for a peer's normal close
    kCloseGoingAway = 1001,     ///< server draining, idle timeout
    kCloseProtocolError = 1002, ///< unmasked frame, reserved opcode/RSV bit, fragmented or >125-byte control
                                ///< frame, bad close body or reserved close code, continuation out of place
    kCloseInvalidData = 1007,   ///< text message or close reason that is not UTF-8 (checked per fragment)
    kClosePolicy = 1008,        ///< peer too slow to take its room's traffic
    kCloseTooBig = 1009,        ///< message (after inflating) over the endpoint's max_message_bytes
};

/// True for codes a peer may send in a Close frame (§7.4.1, §7.4.2 and the IANA registry):
/// 1000-1003, 1007-1014 and 3000-4999. 1004-1006, 1015, 1016-2999 and anything else → 1002.
bool validCloseCode(std::uint16_t code);

/// Sec-WebSocket-Accept for a Sec-WebSocket-Key (§4.2.2 item 5.4): base64(SHA-1(key + GUID)).
/// acceptKey("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
std::string acceptKey(std::string_view key);

/// True if `key` is a valid Sec-WebSocket-Key: base64 of exactly 16 bytes (24 characters, "==" at
/// the end, §4.1 item 7).
bool validKey(std::string_view key);

/// Incremental UTF-8 validation (RFC 3629: no overlongs, no surrogates, at most U+10FFFF), so a
/// fragmented text message is checked fragment by fragment and fails at the first bad byte (§8.1).
class Utf8Validator {
public:
    /// Feeds bytes; false as soon as they cannot be part of valid UTF-8 (sticky).
    bool feed(std::string_view bytes);
    /// True when everything fed so far is valid and no code point is left unfinished.
    bool complete() const { return state_ == 0; }
    void reset() { state_ = 0; }

private:
    std::uint32_t state_ = 0; // DFA state: 0 = accept, 12 = reject, other = inside a sequence
};

/// True if `bytes` is complete, valid UTF-8.
bool validUtf8(std::string_view bytes);

/// What happened on a WebSocket, for the capture/inspector. Views are valid only during the call.
struct WsMessageEvent {
    enum class Kind : std::uint8_t {
        Open,    ///< handshake accepted (target, host, subprotocol set)
        Message, ///< one whole data message, or a control frame (ping, pong, close)
        Join,    ///< the session entered `room`
        Leave,   ///< the session left `room`
        Closed,  ///< the TCP connection is gone; `closeCode` is the code sent or received (0: none)
    };
    enum class Direction : std::uint8_t { In, Out }; ///< In = from the client, Out = to the client

    static constexpr std::size_t kPrefixBytes = 256; ///< longest payload prefix carried

    Kind kind = Kind::Message;
    Direction direction = Direction::In;
    std::uint64_t connection = 0; ///< process-unique id of the WebSocket session (1, 2, ...)
    Opcode opcode = Opcode::Text; ///< Message: Text/Binary for data, Ping/Pong/Close for control
    std::uint64_t size = 0;       ///< Message: whole payload in bytes (after inflating)
    std::string_view prefix;      ///< Message: the first min(size, kPrefixBytes) payload bytes
    bool compressed = false;      ///< Message: sent/received with permessage-deflate
    std::uint16_t closeCode = 0;  ///< Message with opcode Close, and Closed
    std::string_view room;        ///< Join/Leave, and Messages of a room session
    std::string_view target;      ///< Open: the request target ("/rooms/a?x=1")
    std::string_view host;        ///< Open: the Host field
    std::string_view subprotocol; ///< Open: the selected subprotocol ("" = none)
    std::chrono::system_clock::time_point time;
};

/// Called on the worker thread that owns the session, for every event, while installed. Must be
/// quick and must not throw; copy what it keeps.
using MessageHook = std::function<void(const WsMessageEvent&)>;

/// One room of a `websocket: room` route.
struct RoomStats {
    std::string route; ///< the route's path ("/rooms/:room")
    std::string name;  ///< the room's name (the parameter's value)
    std::uint64_t members = 0;
    std::uint64_t messages = 0;   ///< data messages received from members since the room opened
    std::uint64_t delivered = 0;  ///< data messages handed to members (messages × other members)
    double messagesPerSecond = 0; ///< received messages/s over the last completed window (≥1 s)
};

/// Totals of one engine's WebSocket sessions (relaxed counters).
struct Stats {
    std::uint64_t open = 0;        ///< sessions now open (live-reload ones included)
    std::uint64_t accepted = 0;    ///< handshakes accepted since start
    std::uint64_t messagesIn = 0;  ///< data messages received
    std::uint64_t messagesOut = 0; ///< data messages sent (echoes, room deliveries, reload events)
    std::uint64_t liveReloadClients = 0;
    std::uint64_t liveReloadEvents = 0; ///< change notifications sent (one per debounced batch)
    std::vector<RoomStats> rooms;       ///< rooms with at least one member, by route then name
};

} // namespace portico::ws

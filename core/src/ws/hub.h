// The WebSocket hub of one engine: rooms (members spread over workers), the live-reload channel,
// counters and the capture hook.
#pragma once

#include <portico/ws/websocket.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace portico::io {
class SessionHost;
}

namespace portico::ws {

class WsSession;

/// One message on its way to many sessions: the unmasked server frame is the same for every
/// recipient, so it is built once (plus once compressed, for members that negotiated
/// permessage-deflate) and shared.
struct SharedFrame {
    std::string plain;    ///< whole frame: header + payload
    std::string deflated; ///< whole frame with RSV1 and a compressed payload; empty = not made
    Opcode opcode = Opcode::Text;
    std::uint64_t size = 0; ///< payload bytes
    std::string prefix;     ///< for the hook (≤ WsMessageEvent::kPrefixBytes)
};

/// A room: its members, grouped by the worker that owns them. A slot's member list is touched only
/// on its worker's thread; the list of slots and their counts only under the hub's mutex.
class Room {
public:
    Room(std::string r, std::string n) : route(std::move(r)), name(std::move(n)) {}
    struct Slot {
        io::SessionHost* worker = nullptr;
        std::vector<WsSession*> members; ///< worker thread only
        std::size_t count = 0;           ///< hub mutex
    };
    const std::string route;
    const std::string name;
    std::vector<std::unique_ptr<Slot>> slots; ///< hub mutex; never shrinks while the room lives
    std::atomic<std::size_t> activeSlots{0};  ///< slots with count > 0
    std::atomic<std::uint64_t> members{0};
    std::atomic<std::uint64_t> messages{0};
    std::atomic<std::uint64_t> delivered{0};
    // Rate window, under the hub mutex (see Hub::stats).
    std::uint64_t windowMessages = 0;
    std::chrono::steady_clock::time_point windowStart = std::chrono::steady_clock::now();
    double rate = 0;
};

class Hub {
public:
    Hub();
    ~Hub();

    /// Adds `s` (owned by `w`; called on w's thread) to the room (route, name), creating it.
    std::shared_ptr<Room> join(const std::string& route, const std::string& name, WsSession* s,
                               io::SessionHost& w, Room::Slot*& slot);
    /// Removes `s` (on its worker's thread); the room goes away with its last member.
    void leave(const std::shared_ptr<Room>& room, Room::Slot* slot, WsSession* s);
    /// Delivers `f` to every member of `room` but `from`. Members on `fromSlot`'s worker (the calling
    /// thread) get it at once, the others through a task posted to their worker. `fromSlot` may be
    /// null (a thread that is no worker: the live-reload watcher). Returns the local deliveries.
    std::size_t broadcast(const std::shared_ptr<Room>& room, Room::Slot* fromSlot, const WsSession* from,
                          const std::shared_ptr<const SharedFrame>& f);

    /// The channel every live-reload client joins.
    static constexpr const char* kLiveReloadRoute = "/__portico/livereload";
    /// Sends the text message `json` to every live-reload client (any thread); returns how many
    /// pages were connected.
    std::size_t notifyLiveReload(std::string_view json);

    void setHook(MessageHook hook);
    bool hooked() const { return hooked_.load(std::memory_order_relaxed); }
    void emit(const WsMessageEvent& e);

    Stats stats();

    std::uint64_t nextSessionId() { return nextId_.fetch_add(1, std::memory_order_relaxed) + 1; }

    std::atomic<std::uint64_t> open{0};
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> messagesIn{0};
    std::atomic<std::uint64_t> messagesOut{0};
    std::atomic<std::uint64_t> liveReloadClients{0};
    std::atomic<std::uint64_t> liveReloadEvents{0};

private:
    std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<Room>> rooms_;
    std::mutex hookMutex_;
    std::shared_ptr<const MessageHook> hook_;
    std::atomic<bool> hooked_{false};
    std::atomic<std::uint64_t> nextId_{0};
};

/// Builds the SharedFrame for a data message (the deflated copy when the payload is at least
/// `compressMin` bytes and compression shrinks it).
std::shared_ptr<SharedFrame> makeSharedFrame(Opcode op, std::string_view payload, std::size_t compressMin);

} // namespace portico::ws

// Rooms across workers, the live-reload channel, statistics and the capture hook.
#include "ws/hub.h"

#include "ws/codec.h"
#include "ws/session.h"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace portico::ws {

Hub::Hub() = default;
Hub::~Hub() = default;

std::shared_ptr<Room> Hub::join(const std::string& route, const std::string& name, WsSession* s,
                                io::SessionHost& w, Room::Slot*& slot) {
    std::shared_ptr<Room> room;
    {
        std::lock_guard lock(mutex_);
        auto& r = rooms_[{route, name}];
        if (!r) r = std::make_shared<Room>(route, name);
        room = r;
        slot = nullptr;
        for (auto& sl : room->slots)
            if (sl->worker == &w) slot = sl.get();
        if (!slot) {
            room->slots.push_back(std::make_unique<Room::Slot>());
            slot = room->slots.back().get();
            slot->worker = &w;
        }
        if (slot->count++ == 0) room->activeSlots.fetch_add(1, std::memory_order_relaxed);
        room->members.fetch_add(1, std::memory_order_relaxed);
    }
    slot->members.push_back(s); // this worker's thread
    if (route == kLiveReloadRoute) liveReloadClients.fetch_add(1, std::memory_order_relaxed);
    return room;
}

void Hub::leave(const std::shared_ptr<Room>& room, Room::Slot* slot, WsSession* s) {
    auto& m = slot->members;
    if (auto it = std::find(m.begin(), m.end(), s); it != m.end()) {
        *it = m.back();
        m.pop_back();
    }
    if (room->route == kLiveReloadRoute) liveReloadClients.fetch_sub(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    if (--slot->count == 0) room->activeSlots.fetch_sub(1, std::memory_order_relaxed);
    if (room->members.fetch_sub(1, std::memory_order_relaxed) == 1) {
        auto it = rooms_.find({room->route, room->name});
        if (it != rooms_.end() && it->second == room) rooms_.erase(it);
    }
}

std::size_t Hub::broadcast(const std::shared_ptr<Room>& room, Room::Slot* fromSlot, const WsSession* from,
                           const std::shared_ptr<const SharedFrame>& f) {
    std::size_t local = 0;
    if (fromSlot) {
        for (WsSession* m : fromSlot->members)
            if (m != from && m->deliver(*f)) ++local;
        room->delivered.fetch_add(local, std::memory_order_relaxed); // sessions count their own output
        // Only this worker holds members: no lock, no posting.
        if (fromSlot->count > 0 && room->activeSlots.load(std::memory_order_relaxed) <= 1) return local;
    }
    std::lock_guard lock(mutex_);
    for (auto& sl : room->slots) {
        if (sl.get() == fromSlot || sl->count == 0) continue;
        Room::Slot* slot = sl.get();
        boost::asio::post(slot->worker->io(), [room, slot, f] {
            std::size_t n = 0;
            for (WsSession* m : slot->members)
                if (m->deliver(*f)) ++n;
            room->delivered.fetch_add(n, std::memory_order_relaxed);
        });
    }
    return local;
}

std::size_t Hub::notifyLiveReload(std::string_view json) {
    std::shared_ptr<Room> room;
    std::size_t pages = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = rooms_.find({kLiveReloadRoute, ""});
        if (it == rooms_.end()) return 0;
        room = it->second;
        for (const auto& slot : room->slots)
            pages += slot->count;
    }
    liveReloadEvents.fetch_add(1, std::memory_order_relaxed);
    broadcast(room, nullptr, nullptr, makeSharedFrame(Opcode::Text, json, SIZE_MAX));
    return pages;
}

void Hub::setHook(MessageHook hook) {
    std::lock_guard lock(hookMutex_);
    hook_ = hook ? std::make_shared<const MessageHook>(std::move(hook)) : nullptr;
    hooked_.store(hook_ != nullptr, std::memory_order_relaxed);
}

void Hub::emit(const WsMessageEvent& e) {
    std::shared_ptr<const MessageHook> h;
    {
        std::lock_guard lock(hookMutex_);
        h = hook_;
    }
    if (h) (*h)(e);
}

Stats Hub::stats() {
    Stats s;
    s.open = open.load(std::memory_order_relaxed);
    s.accepted = accepted.load(std::memory_order_relaxed);
    s.messagesIn = messagesIn.load(std::memory_order_relaxed);
    s.messagesOut = messagesOut.load(std::memory_order_relaxed);
    s.liveReloadClients = liveReloadClients.load(std::memory_order_relaxed);
    s.liveReloadEvents = liveReloadEvents.load(std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (auto& [key, room] : rooms_) {
        if (room->route == kLiveReloadRoute) continue;
        const std::uint64_t total = room->messages.load(std::memory_order_relaxed);
        const double dt = std::chrono::duration<double>(now - room->windowStart).count();
        if (dt >= 1.0) {
            room->rate = static_cast<double>(total - room->windowMessages) / dt;
            room->windowMessages = total;
            room->windowStart = now;
        }
        RoomStats r;
        r.route = room->route;
        r.name = room->name;
        r.members = room->members.load(std::memory_order_relaxed);
        r.messages = total;
        r.delivered = room->delivered.load(std::memory_order_relaxed);
        r.messagesPerSecond = room->rate;
        s.rooms.push_back(std::move(r));
    }
    return s;
}

std::shared_ptr<SharedFrame> makeSharedFrame(Opcode op, std::string_view payload, std::size_t compressMin) {
    auto f = std::make_shared<SharedFrame>();
    f->opcode = op;
    f->size = payload.size();
    f->prefix.assign(payload.substr(0, WsMessageEvent::kPrefixBytes));
    char head[kMaxServerHeader];
    std::size_t hl = writeHeader(head, op, payload.size());
    f->plain.reserve(hl + payload.size());
    f->plain.append(head, hl);
    f->plain.append(payload);
    if (payload.size() >= compressMin) {
        std::string z;
        if (Deflater::local().compress(payload, z) && z.size() < payload.size()) {
            hl = writeHeader(head, op, z.size(), true);
            f->deflated.reserve(hl + z.size());
            f->deflated.append(head, hl);
            f->deflated.append(z);
        }
    }
    return f;
}

} // namespace portico::ws

// The passive frame parser of proxied WebSocket tunnels (see observer.h).
#include "ws/observer.h"

#include "ws/codec.h"

#include <algorithm>
#include <cstring>

namespace portico::ws {

FrameObserver::FrameObserver(const Options& options, OnMessage onMessage)
    : options_(options), onMessage_(std::move(onMessage)) {}

FrameObserver::~FrameObserver() = default;

bool FrameObserver::fail(std::string_view why) {
    state_ = State::Failed;
    error_.assign(why);
    inflater_.reset();
    std::string().swap(prefix_);
    return false;
}

bool FrameObserver::feed(std::string_view bytes) {
    while (!bytes.empty()) {
        if (state_ == State::Failed) return false;
        std::size_t used = 0;
        if (state_ == State::Header) {
            used = std::min(need_ - have_, bytes.size());
            std::memcpy(head_ + have_, bytes.data(), used);
            have_ += used;
            offset_ += used;
            bytes.remove_prefix(used);
            if (have_ < need_) continue;
            if (have_ == 2 && !startHeader()) return false;
            if (have_ < need_) continue; // extended length or masking key to come
            if (!startFrame()) return false;
            continue;
        }
        used = static_cast<std::size_t>(std::min<std::uint64_t>(length_ - got_, bytes.size()));
        const bool ok = payload(bytes.substr(0, used));
        got_ += used;
        offset_ += used;
        bytes.remove_prefix(used);
        if (!ok) return false;
        if (got_ == length_ && !endFrame()) return false;
    }
    return state_ != State::Failed;
}

// The first two bytes: everything that can be checked before the length and the key (§5.2).
bool FrameObserver::startHeader() {
    const std::uint8_t b0 = head_[0], b1 = head_[1];
    op_ = b0 & 0x0f;
    fin_ = b0 & 0x80;
    rsv1_ = b0 & 0x40;
    const bool control = op_ & 0x08;
    const bool masked = b1 & 0x80;
    const std::uint8_t len7 = b1 & 0x7f;
    if (b0 & 0x30) return fail("reserved bits RSV2/RSV3 set");
    if ((op_ >= 3 && op_ <= 7) || op_ >= 11) return fail("reserved opcode " + std::to_string(op_));
    if (masked != options_.fromClient)
        return fail(options_.fromClient ? "unmasked client frame" : "masked server frame");
    if (control) {
        if (!fin_) return fail("fragmented control frame");
        if (len7 > 125) return fail("control frame payload over 125 bytes");
        if (rsv1_) return fail("RSV1 on a control frame");
    } else {
        if (op_ == 0 && !inMessage_) return fail("continuation frame without a message");
        if (op_ != 0 && inMessage_) return fail("new message inside a fragmented one");
        if (rsv1_ && !options_.deflate) return fail("RSV1 without permessage-deflate");
        if (rsv1_ && op_ == 0) return fail("RSV1 on a continuation frame");
    }
    need_ = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (masked ? 4 : 0);
    return true;
}

// The whole header: length and masking key.
bool FrameObserver::startFrame() {
    const std::uint8_t len7 = head_[1] & 0x7f;
    std::size_t at = 2;
    if (len7 == 126) {
        length_ = (std::uint64_t{head_[2]} << 8) | head_[3];
        at = 4;
    } else if (len7 == 127) {
        length_ = 0;
        for (int i = 0; i < 8; ++i)
            length_ = (length_ << 8) | head_[2 + i];
        if (length_ >> 63) return fail("frame length with the top bit set");
        at = 10;
    } else {
        length_ = len7;
    }
    if (options_.fromClient) std::memcpy(key_, head_ + at, 4);
    got_ = 0;
    if (op_ & 0x08) {
        control_.clear();
    } else if (op_ != 0) {
        inMessage_ = true;
        msgOp_ = static_cast<Opcode>(op_);
        msgCompressed_ = rsv1_;
        msgSize_ = 0;
        prefix_.clear();
    }
    state_ = State::Payload;
    return length_ == 0 ? endFrame() : true;
}

void FrameObserver::unmaskedCopy(std::string_view chunk, std::uint64_t at, char* out) const {
    std::memcpy(out, chunk.data(), chunk.size());
    if (!options_.fromClient) return;
    // The key as it lines up with a piece starting at payload byte `at` (§5.3: byte i uses key[i mod 4]).
    unsigned char key[4];
    for (std::size_t j = 0; j < 4; ++j)
        key[j] = key_[(at + j) & 3];
    unmask(out, chunk.size(), key);
}

bool FrameObserver::payload(std::string_view chunk) {
    if (op_ & 0x08) {
        const std::size_t at = control_.size();
        control_.resize(at + chunk.size());
        unmaskedCopy(chunk, got_, control_.data() + at);
        return true;
    }
    if (!msgCompressed_) {
        msgSize_ += chunk.size();
        if (prefix_.size() < options_.prefixBytes) {
            const std::size_t take = std::min(chunk.size(), options_.prefixBytes - prefix_.size());
            const std::size_t at = prefix_.size();
            prefix_.resize(at + take);
            unmaskedCopy(chunk.substr(0, take), got_, prefix_.data() + at);
        }
        return true;
    }
    if (!inflater_) inflater_ = std::make_unique<Inflater>(false); // keeping the window is always safe
    // Compressed: all of it goes through zlib (its window must follow the stream), a piece at a
    // time through a bounded copy.
    char piece[8 * 1024];
    for (std::uint64_t at = got_; !chunk.empty();) {
        const std::size_t n = std::min(chunk.size(), sizeof piece);
        unmaskedCopy(chunk.substr(0, n), at, piece);
        if (!inflated(
                static_cast<int>(inflater_->skim(std::string_view(piece, n), false, prefix_,
                                                 options_.prefixBytes, msgSize_, options_.maxInflated))))
            return false;
        at += n;
        chunk.remove_prefix(n);
    }
    return true;
}

bool FrameObserver::inflated(int result) {
    switch (static_cast<Inflater::Result>(result)) {
    case Inflater::Result::Ok:
        return true;
    case Inflater::Result::TooBig:
        return fail("a compressed message inflates to more than " + std::to_string(options_.maxInflated) +
                    " bytes");
    case Inflater::Result::Error:
        break;
    }
    return fail("invalid compressed data");
}

bool FrameObserver::endFrame() {
    state_ = State::Header;
    have_ = 0;
    need_ = 2;
    if (op_ & 0x08) {
        // Like data, at most prefixBytes of it (a 125-byte close reason was passed whole: fuzzing).
        onMessage_(ObservedMessage{static_cast<Opcode>(op_),
                                   std::string_view(control_).substr(0, options_.prefixBytes),
                                   control_.size(), false});
        return true;
    }
    if (!fin_) return true;
    inMessage_ = false;
    if (msgCompressed_) {
        if (!inflater_) inflater_ = std::make_unique<Inflater>(false);
        if (!inflated(static_cast<int>(
                inflater_->skim({}, true, prefix_, options_.prefixBytes, msgSize_, options_.maxInflated))))
            return false;
    }
    onMessage_(ObservedMessage{msgOp_, prefix_, msgSize_, msgCompressed_});
    prefix_.clear();
    return true;
}

} // namespace portico::ws

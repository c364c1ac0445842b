// RFC 9113 stream-state rules nghttp2 leaves out with RFC 7540 priorities off: feed() walks the
// frame heads before nghttp2 sees them (frames on closed streams, HEADERS below an opened id,
// PRIORITY on stream 0 or on itself), and the reset budgets (Rapid Reset, MadeYouReset).
#include "server/h2_connection.h"
#include "server/h2_stream.h"

#include "server/worker.h"

#include <nghttp2/nghttp2.h>

namespace portico::server {

namespace {
// A frame head's fields (RFC 9113 §4.1): 24-bit length, type, 31-bit stream id; `at` 9 reads the
// stream dependency of a PRIORITY frame's payload.
std::size_t frameLength(const std::uint8_t* h) {
    return (std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2];
}
std::int32_t streamIdAt(const std::uint8_t* h, std::size_t at = 5) {
    return static_cast<std::int32_t>(((std::uint32_t{h[at]} << 24) | (std::uint32_t{h[at + 1]} << 16) |
                                      (std::uint32_t{h[at + 2]} << 8) | h[at + 3]) &
                                     0x7fffffffu);
}
} // namespace

ssize_t H2Connection::feed(const std::uint8_t* p, std::size_t n) {
    const std::uint8_t* const end = p + n;
    const std::uint8_t* run = p; // walked, not yet given to nghttp2
    auto give = [&](const std::uint8_t* from, std::size_t len) -> ssize_t {
        return len ? nghttp2_session_mem_recv(session_, from, len) : 0;
    };
    while (p < end) {
        if (passLeft_ > 0) {
            const std::size_t take = std::min<std::size_t>(passLeft_, static_cast<std::size_t>(end - p));
            passLeft_ -= take;
            p += take;
            continue;
        }
        // A frame head: 9 bytes, and a PRIORITY frame's 5-byte payload with it.
        const std::uint8_t* head = p;
        std::size_t want = 9;
        const auto wanted = [](const std::uint8_t* h) {
            return h[3] == NGHTTP2_PRIORITY && frameLength(h) == 5 ? std::size_t{14} : std::size_t{9};
        };
        if (headHave_ == 0 && static_cast<std::size_t>(end - p) >= 9 &&
            static_cast<std::size_t>(end - p) >= (want = wanted(p))) {
            p += want; // whole in this read: checked in place
        } else {
            // Split across reads: gathered in head_, given to nghttp2 on its own once complete.
            if (ssize_t r = give(run, static_cast<std::size_t>(p - run)); r < 0) return r;
            while (p < end && headHave_ < (headHave_ >= 9 ? wanted(head_) : std::size_t{9}))
                head_[headHave_++] = *p++;
            run = p;
            if (headHave_ < 9 || headHave_ < wanted(head_)) break;
            head = head_;
            want = headHave_;
            headHave_ = 0;
        }
        const std::size_t len = frameLength(head);
        const std::uint8_t type = head[3];
        const std::int32_t id = streamIdAt(head);
        // A frame on a stream the walk has seen opened is judged with nghttp2's state after every
        // frame before it: those go to nghttp2 first.
        const bool needsState = ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) && id != 0 && (id & 1) &&
                                 id <= walkedMaxId_) ||
                                type == NGHTTP2_PRIORITY;
        if (needsState && head != head_) {
            if (ssize_t r = give(run, static_cast<std::size_t>(head - run)); r < 0) return r;
            run = head;
        }
        if (type == NGHTTP2_HEADERS && (id & 1) && id > walkedMaxId_) walkedMaxId_ = id;
        const int verdict = needsState ? checkFrame(type, id, len, head) : 0;
        if (verdict < 0) {
            nghttp2_session_terminate_session(session_, static_cast<std::uint32_t>(-verdict));
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        if (verdict > 0)
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, static_cast<std::uint32_t>(verdict));
        if (head == head_) {
            if (ssize_t r = give(head_, want); r < 0) return r;
        }
        passLeft_ = len - (want - 9);
    }
    if (ssize_t r = give(run, static_cast<std::size_t>(p - run)); r < 0) return r;
    return static_cast<ssize_t>(n);
}

int H2Connection::checkFrame(std::uint8_t type, std::int32_t id, std::size_t len, const std::uint8_t* head) {
    if (type == NGHTTP2_PRIORITY) {
        if (id == 0) return -NGHTTP2_PROTOCOL_ERROR; // §6.3
        if (len != 5) return 0;                      // nghttp2 answers FRAME_SIZE_ERROR
        const std::int32_t dep = streamIdAt(head, 9);
        if (dep != id) return 0;
        // §5.3.1: a stream error; RST_STREAM may not name an idle stream (§6.4), so a PRIORITY
        // frame for one that does not exist ends the connection instead.
        return nghttp2_session_find_stream(session_, id) ? NGHTTP2_PROTOCOL_ERROR : -NGHTTP2_PROTOCOL_ERROR;
    }
    if (nghttp2_session_find_stream(session_, id)) return 0; // open: nghttp2 applies §5.1
    switch (closedHow(id)) {
    case Closed::WeReset:
        return 0; // §5.1: frames after our RST_STREAM may still be in flight; nghttp2 ignores them
    case Closed::PeerReset:
        // §5.1: after the peer's RST_STREAM, a stream error; HEADERS cannot reopen it.
        return type == NGHTTP2_DATA ? NGHTTP2_STREAM_CLOSED : -NGHTTP2_STREAM_CLOSED;
    case Closed::Normal:
        return -NGHTTP2_STREAM_CLOSED; // §5.1: frames after END_STREAM on a closed stream
    case Closed::Unknown:
        break;
    }
    // Never opened (skipped by a higher id, so implicitly closed: §5.1.1) or closed long ago.
    return type == NGHTTP2_HEADERS ? -NGHTTP2_PROTOCOL_ERROR : -NGHTTP2_STREAM_CLOSED;
}

H2Connection::Closed H2Connection::closedHow(std::int32_t id) const {
    for (std::int32_t r : resetByUs_)
        if (r == id) return Closed::WeReset;
    for (const ClosedStream& c : closedStreams_)
        if (c.id == id) return c.how;
    return Closed::Unknown;
}

void H2Connection::onResetReceived(std::int32_t id) {
    closingId_ = id;
    closingHow_ = Closed::PeerReset;
}

void H2Connection::onResetSent(std::int32_t id) {
    resetByUs_[resetNext_++ % resetByUs_.size()] = id;
    const auto& h2 = worker_.snapshot().config->http2;
    if (calmed_) return;
    if (!takeToken(resetTokens_, resetRefill_, static_cast<double>(h2.resetBurst),
                   static_cast<double>(h2.resetRate))) {
        calmed_ = true; // once: terminate_session queues a GOAWAY, the close follows
        enhanceYourCalm();
    }
}

int H2Connection::enhanceYourCalm() {
    worker_.counters().h2Abuse.fetch_add(1, std::memory_order_relaxed);
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

} // namespace portico::server

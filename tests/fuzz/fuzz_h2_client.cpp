// Fuzz target: the load generator's HTTP/2 client codec (core/src/client/h2_client_codec.h) fed
// a server's bytes. Input: byte 0 sets depth - 1 (bits 0-2: 1..8 requests at once), small windows
// (bit 3: the client announces 65,535-byte windows instead of 2^30-1, so it gives windows back
// often) and the requests submitted per round (bits 4-7: 0..15, as far as slots are free); byte 1
// picks the requests (the k-th submit is kinds[(byte1 + k) % 5]: GET, HEAD, a 10-byte POST, a
// 40,000-byte POST, a GET whose header block needs CONTINUATION). The rest is segments of the
// server's bytes, each a 2-byte big-endian length and that many bytes; a round of submits runs
// before the first segment and after each. Invariants checked besides "no crash, no sanitizer
// report":
// - every submit gets exactly one event for its slot, never one for a slot not in flight;
//   inFlight() counts the requests submitted and not reported, stays <= depth, and
//   forEachInFlight lists exactly them; submit fails only after GOAWAY (draining()), writing
//   nothing; Closed comes with nothing in flight;
// - receive consumes whole frames (used <= n; the rest is no whole frame);
// - what the codec writes is whole frames: HEADERS on new, increasing odd stream ids, each block
//   contiguous (CONTINUATION), with byte 1's top bit set ending in the request id field
//   (setRequestIdPrefix: `x-request-id: <prefix><(stream id - 1) / 2>`, a literal without
//   indexing, RFC 7541 §6.2.2), no DATA after the stream's END_STREAM or RST_STREAM, WINDOW_UPDATE
//   increments in 1..2^31-1 that never give back more than was received, ACKs only;
// - it never sends beyond the server's connection window; fed one byte at a time (so one frame
//   per call), never beyond a stream's window (the server's INITIAL_WINDOW_SIZE and
//   WINDOW_UPDATEs, RFC 9113 §6.9.2) and never a frame larger than its SETTINGS_MAX_FRAME_SIZE;
// - fed whole or one byte at a time (the unconsumed rest presented again), the codec reports the
//   same events and verdict, consumes the same bytes, and writes the same HEADERS, RST_STREAM,
//   GOAWAY and ACK frames. Fed whole, a segment's frames after the point where the connection
//   became Closed are consumed in the same call; fed byte by byte, the rest of that segment is fed
//   too (Closed must stay Closed, or turn into Error the same way).
#include "fuzz_support.h"

#include "client/connection.h"
#include "client/h2_client_codec.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

using namespace portico::client;
using Verdict = H2ClientCodec::Verdict;

namespace {

constexpr std::string_view kMagic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kPing = 6, kGoaway = 7,
                       kWindowUpdate = 8, kContinuation = 9;
constexpr std::uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4;
constexpr std::size_t kKinds = 5;

const std::array<PreparedRequest, kKinds>& requests() {
    static const std::array<PreparedRequest, kKinds> r = [] {
        std::array<PreparedRequest, kKinds> a;
        const auto fields = [](std::string_view method, std::string_view extra) {
            std::vector<HeaderField> f = {{":method", method},
                                          {":scheme", "http"},
                                          {":authority", "localhost:8080"},
                                          {":path", "/fuzz"}};
            if (!extra.empty()) f.push_back({"x-big", extra});
            return f;
        };
        const auto block = [&](std::string_view method, std::string_view extra) {
            return encodeRequestBlock(fields(method, extra));
        };
        static const std::string big(20000, 'b');
        // Two kinds with dynamic-table indexing (H2RequestFields), sharing entries, the rest as
        // fixed blocks.
        H2RequestFields table;
        a[0].h2Fields = table.prepare(fields("GET", {}));
        a[1].h2Block = block("HEAD", {});
        a[1].head = true;
        a[2].h2Fields = table.prepare(fields("POST", "10 bytes"));
        a[2].body = "0123456789";
        a[3].h2Block = block("POST", {});
        a[3].body.assign(40000, 'p');
        a[4].h2Block = block("GET", big);
        return a;
    }();
    return r;
}

std::uint32_t be32(const char* p) {
    return std::uint32_t(std::uint8_t(p[0])) << 24 | std::uint32_t(std::uint8_t(p[1])) << 16 |
           std::uint32_t(std::uint8_t(p[2])) << 8 | std::uint8_t(p[3]);
}

struct Frame {
    std::uint8_t type, flags;
    std::uint32_t stream;
    std::string_view payload;
};

// Splits `s` into whole frames; false when it does not end at a frame boundary.
bool frames(std::string_view s, std::vector<Frame>& out) {
    out.clear();
    while (!s.empty()) {
        if (s.size() < 9) return false;
        const std::size_t len =
            std::size_t(std::uint8_t(s[0])) << 16 | std::size_t(std::uint8_t(s[1])) << 8 | std::uint8_t(s[2]);
        if (s.size() - 9 < len) return false;
        out.push_back(
            {std::uint8_t(s[3]), std::uint8_t(s[4]), be32(s.data() + 5) & 0x7fffffffu, s.substr(9, len)});
        s.remove_prefix(9 + len);
    }
    return true;
}

bool wholeFrameAtFront(std::string_view s) {
    if (s.size() < 9) return false;
    const std::size_t len =
        std::size_t(std::uint8_t(s[0])) << 16 | std::size_t(std::uint8_t(s[1])) << 8 | std::uint8_t(s[2]);
    return s.size() >= 9 + len;
}

constexpr std::string_view kIdPrefix = "0123456789ab-7.40000.";

// The end of a request's header block with the request id: the literal, new name, no Huffman.
std::string requestIdLiteral(std::uint32_t stream) {
    const std::string value = std::string(kIdPrefix) + std::to_string((stream - 1) / 2);
    return std::string("\0\x0cx-request-id", 14) + static_cast<char>(value.size()) + value;
}

struct Params {
    unsigned depth = 1;
    H2ClientCodec::Settings settings;
    unsigned perRound = 0;
    std::uint8_t kindSeed = 0;
    std::vector<std::string_view> segments;
};

struct Outcome {
    std::vector<std::tuple<char, std::uint32_t, int>> events;
    Verdict verdict = Verdict::Open;
    std::size_t consumed = 0;
    std::vector<std::string> written; // HEADERS, RST_STREAM, GOAWAY, ACKs, sorted
};

class Run final : public H2ClientEvents {
public:
    Run(const Params& p, bool bytewise)
        : p_(p), bytewise_(bytewise), codec_(*this, p.depth, p.settings), busy_(p.depth, false) {
        codec_.askResponseHeads(true);
        if (p.kindSeed & 0x80) codec_.setRequestIdPrefix(std::string(kIdPrefix));
    }

    Outcome go() {
        PORTICO_FUZZ_CHECK(codec_.start(out_));
        PORTICO_FUZZ_CHECK(out_.size() > kMagic.size() &&
                           std::string_view(out_).substr(0, kMagic.size()) == kMagic);
        out_.erase(0, kMagic.size());
        written(false, true);
        refill();
        for (std::string_view seg : p_.segments) {
            if (bytewise_) {
                // After Closed, the rest of the segment still comes (fed whole, it was in the same
                // call): the codec must stay Closed or find an Error, as it would fed whole.
                for (char c : seg) {
                    pending_ += c;
                    if (step() == Verdict::Error) return finish();
                }
            } else {
                pending_.append(seg);
                step();
            }
            if (o_.verdict != Verdict::Open) return finish();
            refill();
        }
        return finish();
    }

    void onStreamResponse(std::uint32_t slot, int status) override {
        if (slot < held_.size()) held_[slot] = false;
        PORTICO_FUZZ_CHECK(slot < busy_.size() && busy_[slot]);
        PORTICO_FUZZ_CHECK(status >= 200 && status <= 599);
        busy_[slot] = false;
        --busy_count_;
        o_.events.emplace_back('R', slot, status);
    }
    // Odd slots keep their heads: the fields come only for a slot in flight that was asked and
    // said yes, never a pseudo-field, and the same whether the input comes whole or bytewise.
    bool holdResponseHead(std::uint32_t slot) override {
        PORTICO_FUZZ_CHECK(slot < busy_.size() && busy_[slot]);
        o_.events.emplace_back('H', slot, 0);
        held_.resize(busy_.size());
        held_[slot] = (slot & 1) != 0;
        return held_[slot];
    }
    void onResponseField(std::uint32_t slot, std::string_view name, std::string_view value) override {
        PORTICO_FUZZ_CHECK(slot < busy_.size() && busy_[slot] && slot < held_.size() && held_[slot]);
        PORTICO_FUZZ_CHECK(!name.empty() && name[0] != ':');
        o_.events.emplace_back('f', slot,
                               static_cast<int>(name.size() % 10'000 * 100'000 + value.size() % 100'000));
    }
    void onStreamFailed(std::uint32_t slot, Failure why) override {
        if (slot < held_.size()) held_[slot] = false;
        PORTICO_FUZZ_CHECK(slot < busy_.size() && busy_[slot]);
        PORTICO_FUZZ_CHECK(why == Failure::Reset || why == Failure::Protocol || why == Failure::Refused);
        busy_[slot] = false;
        --busy_count_;
        o_.events.emplace_back('F', slot, static_cast<int>(why));
    }

private:
    Outcome finish() {
        std::sort(o_.written.begin(), o_.written.end());
        return std::move(o_);
    }

    void refill() {
        for (unsigned i = 0; i < p_.perRound && codec_.inFlight() < codec_.depth(); ++i) {
            const auto& r = requests()[(p_.kindSeed + submits_) % kKinds];
            const std::size_t before = out_.size();
            std::uint32_t slot = 0xffffffffu;
            if (!codec_.submit(r, slot, out_)) {
                PORTICO_FUZZ_CHECK(codec_.draining());
                PORTICO_FUZZ_CHECK(out_.size() == before);
                return;
            }
            ++submits_;
            PORTICO_FUZZ_CHECK(slot < busy_.size() && !busy_[slot]);
            busy_[slot] = true;
            ++busy_count_;
            written(false, true);
            checkInFlight();
        }
    }

    // One receive over what is pending.
    Verdict step() {
        std::size_t used = 0xdeadbeef;
        const Verdict v = codec_.receive(reinterpret_cast<const std::uint8_t*>(pending_.data()),
                                         pending_.size(), used, out_);
        if (v == Verdict::Error) {
            written(true, false);
            o_.verdict = v;
            return v;
        }
        PORTICO_FUZZ_CHECK(used <= pending_.size());
        consumed(std::string_view(pending_).substr(0, used));
        pending_.erase(0, used);
        PORTICO_FUZZ_CHECK(!wholeFrameAtFront(pending_));
        o_.consumed += used;
        written(false, bytewise_);
        checkInFlight();
        PORTICO_FUZZ_CHECK(o_.verdict == Verdict::Open || v == Verdict::Closed); // Closed stays so
        if (v == Verdict::Closed) {
            PORTICO_FUZZ_CHECK(codec_.inFlight() == 0 && codec_.draining());
            o_.verdict = v;
        }
        return v;
    }

    void checkInFlight() {
        PORTICO_FUZZ_CHECK(codec_.inFlight() == busy_count_);
        PORTICO_FUZZ_CHECK(codec_.inFlight() <= codec_.depth());
        std::size_t listed = 0;
        codec_.forEachInFlight([&](std::uint32_t slot) {
            PORTICO_FUZZ_CHECK(slot < busy_.size() && busy_[slot]);
            ++listed;
        });
        PORTICO_FUZZ_CHECK(listed == busy_count_);
    }

    // The server's frames the codec consumed: the server's side of flow control, as the codec
    // must see it.
    void consumed(std::string_view bytes) {
        std::vector<Frame> fs;
        PORTICO_FUZZ_CHECK(frames(bytes, fs));
        for (const auto& f : fs) {
            switch (f.type) {
            case kData:
                dataIn_ += f.payload.size();
                dataInByStream_[f.stream] += f.payload.size();
                break;
            case kSettings:
                if (f.flags & kAck) break;
                for (std::size_t i = 0; i + 6 <= f.payload.size(); i += 6) {
                    const unsigned id = std::uint8_t(f.payload[i]) << 8 | std::uint8_t(f.payload[i + 1]);
                    const std::uint32_t v = be32(f.payload.data() + i + 2);
                    if (id == 4) peerInitialWindow_ = v;
                    if (id == 5) peerMaxFrame_ = v;
                }
                break;
            case kWindowUpdate:
                if (f.payload.size() == 4)
                    (f.stream == 0 ? peerConnCredit_ : peerCredit_[f.stream]) +=
                        be32(f.payload.data()) & 0x7fffffffu;
                break;
            default:
                break;
            }
        }
    }

    // What the codec wrote since the last look (whole frames). `error`: the verdict was Error (the
    // frames the codec consumed are unknown then). `exact`: the server's frames seen so far are
    // those the codec had seen when it wrote these (after a submit, or one frame per receive).
    void written(bool error, bool exact) {
        std::vector<Frame> fs;
        PORTICO_FUZZ_CHECK(frames(out_, fs));
        std::map<std::uint32_t, bool> sentData; // streams with DATA in this batch
        for (const auto& f : fs) {
            if (blockStream_) PORTICO_FUZZ_CHECK(f.type == kContinuation && f.stream == blockStream_);
            switch (f.type) {
            case kHeaders:
                PORTICO_FUZZ_CHECK(f.stream % 2 == 1 && f.stream > lastStream_);
                lastStream_ = f.stream;
                ended_[f.stream] = f.flags & kEndStream;
                if (!(f.flags & kEndHeaders)) blockStream_ = f.stream;
                block_.assign(f.payload);
                if ((f.flags & kEndHeaders) && (p_.kindSeed & 0x80))
                    PORTICO_FUZZ_CHECK(block_.ends_with(requestIdLiteral(f.stream)));
                checkFrameSize(f, exact);
                o_.written.push_back("HEADERS " + std::to_string(f.stream) + " " + std::to_string(f.flags));
                break;
            case kContinuation:
                PORTICO_FUZZ_CHECK(blockStream_ != 0 && f.stream == blockStream_);
                block_.append(f.payload);
                if ((f.flags & kEndHeaders) && (p_.kindSeed & 0x80))
                    PORTICO_FUZZ_CHECK(block_.ends_with(requestIdLiteral(f.stream)));
                if (f.flags & kEndHeaders) blockStream_ = 0;
                checkFrameSize(f, exact);
                break;
            case kData: {
                PORTICO_FUZZ_CHECK(f.stream % 2 == 1 && f.stream <= lastStream_);
                const auto it = ended_.find(f.stream);
                PORTICO_FUZZ_CHECK(it != ended_.end() && !it->second);
                if (f.flags & kEndStream) it->second = true;
                checkFrameSize(f, exact);
                dataOut_ += f.payload.size();
                dataOutByStream_[f.stream] += f.payload.size();
                sentData[f.stream] = true;
                break;
            }
            case kRstStream:
                PORTICO_FUZZ_CHECK(f.stream % 2 == 1 && f.stream <= lastStream_ && f.payload.size() == 4);
                ended_[f.stream] = true;
                o_.written.push_back("RST_STREAM " + std::to_string(f.stream) + " " +
                                     std::to_string(be32(f.payload.data())));
                break;
            case kWindowUpdate: {
                PORTICO_FUZZ_CHECK(f.payload.size() == 4);
                const std::uint32_t inc = be32(f.payload.data());
                PORTICO_FUZZ_CHECK(inc >= 1 && inc <= 0x7fffffffu);
                if (f.stream == 0) {
                    givenBack_ += inc;
                } else {
                    PORTICO_FUZZ_CHECK(f.stream % 2 == 1 && f.stream <= lastStream_);
                    givenBackByStream_[f.stream] += inc;
                    PORTICO_FUZZ_CHECK(error || givenBackByStream_[f.stream] <= dataInByStream_[f.stream]);
                }
                break;
            }
            case kSettings:
                PORTICO_FUZZ_CHECK(f.stream == 0);
                if (!sawPreface_) { // the client's own SETTINGS, first
                    sawPreface_ = true;
                    PORTICO_FUZZ_CHECK(f.flags == 0);
                    break;
                }
                PORTICO_FUZZ_CHECK(f.flags == kAck && f.payload.empty());
                o_.written.push_back("SETTINGS ACK");
                break;
            case kPing:
                PORTICO_FUZZ_CHECK(f.stream == 0 && f.flags == kAck && f.payload.size() == 8);
                o_.written.push_back("PING ACK " + std::string(f.payload));
                break;
            case kGoaway:
                PORTICO_FUZZ_CHECK(error && f.stream == 0 && f.payload.size() >= 8);
                o_.written.push_back("GOAWAY " + std::to_string(be32(f.payload.data() + 4)));
                break;
            default:
                PORTICO_FUZZ_CHECK(!"a frame type the client never sends");
            }
        }
        PORTICO_FUZZ_CHECK(sawPreface_);
        PORTICO_FUZZ_CHECK(blockStream_ == 0); // a header block is written whole
        out_.clear();
        if (error) return;
        // Windows given back: never more than was received (plus the connection's first update).
        const std::uint64_t extra = p_.settings.connectionWindowBytes - 65535u;
        PORTICO_FUZZ_CHECK(givenBack_ <= dataIn_ + extra);
        // Sent: within the server's connection window (it only grows but by sending).
        PORTICO_FUZZ_CHECK(dataOut_ <= 65535 + peerConnCredit_);
        if (exact) {
            // One frame per call: the windows now are those the DATA was sent under (§6.9.2).
            for (const auto& [stream, yes] : sentData)
                PORTICO_FUZZ_CHECK(std::int64_t(dataOutByStream_[stream]) <=
                                   std::int64_t(peerInitialWindow_) + std::int64_t(peerCredit_[stream]));
        }
    }

    void checkFrameSize(const Frame& f, bool exact) {
        if (exact) PORTICO_FUZZ_CHECK(f.payload.size() <= peerMaxFrame_);
        PORTICO_FUZZ_CHECK(f.payload.size() <= 16777215);
    }

    const Params& p_;
    const bool bytewise_;
    H2ClientCodec codec_;
    std::vector<bool> busy_;
    std::vector<bool> held_; // by slot: holdResponseHead said yes for its response
    std::size_t busy_count_ = 0;
    std::size_t submits_ = 0;
    std::string pending_, out_;
    Outcome o_;
    // The client's frames.
    bool sawPreface_ = false;
    std::uint32_t lastStream_ = 0, blockStream_ = 0;
    std::string block_;                   // the header block being written (HEADERS, then CONTINUATION)
    std::map<std::uint32_t, bool> ended_; // END_STREAM or RST_STREAM sent
    std::uint64_t dataOut_ = 0, givenBack_ = 0;
    std::map<std::uint32_t, std::uint64_t> dataOutByStream_, givenBackByStream_;
    // The server's frames.
    std::uint64_t dataIn_ = 0, peerConnCredit_ = 0;
    std::map<std::uint32_t, std::uint64_t> dataInByStream_, peerCredit_;
    std::uint32_t peerInitialWindow_ = 65535, peerMaxFrame_ = 16384;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2 || size > 1024 * 1024) return 0;
    Params p;
    p.depth = 1 + (data[0] & 7);
    if (data[0] & 8) p.settings = {65535, 65535};
    p.perRound = data[0] >> 4;
    p.kindSeed = data[1];
    const std::string input(reinterpret_cast<const char*>(data + 2), size - 2); // exact-size copy
    std::string_view rest(input);
    while (rest.size() >= 2) {
        const std::size_t len = std::size_t(std::uint8_t(rest[0])) << 8 | std::uint8_t(rest[1]);
        rest.remove_prefix(2);
        p.segments.push_back(rest.substr(0, std::min(len, rest.size())));
        rest.remove_prefix(p.segments.back().size());
    }
    const Outcome whole = Run(p, false).go();
    const Outcome bytewise = Run(p, true).go();
    PORTICO_FUZZ_CHECK(whole.events == bytewise.events);
    PORTICO_FUZZ_CHECK(whole.verdict == bytewise.verdict);
    PORTICO_FUZZ_CHECK(whole.verdict == Verdict::Error || whole.consumed == bytewise.consumed);
    PORTICO_FUZZ_CHECK(whole.written == bytewise.written);
    return 0;
}

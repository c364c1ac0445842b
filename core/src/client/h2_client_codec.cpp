// The load generator's HTTP/2 client framing (h2_client_codec.h). Frame layouts: RFC 9113 §4.1
// (header), §6 (each type); HPACK: RFC 7541.
#include "client/h2_client_codec.h"

#include "client/connection.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace portico::client {

namespace {

constexpr std::uint32_t kNoSlot = 0xffffffffu;
constexpr std::size_t kHeader = 9;              // frame header bytes (§4.1)
constexpr std::uint32_t kOwnMaxFrame = 16384;   // SETTINGS_MAX_FRAME_SIZE we keep (the default)
constexpr std::int64_t kMaxWindow = 0x7fffffff; // §6.9.1
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Streams opened before the server's SETTINGS says how many it takes (nghttp2's default for the
// same race, RFC 9113 §5.1.2: a server may refuse streams above its limit, even a connection error).
constexpr std::uint32_t kStreamsBeforeSettings = 100;

enum FrameType : std::uint8_t {
    kData = 0x0,
    kHeaders = 0x1,
    kPriority = 0x2,
    kRstStream = 0x3,
    kSettings = 0x4,
    kPushPromise = 0x5,
    kPing = 0x6,
    kGoaway = 0x7,
    kWindowUpdate = 0x8,
    kContinuation = 0x9,
};
enum Flag : std::uint8_t {
    kEndStream = 0x1,
    kAck = 0x1,
    kEndHeaders = 0x4,
    kPadded = 0x8,
    kPriorityFlag = 0x20,
};
enum ErrorCode : std::uint32_t {
    kNoError = 0x0,
    kProtocolError = 0x1,
    kInternalError = 0x2,
    kFlowControlError = 0x3,
    kStreamClosed = 0x5,
    kFrameSizeError = 0x6,
    kRefusedStream = 0x7,
    kCancel = 0x8,
    kCompressionError = 0x9,
};

std::uint32_t be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// The 9 bytes of a frame header at `h`.
void frameHeaderAt(char* h, std::size_t length, std::uint8_t type, std::uint8_t flags, std::int32_t id) {
    const char b[kHeader] = {
        static_cast<char>(length >> 16), static_cast<char>(length >> 8), static_cast<char>(length),
        static_cast<char>(type),         static_cast<char>(flags),       static_cast<char>(id >> 24),
        static_cast<char>(id >> 16),     static_cast<char>(id >> 8),     static_cast<char>(id)};
    std::memcpy(h, b, kHeader);
}

void putFrameHeader(std::string& out, std::size_t length, std::uint8_t type, std::uint8_t flags,
                    std::int32_t id) {
    char h[kHeader];
    frameHeaderAt(h, length, type, flags, id);
    out.append(h, kHeader);
}

void put32(std::string& out, std::uint32_t v) {
    const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
    out.append(b, 4);
}

void windowUpdate(std::string& out, std::int32_t id, std::uint32_t increment) {
    putFrameHeader(out, 4, kWindowUpdate, 0, id);
    put32(out, increment);
}

void rstStream(std::string& out, std::int32_t id, std::uint32_t code) {
    putFrameHeader(out, 4, kRstStream, 0, id);
    put32(out, code);
}

Failure failureOf(std::uint32_t code) {
    switch (code) {
    case kNoError:
    case kProtocolError:
    case kFlowControlError:
    case kCompressionError:
    case kFrameSizeError:
        return Failure::Protocol;
    case kRefusedStream: // not processed: safe to send again (RFC 9113 §8.7)
        return Failure::Refused;
    default:
        return Failure::Reset;
    }
}

// ---- HPACK encoding of requests (RFC 7541) ----

// The static table (Appendix A), index = position + 1.
constexpr std::array<std::pair<std::string_view, std::string_view>, 61> kStatic = {{
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
}};

// An integer with an N-bit prefix (§5.1); `first` holds the pattern bits above the prefix.
void putInt(std::string& out, std::uint8_t first, int prefixBits, std::uint64_t v) {
    const std::uint64_t max = (1u << prefixBits) - 1;
    if (v < max) {
        out.push_back(static_cast<char>(first | v));
        return;
    }
    out.push_back(static_cast<char>(first | max));
    v -= max;
    while (v >= 128) {
        out.push_back(static_cast<char>(0x80 | (v & 0x7f)));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// A body must be as long as content-length says (RFC 9113 §8.1.1), except where there is none
// whatever the field says: HEAD, 204, 304 (RFC 9110 §6.4.1).
template <class Stream> bool noBodyExpected(const Stream& s) {
    return s.request->head || s.status == 204 || s.status == 304;
}

void putString(std::string& out, std::string_view s) {
    putInt(out, 0x00, 7, s.size()); // H = 0: raw octets
    out.append(s);
}

// The static table's index of `name` with `value` (full) and of `name` alone; 0: none.
std::pair<std::size_t, std::size_t> staticIndex(std::string_view name, std::string_view value) {
    std::size_t nameIndex = 0;
    for (std::size_t i = 0; i < kStatic.size(); ++i) {
        if (kStatic[i].first != name) continue;
        if (!nameIndex) nameIndex = i + 1;
        if (kStatic[i].second == value) return {i + 1, nameIndex};
    }
    return {0, nameIndex};
}

// A literal field (§6.2): with incremental indexing (pattern 01, 6-bit name index) or without
// (0000, 4-bit); a name index of 0 means the name follows as a string.
void putLiteral(std::string& out, std::string_view name, std::string_view value, std::size_t nameIndex,
                bool incremental) {
    if (incremental)
        putInt(out, 0x40, 6, nameIndex);
    else
        putInt(out, 0x00, 4, nameIndex);
    if (!nameIndex) putString(out, name);
    putString(out, value);
}

} // namespace

std::string encodeRequestBlock(std::span<const HeaderField> fields) {
    std::string out;
    for (const auto& [name, value] : fields) {
        const auto [full, nameIndex] = staticIndex(name, value);
        if (full)
            putInt(out, 0x80, 7, full); // indexed header field (§6.1)
        else
            putLiteral(out, name, value, nameIndex, false);
    }
    return out;
}

std::vector<H2FieldOp> H2RequestFields::prepare(std::span<const HeaderField> fields) {
    std::vector<H2FieldOp> ops;
    ops.reserve(fields.size());
    for (const auto& [name, value] : fields) {
        H2FieldOp op;
        const auto [full, nameIndex] = staticIndex(name, value);
        if (full) {
            putInt(op.bytes, 0x80, 7, full);
            ops.push_back(std::move(op));
            continue;
        }
        std::size_t entry = 0;
        while (entry < entries_.size() && (entries_[entry].first != name || entries_[entry].second != value))
            ++entry;
        const std::size_t size = name.size() + value.size() + 32; // §4.1
        if (entry == entries_.size() && used_ + size <= kTableBytes &&
            entries_.size() < H2FieldOp::kNoEntry) {
            entries_.emplace_back(name, value);
            used_ += size;
        }
        if (entry < entries_.size()) {
            op.entry = static_cast<std::uint16_t>(entry);
            putLiteral(op.bytes, name, value, nameIndex, true);
            putLiteral(op.plain, name, value, nameIndex, false);
        } else {
            putLiteral(op.bytes, name, value, nameIndex, false);
        }
        ops.push_back(std::move(op));
    }
    return ops;
}

// ---- the codec ----

H2ClientCodec::H2ClientCodec(H2ClientEvents& events, unsigned depth, Settings settings)
    : events_(events), settings_(settings), streams_(std::clamp(depth, 1u, 1024u)) {
    free_.reserve(streams_.size());
    waiting_.resize(streams_.size());
    blockedList_.reserve(streams_.size());
    begun_.reserve(streams_.size());
    std::size_t cap = 4;
    while (cap < 2 * streams_.size())
        cap *= 2;
    idKeys_.assign(cap, 0);
    idSlots_.assign(cap, 0);
}

H2ClientCodec::~H2ClientCodec() {
    if (inflater_) nghttp2_hd_inflate_del(inflater_);
}

bool H2ClientCodec::start(std::string& out) {
    for (auto& s : streams_)
        s = Stream{};
    free_.clear();
    for (std::size_t i = streams_.size(); i-- > 0;)
        free_.push_back(static_cast<std::uint32_t>(i));
    waitHead_ = waitCount_ = 0;
    blockedList_.clear();
    begun_.clear();
    std::fill(idKeys_.begin(), idKeys_.end(), 0);
    inFlight_ = openStreams_ = 0;
    connSendWindow_ = peerInitialWindow_ = 65535;
    peerMaxFrame_ = 16384;
    peerMaxStreams_ = kStreamsBeforeSettings;
    connUnacked_ = 0;
    nextId_ = 1;
    lastGoodId_ = 0x7fffffff;
    blockStream_ = 0;
    blockEndStream_ = sawSettings_ = goaway_ = tableSizePending_ = tableSizeSent_ = false;
    indexing_ = true;
    std::fill(inserted_.begin(), inserted_.end(), 0);
    insertedCount_ = 0;
    if (inflater_) {
        nghttp2_hd_inflate_del(inflater_);
        inflater_ = nullptr;
    }
    if (nghttp2_hd_inflate_new(&inflater_) != 0) {
        inflater_ = nullptr;
        return false;
    }
    out.append(kPreface);
    putFrameHeader(out, 12, kSettings, 0, 0);
    out.append("\x00\x02\x00\x00\x00\x00", 6); // SETTINGS_ENABLE_PUSH = 0
    out.append("\x00\x04", 2);                 // SETTINGS_INITIAL_WINDOW_SIZE
    put32(out, settings_.streamWindowBytes);
    if (settings_.connectionWindowBytes > 65535)
        windowUpdate(out, 0, settings_.connectionWindowBytes - 65535);
    return true;
}

// ---- id → slot ----

std::uint32_t H2ClientCodec::find(std::int32_t id) const {
    const std::size_t mask = idKeys_.size() - 1;
    for (std::size_t i = (static_cast<std::uint32_t>(id) >> 1) & mask;; i = (i + 1) & mask) {
        if (idKeys_[i] == id) return idSlots_[i];
        if (idKeys_[i] == 0) return kNoSlot;
    }
}

void H2ClientCodec::insert(std::int32_t id, std::uint32_t slot) {
    const std::size_t mask = idKeys_.size() - 1;
    std::size_t i = (static_cast<std::uint32_t>(id) >> 1) & mask;
    while (idKeys_[i] != 0)
        i = (i + 1) & mask;
    idKeys_[i] = id;
    idSlots_[i] = slot;
}

// Removal with backward shift (no tombstones): later entries of the probe run move up.
void H2ClientCodec::erase(std::int32_t id) {
    const std::size_t mask = idKeys_.size() - 1;
    std::size_t i = (static_cast<std::uint32_t>(id) >> 1) & mask;
    while (idKeys_[i] != id) {
        if (idKeys_[i] == 0) return;
        i = (i + 1) & mask;
    }
    for (std::size_t j = (i + 1) & mask; idKeys_[j] != 0; j = (j + 1) & mask) {
        const std::size_t home = (static_cast<std::uint32_t>(idKeys_[j]) >> 1) & mask;
        // Move j into the hole i when its home is not in (i, j] cyclically.
        const bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (between) continue;
        idKeys_[i] = idKeys_[j];
        idSlots_[i] = idSlots_[j];
        i = j;
    }
    idKeys_[i] = 0;
}

// ---- sending ----

bool H2ClientCodec::submit(const PreparedRequest& request, std::uint32_t& slot, std::string& out) {
    if (goaway_ || free_.empty()) return false;
    // Ids of the requests already waiting count too: each will take the next odd id.
    if (static_cast<std::int64_t>(nextId_) + 2 * static_cast<std::int64_t>(waitCount_) > kMaxWindow)
        return false;
    slot = free_.back();
    free_.pop_back();
    auto& s = streams_[slot];
    s = Stream{};
    s.request = &request;
    s.state = StreamState::Waiting;
    ++inFlight_;
    if (openStreams_ < peerMaxStreams_ && waitCount_ == 0) {
        sendHeaders(slot, out);
    } else {
        waiting_[(waitHead_ + waitCount_) % waiting_.size()] = slot;
        ++waitCount_;
    }
    return true;
}

void H2ClientCodec::sendHeaders(std::uint32_t slot, std::string& out) {
    auto& s = streams_[slot];
    s.id = static_cast<std::int32_t>(nextId_);
    nextId_ += 2;
    s.state = StreamState::Open;
    s.sendWindow = peerInitialWindow_;
    insert(s.id, slot);
    ++openStreams_;
    const bool noBody = s.request->body.empty();
    // The block goes straight after a frame header written now and completed when its length is
    // known; a block larger than the server's frame size moves out and is cut into CONTINUATION.
    const std::size_t at = out.size();
    out.append(kHeader, '\0');
    if (tableSizePending_) {   // once per connection at most
        out.push_back('\x20'); // dynamic table size update to 0 (RFC 7541 §6.3)
        tableSizePending_ = false;
        tableSizeSent_ = true;
    }
    if (s.request->h2Fields.empty())
        out.append(s.request->h2Block);
    else
        encodeFields(s.request->h2Fields, out);
    if (!requestIdPrefix_.empty()) {
        // A literal without indexing, new name (RFC 7541 §6.2.2), no Huffman; the value's length
        // fits the 7-bit prefix (setRequestIdPrefix: under 100 bytes, plus ≤ 10 digits).
        static constexpr char kLiteral[] = "\0\x0cx-request-id";
        static_assert(sizeof kLiteral - 1 == 2 + kRequestIdField.size());
        char field[sizeof kLiteral + 1 + 128];
        char* p = std::copy_n(kLiteral, sizeof kLiteral - 1, field) + 1;
        p = std::copy_n(requestIdPrefix_.data(), requestIdPrefix_.size(), p);
        p = std::to_chars(p, p + 10, static_cast<std::uint32_t>(s.id - 1) / 2).ptr;
        field[sizeof kLiteral - 1] =
            static_cast<char>(p - field - static_cast<std::ptrdiff_t>(sizeof kLiteral));
        out.append(field, p);
    }
    const std::size_t size = out.size() - at - kHeader;
    if (size <= peerMaxFrame_) {
        frameHeaderAt(out.data() + at, size, kHeaders,
                      static_cast<std::uint8_t>(kEndHeaders | (noBody ? kEndStream : 0)), s.id);
        if (!noBody) sendBody(slot, out);
        return;
    }
    const std::string blockCopy = out.substr(at + kHeader);
    out.resize(at);
    const std::string_view block = blockCopy;
    std::size_t offset = 0;
    bool first = true;
    do {
        const std::size_t n = std::min<std::size_t>(peerMaxFrame_, block.size() - offset);
        const bool last = offset + n == block.size();
        std::uint8_t flags = last ? kEndHeaders : 0;
        if (first && noBody) flags |= kEndStream;
        putFrameHeader(out, n, first ? kHeaders : kContinuation, flags, s.id);
        out.append(block.substr(offset, n));
        offset += n;
        first = false;
    } while (offset < block.size());
    if (!noBody) sendBody(slot, out);
}

// The fields of one request: each entry indexed once this connection inserted it, inserted (a
// literal with incremental indexing) the first time. Entries are never evicted (H2RequestFields
// keeps them within the default table size), so entry s of n inserted is at index 62 + n − s.
void H2ClientCodec::encodeFields(const std::vector<H2FieldOp>& ops, std::string& out) {
    for (const auto& op : ops) {
        if (op.entry == H2FieldOp::kNoEntry) {
            out.append(op.bytes);
            continue;
        }
        if (!indexing_) {
            out.append(op.plain);
            continue;
        }
        if (op.entry >= inserted_.size()) inserted_.resize(op.entry + 1u, 0); // the first requests only
        const std::uint16_t s = inserted_[op.entry];
        if (s) {
            putInt(out, 0x80, 7, 62u + insertedCount_ - s); // §6.1, dynamic table (§2.3.3)
            continue;
        }
        out.append(op.bytes);
        inserted_[op.entry] = ++insertedCount_;
    }
}

void H2ClientCodec::sendBody(std::uint32_t slot, std::string& out) {
    auto& s = streams_[slot];
    const std::string& body = s.request->body;
    while (s.bodyOffset < body.size()) {
        const std::int64_t window = std::min(s.sendWindow, connSendWindow_);
        if (window <= 0) {
            if (!s.blocked) {
                s.blocked = true;
                blockedList_.push_back(slot);
            }
            return;
        }
        const std::size_t n = static_cast<std::size_t>(
            std::min<std::int64_t>({window, static_cast<std::int64_t>(peerMaxFrame_),
                                    static_cast<std::int64_t>(body.size() - s.bodyOffset)}));
        const bool last = s.bodyOffset + n == body.size();
        putFrameHeader(out, n, kData, last ? kEndStream : 0, s.id);
        out.append(body, s.bodyOffset, n);
        s.bodyOffset += n;
        s.sendWindow -= static_cast<std::int64_t>(n);
        connSendWindow_ -= static_cast<std::int64_t>(n);
    }
}

// Bodies that waited for a window, after a WINDOW_UPDATE or a SETTINGS change.
void H2ClientCodec::sendBlocked(std::string& out) {
    // sendBody appends a stream that blocks again after the ones looked at here, which then go.
    // An entry of a stream that ended (or whose slot was reused) has blocked == false: skipped.
    const std::size_t n = blockedList_.size();
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t slot = blockedList_[i];
        auto& s = streams_[slot];
        if (s.state != StreamState::Open || !s.blocked) continue;
        s.blocked = false;
        sendBody(slot, out);
    }
    blockedList_.erase(blockedList_.begin(), blockedList_.begin() + static_cast<std::ptrdiff_t>(n));
}

void H2ClientCodec::startWaiting(std::string& out) {
    while (waitCount_ && openStreams_ < peerMaxStreams_ && !goaway_) {
        const std::uint32_t slot = waiting_[waitHead_];
        waitHead_ = (waitHead_ + 1) % waiting_.size();
        --waitCount_;
        sendHeaders(slot, out);
    }
}

// ---- ending streams ----

void H2ClientCodec::release(std::uint32_t slot) {
    auto& s = streams_[slot];
    if (s.blocked) { // its entry goes, so the list stays as short as the streams that wait
        const auto it = std::find(blockedList_.begin(), blockedList_.end(), slot);
        if (it != blockedList_.end()) blockedList_.erase(it);
    }
    if (s.state == StreamState::Open) {
        erase(s.id);
        --openStreams_;
    }
    s.state = StreamState::Free;
    s.blocked = false;
    free_.push_back(slot);
    --inFlight_;
}

void H2ClientCodec::complete(std::uint32_t slot, std::string& out) {
    auto& s = streams_[slot];
    const bool ok = s.status >= 0 && (!s.hasLength || noBodyExpected(s) || s.received == s.contentLength);
    if (!ok) {
        failStream(slot, Failure::Protocol, kProtocolError, out);
        return;
    }
    // A response before the whole request body (§8.1): the rest is not wanted.
    if (s.bodyOffset < s.request->body.size()) rstStream(out, s.id, kNoError);
    const int status = s.status;
    release(slot);
    events_.onStreamResponse(slot, status);
    startWaiting(out);
}

void H2ClientCodec::failStream(std::uint32_t slot, Failure why, std::uint32_t rstCode, std::string& out) {
    auto& s = streams_[slot];
    if (rstCode != kNoError && s.state == StreamState::Open) rstStream(out, s.id, rstCode);
    release(slot);
    events_.onStreamFailed(slot, why);
    startWaiting(out);
}

H2ClientCodec::Verdict H2ClientCodec::connectionError(std::uint32_t code, std::string& out) {
    putFrameHeader(out, 8, kGoaway, 0, 0);
    put32(out, 0); // no stream of the server's was processed
    put32(out, code);
    return Verdict::Error;
}

// ---- receiving ----

H2ClientCodec::Verdict H2ClientCodec::receive(const std::uint8_t* data, std::size_t n, std::size_t& used,
                                              std::string& out) {
    used = 0;
    begun_.clear();
    while (n - used >= kHeader) {
        const std::uint8_t* h = data + used;
        const std::size_t length = (std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2];
        if (length > kOwnMaxFrame) return connectionError(kFrameSizeError, out);
        if (n - used < kHeader + length) break;
        const std::uint8_t type = h[3], flags = h[4];
        const auto id = static_cast<std::int32_t>(be32(h + 5) & 0x7fffffffu);
        const std::uint8_t* p = h + kHeader;
        used += kHeader + length;
        if (!sawSettings_ && (type != kSettings || (flags & kAck)))
            return connectionError(kProtocolError, out);
        // Nothing but CONTINUATION of the same stream may come inside a header block (§6.10).
        if (blockStream_ && (type != kContinuation || id != blockStream_))
            return connectionError(kProtocolError, out);
        bool ok = true;
        switch (type) {
        case kData:
            ok = onData(id, flags, p, length, out);
            break;
        case kHeaders:
            ok = onHeaders(id, flags, p, length, out);
            break;
        case kContinuation:
            if (!blockStream_) return connectionError(kProtocolError, out);
            ok = onBlockFragment(p, length, flags & kEndHeaders, out);
            break;
        case kPriority:
            if (id == 0) return connectionError(kProtocolError, out);
            break; // no priorities are kept (a wrong length only resets a stream: ignored)
        case kRstStream:
            ok = onRstStream(id, p, length, out);
            break;
        case kSettings:
            if (id != 0) return connectionError(kProtocolError, out);
            ok = onSettings(flags, p, length, out);
            break;
        case kPushPromise: // ENABLE_PUSH is 0 (§8.4)
            return connectionError(kProtocolError, out);
        case kPing:
            if (id != 0) return connectionError(kProtocolError, out);
            if (length != 8) return connectionError(kFrameSizeError, out);
            if (!(flags & kAck)) {
                putFrameHeader(out, 8, kPing, kAck, 0);
                out.append(reinterpret_cast<const char*>(p), 8);
            }
            break;
        case kGoaway:
            if (id != 0) return connectionError(kProtocolError, out);
            ok = onGoaway(p, length, out);
            break;
        case kWindowUpdate:
            ok = onWindowUpdate(id, p, length, out);
            break;
        default:
            break; // unknown types are ignored (§4.1, §5.5)
        }
        if (!ok) return Verdict::Error; // the handler appended the GOAWAY
    }
    if (goaway_ && inFlight_ == 0) return Verdict::Closed;
    return Verdict::Open;
}

bool H2ClientCodec::onData(std::int32_t id, std::uint8_t flags, const std::uint8_t* p, std::size_t len,
                           std::string& out) {
    if (id == 0) return connectionError(kProtocolError, out), false;
    std::size_t pad = 0;
    if (flags & kPadded) {
        if (len < 1 || p[0] >= len) return connectionError(kProtocolError, out), false;
        pad = p[0] + 1;
    }
    // Flow control counts the whole payload, padding included (§6.9.1). The windows we announced
    // are large and given back at half, so a server that overruns them is broken.
    connUnacked_ += static_cast<std::uint32_t>(len);
    if (connUnacked_ > settings_.connectionWindowBytes) return connectionError(kFlowControlError, out), false;
    if (connUnacked_ >= settings_.connectionWindowBytes / 2) {
        windowUpdate(out, 0, connUnacked_);
        connUnacked_ = 0;
    }
    const std::uint32_t slot = find(id);
    if (slot == kNoSlot) {
        if (id >= nextId_ || (id & 1) == 0) return connectionError(kProtocolError, out), false; // idle
        return true; // a stream we already ended or reset (§5.1: STREAM_CLOSED, ignored)
    }
    auto& s = streams_[slot];
    if (s.status < 0 || s.trailers) { // DATA before the final header block, or after trailers
        failStream(slot, Failure::Protocol, kProtocolError, out);
        return true;
    }
    s.unacked += static_cast<std::uint32_t>(len);
    if (s.unacked > settings_.streamWindowBytes) {
        failStream(slot, Failure::Protocol, kFlowControlError, out);
        return true;
    }
    s.received += len - pad;
    // Longer than content-length: malformed at once (RFC 9113 §8.1.1), not only at END_STREAM.
    if (s.hasLength && !noBodyExpected(s) && s.received > s.contentLength) {
        failStream(slot, Failure::Protocol, kProtocolError, out);
        return true;
    }
    if (flags & kEndStream) {
        complete(slot, out);
        return true;
    }
    if (s.unacked >= settings_.streamWindowBytes / 2) {
        windowUpdate(out, id, s.unacked);
        s.unacked = 0;
    }
    return true;
}

bool H2ClientCodec::onHeaders(std::int32_t id, std::uint8_t flags, const std::uint8_t* p, std::size_t len,
                              std::string& out) {
    if (id == 0) return connectionError(kProtocolError, out), false;
    std::size_t begin = 0, end = len;
    if (flags & kPadded) {
        if (len < 1) return connectionError(kFrameSizeError, out), false;
        const std::size_t pad = p[0];
        if (pad >= len) return connectionError(kProtocolError, out), false; // §6.2
        begin = 1;
        end = len - pad;
    }
    if (flags & kPriorityFlag) {
        if (end - begin < 5) return connectionError(kProtocolError, out), false;
        begin += 5;
    }
    const std::uint32_t slot = find(id);
    if (slot == kNoSlot && (id >= nextId_ || (id & 1) == 0))
        return connectionError(kProtocolError, out), false;
    blockStream_ = id;
    blockSlot_ = slot;
    blockEndStream_ = flags & kEndStream;
    if (slot != kNoSlot) {
        auto& s = streams_[slot];
        if (s.status >= 0) s.trailers = true; // after the final header block: trailers (§8.1)
        if (!s.begun) {
            s.begun = true;
            begun_.push_back(slot);
        }
    }
    return onBlockFragment(p + begin, end - begin, flags & kEndHeaders, out);
}

// A piece of the header block of blockStream_: decoded now, as HPACK state must follow every block
// (also one of a stream we no longer track).
bool H2ClientCodec::onBlockFragment(const std::uint8_t* p, std::size_t len, bool last, std::string& out) {
    Stream* s = blockSlot_ != kNoSlot ? &streams_[blockSlot_] : nullptr;
    for (;;) {
        nghttp2_nv nv;
        int inflateFlags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(inflater_, &nv, &inflateFlags, p, len, last ? 1 : 0);
        if (rv < 0) return connectionError(kCompressionError, out), false;
        p += rv;
        len -= static_cast<std::size_t>(rv);
        if (inflateFlags & NGHTTP2_HD_INFLATE_EMIT) {
            if (s && !s->trailers) { // trailers are decoded (HPACK state) and dropped
                if (nv.namelen == 7 && std::memcmp(nv.name, ":status", 7) == 0) {
                    int status = 0;
                    for (std::size_t i = 0; i < nv.valuelen && i < 3; ++i)
                        status = status * 10 + (nv.value[i] - '0');
                    const bool digits =
                        nv.valuelen == 3 && std::all_of(nv.value, nv.value + 3,
                                                        [](std::uint8_t c) { return c >= '0' && c <= '9'; });
                    s->status =
                        static_cast<std::int16_t>(digits && status >= 100 && status <= 599 ? status : 0);
                    if (s->status >= 200 && askHeads_) s->hold = events_.holdResponseHead(blockSlot_);
                } else if (nv.namelen == 14 && std::memcmp(nv.name, "content-length", 14) == 0) {
                    std::uint64_t v = 0;
                    bool good = nv.valuelen > 0 && nv.valuelen <= 19;
                    for (std::size_t i = 0; good && i < nv.valuelen; ++i) {
                        if (nv.value[i] < '0' || nv.value[i] > '9')
                            good = false;
                        else
                            v = v * 10 + (nv.value[i] - '0');
                    }
                    if (!good || (s->hasLength && s->contentLength != v)) s->status = -2; // malformed
                    s->hasLength = true;
                    s->contentLength = v;
                }
                if (s->hold && nv.namelen && nv.name[0] != ':')
                    events_.onResponseField(blockSlot_, {reinterpret_cast<const char*>(nv.name), nv.namelen},
                                            {reinterpret_cast<const char*>(nv.value), nv.valuelen});
            }
            continue;
        }
        if (inflateFlags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(inflater_);
            break;
        }
        if (len == 0) break; // the rest in CONTINUATION
    }
    if (!last) return true;
    blockStream_ = 0;
    if (!s) return true;
    const std::uint32_t slot = blockSlot_;
    if (s->trailers) {
        if (!blockEndStream_) { // trailers end the stream (§8.1)
            failStream(slot, Failure::Protocol, kProtocolError, out);
            return true;
        }
        complete(slot, out);
        return true;
    }
    if (s->status <= 0) { // no :status, one that is not three digits, or a bad content-length
        failStream(slot, Failure::Protocol, kProtocolError, out);
        return true;
    }
    if (s->status >= 100 && s->status < 200) {
        if (s->status == 101 || blockEndStream_) { // 101 is not used in HTTP/2 (§8.6)
            failStream(slot, Failure::Protocol, kProtocolError, out);
            return true;
        }
        s->status = -1; // informational: the final response follows
        s->hasLength = false;
        return true;
    }
    if (blockEndStream_) complete(slot, out);
    return true;
}

bool H2ClientCodec::onSettings(std::uint8_t flags, const std::uint8_t* p, std::size_t len, std::string& out) {
    if (flags & kAck) {
        if (len != 0) return connectionError(kFrameSizeError, out), false;
        return true;
    }
    if (len % 6 != 0) return connectionError(kFrameSizeError, out), false;
    // Until the server's first SETTINGS we assumed a limit; its SETTINGS without
    // MAX_CONCURRENT_STREAMS means none (§6.5.2: "Initially, there is no limit").
    if (!sawSettings_) peerMaxStreams_ = 0xffffffffu;
    for (std::size_t i = 0; i < len; i += 6) {
        const std::uint16_t key = static_cast<std::uint16_t>((p[i] << 8) | p[i + 1]);
        const std::uint32_t v = be32(p + i + 2);
        switch (key) {
        case 0x1: // HEADER_TABLE_SIZE: below the default, the next block we send must say the
                  // size our encoder uses (RFC 7541 §4.2): 0, as it never indexes; once is enough.
            // Entries inserted so far go with that update: nothing is indexed any more.
            if (v < 4096 && !tableSizeSent_) {
                tableSizePending_ = true;
                indexing_ = false;
            }
            break;
        case 0x2: // ENABLE_PUSH: a server may only send 0 (§6.5.2)
            if (v != 0) return connectionError(kProtocolError, out), false;
            break;
        case 0x3: // MAX_CONCURRENT_STREAMS
            peerMaxStreams_ = v;
            break;
        case 0x4: { // INITIAL_WINDOW_SIZE: open streams' windows move by the difference (§6.9.2)
            if (v > kMaxWindow) return connectionError(kFlowControlError, out), false;
            const std::int64_t delta = static_cast<std::int64_t>(v) - peerInitialWindow_;
            peerInitialWindow_ = v;
            for (auto& s : streams_) {
                if (s.state != StreamState::Open) continue;
                s.sendWindow += delta;
                if (s.sendWindow > kMaxWindow) return connectionError(kFlowControlError, out), false;
            }
            break;
        }
        case 0x5: // MAX_FRAME_SIZE
            if (v < 16384 || v > 16777215) return connectionError(kProtocolError, out), false;
            peerMaxFrame_ = v;
            break;
        default:
            break; // MAX_HEADER_LIST_SIZE, unknown: nothing to do
        }
    }
    sawSettings_ = true;
    putFrameHeader(out, 0, kSettings, kAck, 0);
    sendBlocked(out);
    startWaiting(out);
    return true;
}

bool H2ClientCodec::onWindowUpdate(std::int32_t id, const std::uint8_t* p, std::size_t len,
                                   std::string& out) {
    if (len != 4) return connectionError(kFrameSizeError, out), false;
    const std::uint32_t increment = be32(p) & 0x7fffffffu;
    if (id == 0) {
        if (increment == 0) return connectionError(kProtocolError, out), false;
        connSendWindow_ += increment;
        if (connSendWindow_ > kMaxWindow) return connectionError(kFlowControlError, out), false;
        sendBlocked(out);
        return true;
    }
    const std::uint32_t slot = find(id);
    if (slot == kNoSlot) {
        if (id >= nextId_ || (id & 1) == 0) return connectionError(kProtocolError, out), false;
        return true;
    }
    auto& s = streams_[slot];
    if (increment == 0) {
        failStream(slot, Failure::Protocol, kProtocolError, out);
        return true;
    }
    s.sendWindow += increment;
    if (s.sendWindow > kMaxWindow) {
        failStream(slot, Failure::Protocol, kFlowControlError, out);
        return true;
    }
    if (s.blocked) sendBlocked(out);
    return true;
}

bool H2ClientCodec::onRstStream(std::int32_t id, const std::uint8_t* p, std::size_t len, std::string& out) {
    if (id == 0) return connectionError(kProtocolError, out), false;
    if (len != 4) return connectionError(kFrameSizeError, out), false;
    const std::uint32_t slot = find(id);
    if (slot == kNoSlot) {
        if (id >= nextId_ || (id & 1) == 0) return connectionError(kProtocolError, out), false;
        return true;
    }
    release(slot); // closed by the server: no RST_STREAM back
    events_.onStreamFailed(slot, failureOf(be32(p)));
    startWaiting(out);
    return true;
}

bool H2ClientCodec::onGoaway(const std::uint8_t* p, std::size_t len, std::string& out) {
    if (len < 8) return connectionError(kFrameSizeError, out), false;
    const auto last = static_cast<std::int32_t>(be32(p) & 0x7fffffffu);
    goaway_ = true;
    lastGoodId_ = std::min(lastGoodId_, last);
    // Streams above the last id and those never sent were not processed (§6.8).
    for (std::uint32_t i = 0; i < streams_.size(); ++i) {
        auto& s = streams_[i];
        if (s.state == StreamState::Free) continue;
        if (s.state == StreamState::Open && s.id <= lastGoodId_) continue;
        release(i);
        events_.onStreamFailed(i, Failure::Refused);
    }
    waitHead_ = waitCount_ = 0;
    return true;
}

} // namespace portico::client

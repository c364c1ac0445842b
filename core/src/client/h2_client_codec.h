// The HTTP/2 client framing of the load generator's connections (client::Connection, connection.h):
// RFC 9113 framing, flow control and stream states written for many small requests per
// connection, with nghttp2's HPACK decoder (RFC 7541, nghttp2_hd_inflate_*) for the responses'
// header blocks. It does no I/O: bytes from the server go in through receive(), and what the
// client owes (preface, SETTINGS, HEADERS, DATA, ACKs, WINDOW_UPDATE, RST_STREAM, GOAWAY) is
// appended to the caller's output string. Bodies are checked for framing and dropped.
//
// Why not an nghttp2 client session: a session costs about 9 KB of touched memory per connection
// (its state, the first page of a 16 KiB outbound buffer, an HPACK deflater); this codec keeps a
// stream table of `depth` entries and an HPACK inflater, so 10,000 h2 connections fit in the
// load generator's memory goal (docs/benchmarks.md). Requests are sent as header blocks encoded
// once (encodeRequestBlock): static-table references and literals without indexing, valid on
// every connection at any time, so no per-connection HPACK encoder exists at all.
//
// Not thread-safe: one thread drives a codec (the connection's io_context thread).
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::client {

struct PreparedRequest;
enum class Failure : std::uint8_t;

/// One header field of a request: name (lower-case for HTTP/2, RFC 9113 §8.2.1) and value.
using HeaderField = std::pair<std::string_view, std::string_view>;

/// The HPACK header block (RFC 7541) of `fields`, in order: a field whose name and value are in
/// the static table (Appendix A) as an indexed field (§6.1), any other as a literal without
/// indexing (§6.2.2) that names the static entry when the name is there, strings without Huffman
/// coding (§5.2). It never refers to or changes the dynamic table, so the same bytes may be sent
/// on any connection at any time. Names and values are taken as given (the caller validates).
std::string encodeRequestBlock(std::span<const HeaderField> fields);

/// One field of a request prepared by H2RequestFields: sent indexed once the connection's dynamic
/// table holds it.
struct H2FieldOp {
    static constexpr std::uint16_t kNoEntry = 0xffff;
    /// The field's entry number in its H2RequestFields, or kNoEntry: `bytes` is sent every time.
    std::uint16_t entry = kNoEntry;
    /// The field's first sending: for an entry a literal with incremental indexing (RFC 7541
    /// §6.2.1), else an indexed static field (§6.1) or a literal without indexing (§6.2.2).
    std::string bytes;
    /// Entries only: the field as a literal without indexing, for a server that allows no
    /// dynamic table (SETTINGS_HEADER_TABLE_SIZE below 4,096).
    std::string plain;
};

/// The header fields of a run's request kinds prepared for HPACK once, the way browsers and
/// h2load send them: a field in the static table with its value is indexed (§6.1); any other
/// field is inserted in the connection's dynamic table the first time that connection sends it
/// and referred to by index afterwards (1 byte where the literal took dozens), as long as all
/// the fields together fit the table's default 4,096 bytes (§4.1: name + value + 32 each), so no
/// entry is ever evicted and its index is known without an encoder per connection (the codec
/// keeps one number per entry). Fields beyond that budget go as literals without indexing.
/// Shared by every connection of a run; not thread-safe while prepare() runs.
class H2RequestFields {
public:
    static constexpr std::size_t kTableBytes = 4096;
    /// The operations for `fields` (names lower-case, in order); equal fields of several requests
    /// share one entry.
    std::vector<H2FieldOp> prepare(std::span<const HeaderField> fields);
    std::size_t entries() const { return entries_.size(); }

private:
    std::vector<std::pair<std::string, std::string>> entries_;
    std::size_t used_ = 0; // table bytes of the entries
};

/// What the codec tells its owner; called from inside receive() or submit(). A slot is a number
/// in 0..depth-1 naming one request from submit() until one of these two calls for it.
class H2ClientEvents {
public:
    /// The request in `slot` got its whole response (final :status, then END_STREAM; a body as long
    /// as its content-length said): `status` 200..599. A response without a valid :status (three
    /// digits, 100..599) is malformed (RFC 9113 §8.1.1): onStreamFailed with Failure::Protocol.
    virtual void onStreamResponse(std::uint32_t slot, int status) = 0;
    /// The request in `slot` ended without a complete response: the server reset the stream
    /// (RST_STREAM: PROTOCOL_ERROR, FLOW_CONTROL_ERROR, COMPRESSION_ERROR, FRAME_SIZE_ERROR or
    /// NO_ERROR before the end as Failure::Protocol, REFUSED_STREAM as Failure::Refused, any other
    /// code as Failure::Reset), the response was malformed (Protocol), or GOAWAY said the server
    /// will not process it or it was never sent (Refused).
    virtual void onStreamFailed(std::uint32_t slot, Failure why) = 0;
    /// The final (non-1xx) :status of the response in `slot` was decoded: true to have its other
    /// fields reported by onResponseField as they are decoded (HPACK state allows no later look).
    virtual bool holdResponseHead(std::uint32_t slot) {
        (void)slot;
        return false;
    }
    /// One field of the final response head in `slot` (after holdResponseHead returned true), in
    /// received order, pseudo-fields left out; the views are valid only during the call. Trailers
    /// are not reported.
    virtual void onResponseField(std::uint32_t slot, std::string_view name, std::string_view value) {
        (void)slot, (void)name, (void)value;
    }

protected:
    ~H2ClientEvents() = default;
};

/// One HTTP/2 connection's client side: up to `depth` requests in flight as streams.
class H2ClientCodec {
public:
    /// What the client announces (RFC 9113 §6.5.2, §6.9). Windows in bytes, 65,535..2^31-1.
    struct Settings {
        std::uint32_t streamWindowBytes = (1u << 30) - 1;     ///< SETTINGS_INITIAL_WINDOW_SIZE
        std::uint32_t connectionWindowBytes = (1u << 30) - 1; ///< by WINDOW_UPDATE on stream 0
    };
    /// How receive() left the connection.
    enum class Verdict : std::uint8_t {
        Open,   ///< go on reading
        Closed, ///< the server sent GOAWAY and no stream of ours is left: close the connection
        Error,  ///< a connection error (RFC 9113 §5.4.1): GOAWAY is in `out`; fail what is in flight
    };

    /// `depth` 1..1024 requests at once; `events` must outlive the codec.
    H2ClientCodec(H2ClientEvents& events, unsigned depth, Settings settings);
    ~H2ClientCodec();
    H2ClientCodec(const H2ClientCodec&) = delete;
    H2ClientCodec& operator=(const H2ClientCodec&) = delete;

    /// A new connection: forgets every stream (without events) and both HPACK states, then appends the
    /// client's connection preface (§3.4): the magic, SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE)
    /// and the connection's WINDOW_UPDATE. False only when the HPACK decoder cannot be allocated.
    bool start(std::string& out);

    /// Queues `request` (it must outlive its response) in the free slot it returns in `slot` and
    /// appends its HEADERS (CONTINUATION when the block is larger than the server's
    /// SETTINGS_MAX_FRAME_SIZE) and the DATA the flow-control windows allow; the rest follows from
    /// receive() as the server opens its windows. Beyond the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS frame arrives, as nghttp2 assumes)
    /// the request waits in the codec and is sent when a stream ends. Requires inFlight() < depth(). False,
    /// with nothing queued, when no stream id is left (§5.1.1) or the server sent GOAWAY (draining()).
    bool submit(const PreparedRequest& request, std::uint32_t& slot, std::string& out);

    /// Consumes the complete frames at the front of `data` (`n` bytes) and sets `used` to their
    /// length: a frame cut at the end stays for the next call, with the bytes that complete it.
    /// Frames larger than 16,384 bytes (the SETTINGS_MAX_FRAME_SIZE the client keeps) are a
    /// FRAME_SIZE_ERROR, so the caller's buffer needs 16,393 bytes at most for one frame.
    /// Events are reported from inside; replies go to `out`.
    Verdict receive(const std::uint8_t* data, std::size_t n, std::size_t& used, std::string& out);

    /// Whether holdResponseHead is asked at each final response head (default: no, never called).
    void askResponseHeads(bool on) { askHeads_ = on; }
    /// Non-empty: every request's header block ends with the field `x-request-id:
    /// <prefix><(stream id − 1) / 2>` as a literal without indexing, new name (RFC 7541 §6.2.2);
    /// `prefix` is visible ASCII, under 100 bytes (a longer one is ignored: no field). Set it before the
    /// opening's first submit().
    void setRequestIdPrefix(std::string prefix) {
        if (prefix.size() < 100) requestIdPrefix_ = std::move(prefix);
    }

    std::size_t inFlight() const { return inFlight_; }
    std::size_t depth() const { return streams_.size(); }
    /// The slots whose response's first HEADERS frame came in the last receive() (ended since or
    /// not: see inFlight(slot)).
    const std::vector<std::uint32_t>& begunThisRead() const { return begun_; }
    /// Whether `slot` holds a request in flight.
    bool inFlight(std::uint32_t slot) const { return streams_[slot].state != StreamState::Free; }
    /// The server sent GOAWAY: no new request; Closed follows when the last one in flight ends.
    bool draining() const { return goaway_; }
    /// Calls `f(slot)` for every request in flight.
    template <class F> void forEachInFlight(F&& f) const {
        for (std::uint32_t i = 0; i < streams_.size(); ++i)
            if (streams_[i].state != StreamState::Free) f(i);
    }

private:
    enum class StreamState : std::uint8_t { Free, Waiting, Open };
    struct Stream {
        const PreparedRequest* request = nullptr;
        std::int64_t sendWindow = 0;     // bytes the server lets this stream send
        std::uint64_t bodyOffset = 0;    // request body bytes sent
        std::uint64_t received = 0;      // response body bytes (DATA payload without padding)
        std::uint64_t contentLength = 0; // valid when hasLength
        std::uint32_t unacked = 0;       // received DATA (with padding) not yet given back
        std::int32_t id = 0;             // stream id once sent
        std::int16_t status = -1;        // :status; 0: not three digits, -1: none yet, -2: bad content-length
        StreamState state = StreamState::Free;
        bool hasLength = false;
        bool blocked = false;  // body waiting for window
        bool trailers = false; // the final header block was received; any more is trailers
        bool begun = false;    // a HEADERS frame of the response came
        bool hold = false;     // the final head's fields go to onResponseField
    };

    // Stream id → slot: open addressing with linear probing, capacity a power of two ≥ 2·depth.
    std::uint32_t find(std::int32_t id) const;
    void insert(std::int32_t id, std::uint32_t slot);
    void erase(std::int32_t id);

    void sendHeaders(std::uint32_t slot, std::string& out);
    void encodeFields(const std::vector<H2FieldOp>& ops, std::string& out);
    void sendBody(std::uint32_t slot, std::string& out);
    void sendBlocked(std::string& out);
    void startWaiting(std::string& out);
    void release(std::uint32_t slot);
    void complete(std::uint32_t slot, std::string& out);
    void failStream(std::uint32_t slot, Failure why, std::uint32_t rstCode, std::string& out);
    Verdict connectionError(std::uint32_t code, std::string& out);

    // Frame handlers: Open, or a connection error code in `error`.
    bool onData(std::int32_t id, std::uint8_t flags, const std::uint8_t* p, std::size_t len,
                std::string& out);
    bool onHeaders(std::int32_t id, std::uint8_t flags, const std::uint8_t* p, std::size_t len,
                   std::string& out);
    bool onBlockFragment(const std::uint8_t* p, std::size_t len, bool last, std::string& out);
    bool onSettings(std::uint8_t flags, const std::uint8_t* p, std::size_t len, std::string& out);
    bool onWindowUpdate(std::int32_t id, const std::uint8_t* p, std::size_t len, std::string& out);
    bool onRstStream(std::int32_t id, const std::uint8_t* p, std::size_t len, std::string& out);
    bool onGoaway(const std::uint8_t* p, std::size_t len, std::string& out);

    H2ClientEvents& events_;
    bool askHeads_ = false;
    Settings settings_;
    std::vector<Stream> streams_;        // by slot
    std::vector<std::uint32_t> free_;    // free slots
    std::vector<std::uint32_t> waiting_; // slots waiting for MAX_CONCURRENT_STREAMS, FIFO (ring)
    std::size_t waitHead_ = 0, waitCount_ = 0;
    std::vector<std::uint32_t> blockedList_; // slots whose body waits for a window
    std::vector<std::uint32_t> begun_;       // begunThisRead()
    std::vector<std::int32_t> idKeys_;       // the id → slot table (0: empty)
    std::vector<std::uint32_t> idSlots_;
    nghttp2_hd_inflater* inflater_ = nullptr;
    std::size_t inFlight_ = 0;
    std::size_t openStreams_ = 0; // streams sent and not ended (counted against the limit)
    std::int64_t connSendWindow_ = 65535;
    std::int64_t peerInitialWindow_ = 65535;
    std::uint32_t peerMaxFrame_ = 16384;
    std::uint32_t peerMaxStreams_ = 100;
    std::uint32_t connUnacked_ = 0; // received DATA not yet given back on stream 0
    std::int64_t nextId_ = 1;       // 64 bits: it passes 2^31-1 after the last id
    std::int32_t lastGoodId_ = 0x7fffffff;
    // The header block being received (HEADERS then CONTINUATION until END_HEADERS).
    std::int32_t blockStream_ = 0; // 0: none
    std::uint32_t blockSlot_ = 0;  // the slot, or kNoSlot when the stream is not ours any more
    bool blockEndStream_ = false;
    bool sawSettings_ = false;      // the server's preface (a SETTINGS frame) arrived
    bool tableSizePending_ = false; // the next header block starts with a table size update to 0
    bool tableSizeSent_ = false;
    std::string requestIdPrefix_;         // setRequestIdPrefix
    bool indexing_ = true;                // false once the server allowed no dynamic table
    std::vector<std::uint16_t> inserted_; // by H2FieldOp::entry: 1-based insertion number, 0: not yet
    std::uint16_t insertedCount_ = 0;
    bool goaway_ = false;
};

} // namespace portico::client

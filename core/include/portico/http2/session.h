// The one way Portico makes an nghttp2 session (RFC 9113), for both ends: the HTTP/2 server
// session, the reverse proxy's upstream connections, the load generator's connections and
// replay. Each consumer keeps its own callbacks and I/O loop; what they share is here: the
// callbacks table's lifetime, Portico's allocator (io::h2mem), the SETTINGS each end announces,
// the connection window, flow-control mode and nghttp2's flood backstops, and header fields.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace portico::http2 {

/// An owned nghttp2 callbacks table. A session copies the table when it is made, so one table
/// may serve many sessions and may be destroyed after them. Empty (get() == nullptr) only when
/// nghttp2 could not allocate it; makeSession then fails.
class Callbacks {
public:
    /// An empty table: set the callbacks through get().
    Callbacks();
    /// A table that `set` filled (called once, only when the table was allocated), e.g.
    /// `static const http2::Callbacks callbacks([](nghttp2_session_callbacks* t) { ... });`.
    explicit Callbacks(void (*set)(nghttp2_session_callbacks* table)) : Callbacks() {
        if (table_) set(table_);
    }
    ~Callbacks();
    Callbacks(const Callbacks&) = delete;
    Callbacks& operator=(const Callbacks&) = delete;
    nghttp2_session_callbacks* get() const { return table_; }

private:
    nghttp2_session_callbacks* table_ = nullptr;
};

/// Which end of the connection the session is (RFC 9113 §3.4: the client sends the preface).
enum class Side : std::uint8_t { Client, Server };

/// What a session announces in its first SETTINGS frame (RFC 9113 §6.5.2) and how it keeps its
/// receive windows (§6.9). A field left at 0 is not announced (the RFC's default holds for the
/// peer) or, for nghttp2's backstops, keeps nghttp2's default.
struct SessionSettings {
    Side side = Side::Client;
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window, bytes, 1..2^31-1 (0: the RFC's
    /// 65,535, not announced).
    std::uint32_t streamWindowBytes = 0;
    /// The connection's receive window, bytes, 1..2^31-1, set with a WINDOW_UPDATE on stream 0 at
    /// start (0: the RFC's 65,535).
    std::uint32_t connectionWindowBytes = 0;
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the peer may open at once (0: not announced).
    std::uint32_t maxConcurrentStreams = 0;
    /// SETTINGS_MAX_HEADER_LIST_SIZE, bytes (0: not announced).
    std::uint32_t maxHeaderListBytes = 0;
    /// Announce SETTINGS_NO_RFC7540_PRIORITIES = 1 (RFC 9218 §2.1): no dependency tree is kept.
    bool noRfc7540Priorities = false;
    /// true: received DATA is acknowledged (WINDOW_UPDATE) only when the consumer calls
    /// nghttp2_session_consume, so a slow reader holds the sender back (end-to-end flow control);
    /// false: nghttp2 acknowledges as the bytes arrive.
    bool manualWindowUpdates = false;
    /// nghttp2's backstops against floods (0: nghttp2's defaults): queued outbound ACKs
    /// (SETTINGS, PING) before the session fails, incoming RST_STREAM as a token bucket (burst,
    /// per second), CONTINUATION frames per header block.
    std::size_t maxOutboundAck = 0;
    std::uint64_t resetBurst = 0;
    std::uint64_t resetRatePerSecond = 0;
    std::uint32_t maxContinuations = 0;
};

struct SessionDeleter {
    void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
};
using SessionPtr = std::unique_ptr<nghttp2_session, SessionDeleter>;

/// A session for `side` with Portico's allocator, `callbacks` copied in and `user` as the
/// callbacks' user data, its SETTINGS frame and connection window already queued (a client also
/// announces SETTINGS_ENABLE_PUSH = 0: no consumer takes pushed streams). Nothing is sent until
/// the caller drains the session (nghttp2_session_mem_send). Returns null with the reason in
/// `error` when nghttp2 cannot make or set it up (out of memory, a window out of range).
SessionPtr makeSession(const Callbacks& callbacks, void* user, const SessionSettings& settings,
                       std::string& error);

/// A header field for nghttp2_submit_* pointing at `name` and `value`, which must stay valid until
/// the submit call returns (nghttp2 copies them unless `flags` says NO_COPY, then until the
/// frame is sent). Names must already be lower case (RFC 9113 §8.2.1).
inline nghttp2_nv field(std::string_view name, std::string_view value,
                        std::uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            flags};
}

/// RFC 9113 §8.2.2: a field an HTTP/2 message must not carry (Connection, Keep-Alive,
/// Proxy-Connection, Transfer-Encoding, Upgrade; TE with any value but "trailers"). Names and the
/// TE value compare case-insensitively. Host is not among them: a client turns it into :authority.
bool isConnectionSpecific(std::string_view name, std::string_view value);

} // namespace portico::http2

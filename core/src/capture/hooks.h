// What the connections call to capture an exchange. Every call site is `if (cap) ...`, so with
// capture off a connection pays one branch per hook and owns no capture state at all.
#pragma once

#include "capture/recorder.h"

#include <portico/capture/grpc.h>

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;

namespace portico::capture {

/// Labels of the vhost and route an exchange went to (views into the snapshot's config).
struct RouteLabels {
    std::string_view vhost;
    std::string_view route;
};
RouteLabels labelsFor(const config::Vhost& vhost, const routing::RouteResult& rr);

/// Everything about one exchange that the connection knows when it has its response.
struct ExchangeInput {
    Protocol protocol = Protocol::Http1;
    std::uint8_t httpVersion = 11;
    std::uint32_t streamId = 0;
    SSL* ssl = nullptr;
    std::uint16_t localPort = 0;
    const http::Request* req = nullptr;                 ///< may be a default Request (refused before parsing)
    std::string_view method, target, authority, scheme; ///< override req's when non-empty (HTTP/2)
    const http::Response* res = nullptr;
    std::string_view responseHead; ///< HTTP/1.1: the serialized head as sent ("HTTP/1.1 200 OK\r\n...")
    std::string_view h2Date;       ///< HTTP/2: the `date` value the response was sent with ("" = none)
    /// HTTP/1.1: bytes of the request head as received; HTTP/2: its HPACK-decoded size (name and
    /// value bytes of every field, pseudo-header fields included).
    std::uint64_t requestHeadBytes = 0;
    std::uint64_t requestBodySize = 0;
    std::uint64_t responseBodySize = 0;
    bool responseHasBody = true; ///< false for HEAD, 1xx, 204, 304
    std::string_view error;
    RouteLabels labels;
    std::int64_t requestStartNs = -1; ///< first byte of the request (steady ns)
    std::array<std::int64_t, kPhaseCount> phases = kNoPhases;
    Source source = Source::Server; ///< Server: the connection's (ConnCapture::source)
    /// Proxied: the upstream connection's address and TLS (Exchange::upstreamAddress, ...).
    std::string_view upstreamAddress, upstreamTlsVersion, upstreamAlpn;
    /// The names of the rules that changed the exchange, in the order they applied, separated by
    /// '\n' ("" = none; Exchange::rules).
    std::string_view rules;
    /// The request's / response's header fields before rules changed them, "Name: value\r\n" per
    /// field ("" = the rules did not change them; Exchange::originalRequestFields, ...).
    std::string_view originalRequestFields, originalResponseFields;
    /// The request's / response's body before a replace_body rewrote it ("" = no rule changed it;
    /// Exchange::originalRequestBody, ...): any length, the record keeps a prefix of at most
    /// capture.body_bytes (kOriginalBodyTruncated when it is cut).
    std::string_view originalRequestBody, originalResponseBody;
};

/// Per-connection capture state (heap, only when capture was on when the connection started).
struct ConnCapture {
    Recorder* rec = nullptr;
    /// The capture settings of the snapshot the connection started with, copied: a connection
    /// outlives that snapshot when the config is swapped (a pointer into it was a use-after-free
    /// under ASan in the soak: an in-flight proxied response after another worker dropped the
    /// last reference).
    struct Settings {
        std::uint64_t bodyBytes = 0;   ///< config::Capture::bodyBytes
        std::uint64_t recordBytes = 0; ///< config::Capture::recordBytes
        std::uint64_t wsMessages = 0;  ///< config::Capture::wsMessages
    } cfg;
    std::uint64_t connectionId = 0;
    std::string client; ///< "127.0.0.1:53012"
    /// Where this connection's exchanges come from: Intercepted inside a forward proxy's CONNECT;
    /// Server otherwise (a forward proxy's absolute-form and CONNECT records say so themselves).
    Source source = Source::Server;
    bool serverTiming = false;
    std::int64_t acceptedNs = -1;
    std::int64_t tlsDoneNs = -1;
    // The request in progress (HTTP/1.1).
    std::int64_t headNs = -1;
    std::uint64_t headBytes = 0;
    std::int64_t bodyDoneNs = -1;
    std::int64_t routeNs = -1;
    RouteLabels labels;
    std::uint32_t requests = 0; ///< exchanges seen on this connection
    // HTTP/1.1 records written but not yet published (all in one drive() turn) ...
    std::uint32_t pending = 0;
    std::int64_t firstByteNs = -1;
    // ... and records published before their response was fully written.
    std::uint64_t awaitFirst = 0;
    std::uint32_t awaitCount = 0;

    void resetRequest() {
        headNs = bodyDoneNs = routeNs = -1;
        labels = {};
    }
};

/// Creates the state for a new connection when capture is on in `cfg`; null otherwise.
std::unique_ptr<ConnCapture> beginConnection(Recorder& rec, const config::Config& cfg, std::string client);

/// Asks (without waiting) which process on this machine is the client of `cc`'s connection,
/// accepted as socket `fd`: the collector puts the answer in its records (Exchange::clientProcess).
/// For a forward proxy's connections, whose clients are local apps.
void askClientProcess(ConnCapture& cc, int fd);

/// "127.0.0.1:53012" / "[::1]:53012" for a connected socket ("" if unknown).
std::string peerName(int fd);

/// Statistics for one exchange (always, even when its record is dropped).
void recordStats(Recorder& rec, const RouteLabels& labels, std::uint64_t latencyNs, int status);

/// Writes the record into the k-th pending slot of the worker's ring; false when dropped.
/// `phases` not set in `in` are taken from `cc` (accepted, tls_done).
bool writeRecord(ConnCapture& cc, std::size_t k, const ExchangeInput& in);

// ---- WebSocket sessions ----

/// The record of one WebSocket session, built on its worker: the upgrade exchange, then the
/// messages. Owned by the session; memory is bounded by capture.ws_messages messages of at most
/// capture.body_bytes payload each.
struct WsCapture {
    Recorder* rec = nullptr;
    std::uint64_t key = 0;       ///< Recorder::newFullKey
    std::size_t bodyBytes = 0;   ///< payload prefix kept per message
    std::size_t maxMessages = 0; ///< messages kept per record
    bool openPublished = false;  ///< the kIncomplete version reached the collector
    Exchange record;
};
struct WsCaptureDeleter {
    void operator()(WsCapture* c) const;
};
using WsCapturePtr = std::unique_ptr<WsCapture, WsCaptureDeleter>;

/// The upgrade request `in` was answered 101 (`in.responseHead`): starts the session's record
/// with the connection's phases. Statistics count the handshake like any exchange.
WsCapturePtr wsBegin(ConnCapture& cc, const ExchangeInput& in);
/// The 101 is being written: ResponseFirstByte, and the record is published (kIncomplete).
void wsOpened(WsCapture& wc);
/// One message or control frame (`payload` whole or a prefix of it; `size` the whole size, both
/// inflated; `compressed`: it was sent with permessage-deflate), or a room event (opcode
/// kRoomEventOpcode). Counted always; kept while under maxMessages.
void wsMessage(WsCapture& wc, bool fromClient, std::uint8_t opcode, std::string_view payload,
               std::uint64_t size, bool compressed = false);
/// The session is gone: ResponseDone, `error` ("" for a clean close), final version published.
void wsClosed(WsCapture& wc, std::string_view error);

// ---- a forward proxy's CONNECT, seen by the front door ----

/// The record of an intercepted CONNECT to `authority` ("host:port") that the front door handles
/// after its 200 (the connection's own capture, `cc`, began there): protocol Http1, method CONNECT,
/// target and authority `authority`, status 200, `source` (Tunnel: its bytes pass unread and
/// proxy::startTunnel's `raw` mode counts them into it; Intercepted: its interception failed, closed
/// with wsClosed(error) at once), route label `route` ("(tunnel)", "(tls_passthrough)", ...),
/// RequestHeaders at `startNs`.
WsCapturePtr connectRecord(ConnCapture& cc, std::uint16_t localPort, std::string_view authority,
                           Source source, std::string_view route, std::int64_t startNs);

// ---- gRPC calls ----

/// The messages of one gRPC call (an HTTP/2 stream with content-type application/grpc*), built on
/// its worker while the bytes pass through. Bounded: capture.ws_messages messages of at most
/// capture.body_bytes each, plus one message in progress per direction.
struct GrpcCapture {
    GrpcCapture(std::size_t bodyBytes, std::size_t maxMessages)
        : request(bodyBytes), response(bodyBytes), maxMessages(maxMessages) {}
    GrpcMessageSplitter request;  ///< client → upstream
    GrpcMessageSplitter response; ///< upstream → client
    std::size_t maxMessages;
    std::vector<Message> messages;
    std::uint64_t count = 0;
};
/// Bytes of the call's body in one direction (any piece of it).
void grpcData(GrpcCapture& gc, bool fromClient, std::string_view bytes);
/// The call's stream ended: writes its whole record (the exchange as `writeRecord` would, protocol
/// Grpc, its messages, a message cut by the end marked `cut`, and `trailers`, the upstream's
/// "name: value\r\n" trailer lines) to the worker's full-record ring. False when dropped.
bool writeGrpcRecord(ConnCapture& cc, const ExchangeInput& in, GrpcCapture& gc, std::string_view trailers);

// ---- HTTP/1.1 batching (see connection.cpp) ----
/// A response was serialized: record it as pending.
void h1Serialized(ConnCapture& cc, const ExchangeInput& in);
/// About to write the queued output.
inline void h1BeforeFlush(ConnCapture& cc) {
    if ((cc.pending || cc.awaitCount) && cc.firstByteNs < 0) cc.firstByteNs = nowNs();
}
/// Output fully written: pending records are published complete, awaited ones completed.
void h1Flushed(ConnCapture& cc);
/// The connection goes back to the event loop with output not yet written: publish what is
/// pending now (marked incomplete); its end arrives later as a completion.
void h1Yield(ConnCapture& cc);
/// The connection closes: nothing will be written any more.
void h1Closed(ConnCapture& cc);

/// `Server-Timing` value for the phases so far (RFC: W3C Server Timing), e.g.
/// "head;dur=0.012, route;dur=0.003, handler;dur=0.120". Written into `out` (no allocation once
/// `out` has capacity).
void serverTimingValue(std::int64_t startNs, std::int64_t headNs, std::int64_t routeNs, std::int64_t endNs,
                       std::string& out);

} // namespace portico::capture

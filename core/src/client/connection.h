// One client connection carrying up to `depth` requests at once: HTTP/1.1 keep-alive with
// pipelining (RFC 9112 §9.3.2) or HTTP/2 multiplexing (RFC 9113 §5, h2_client_codec.h), in
// cleartext or over TLS. It sends requests prepared once in wire form and reports each response's
// status when the response is complete; bodies are parsed for framing and dropped. This is the
// client the load generator drives (load/connections.cpp: one per simulated user, depth 1..1024);
// Http1Call and H2Call (http1_call.h, h2_client.h) are the streaming clients of the reverse proxy
// and replay, which deliver bodies to a sink with backpressure.
#pragma once

#include "client/h2_client_codec.h"
#include "tls/client_tls.h"

#include <portico/http1/response_parser.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::client {

/// A request in wire form, built once and sent any number of times.
struct PreparedRequest {
    std::string http1; ///< HTTP/1.1: request line, fields, blank line and body (RFC 9112 §2.1)
    /// HTTP/1.1: the offset in `http1` of the blank line that ends the fields, where a request id
    /// field is inserted (Connection::setRequestId); 0 = unknown, then none is.
    std::uint32_t http1FieldsEnd = 0;
    bool head = false; ///< HEAD: the response has no body whatever its fields say (RFC 9110 §9.3.2)
    /// HTTP/2: the header section (pseudo-fields first, names lower-case, RFC 9113 §8.2–§8.3) as
    /// prepared by H2RequestFields (h2_client_codec.h): indexed once each connection has sent it.
    std::vector<H2FieldOp> h2Fields;
    /// HTTP/2 when h2Fields is empty: one HPACK header block from encodeRequestBlock, sent as is
    /// (static table and literals without indexing: valid on any connection).
    std::string h2Block;
    std::string body; ///< HTTP/2: the body, sent in DATA frames (empty: END_STREAM on HEADERS)
};

/// The request id field's name (Connection::setRequestId), as nginx's $request_id and Envoy use it.
inline constexpr std::string_view kRequestIdField = "x-request-id";

/// How the connection's requests ended when they did not get a complete response.
enum class Failure : std::uint8_t {
    Reset,    ///< the connection closed or was reset, or the stream was reset (RST_STREAM)
    Timeout,  ///< the owner gave up waiting (Connection::fail)
    Protocol, ///< a malformed or unexpected response, or an HTTP/2 protocol-level error code
    /// HTTP/2: the server did not process the request, so it may be sent again (RFC 9113 §8.7):
    /// its stream was above GOAWAY's last stream id (§6.8) or reset with REFUSED_STREAM, or it
    /// waited in the client for a stream when GOAWAY came.
    Refused,
};

/// What every connection of one owner shares: where to connect and how.
struct ConnectionSettings {
    boost::asio::ip::tcp::endpoint endpoint;
    SSL_CTX* ssl = nullptr;              ///< https: shared by every connection (SSL_new is thread-safe)
    const tls::ClientTls* tls = nullptr; ///< https: SNI and the certificate check per connection
    bool h2 = false;                     ///< HTTP/2: h2c with prior knowledge, or h2 by ALPN over TLS
    /// HTTP/2: what the client announces. The defaults are h2load's: stream and connection
    /// windows of 2^30-1 bytes (and no server push).
    H2ClientCodec::Settings h2Settings;
    /// Make response heads available to onResponse (Connection::responseFields): HTTP/1.1 every
    /// one (a head whose body spans reads is copied; one that ends in its read is not), HTTP/2 those
    /// the handler asks for in holdResponseHead (decoded fields are copied as they come).
    bool keepResponseHeads = false;
    /// Through a forward proxy (`endpoint` is then the proxy's): non-empty, the CONNECT request
    /// (RFC 9110 §9.3.6, e.g. "CONNECT host:443 HTTP/1.1\r\nHost: host:443\r\n\r\n") written after
    /// each TCP connect; a 2xx answer opens the tunnel, and TLS or h2c then start inside it as they
    /// would on a direct connection. Any other answer, a head over 16 KiB, bytes after the head or
    /// the proxy's close is a failed connect (onConnectFailed). Empty: a direct connection (or
    /// HTTP/1.1 in absolute-form to the proxy, which the caller's PreparedRequest says).
    std::string tunnel;
};

/// Bytes on the wire (after TLS: the TLS records' payload), summed over the connections that
/// share it (one thread's).
struct TrafficCounters {
    std::uint64_t bytesRead = 0;
    std::uint64_t bytesWritten = 0;
};

/// The owner's side. Every call comes from the connection's io_context thread. A slot is a number
/// in 0..depth-1 naming one request in flight from send() until onResponse or onFailed for it.
/// onResponse and onFailed come from inside the read loop (HTTP/2: the codec's receive()): they must not
/// call back into the Connection (connect, close, fail, send, flush); the other callbacks may.
class ConnectionHandler {
public:
    /// Connected (TCP, and over TLS the handshake with "h2" selected by ALPN when HTTP/2).
    virtual void onOpen() = 0;
    /// The TCP connect, the TLS handshake or the HTTP/2 session set-up failed; the connection is
    /// idle again. Nothing was in flight.
    virtual void onConnectFailed() = 0;
    /// The request in `slot` got its whole response, with `status` (HTTP/1.1 100..599, HTTP/2
    /// 200..599: a malformed :status fails the request as Failure::Protocol). The slot is free again.
    virtual void onResponse(std::uint32_t slot, int status) = 0;
    /// The request in `slot` ended without a complete response. The slot is free again.
    virtual void onFailed(std::uint32_t slot, Failure why) = 0;
    /// The connection closed by itself (the server closed it, an error, a response with
    /// `Connection: close`, HTTP/2 GOAWAY) after onFailed for every request still in flight.
    /// It was open; it is idle now.
    virtual void onClosed() = 0;
    /// A read was processed (responses reported): the owner may send more.
    virtual void onProgress() = 0;
    /// HTTP/2 with ConnectionSettings::keepResponseHeads: the final head of the response in `slot`
    /// is being decoded (Connection::readTime() is its read's time): true to have responseFields()
    /// give its fields in onResponse (a head with no field but :status then gives none). Must not
    /// call into the Connection but for readTime().
    virtual bool holdResponseHead(std::uint32_t slot) {
        (void)slot;
        return false;
    }

protected:
    ~ConnectionHandler() = default;
};

/// One connection: Idle → connect() → Connecting → onOpen: Open → (close, fail or the server's
/// close) → Idle, any number of times. Not thread-safe: one io_context thread drives it.
class Connection final : H2ClientEvents {
public:
    /// `settings`, `handler` and `counters` must outlive the connection. `depth` 1..1024 (clamped).
    Connection(boost::asio::io_context& io, const ConnectionSettings& settings, ConnectionHandler& handler,
               TrafficCounters& counters, unsigned depth);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// From the next opening on, every request carries the field `kRequestIdField:
    /// <base><port>.<n>`, where <port> is localPort() and <n> the request's number on the opening
    /// (requestsSent() before its send(), so HTTP/2: (stream id − 1) / 2): unique per client port
    /// and request, e.g. `3f9a0c61d2e4-7.50412.0`. `base` holds only visible ASCII (RFC 9110
    /// §5.5); empty (the default) sends none. HTTP/1.1 needs PreparedRequest::http1FieldsEnd;
    /// HTTP/2 sends it as a literal without indexing (RFC 7541 §6.2.2) after the prepared fields.
    void setRequestId(std::string base) { requestIdBase_ = std::move(base); }

    /// Opens a new connection (any earlier one is closed without callbacks): onOpen or
    /// onConnectFailed follows, never before this returns unless the socket cannot be opened.
    void connect();
    /// Starts reading (once per opening, after onOpen: the owner may wait before it). Responses
    /// and the server's close are noticed only from then on.
    void receive();
    /// Queues `request` (it must outlive its response) in the free slot it returns in `slot`;
    /// flush() writes what was queued. Requires open() and inFlight() < depth(). False when HTTP/2
    /// has no stream id left (RFC 9113 §5.1.1) or the server sent GOAWAY (draining()): nothing
    /// was queued, the connection is used up.
    bool send(const PreparedRequest& request, std::uint32_t& slot);
    /// Writes what send() queued (HTTP/2: and what the session owes: SETTINGS ACK, WINDOW_UPDATE),
    /// as far as the socket takes it now; the rest when it becomes writable. A write error ends
    /// the connection as Failure::Reset.
    void flush();
    /// Ends every request in flight as `why` (onFailed each), closes, then onClosed if it was open.
    void fail(Failure why);
    /// Closes without any callback; the requests in flight are forgotten (the owner counts them).
    void close();

    bool open() const { return state_ == State::Open; }
    bool idle() const { return state_ == State::Idle; }
    bool h2() const { return settings_.h2; }
    /// HTTP/2: the server sent GOAWAY; no new request is taken and the connection closes (with
    /// onClosed) when the last one in flight ends.
    bool draining() const { return h2_ && state_ == State::Open && h2_->draining(); }
    std::size_t inFlight() const { return h2_ ? (state_ == State::Open ? h2_->inFlight() : 0) : inFlight_; }
    std::size_t depth() const { return h2_ ? h2_->depth() : slots_.size(); }
    /// The client's TCP port of the current (or last) opening, read once when it opened; 0 before.
    std::uint16_t localPort() const { return localPort_; }
    /// When the first byte of the response in `slot` arrived (steady_clock ns since its epoch),
    /// read once per read and only for a response that did not end in the read that began it; 0
    /// when it began in the read now being processed (or nothing of it came yet). Valid from
    /// send() until onResponse or onFailed for the slot returns.
    std::int64_t firstByteNs(std::uint32_t slot) const { return firstByte_[slot]; }
    /// Requests queued by send() since the connection last opened: the next one's 0-based number
    /// on this connection (HTTP/1.1: the server's request index − 1; HTTP/2: (stream id − 1) / 2).
    std::uint32_t requestsSent() const { return sent_; }
    /// The time of the read being processed (steady_clock ns since its epoch), taken from the clock
    /// at the first call in that read: inside onResponse, when the response's last bytes were
    /// read (one clock read for all the responses a read completes); after the server's close,
    /// the time of the call.
    std::int64_t readTime() {
        if (!readNs_) readNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
        return readNs_;
    }
    /// Only inside onResponse, with ConnectionSettings::keepResponseHeads: the final response head's
    /// fields as field lines, each `name: value` ended by CRLF (HTTP/1.1: as received, a bare LF
    /// possible; read them with http1::forEachResponseField), pseudo-fields and trailers left out;
    /// nullopt when it was not kept (HTTP/2: holdResponseHead said no). Valid during the call.
    std::optional<std::string_view> responseFields() const { return fields_; }
    /// Bumped whenever the socket changes: the owner's timers compare it to ignore an old one.
    std::uint64_t generation() const { return generation_; }
    /// Calls `f(slot)` for every request in flight (HTTP/1.1: oldest first).
    template <class F> void forEachInFlight(F&& f) const {
        if (h2_) {
            if (state_ == State::Open) h2_->forEachInFlight(f);
        } else {
            for (std::size_t i = 0; i < inFlight_; ++i)
                f(static_cast<std::uint32_t>((ringHead_ + i) % slots_.size()));
        }
    }

private:
    struct Slot {
        const PreparedRequest* request = nullptr;
    };
    enum class State : std::uint8_t { Idle, Connecting, Open };

    void connectFailed();
    void connected();
    void startTunnel();
    void readTunnelAnswer();
    void startTls();
    void opened();
    void read();
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void onReadableTls();
    void onReadError(bool eof);
    bool onData(std::size_t n);
    bool processHttp1();
    bool processH2();
    void completeHttp1(bool headHeld);
    std::string* held(std::uint32_t slot);
    std::string* newHeld(std::uint32_t slot);
    [[gnu::noinline]] void respondHeld(std::uint32_t slot, int status);
    void dropHeld(std::uint32_t slot);
    void closedByServer();
    void release();

    // H2ClientEvents
    void onStreamResponse(std::uint32_t slot, int status) override;
    void onStreamFailed(std::uint32_t slot, Failure why) override;
    bool holdResponseHead(std::uint32_t slot) override;
    void onResponseField(std::uint32_t slot, std::string_view name, std::string_view value) override;

    boost::asio::io_context& io_;
    const ConnectionSettings& settings_;
    ConnectionHandler& handler_;
    TrafficCounters& counters_;
    boost::asio::ip::tcp::socket socket_;
    std::vector<Slot> slots_; // HTTP/1.1: a ring in send order (HTTP/2: the codec keeps its own)
    std::size_t ringHead_ = 0, inFlight_ = 0;
    std::unique_ptr<char[]> readBuf_; // kReadBuffer bytes
    std::size_t readBegin_ = 0, readEnd_ = 0;
    std::size_t readAsked_ = 0; // the room of the read in flight
    std::string writeBuf_;
    std::size_t written_ = 0;
    std::vector<std::int64_t> firstByte_; // by slot: see firstByteNs
    std::int64_t readNs_ = 0;             // the time of the read being processed, once asked; 0: not yet
    // HTTP/2 response heads kept (keepResponseHeads, holdResponseHead said yes): by slot, as
    // responseFields() gives them; entries of slot kFreeHeld are free, heldCount_ are not.
    static constexpr std::uint32_t kFreeHeld = 0xffffffffu;
    std::vector<std::pair<std::uint32_t, std::string>> held_;
    std::size_t heldCount_ = 0;
    std::string h1Head_; // HTTP/1.1: the fields of the head whose body spans reads (keepResponseHeads)
    std::optional<std::string_view> fields_; // responseFields() during onResponse
    http1::ResponseParser parser_;
    SSL* ssl_ = nullptr;
    std::unique_ptr<H2ClientCodec> h2_; // HTTP/2, for the life of the Connection
    std::uint64_t generation_ = 0;      // bumped on close: handlers of an older socket do nothing
    std::uint32_t sent_ = 0;            // requests sent since opened()
    std::string requestIdBase_;         // setRequestId
    std::string requestIdPrefix_;       // base + port + '.' of this opening; empty: no id field
    std::uint16_t localPort_ = 0;       // set in opened()
    State state_ = State::Idle;
    bool writeWaiting_ = false;
};

} // namespace portico::client

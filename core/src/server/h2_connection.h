// One HTTP/2 connection (RFC 9113) on nghttp2's callback API: h2 over TLS (ALPN) or h2c with the
// prior-knowledge preface. Every stream runs the same routing and handlers as HTTP/1.1.
#pragma once

#include "io/io_buffer.h"
#include "io/session.h"
#include "proxy/forward.h"
#include "server/connection.h"

#include <portico/http/message.h>

#include <boost/asio/steady_timer.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

typedef struct nghttp2_session nghttp2_session;
namespace portico::capture {
struct ConnCapture;
}
typedef struct ssl_st SSL;

namespace portico::tls {
struct SocketBioState;
}

namespace portico::server {

class Worker;

class H2Connection final : public io::Session, public std::enable_shared_from_this<H2Connection> {
public:
    /// Takes over `socket` (and `ssl`, which it frees; null for h2c). `received` holds bytes the
    /// HTTP/1.1 side already read (the client preface and maybe more).
    H2Connection(Worker& worker, Connection::Socket socket, SSL* ssl, std::uint16_t localPort,
                 std::string_view received);
    ~H2Connection() override;

    /// Sends our SETTINGS, processes `received`, then reads. False if the session cannot start.
    void start();
    /// Capture state of the connection this session came from (before start()).
    void adoptCapture(std::unique_ptr<capture::ConnCapture> cap);
    /// Before start(): this connection is an intercepted tunnel's inside (front_door.h).
    void setOrigin(std::shared_ptr<const proxy::InterceptedOrigin> origin) { origin_ = std::move(origin); }
    void checkDeadline(Clock::time_point now) override;
    void onDrain() override;
    void abort() override;

    // nghttp2 callbacks (public for the C trampolines in the .cpp).
    struct Stream;
    struct ProxySink;
    Stream* stream(std::int32_t id);
    int onBeginFrame(std::uint8_t type);
    int onBeginHeaders(std::int32_t id);
    int onHeader(std::int32_t id, bool trailer, std::string_view name, std::string_view value);
    int onRequestComplete(std::int32_t id);
    int onHeadersEnd(std::int32_t id, bool endStream);
    int onData(std::int32_t id, const std::uint8_t* data, std::size_t len);
    void onStreamClose(std::int32_t id);
    void onResetSent(std::int32_t id); ///< a RST_STREAM left: counts against the reset budget (MadeYouReset)
    void onResetReceived(std::int32_t id); ///< the client reset stream `id` (it closes next)
    void onResponseEnd(std::int32_t id);   ///< a frame with END_STREAM left on stream `id`
    long readBody(std::int32_t id, std::uint8_t* buf, std::size_t len, std::uint32_t* flags);
    /// nghttp2 did not send a HEADERS frame of stream `id` (`error`: an nghttp2_error; a section
    /// over max_send_header_block_length, 64 KiB, is NGHTTP2_ERR_FRAME_SIZE_ERROR). A response
    /// head is replaced by a 500 (RFC 9110 §15.6.1); trailers, or a 500 that failed too, reset the
    /// stream with INTERNAL_ERROR. The other streams go on; the stream's record names the cause.
    void onHeadersNotSent(std::int32_t id, bool responseHead, int error);

private:
    void waitRead();
    void onReadable();
    void flush();
    void endSession(ssize_t error); // GOAWAY (as queued, else PROTOCOL_ERROR), then close
    void waitWrite();
    void dispatch(Stream& s);
    void submit(Stream& s);
    /// A rule's throttle (http::Response::throttle) on stream `s`: its head waits for the
    /// throttle's latency (plus the request body's time at `up`, `upBytes` bytes) and its DATA
    /// frames leave at `down` bytes per second (readBody defers, a timer resumes).
    void startPace(Stream& s, std::uint64_t upBytes);
    /// Body bytes stream `s`'s throttle lets leave now (all when none is on); 0 arms the resume.
    std::size_t paceAllowance(Stream& s, std::size_t want);
    void fail(Stream& s, int status);
    void logExchange(const Stream& s);
    std::int64_t captureStats(Stream& s);                  // capture only; returns its clock reading (ns)
    void captureStream(Stream& s, std::string_view error); // capture only
    void closeIfDone();
    void lingerThenClose(); // after the GOAWAY: half-close, discard input, then close
    void discard();         // the lingering close's reads
    // serve::ResponseWriter for one stream (h2_connection.cpp, h2_proxy.cpp).
    struct Writer;
    void captureRequest(Stream& s);
    void respond(Stream& s);
    /// A breakpoint's decision reached stream `id` (serve/breakpoint.h): serve::resume() on it.
    void resumePaused(std::int32_t id);
    /// A response-stage breakpoint on stream `id`'s upstream answer (h2_proxy.cpp).
    bool pauseAnswer(Stream& s);
    void resumeAnswer(std::int32_t id);
    serve::ForwardTarget forwardTo(Stream& s, const http::Request& req);
    void forwarding(Stream& s, std::shared_ptr<client::Call> call);
    bool streamsBody(const Stream& s);
    bool submitTrailers(Stream& s);
    const std::string* streamError(std::int32_t id) const;
    void setStreamError(std::int32_t id, std::string why);
    friend struct ProxySink;
    int enhanceYourCalm();
    // RFC 9113 checks nghttp2 does not make with RFC 7540 priorities off (it then keeps no closed
    // streams): frames on closed streams (§5.1), HEADERS below an opened id (§5.1.1), PRIORITY on
    // stream 0 (§6.3) or on itself (§5.3.1). feed() walks frame headers and hands the bytes to
    // nghttp2, each frame checked with nghttp2's state as of the frames before it; < 0 when the
    // connection ended (GOAWAY queued).
    ssize_t feed(const std::uint8_t* p, std::size_t n);
    // 0 pass, > 0 reset that stream with it, < 0 GOAWAY. `head` holds a PRIORITY frame's payload too.
    int checkFrame(std::uint8_t type, std::int32_t id, std::size_t len, const std::uint8_t* head);
    enum class Closed : std::uint8_t { Unknown, Normal, PeerReset, WeReset };
    Closed closedHow(std::int32_t id) const;
    static bool takeToken(double& tokens, Clock::time_point& refill, double burst, double rate);

    Worker& worker_;
    Connection::Socket socket_;
    SSL* ssl_;
    tls::SocketBioState* bio_ = nullptr; // ssl_'s socket BIO (owned by ssl_); null for h2c
    std::unique_ptr<char[]> cipherIn_;   // TLS bytes the last Asio read took (kCipherInBytes)
    nghttp2_session* session_ = nullptr;
    io::IoBuffer in_;
    io::IoBuffer out_;
    std::string clientAddress_;
    std::vector<std::unique_ptr<Stream>> streams_; // open streams (at most max_concurrent_streams)
    // Why a stream's response could not go out as produced (onHeadersNotSent), until it closes.
    std::vector<std::pair<std::int32_t, std::string>> streamErrors_;
    std::unique_ptr<capture::ConnCapture> cap_; // null unless capture was on at accept
    Clock::time_point deadline_ = Clock::time_point::max();
    double resetTokens_ = 0; // Rapid Reset bucket (http2.reset_burst, refilled at reset_rate/s)
    Clock::time_point resetRefill_;
    double controlTokens_ =
        0; // PING/SETTINGS bucket (http2.max_control_frames, refilled at a tenth of it /s)
    Clock::time_point controlRefill_;
    std::uint32_t continuations_ = 0; // CONTINUATION frames since the last HEADERS
    // feed()'s walk: bytes to pass unchecked (the preface, then each frame's payload), a frame head
    // split across reads (9 bytes, 14 with a PRIORITY frame's payload), the highest HEADERS id seen.
    std::size_t passLeft_ = 24;
    std::uint8_t head_[14] = {};
    std::size_t headHave_ = 0;
    std::int32_t walkedMaxId_ = 0;
    // Recently closed streams and how (reset by us: later frames are ignored, RFC 9113 §5.1).
    struct ClosedStream {
        std::int32_t id = 0;
        Closed how = Closed::Unknown;
    };
    std::array<ClosedStream, 64> closedStreams_{};
    std::array<std::int32_t, 64> resetByUs_{};
    std::uint8_t closedNext_ = 0, resetNext_ = 0;
    std::int32_t closingId_ = 0; // the stream a RST_STREAM just went out or came in for
    Closed closingHow_ = Closed::Normal;
    std::uint16_t localPort_;
    std::shared_ptr<const proxy::InterceptedOrigin> origin_; // an intercepted tunnel's inside
    bool closed_ = false;
    bool reading_ = false;      // a read wait is pending
    bool writing_ = false;      // waiting for the socket to become writable
    bool draining_ = false;     // GOAWAY sent
    bool calmed_ = false;       // GOAWAY(ENHANCE_YOUR_CALM) queued for server-sent resets
    bool lingering_ = false;    // GOAWAY sent, write side shut: discarding input until EOF or deadline
    bool bodyTimedOut_ = false; // a stream was answered 408 by body_timeout (onResponseEnd looks)
};

} // namespace portico::server

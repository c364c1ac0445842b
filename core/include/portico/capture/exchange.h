// One captured exchange (an HTTP/1.1 request/response, an HTTP/2 stream, a WebSocket session, a
// gRPC call) as plain data: what the engine hands to the GUI and the CLI, what the
// session file stores and what HAR export/import converts. No Qt, no sockets.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace portico::capture {

enum class Protocol : std::uint8_t {
    Http1 = 0,     ///< HTTP/1.0 or HTTP/1.1 (see Exchange::httpVersion)
    Http2 = 1,     ///< one HTTP/2 stream (h2 over TLS or h2c)
    WebSocket = 2, ///< a WebSocket session (RFC 6455): the upgrade request, the 101, `messages`
    Grpc = 3,      ///< a gRPC call over HTTP/2 (one stream of a `grpc:`/`proxy:` route), `messages` filled
};

/// The server-side timeline (DESIGN.md "Capture"). The enum's order is the storage order (session
/// file columns, ring slots): phases added later come last; kTimelineOrder is the order they happen
/// in. The upstream phases are those of proxied exchanges (reverse proxy, forward proxy,
/// interception); the name resolution and TCP phases only when the exchange opened a new upstream
/// connection (a pooled one has UpstreamConnected only, as Chrome DevTools shows a reused
/// connection).
enum class Phase : std::uint8_t {
    Accepted = 0,         ///< the TCP connection was accepted (shared by every exchange on it)
    TlsDone,              ///< the TLS handshake finished (absent on cleartext)
    RequestHeaders,       ///< HTTP/1.1: first byte of the request; HTTP/2: HEADERS frame began
    RequestBodyDone,      ///< the whole request (head, body, trailers) was received
    RouteMatched,         ///< vhost chosen and route matched (absent for requests refused earlier)
    UpstreamConnected,    ///< an upstream connection is ready for the request (after its TLS handshake)
    UpstreamFirstByte,    ///< the first byte of the upstream's response arrived
    ResponseFirstByte,    ///< the response started to be written to the socket (after mock latency)
    ResponseDone,         ///< the last response byte was handed to the kernel (HTTP/2: stream closed)
    UpstreamResolved,     ///< a new upstream connection: the name's addresses were at hand (DNS done)
    UpstreamTcpConnected, ///< a new upstream connection: TCP connected (its TLS handshake follows)
    UpstreamRequestSent,  ///< the whole request went to the upstream (HTTP/2: its last frame was queued)
    Count
};
constexpr std::size_t kPhaseCount = static_cast<std::size_t>(Phase::Count);
/// The phases in the order they happen in one exchange (for timelines and durations).
inline constexpr std::array<Phase, kPhaseCount> kTimelineOrder = {Phase::Accepted,
                                                                  Phase::TlsDone,
                                                                  Phase::RequestHeaders,
                                                                  Phase::RequestBodyDone,
                                                                  Phase::RouteMatched,
                                                                  Phase::UpstreamResolved,
                                                                  Phase::UpstreamTcpConnected,
                                                                  Phase::UpstreamConnected,
                                                                  Phase::UpstreamRequestSent,
                                                                  Phase::UpstreamFirstByte,
                                                                  Phase::ResponseFirstByte,
                                                                  Phase::ResponseDone};
/// Every phase absent (-1): the initial value of a record's phases.
inline constexpr std::array<std::int64_t, kPhaseCount> kNoPhases = [] {
    std::array<std::int64_t, kPhaseCount> a{};
    for (auto& x : a)
        x = -1;
    return a;
}();
/// "accepted", "tls_done", ... (the names used in the session file and the HAR `_portico` fields).
std::string_view phaseName(Phase p);

/// How the exchange reached Portico.
enum class Source : std::uint8_t {
    Server = 0,      ///< addressed to Portico itself: served or reverse-proxied by its routes
    Forward = 1,     ///< a forward proxy's absolute-form request (`GET http://host/path`, RFC 9112 §3.2.2)
    Intercepted = 2, ///< decrypted inside a forward proxy's CONNECT (TLS interception by the local CA)
    Tunnel = 3, ///< a forward proxy's CONNECT tunnel whose bytes passed unread (or whose interception failed)
};
/// "server", "forward", "intercepted", "tunnel" (session file, HAR `_portico.source`, the filter's
/// `source:`); sourceFromName is its inverse (nullopt-like: false when unknown).
std::string_view sourceName(Source s);
bool sourceFromName(std::string_view name, Source& out);

struct Header {
    std::string name;
    std::string value;
    bool operator==(const Header&) const = default;
};

/// One WebSocket message of a session record, or one gRPC message of a call record.
///
/// WebSocket (RFC 6455 §5.2 opcodes): every whole data message (1 text, 2 binary; a fragmented
/// message is one Message, `size` after permessage-deflate inflation) and every control frame
/// (8 close: `data` is the close body, 2-byte code then reason; 9 ping; 10 pong), in the order the
/// session handled them. Opcode 0 is not a frame: it marks a room event, `data` = "join ROOM" or
/// "leave ROOM" (`fromClient` false, `size` = data's size).
///
/// gRPC (gRPC over HTTP/2, PROTOCOL-HTTP2.md "Length-Prefixed-Message"): every message of the call
/// in the order its last byte passed through (requests from the client, responses from the
/// upstream), `opcode` = its Compressed-Flag byte (0 plain, 1 compressed with `grpc-encoding`; any
/// other value is malformed), `size` = its Message-Length, `data` its first bytes. A message the
/// stream ended in the middle of is kept with the bytes that came (`data.size()` < `size` even when
/// `size` ≤ capture.body_bytes) and `cut` set.
struct Message {
    std::int64_t timeNs = 0; ///< steady_clock nanoseconds, same clock as the timeline
    bool fromClient = false; ///< true: received from the client; false: sent by the server
    std::uint8_t opcode = 0; ///< WebSocket opcode (1, 2, 8, 9, 10) or 0 (room event); gRPC: Compressed-Flag
    std::string data;        ///< payload prefix, at most capture.body_bytes bytes, binary-safe
    std::uint64_t size = 0;  ///< whole payload in bytes (data.size() ≤ size)
    bool cut = false;        ///< gRPC: the stream ended before the whole message (`size` bytes) came
    /// WebSocket: the message came or went with permessage-deflate (RFC 7692); `size` and `data`
    /// are of the inflated payload either way.
    bool compressed = false;
    bool operator==(const Message&) const = default;
};

/// Message::opcode of a room event (not an RFC 6455 opcode).
constexpr std::uint8_t kRoomEventOpcode = 0;

/// Flags on a record.
enum ExchangeFlags : std::uint32_t {
    kRequestBodyTruncated = 1u << 0,  ///< requestBody is a prefix of requestBodySize bytes
    kResponseBodyTruncated = 1u << 1, ///< responseBody is a prefix of responseBodySize bytes
    kHeadersTruncated = 1u << 2,      ///< headers did not fit capture.record_bytes; some are missing
    kIncomplete = 1u << 3,            ///< the end of the response was not seen (yet): ResponseDone absent
    kImported = 1u << 4,              ///< read from a HAR file: timings are HAR's, not the server's
    kMessagesTruncated = 1u << 5,     ///< `messages` holds only the first capture.ws_messages of messageCount
    kOriginalBodyTruncated = 1u << 6, ///< originalRequestBody or originalResponseBody is a prefix
};

/// One exchange. Strings are bytes (not necessarily UTF-8); bodies are binary-safe prefixes.
///
/// A WebSocket session is one record (protocol WebSocket): the request fields are the upgrade
/// request's, `status` 101 with the 101's headers, ResponseFirstByte = the 101 was handed to the
/// socket, ResponseDone = the session closed (TCP gone), `messages` its conversation. It is
/// published twice under the same id: when the session opens (kIncomplete, no messages yet, so a
/// long-lived session shows up at once) and when it closes (complete); a reader that saw it
/// kIncomplete fetches it again by id to see the final version.
///
/// A gRPC call is one record (protocol Grpc, httpVersion 20) published when its stream closes: the
/// HTTP/2 request and response, `responseTrailers` (grpc-status, grpc-message; a Trailers-Only
/// answer has them in `responseHeaders`), `messages` both ways.
struct Exchange {
    std::uint64_t id = 0; ///< engine-wide, increasing from 1 in completion order; 0 = not assigned
    std::uint64_t connectionId =
        0; ///< unique per connection in this process (worker index in the top 16 bits)
    std::uint32_t streamId =
        0; ///< HTTP/2 stream id; HTTP/1.1: the request's index on its connection (from 1)
    Protocol protocol = Protocol::Http1;
    std::uint8_t httpVersion = 11; ///< 10, 11 or 20
    std::string tlsVersion;        ///< "TLSv1.3", "TLSv1.2"; "" for cleartext
    std::string alpn;              ///< "h2", "http/1.1"; "" when none was negotiated
    std::string client;            ///< client address ("127.0.0.1:53012", "[::1]:53012")
    /// The client's process on this machine when Portico could tell (a forward proxy's loopback
    /// clients, Linux: the socket's inode found in /proc/PID/fd): "PID COMMAND" ("4242 curl"),
    /// COMMAND as /proc/PID/comm names it; "" when unknown.
    std::string clientProcess;
    Source source = Source::Server;
    /// Proxied exchanges: the upstream's address as connected ("93.184.216.34:443"; "" for a
    /// pooled connection's later requests over HTTP/2 or when not proxied), its TLS version and
    /// ALPN ("" for cleartext / none).
    std::string upstreamAddress;
    std::string upstreamTlsVersion;
    std::string upstreamAlpn;
    /// The rules (config `rules:`) that changed this exchange, by name, in the order they applied;
    /// empty when none did.
    std::vector<std::string> rules;
    /// The request's and the response's header fields as they were before rules changed them, as
    /// a field block ("Name: value\r\n" per field); "" when rules left them as they were.
    /// requestHeaders and responseHeaders are the fields after the rules (as sent).
    std::string originalRequestFields;
    std::string originalResponseFields;
    /// The request's and the response's body as they were before a rule's replace_body rewrote
    /// them, binary-safe prefixes of at most capture.body_bytes (kOriginalBodyTruncated when cut);
    /// "" when no rule changed that body. requestBody and responseBody are the bodies as sent.
    std::string originalRequestBody;
    std::string originalResponseBody;
    std::uint16_t localPort = 0; ///< the listener's port
    std::string vhost;           ///< label of the vhost chosen ("" when refused before routing)
    std::string route;           ///< label of the route ("(static)", "(no route)", "" before routing)
    std::string method;          ///< as received ("GET")
    std::string scheme;          ///< "http" or "https"
    std::string authority;       ///< Host / :authority as received
    std::string target;          ///< request target as received ("/a/b?x=1")
    std::vector<Header> requestHeaders;
    std::vector<Header> requestTrailers;
    std::string requestBody;           ///< prefix of at most capture.body_bytes
    std::uint64_t requestBodySize = 0; ///< bytes of the whole (decoded) request body
    /// Bytes of the request head as received (HTTP/1.1); HPACK-decoded size (HTTP/2: name and value
    /// bytes of every field, pseudo-header fields included); 0 = not recorded.
    std::uint64_t requestHeadersSize = 0;
    int status = 0;                      ///< 0: no response (connection reset, stream reset)
    std::vector<Header> responseHeaders; ///< as sent, Date/Server/Content-Length included
    /// The trailer section after the response body (RFC 9113 §8.1); recorded for gRPC calls only.
    std::vector<Header> responseTrailers;
    std::string responseBody;           ///< prefix of at most capture.body_bytes
    std::uint64_t responseBodySize = 0; ///< bytes of the whole response body
    /// Bytes of the response head as sent, status line to the last field's CRLF (HTTP/1.1);
    /// HPACK-decoded size as for requestHeadersSize (HTTP/2); 0 = not recorded.
    std::uint64_t responseHeadersSize = 0;
    std::string error;              ///< "" or why the exchange did not complete normally
    std::uint32_t flags = 0;        ///< ExchangeFlags
    std::int64_t startedUnixNs = 0; ///< wall clock (system_clock, Unix epoch) at RequestHeaders, ns
    /// steady_clock nanoseconds per Phase; -1 = absent / not applicable.
    std::array<std::int64_t, kPhaseCount> phases = kNoPhases;
    /// WebSocket: the session's messages in order; gRPC: the call's messages both ways in order. At
    /// most capture.ws_messages (then kMessagesTruncated).
    std::vector<Message> messages;
    /// Every message the session or call had, kept or not (messages.size() ≤ messageCount).
    std::uint64_t messageCount = 0;

    std::int64_t at(Phase p) const { return phases[static_cast<std::size_t>(p)]; }
    void set(Phase p, std::int64_t ns) { phases[static_cast<std::size_t>(p)] = ns; }
    /// Nanoseconds from `a` to `b`, or -1 when either is absent.
    std::int64_t between(Phase a, Phase b) const { return at(a) < 0 || at(b) < 0 ? -1 : at(b) - at(a); }
    /// Request start to response done (or to the last phase present), ns; -1 if unknown.
    std::int64_t durationNs() const;
    /// scheme://authority/target; an absolute-form target (a forward proxy's request) as it is, a
    /// CONNECT's authority-form target ("host:port") as it is, `OPTIONS *` as scheme://authority.
    std::string url() const;
    /// First value of header `name` (case-insensitive), "" if absent.
    std::string_view requestHeader(std::string_view name) const;
    std::string_view responseHeader(std::string_view name) const;
    /// gRPC: the `grpc-status` of the response trailers, else of the response headers (Trailers-Only);
    /// -1 when absent or not a number.
    int grpcStatus() const;
    /// gRPC: `grpc-message` (trailers, else headers), percent-decoded; "" when absent.
    std::string grpcMessage() const;
    /// Rough memory use (strings, headers, bodies), bytes; used for the window's max_bytes.
    std::size_t approximateBytes() const;
    bool isError() const { return status == 0 || status >= 500; }
};

/// Exchange::rules from names one a line ("a\nb", empty lines skipped), the form
/// ExchangeInput::rules and the session file carry; joinRuleNames is the inverse.
std::vector<std::string> splitRuleNames(std::string_view lines);
std::string joinRuleNames(const std::vector<std::string>& names);

} // namespace portico::capture

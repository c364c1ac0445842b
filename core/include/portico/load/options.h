// What a load run sends and how: target URLs, requests, connections, threads, model and bounds.
#pragma once

#include <portico/http/url.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::load {

/// Targets are parsed by the clients' one URL parser (http/url.h).
using Url = http::Url;
using http::parseUrl;

/// One kind of request of a run. Requests are picked at random in proportion to `weight`.
struct RequestSpec {
    std::string url; ///< absolute URL; every spec of a run must have the same origin
    std::string method = "GET";
    /// Extra field lines, sent as given. A "Host" here replaces the one derived from the URL;
    /// Content-Length is added for a non-empty body and must not be given.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;    ///< request content, bytes
    unsigned weight = 1; ///< relative frequency, ≥ 1
};

/// Closed model: every connection keeps `pipeline` requests in flight, as fast as the server
/// answers; latency runs from each request's actual send time. Open model: requests are due at a
/// fixed arrival rate whether or not earlier ones were answered; latency runs from each request's
/// intended send time, so a server stall shows up in the percentiles (coordinated omission
/// corrected, as wrk2 does).
enum class Model : std::uint8_t { Closed, Open };

/// The protocol spoken on every connection of a run.
/// - Http1: HTTP/1.1 keep-alive, `pipeline` requests in flight per connection. Over https the
///   client offers ALPN "http/1.1".
/// - Http2: HTTP/2 (RFC 9113; Portico's client framing with nghttp2's HPACK decoder), `streams`
///   concurrent streams per connection. After a GOAWAY (e.g. nginx's keepalive_requests) a
///   connection takes no new request, closes when its last response is in and opens again. A
///   request the server did not process (above GOAWAY's last stream id, REFUSED_STREAM, or still
///   waiting in the client for a stream) is sent again, first, up to 3 times (RFC 9113 §8.7), then
///   counts as reset; one still waiting when the run stops counts as cancelled. Over https the client offers
///   ALPN "h2" only and a server that does not select it is refused at start; over http it speaks h2c with
///   prior knowledge (RFC 9113 §3.3: the connection preface first, no Upgrade), and a server that does not
///   answer the preface with SETTINGS is refused at start.
enum class Protocol : std::uint8_t { Http1, Http2 };

/// Parameters of a run. A run is always bounded: `duration`, `count` or both must be set (both: the
/// first reached ends it); `validate` refuses anything else.
/// The field that carries a request's id with Options::requestId (the name nginx's $request_id
/// and Envoy use).
inline constexpr std::string_view kRequestIdField = "x-request-id";

struct Options {
    std::vector<RequestSpec> requests; ///< at least one
    unsigned connections = 10;         ///< 1..100000, spread round-robin over the threads
    unsigned threads = 1;              ///< 1..256 and ≤ connections; each runs its own io_context
    unsigned pipeline = 1;             ///< requests in flight per connection, 1..1024 (HTTP/1.1 pipelining)
    Protocol protocol = Protocol::Http1;
    /// HTTP/2 only: concurrent streams per connection, 1..1024 (h2load's -m). The server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS still applies: requests above it wait in the client.
    unsigned streams = 1;
    std::chrono::nanoseconds duration{0}; ///< measured time after the warm-up; 0 = bounded by `count`
    std::uint64_t count = 0;              ///< measured requests to start; 0 = bounded by `duration`
    /// Open model when > 0: total arrival rate in requests per second over all connections
    /// (each connection gets rate/connections, staggered). 0 = closed model.
    double rate = 0;
    /// Warm-up before measuring; requests started in it are counted apart and not in the latency.
    std::chrono::nanoseconds warmup{0};
    /// A request not answered within this time fails as `timeout` and its connection is closed
    /// (checked every 10 ms). Default 10 s.
    std::chrono::nanoseconds timeout{std::chrono::seconds(10)};
    /// When the run ends, requests in flight get this long to complete; the rest are cancelled.
    std::chrono::nanoseconds stopGrace{std::chrono::seconds(5)};
    /// Refuse targets that are not loopback (127.0.0.0/8, ::1) unless set. Default: refuse.
    bool allowRemote = false;
    /// https only: skip certificate verification (any certificate and name is accepted).
    bool insecure = false;
    /// https only: a PEM file of CA certificates trusted in addition to the system store (e.g. the
    /// one `portico cert export FILE` writes). Empty = the system store only. Unless `insecure`,
    /// the server's chain must verify and its certificate must match the URL's host (DNS name or
    /// IP address, RFC 6125); SNI carries the host unless it is an IP literal.
    std::string caFile;
    /// Keep a latency histogram per second of the measured run (Result::intervals, for the
    /// HdrHistogram interval log). Off by default: it costs one more histogram record per request.
    bool latencyIntervals = false;
    /// Keep a bounded drill-down sample of measured exchanges (Result::samples: failed ones, a few
    /// per latency bin and per second). On by default; off saves its small per-request cost.
    bool samples = true;
    /// Send `x-request-id: <run>-<connection>.<port>.<n>` with every request (<run> 12 hex digits
    /// drawn per run, <connection> 0..connections−1, <port> the client's TCP port, <n> the request's
    /// number on that opening from 0), so a server's log or capture names the exchange; each
    /// sample carries its id (ExchangeSample::requestId). Off by default: the field costs about
    /// 45 bytes per request (HTTP/2: a literal, not indexed) and a few ns to format.
    bool requestId = false;
    /// Send the load through a forward proxy, "http://HOST:PORT" (HTTP/1.1, RFC 9110 §7.6): http
    /// targets over HTTP/1.1 go to it in absolute-form (RFC 9112 §3.2.2); https targets and h2c
    /// open a CONNECT tunnel per connection (RFC 9110 §9.3.6) inside which TLS or HTTP/2 run as on
    /// a direct connection, so the latency includes the proxy. The proxy's address is kept to
    /// loopback like the target's (unless allowRemote), and the target must still resolve to
    /// loopback here. A proxy that refuses the CONNECT is a clear error at start. Empty: direct.
    std::string proxy;
    /// Wall-clock start barrier: when set (not the epoch), the run connects first and then waits
    /// until this time before its clock starts, so that generators on several machines started
    /// with the same time measure the same interval. A time in the past starts at once; more than
    /// 24 h ahead is refused by `validate`.
    std::chrono::system_clock::time_point startAt{};

    Model model() const { return rate > 0 ? Model::Open : Model::Closed; }
    /// Requests in flight per connection: `streams` for HTTP/2, `pipeline` for HTTP/1.1.
    unsigned depth() const { return protocol == Protocol::Http2 ? streams : pipeline; }
};

/// Checks ranges and bounds (see the fields); false with a one-line `error`.
bool validate(const Options& options, std::string& error);

} // namespace portico::load

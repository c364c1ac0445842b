// The config model: plain, immutable data describing listeners, limits, vhosts and routes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace portico::config {

using Duration = std::chrono::nanoseconds;
using HeaderList = std::vector<std::pair<std::string, std::string>>;

/// Where a value came from in the YAML file (1-based line and column; 0 when built in code).
struct Location {
    std::string file;
    int line = 0;
    int column = 0;
    /// Where a value was written is not part of what it means: two configs that differ only in
    /// source positions are equal (the GUI's "unapplied changes" compares drafts this way).
    bool operator==(const Location&) const { return true; }
};

/// A certificate chain and its private key, both PEM files (absolute paths after loading).
struct TlsFiles {
    std::string cert; ///< leaf first, then intermediates
    std::string key;
    Location where;
    bool operator==(const TlsFiles&) const = default;
};

/// TLS on a listener (`tls: auto` or `tls: {cert: FILE, key: FILE}`). TLS 1.2 and 1.3, ALPN h2 and
/// http/1.1; SNI picks a vhost's own `tls:` files when its name matches.
struct ListenTls {
    bool autoCa = false; ///< certificates issued on demand by the local development CA
    TlsFiles files;      ///< when !autoCa
    bool operator==(const ListenTls&) const = default;
};

/// What a forward proxy listener does with CONNECT tunnels (`forward_proxy: {...}`).
struct ForwardProxy {
    /// Terminate the client's TLS inside CONNECT with a leaf from the local development CA for the
    /// name it asks for, and forward its requests to the origin over Portico's own TLS (verified
    /// against the system store plus `upstreamCaFile`). Off: tunnels pass bytes unread.
    bool intercept = false;
    /// Host globs ("*.bank.example", "pinned.test"; `*` any run of characters, case-insensitive)
    /// whose CONNECT tunnels are never intercepted.
    std::vector<std::string> tlsPassthrough;
    std::string upstreamCaFile;    ///< extra CA certificates (PEM) for origins; absolute after loading
    bool upstreamInsecure = false; ///< origins' certificates not verified (loud at start)
    /// Client networks that may use the listener at all ("192.168.1.0/24", "10.1.2.3", "fd00::/8";
    /// config/network.h): any other client is answered 403 at accept and closed. Empty: loopback
    /// clients only (127.0.0.0/8, ::1). A listener on an address that is not loopback needs a
    /// non-empty list (validated), so a config never makes an open proxy.
    std::vector<std::string> allow;
    bool operator==(const ForwardProxy&) const = default;
};

/// One listening address. `host` is an IPv4 or IPv6 literal ("127.0.0.1", "::1", "0.0.0.0") or
/// "localhost": 127.0.0.1 and ::1 on one port (IPv4 only, with a note, where ::1 is unavailable).
struct Listen {
    std::string host = "localhost";
    std::uint16_t port = 8080;    ///< 0 = any free port (tests)
    std::optional<ListenTls> tls; ///< none: cleartext (HTTP/1.1 and h2c with prior knowledge)
    /// `forward_proxy: true`: also an HTTP forward proxy (RFC 9110 §7.6, §9.3.6) for any client:
    /// absolute-form requests ("GET http://host/path") go to that origin, CONNECT opens a tunnel.
    /// Origin-form requests are still served by the vhosts. Cleartext; on a loopback address, or
    /// any address with a `forward_proxy.allow` list (validated).
    bool forwardProxy = false;
    ForwardProxy proxy; ///< `forward_proxy: {intercept: ..., ...}`; defaults for `forward_proxy: true`
    Location where;
    bool operator==(const Listen&) const = default;
};

/// One `hosts:` entry: Portico's connections to upstreams named `name` go to `address` instead of
/// what the resolver says (curl's --resolve, an /etc/hosts line). Only the address changes: the
/// Host field, SNI and the certificate check still use the name.
struct HostOverride {
    std::string name;    ///< lower-case: "api.example.test", or "*.dev.test" (any name under dev.test)
    std::string address; ///< an IPv4 or IPv6 literal, without brackets
    Location where;
    bool operator==(const HostOverride&) const = default;
};
using HostOverrides = std::vector<HostOverride>;

/// HTTP/2 settings (`http2:`), RFC 9113. Abuse beyond these bounds gets GOAWAY(ENHANCE_YOUR_CALM).
struct Http2 {
    bool enabled = true;                      ///< ALPN h2 on TLS listeners, prior-knowledge h2c on cleartext
    std::uint32_t maxConcurrentStreams = 128; ///< SETTINGS_MAX_CONCURRENT_STREAMS
    std::uint32_t initialWindowBytes = 1 << 20; ///< per stream (SETTINGS_INITIAL_WINDOW_SIZE), 65535..2^31-1
    std::uint32_t connectionWindowBytes = 16 << 20; ///< whole connection, 65535..2^31-1
    std::uint64_t resetBurst = 1000;    ///< RST_STREAMs a client may send at once (Rapid Reset bound)...
    std::uint64_t resetRate = 33;       ///< ...and per second after that
    std::uint32_t maxContinuations = 8; ///< CONTINUATION frames after one HEADERS
    std::uint64_t maxControlFrames =
        1000; ///< PING/SETTINGS frames at once (and a tenth of it per second after)
    bool operator==(const Http2&) const = default;
};

/// The most field lines a request head may have: the upper bound of `limits.max_header_count`
/// (the HTTP/1 parser keeps its fields in an array of this size, http1::kMaxHeaders).
inline constexpr std::uint64_t kMaxHeaderCount = 128;

/// Parser limits and timeouts (`limits:` in YAML). Sizes in bytes, durations in nanoseconds.
struct Limits {
    std::uint64_t maxRequestLineBytes = 8 * 1024;  ///< → 414
    std::uint64_t maxHeaderBytes = 16 * 1024;      ///< → 431
    std::uint64_t maxHeaderCount = 100;            ///< → 431
    std::uint64_t maxBodyBytes = 10 * 1024 * 1024; ///< → 413
    /// A rule's replace_body skips a body larger than this (bytes); the record says so.
    std::uint64_t maxRewriteBody = 8 * 1024 * 1024;
    std::uint64_t maxRanges =
        16; ///< more ranges in one Range field → whole file (200), as nginx's max_ranges
    std::uint64_t maxConnectionsPerWorker = 10000;     ///< further accepts are closed at once
    Duration headerTimeout = std::chrono::seconds(10); ///< time to receive a whole head → 408, close
    Duration bodyTimeout = std::chrono::seconds(30);   ///< time between body reads → 408, close
    Duration idleTimeout = std::chrono::seconds(60);   ///< keep-alive idle → silent close
    Duration writeTimeout = std::chrono::seconds(30);  ///< one write stalled → close
    Duration drainTimeout = std::chrono::seconds(5);   ///< graceful stop waits this long for exchanges
    bool operator==(const Limits&) const = default;
};

/// Access log (`access_log:`). Written by a background thread, never on the request path.
struct AccessLog {
    /// Combined Log Format (nginx's `combined`), JSON lines, or `dev`: one short line per exchange
    /// for a terminal ("14:02:07 GET /app.js 200 0.41 ms 1.2 KiB", local time), what
    /// `portico serve` writes to a terminal by default.
    enum class Format : std::uint8_t { Off, Combined, Json, Dev };
    Format format = Format::Off;
    std::string path; ///< "-" = stdout
    bool operator==(const AccessLog&) const = default;
};

/// On-the-fly compression of compressible static responses (`compression:`).
struct Compression {
    bool enabled = true;
    std::uint64_t minBytes = 1024; ///< smaller bodies are sent as they are
    int gzipLevel = 6;             ///< 1..9
    int brotliQuality = 5;         ///< 0..11
    bool operator==(const Compression&) const = default;
};

/// Capture of exchanges (`capture:`): per-request records with a server-side timeline, latency
/// statistics and an optional SQLite session file. Off by default; when off the request path only
/// tests one flag. Sizes in bytes. Ring sizes are fixed when a worker first captures (a change
/// takes effect after a restart); `enabled` and `server_timing` apply on reload.
struct Capture {
    bool enabled = false;
    std::uint64_t maxRecords = 10000;     ///< in-memory window kept by the engine (records), ≥ 1
    std::uint64_t maxBytes = 64ull << 20; ///< in-memory window (approximate bytes of records), ≥ 64 KiB
    /// Per-worker ring capacity (records), 16..1048576; 0 = auto (ringRecordsPerWorker).
    std::uint64_t ringRecords = 0;
    /// `auto` shares kAutoRingRecords among the workers, at least 1,024 each: how long the
    /// collector may fall behind before a ring drops is the rings' total over the request rate
    /// (8,192 records ≈ 150 ms at 55k req/s), whatever the worker count.
    static constexpr std::uint64_t kAutoRingRecords = 8192;
    std::uint64_t ringRecordsPerWorker(unsigned workerCount) const {
        if (ringRecords) return ringRecords;
        return std::max<std::uint64_t>(1024, kAutoRingRecords / std::max(1u, workerCount));
    }
    std::uint64_t recordBytes =
        16 * 1024; ///< bytes of one ring slot (strings, headers, body prefixes), 1 KiB..1 MiB
    std::uint64_t bodyBytes = 4096; ///< body prefix kept per request and per response, 0..record_bytes
    /// WebSocket messages kept per session record, 0..1000000; later ones are only counted
    /// (Exchange::messageCount, kMessagesTruncated). Each keeps a payload prefix of body_bytes.
    std::uint64_t wsMessages = 1000;
    bool serverTiming = false; ///< add a `Server-Timing` response header with the server phases
    std::string store;         ///< SQLite session file (absolute after loading); "" = none
    /// Size cap of the session file (bytes of records, ≥ 1 MiB; 0 = none): past it the oldest
    /// records are deleted (oldest first, to about 90 % of the cap). Also the cap of the GUI's
    /// temporary session.
    std::uint64_t storeMaxBytes = 1ull << 30;
    bool operator==(const Capture&) const = default;
};

/// Static files from a folder (`static:` action, or a vhost's own `root`).
struct StaticAction {
    std::string root; ///< absolute after loading
    std::vector<std::string> index{"index.html"};
    bool listing = false;        ///< HTML directory listing when no index file exists
    std::string spaFallback;     ///< path under root served for unknown paths (e.g. "/index.html")
    bool followSymlinks = false; ///< allow symlinks that lead outside root
    bool operator==(const StaticAction&) const = default;
};

/// A mocked response (`respond:` action). Body and header values may use templates:
/// {{param.NAME}}, {{param.*}}, {{query.NAME}}, {{header.NAME}}, {{method}}, {{path}}, {{body}}.
struct RespondAction {
    int status = 200;
    HeaderList headers;
    std::string body;
    std::string bodyFile;   ///< absolute path; read at load time (wins over `body`)
    Duration latency{0};    ///< fixed delay before responding
    Duration latencyMax{0}; ///< if > latency: uniform random delay in [latency, latencyMax]
    double dropRate = 0.0;  ///< 0..1: probability of resetting the connection instead
    double errorRate = 0.0; ///< 0..1: probability of answering `errorStatus` instead
    int errorStatus = 500;
    bool operator==(const RespondAction&) const = default;
};

/// A redirect (`redirect:` action). `to` may use the same templates as `respond`.
struct RedirectAction {
    std::string to;
    int status = 302; ///< one of 301, 302, 303, 307, 308
    bool operator==(const RedirectAction&) const = default;
};

/// One upstream of a proxy route: "SCHEME://HOST[:PORT]" (HOST a name or an IP literal).
struct Upstream {
    /// How the upstream is spoken to, from the URL's scheme.
    enum class Protocol : std::uint8_t {
        Http1, ///< `http://`: HTTP/1.1 (RFC 9112), keep-alive connections; port 80 by default
        H2c,   ///< `h2c://`: HTTP/2 over cleartext TCP with prior knowledge (RFC 9113 §3.3); port 80
        H2,    ///< `https://`: HTTP/2 over TLS, ALPN "h2" (RFC 9113 §3.2); port 443
    };
    std::string host; ///< without brackets
    std::uint16_t port = 80;
    std::string authority; ///< "host:port" as written (IPv6 in brackets), for Host with change_origin
    Protocol protocol = Protocol::Http1;
    bool operator==(const Upstream&) const = default;
};

/// A FastCGI application server (`fastcgi:` action; FastCGI 1.0, responder role), e.g. php-fpm.
struct FastCgi {
    std::string address;    ///< as written: "127.0.0.1:9000" or "unix:/run/php/php8.2-fpm.sock"
    std::string host;       ///< TCP: a name or an IP literal (no brackets); empty for a unix socket
    std::uint16_t port = 0; ///< TCP port, 1..65535
    std::string socketPath; ///< unix socket path (absolute after loading); empty for TCP
    std::string root; ///< document root as the server sees it (absolute): SCRIPT_FILENAME = root + script
    std::string index = "index.php"; ///< appended to a path ending in '/'
    std::string extension = ".php";  ///< the script is the path up to the first segment ending in it
    bool operator==(const FastCgi&) const = default;
};

/// A reverse proxy (`proxy:` action, or `grpc:`, or `fastcgi:`), RFC 9110 §7.6: hop-by-hop fields are removed
/// both ways, Via and X-Forwarded-For/-Proto/-Host are added; the response streams through with
/// backpressure. Upstreams speak HTTP/1.1, h2c or h2 (one protocol per route); over HTTP/2 each
/// request is one stream of a per-worker connection, trailers pass both ways and a gRPC call
/// (gRPC over HTTP/2, PROTOCOL-HTTP2.md) streams its request body too. Upstream failure → 502,
/// timeout → 504.
struct ProxyAction {
    std::vector<Upstream> upstreams; ///< tried round-robin; one that failed is skipped for failTimeout
    std::string stripPrefix;         ///< removed from the start of the path before forwarding ("/api")
    bool changeOrigin = false;       ///< send Host: the upstream's authority instead of the client's
    bool forwarded = false;          ///< also send RFC 7239 Forwarded
    Duration connectTimeout = std::chrono::seconds(5);
    Duration responseTimeout = std::chrono::seconds(60); ///< until the response head, and between body reads
    Duration failTimeout = std::chrono::seconds(10);     ///< how long a failed upstream is skipped
    /// An upstream connection with no request in flight this long is closed: a pooled HTTP/1.1
    /// keep-alive connection silently, an HTTP/2 one with GOAWAY.
    Duration idleTimeout = std::chrono::seconds(60);
    /// HTTP/1.1 upstreams: idle keep-alive connections kept per worker and upstream address (nginx's
    /// `keepalive`); a connection finishing a response while this many wait is closed. 0..100000;
    /// 0 = a new connection per request. Set it at least to the concurrency the route sees, or
    /// connections churn (connect + TIME_WAIT per request).
    std::uint32_t keepalive = 256;
    /// gRPC: a request's `grpc-timeout` larger than this (or none) is replaced by it; 0 = no cap.
    Duration grpcTimeoutMax{0};
    bool grpc = false; ///< written as `grpc:` (upstreams must be h2c:// or https://)
    /// gRPC: a FileDescriptorSet (`protoc --include_imports --descriptor_set_out=FILE`; absolute after
    /// loading, "" = none) the capture decodes the call's messages with (to JSON; without it: raw
    /// protobuf fields). Loading refuses a file that is missing or not a descriptor set.
    std::string descriptorSet;
    bool ws = false; ///< forward WebSocket upgrades (RFC 6455) to an HTTP/1.1 upstream and pipe the bytes
    FastCgi fastcgi; ///< written as `fastcgi:` (address set; `upstreams` is then empty)
    /// Not from YAML: a forward proxy's request to an origin (proxy/origin.h). The request goes on
    /// as the client sent it: no X-Forwarded-*, Via or Forwarded added, and Proxy-* fields (meant
    /// for this hop) dropped with the hop-by-hop ones.
    bool transparent = false;
    bool operator==(const ProxyAction&) const = default;
};

/// A WebSocket endpoint (`websocket:` action; RFC 6455 over an HTTP/1.1 Upgrade, ws:// and wss://).
/// `websocket: echo` and `websocket: room` are shorthands for `{mode: echo}` / `{mode: room}`.
struct WebSocketAction {
    enum class Mode : std::uint8_t {
        Echo, ///< every data message is sent back to its sender, same opcode
        Room, ///< every data message goes to all other members of the same room
    };
    Mode mode = Mode::Echo;
    /// Room mode: the route parameter whose value names the room ("/rooms/:room" → "room"). A route
    /// without that parameter has one room named after the route's path.
    std::string roomParam = "room";
    /// Allowed `Origin` values ("https://app.example.test", "http://localhost:5173"; scheme, host and
    /// port, case-insensitive; "*" allows any). Requests without Origin (non-browser clients) and
    /// pages of this server (the request's scheme and port, a loopback name, an IP literal or a vhost
    /// name) are always allowed; any other Origin → 403 (RFC 6455 §10.2).
    std::vector<std::string> origins;
    /// Subprotocols we speak, in preference order; the first one the client offers is selected
    /// (Sec-WebSocket-Protocol). Empty: none is ever selected.
    std::vector<std::string> subprotocols;
    std::uint64_t maxMessageBytes = 1024 * 1024;      ///< a larger message (after inflating) → close 1009
    bool compression = true;                          ///< accept permessage-deflate (RFC 7692) offers
    Duration pingInterval = std::chrono::seconds(30); ///< PING after this long without input; 0 = never
    Duration idleTimeout = std::chrono::seconds(120); ///< close 1001 after this long without input
    bool operator==(const WebSocketAction&) const = default;
};

using Action = std::variant<StaticAction, RespondAction, RedirectAction, ProxyAction, WebSocketAction>;

/// How a route's path is matched. See docs/configuration.md "Route matching" for the precedence.
enum class MatchKind : std::uint8_t {
    Pattern,       ///< router pattern: "/users/:name", "/assets/*", "/about" (`path:`)
    Exact,         ///< "= /healthz"
    Prefix,        ///< nginx plain prefix "/documents/" (`location:` without modifier)
    PrefixNoRegex, ///< "^~ /images/"
    Regex,         ///< "~ regex" (PCRE2, as nginx; case-sensitive)
    RegexCaseless, ///< "~* regex"
};

struct Route {
    std::string spec; ///< as written in the file, e.g. "~* \\.(gif|jpg)$"
    MatchKind kind = MatchKind::Pattern;
    std::string path;          ///< the pattern / uri / regex part without the modifier
    std::uint32_t methods = 0; ///< http::methodBit mask; 0 = every method
    Action action;
    HeaderList headers;               ///< added to every response of this route
    std::optional<bool> serverHeader; ///< overrides the vhost's
    std::string name;                 ///< optional label shown in logs and the GUI
    Location where;
    bool operator==(const Route&) const = default;
};

struct Vhost {
    std::vector<std::string> names;        ///< "localhost", "*.example.test"; empty = matches any Host
    std::optional<std::uint16_t> port;     ///< only for requests that arrived on this port
    bool isDefault = false;                ///< chosen when no name matches (else the first vhost)
    std::optional<StaticAction> root;      ///< static files for paths that no route takes
    HeaderList headers;                    ///< added to every response of this vhost
    std::map<int, std::string> errorPages; ///< status → absolute file path
    std::optional<bool> serverHeader;      ///< overrides the global switch
    std::optional<TlsFiles> tls;           ///< certificate for this vhost's names on TLS listeners (SNI)
    /// Live reload (`live_reload:`): HTML from static files gets a script that reloads the page (or
    /// swaps stylesheets) when a file under a served root changes; it talks to the reserved
    /// WebSocket endpoint /__portico/livereload. On by default for `portico serve DIR`.
    bool liveReload = false;
    /// `cross_site_subresources:` false (the default) answers 403 to a request a browser marks as a
    /// cross-site no-cors load (`Sec-Fetch-Site: cross-site` with `Sec-Fetch-Mode: no-cors`: a
    /// `<script src>` or `<img>` on another site), so pages the developer visits cannot read the
    /// app's source through them (the webpack-dev-server and Vite advisories). True serves them.
    bool crossSiteSubresources = false;
    std::vector<Route> routes; ///< groups are flattened in at load time
    Location where;
    bool operator==(const Vhost&) const = default;
};

/// One action of a rule (`rules[i].actions[j]`): a one-key map naming its kind, as written.
/// Applied in list order by the rule engine (rules/rules.h) at the rule's stage.
struct RuleAction {
    enum class Kind : std::uint8_t {
        SetHeader,    ///< `set_header: {Name: value, ...}`: every field of that name replaced by one
        RemoveHeader, ///< `remove_header: Name` (or a list of names): every field of that name removed
        Fail,         ///< `fail: {rate: 0.2, with: reset|503}`: the exchange fails instead
        MapLocal,     ///< `map_local: PATH`: answered from a file, or from a folder for a path prefix
        MapRemote,    ///< `map_remote: URL`: sent to another origin instead
        Throttle,     ///< `throttle: {latency: 400ms, down: 400kbit, up: 400kbit}` or a preset name
        ReplaceBody,  ///< `replace_body: {regex: RE, with: TEXT}`: the body rewritten (PCRE2)
        Breakpoint,   ///< `breakpoint: {timeout: 5m}`: the exchange waits in the desktop app's Paused queue
    };
    Kind kind = Kind::SetHeader;
    HeaderList set;                  ///< SetHeader: name → value, in the order written
    std::vector<std::string> remove; ///< RemoveHeader: field names
    /// Fail: how. Reset: nothing is sent and the connection is reset (HTTP/2: the stream,
    /// RST_STREAM), as a mock route's drop; Close: nothing is sent and the connection is closed
    /// (FIN after the answers before it; HTTP/2: GOAWAY, the connection and its streams end);
    /// Timeout: nothing is ever sent, the request is held until the client gives up or
    /// limits.idle_timeout passes (HTTP/2: only that stream waits, then RST_STREAM CANCEL); Status: a
    /// response with `failStatus` and a body naming the rule, made here (an upstream is not asked).
    enum class Failure : std::uint8_t { Reset, Close, Timeout, Status };
    Failure failure = Failure::Status;
    int failStatus = 503; ///< Fail with Status: 200..599 (written as `with: 503`)
    double rate = 1.0;    ///< Fail: the share of matching exchanges that fail, 0 < rate <= 1
    /// MapLocal: a file or a folder (absolute after loading; validate refuses one that does not
    /// exist). A file answers every matching request; a folder serves the request's path with the
    /// rule's `path:` prefix taken off, as a static root does (index.html, ranges, conditionals).
    std::string mapLocal;
    /// MapRemote: the origin, one upstream SCHEME://HOST[:PORT] (http://, h2c://, https://) without
    /// a path, with change_origin (Host: the origin's authority). The request keeps its path and query.
    ProxyAction mapRemote;
    /// Throttle: the exchange as if over a slow link (Chrome DevTools' network throttling).
    /// `latency` is added before the response's first byte; `down` paces the response's bytes to
    /// the client and `up` the request body's bytes onward, in bytes per second (0: not limited).
    /// `throttlePreset` is the Chrome preset the values came from ("Slow 3G", ...), "" for custom
    /// values; the writer writes the name back.
    Duration throttleLatency{0};
    std::uint64_t throttleDown = 0; ///< bytes per second, 0 = unlimited
    std::uint64_t throttleUp = 0;   ///< bytes per second, 0 = unlimited
    std::string throttlePreset;
    /// ReplaceBody: every match of `regex` (PCRE2, as routes' `~` regexes) in the body replaced by
    /// `replaceWith` (PCRE2's substitution syntax: $1, ${name}, $$ for a dollar). Bodies larger than
    /// limits.max_rewrite_body are left alone and the record says why.
    std::string regex;
    std::string replaceWith;
    /// Breakpoint: the exchange pauses (request stage: before it is sent on; response stage: before
    /// it is returned) until the user resumes, answers or aborts it in the Paused queue
    /// (rules/breakpoints.h), or for at most this long, then goes on unchanged. 1 s .. 24 h.
    /// Only the desktop app has the queue: a headless engine refuses configs with breakpoints.
    Duration breakpointTimeout = std::chrono::minutes(5);
    Location where;
    bool operator==(const RuleAction&) const = default;
};

/// A rule (`rules:` list): exchanges that `match` get `actions`, in order, at `stage`. Rules run in
/// list order; see rules/rules.h.
struct Rule {
    std::string name; ///< optional label (records list the rules that touched them by it)
    bool enabled = true;
    /// Request: before the route's action runs (request-side keys only in `match`); Response:
    /// on the response's head before it is written (`status:` may be used; set_header,
    /// remove_header, replace_body and breakpoint only).
    enum class Stage : std::uint8_t { Request, Response };
    Stage stage = Stage::Request;
    std::string match; ///< the Traffic filter language (capture/filter.h); "" matches everything
    std::vector<RuleAction> actions; ///< at least one
    Location where;
    bool operator==(const Rule&) const = default;
};

/// The whole configuration. Published as std::shared_ptr<const Config> and never mutated after.
struct Config {
    unsigned workers = 0; ///< 0 = auto (one per core)
    /// The number of workers the engine starts: `workers`, or one per core (at least 1) for 0.
    unsigned workerCount() const {
        return workers ? workers : std::max(1u, std::thread::hardware_concurrency());
    }
    std::vector<Listen> listen;
    Limits limits;
    AccessLog accessLog;
    Compression compression;
    Http2 http2;
    Capture capture;
    bool serverHeader = true; ///< send "Server: Portico/VERSION"
    /// `hosts:`: upstream names resolved to fixed addresses (reverse-proxy upstreams, a forward
    /// proxy's origins and CONNECT tunnels, FastCGI over TCP); config/network.h findHostOverride.
    HostOverrides hosts;
    std::vector<Vhost> vhosts;
    /// `rules:`: changes made to every exchange Portico sees (served, reverse-proxied, forwarded,
    /// intercepted) that matches; rules/rules.h.
    std::vector<Rule> rules;
    std::string sourcePath; ///< file it was loaded from ("" if built in code)
    bool operator==(const Config&) const = default;
};

} // namespace portico::config

// The request/response model shared by every protocol (RFC 9110 semantics, no wire format).
#pragma once

#include <portico/http/ascii.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::http {

/// Request methods Portico knows by name (RFC 9110 §9). Other tokens are `Method::Other`.
enum class Method : std::uint8_t { Get, Head, Post, Put, Delete, Connect, Options, Trace, Patch, Other };

/// Bit for `m` in a method mask (`methodBit(Method::Get) | methodBit(Method::Post)`).
constexpr std::uint32_t methodBit(Method m) { return 1u << static_cast<unsigned>(m); }

/// Method from its token, case-sensitive as RFC 9110 §9.1 requires; unknown tokens give `Method::Other`.
Method methodFromToken(std::string_view token);

/// Canonical token of a known method ("GET"); "" for `Method::Other`.
std::string_view methodToken(Method m);

/// Comma-separated list of the methods in `mask`, in enum order ("GET, HEAD, POST"), for `Allow`.
std::string allowHeaderValue(std::uint32_t mask);

/// A valid Host field value or :authority (RFC 9110 §7.2, RFC 3986 §3.2.2-3.2.3): empty (RFC 9110
/// §7.2 allows an empty Host), or host [":" port] where host is "[" IPv6 "]" or a reg-name (IPv4
/// included: unreserved, pct-encoded and sub-delims bytes, no userinfo) and port is up to five
/// digits within 0..65535 (empty after ':' is allowed, as RFC 3986 allows it). A port needs a host:
/// ":", ":80" are invalid, as are "x:abc", "x:99999", "[::1" and "a@b". Callers answer 400.
bool validAuthority(std::string_view value);

/// Standard reason phrase for `status` (100..599); "Unknown" for unregistered codes.
std::string_view reasonPhrase(int status);

/// The HTTP/1.1 status line for `status` with its CRLF, "HTTP/1.1 200 OK\r\n" (RFC 9112 §4), from
/// a table built once: `status` in 100..599; another code is written as given with "Unknown", into
/// a per-thread string the view points to until the next such call on the thread.
std::string_view statusLine11(int status);

/// One field line. Both views point into the connection's read buffer; value has no surrounding OWS.
struct Header {
    std::string_view name;
    std::string_view value;
};

/// A parsed request. Every view points into memory owned by the connection and is valid only until
/// the response to this request has been produced.
struct Request {
    Method method = Method::Get;
    std::string_view methodToken; ///< as received, e.g. "GET" or "PURGE"
    std::string_view target;      ///< request-target as received (origin- or absolute-form)
    std::string_view rawPath;     ///< path part of target, still percent-encoded, no query
    std::string_view query;       ///< after '?', without it; empty if none
    std::string_view path;        ///< decoded and dot-normalised path (see http/path.h); what routing sees
    int versionMajor = 1;
    int versionMinor = 1;
    std::span<const Header> headers;  ///< in arrival order, duplicates kept
    std::span<const Header> trailers; ///< chunked trailers (RFC 9112 §7.1.2), empty otherwise
    std::string_view host;            ///< Host field (or authority of an absolute-form target), with port
    std::string_view scheme = "http";
    std::string_view body;          ///< complete request body (de-chunked), bounded by limits.max_body_bytes
    bool keepAlive = true;          ///< after this exchange, may the connection serve another request?
    std::string_view clientAddress; ///< peer IP address as text

    /// First field named `name` (case-insensitive), or "" when absent.
    std::string_view header(std::string_view name) const;
    /// True if a field named `name` is present.
    bool hasHeader(std::string_view name) const;
};

/// An open file shared between a cache entry and the responses that send it. Closes on destruction.
struct FileHandle {
    int fd = -1;
    explicit FileHandle(int f) : fd(f) {}
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;
    ~FileHandle();
};

/// A response under construction. One object lives per connection and is `reset()` between
/// exchanges, so its buffers keep their capacity: producing a response allocates nothing in steady
/// state. The connection adds Date, Server, Content-Length / Transfer-Encoding and Connection itself;
/// handlers must not set those four.
class Response {
public:
    /// What the connection does after the handler returns.
    enum class Fate : std::uint8_t {
        Normal, ///< send the response; keep-alive per the request
        Close,  ///< send the response, then close the connection
        Drop,   ///< send nothing and reset the connection (fault injection)
        Silent, ///< send nothing and close the connection (FIN; HTTP/2: GOAWAY and close)
        Hold,   ///< send nothing; the request waits until the client gives up or idle_timeout
                ///< passes (then HTTP/1.1 closes the connection, HTTP/2 resets the stream)
    };
    /// True when the fate sends no response (Drop, Silent, Hold): no status, no head, no body.
    bool sendsNothing() const { return fate >= Fate::Drop; }
    enum class BodyKind : std::uint8_t { None, Owned, Shared, File };

    int status = 200;
    Fate fate = Fate::Normal;
    /// Delay before the response is written (mock latency); zero means none. Nanoseconds.
    std::chrono::nanoseconds delay{0};
    /// If false the connection omits the Server header for this response.
    bool serverHeader = true;
    /// Set by the proxy action instead of producing a response: the connection forwards the
    /// request to this route's upstreams (points at a config::ProxyAction owned by the config
    /// snapshot). The fields added so far (vhost and route `headers`) go onto the upstream's
    /// response.
    const void* forward = nullptr;

    /// Appends a field line. `name` and `value` must not contain CR or LF (asserted).
    void addHeader(std::string_view name, std::string_view value);
    /// Removes all fields named `name`, then adds it.
    void setHeader(std::string_view name, std::string_view value);
    /// True if a field named `name` was added.
    bool hasHeader(std::string_view name) const;
    /// Value of the first field named `name`, or "".
    std::string_view headerValue(std::string_view name) const;
    /// Serialised field lines, each "Name: value\r\n".
    std::string_view fieldBlock() const { return fields_; }

    /// Body copied into the response's own buffer.
    void setBody(std::string_view bytes);
    /// Mutable owned body buffer (cleared), for handlers that build a body in place.
    std::string& ownedBody();
    /// Body that lives in a shared buffer (e.g. the file cache); `view` must point into `*owner`.
    void setSharedBody(std::shared_ptr<const void> owner, std::string_view view);
    /// Body sent from a file: `length` bytes from `offset` (sendfile on cleartext connections).
    void setFileBody(std::shared_ptr<const FileHandle> file, std::uint64_t offset, std::uint64_t length);
    /// Drops any body.
    void clearBody();

    BodyKind bodyKind() const { return bodyKind_; }
    /// Body bytes for Owned and Shared bodies.
    std::string_view bodyView() const;
    /// Body length in bytes for every kind.
    std::uint64_t bodyLength() const;
    const std::shared_ptr<const FileHandle>& file() const { return file_; }
    std::uint64_t fileOffset() const { return fileOffset_; }

    /// Back to a fresh 200 with no fields and no body; keeps buffer capacity.
    void reset();

    /// Storage for the request's field lines when a rule changed them (serve(): the request's
    /// `headers` then view this for the rest of the exchange). reset() leaves it alone; serve()
    /// refills it, keeping its capacity.
    std::vector<Header> ruledRequestFields;
    /// The exchange's rule state (rules::RuleSet), also left alone by reset(): serve() clears it.
    /// The response-stage rules whose request-side terms matched, opaque here (index << 32 | terms
    /// left for the response), for the connection to apply to the head (RuleSet::applyResponse).
    std::vector<std::uint64_t> pendingRules;
    /// Names of the rules that touched the exchange, '\n'-separated, in the order they applied.
    std::string ruleNames;
    /// The request's / response's field block ("Name: value\r\n" lines) before a rule changed it;
    /// "" when no rule did.
    std::string originalRequestFields;
    std::string originalResponseFields;
    /// A request-stage replace_body's result (RuleSet::applyRequest): the request's body as the
    /// rules rewrote it, which the request's `body` then views; "" when none did.
    std::string ruledRequestBody;
    /// The request's / response's body before a replace_body rewrote it (the whole of it, at most
    /// limits.max_rewrite_body: capture cuts it to capture.body_bytes); "" when no rule changed it.
    std::string originalRequestBody;
    std::string originalResponseBody;
    /// Request-stage replace_body rules that found no body to rewrite (it was empty when they ran,
    /// as a body streaming to an upstream is): their "NAME: replace_body skipped (streamed request
    /// body)" lines, '\n'-separated, which the session adds to `ruleNames` when the body does stream
    /// (serve::ForwardTarget::bodyFollows); "" when there are none.
    std::string streamedBodyNotes;
    /// A rule's `throttle` for this exchange (RuleSet::applyRequest): the response's first byte
    /// leaves no earlier than `latency` plus the request body's time at `up` after the request
    /// arrived, and its bytes (head and body) leave at `down` (bytes per second; 0: not limited).
    /// Carried out by the connection (HTTP/1.1: its writes; HTTP/2: the stream's DATA frames).
    struct Throttle {
        std::chrono::nanoseconds latency{0};
        std::uint64_t down = 0; ///< bytes per second, 0 = not limited
        std::uint64_t up = 0;   ///< bytes per second, 0 = not limited
        bool active() const { return latency.count() > 0 || down > 0 || up > 0; }
        /// How long the response's first byte waits: `latency`, plus `upBytes` of request body at `up`.
        std::chrono::nanoseconds firstByteDelay(std::uint64_t upBytes) const {
            if (up == 0 || upBytes == 0) return latency;
            return latency + std::chrono::nanoseconds(static_cast<std::int64_t>(
                                 static_cast<double>(upBytes) * 1e9 / static_cast<double>(up)));
        }
    };
    Throttle throttle;
    /// Set by whatever fills the rule state above (RuleSet::applyRequest, when a rule matches or a
    /// response-stage rule is selected), so that clearing it costs one test for an exchange no rule
    /// took.
    bool ruleStateUsed = false;
    /// Clears the rule state above, keeping capacity (but not a rewritten body's beyond 64 KiB).
    void clearRuleState() {
        if (!ruleStateUsed) return;
        ruleStateUsed = false;
        ruledRequestFields.clear();
        pendingRules.clear();
        ruleNames.clear();
        originalRequestFields.clear();
        originalResponseFields.clear();
        ruledRequestBody.clear();
        if (ruledRequestBody.capacity() > 64 * 1024) std::string().swap(ruledRequestBody); // a large body's
        for (std::string* body : {&originalRequestBody, &originalResponseBody}) {
            body->clear();
            if (body->capacity() > 64 * 1024) std::string().swap(*body);
        }
        streamedBodyNotes.clear();
        throttle = {};
    }
    /// Replaces every field line with `block` ("Name: value\r\n" lines; a response rule's result).
    void replaceFields(std::string_view block) { fields_.assign(block); }

private:
    std::string fields_;
    std::string owned_;
    std::shared_ptr<const void> sharedOwner_;
    std::string_view sharedView_;
    std::shared_ptr<const FileHandle> file_;
    std::uint64_t fileOffset_ = 0;
    std::uint64_t fileLength_ = 0;
    BodyKind bodyKind_ = BodyKind::None;
};

/// Calls fn(name, value) for each "Name: value\r\n" line of a field block (Response::fieldBlock,
/// a proxied response's fields or trailers, a captured head), the value without leading spaces or
/// tabs. Lines without a colon, or with nothing before it, are passed over. The last line may lack
/// its CRLF.
template <class Fn> void forEachFieldLine(std::string_view block, Fn&& fn) {
    while (!block.empty()) {
        const auto eol = block.find("\r\n");
        const std::string_view line = block.substr(0, eol);
        block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 2);
        const auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        fn(line.substr(0, colon), value);
    }
}

/// Is `token` one of the comma-separated elements of a field value ("close, X-Foo"), compared
/// case-insensitively with surrounding spaces and tabs ignored (RFC 9110 §5.6.1)?
bool listHasToken(std::string_view list, std::string_view token);

/// RFC 9110 §7.6.1: fields that apply to one connection only and never cross a proxy (Connection,
/// Keep-Alive, Proxy-Connection, TE, Transfer-Encoding, Upgrade, Proxy-Authorization,
/// Proxy-Authenticate), by name, case-insensitive. Fields a Connection field names are checked
/// apart (listHasToken on its value).
bool isHopByHop(std::string_view name);

} // namespace portico::http

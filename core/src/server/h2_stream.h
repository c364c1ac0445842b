// The HTTP/2 session's per-stream state (private to net/h2_*.cpp): a request as it arrives, its
// response, and a proxied stream's sink.
#pragma once

#include "capture/hooks.h"
#include "proxy/forward.h"
#include "serve/breakpoint.h"
#include "server/h2_connection.h"

#include <portico/http/message.h>

#include <nghttp2/nghttp2.h>

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace portico::server {

// A proxied stream's side of a client call: body bytes wait in `pending` until nghttp2 pulls
// them (readBody); the exchange pauses while more than kProxyHighWater bytes wait.
struct H2Connection::ProxySink final : client::Sink {
    static constexpr std::size_t kProxyHighWater = 256 * 1024;
    H2Connection* conn = nullptr;
    std::int32_t id = 0;
    std::shared_ptr<client::Call> exchange;
    std::string extra; // vhost/route headers
    bool serverHeader = true;
    std::optional<std::uint64_t> length;
    std::string pending;
    std::size_t offset = 0;
    std::string trailers;                    // the upstream's trailer section ("name: value\r\n" lines)
    std::uint64_t sentBytes = 0;             // body bytes handed to nghttp2
    std::string capBody;                     // capture only: a prefix of the response body
    capture::GrpcCapture* capGrpc = nullptr; // capture only: the call's messages (owned by the Stream)
    // Capture only: a new upstream connection's DNS/TCP times, the request's end (steady ns), the
    // upstream's address and TLS.
    std::int64_t capResolvedNs = -1, capTcpNs = -1, capSentNs = -1;
    std::string capAddress, capTls, capAlpn;
    // The snapshot whose RuleSet the stream's Response::pendingRules index (null when none); kept
    // while `bodyEdits` point into it.
    std::shared_ptr<const Snapshot> rulesSnapshot;
    // A response-stage replace_body (h2_proxy.cpp): while `rewriting`, the head (the stream's res)
    // is not submitted and `pending` gathers the whole body, up to limits.max_rewrite_body; at the
    // end the body is rewritten and the head goes with its new content-length. Past the limit the
    // head goes with the upstream's length and the body passes unchanged.
    std::vector<rules::BodyEdit> bodyEdits;
    bool rewriting = false;
    // A response-stage breakpoint: the answer, gathered whole as for replace_body, then waits in
    // the Paused queue (H2Connection::pauseAnswer / resumeAnswer).
    rules::BreakpointHit breakpoint;
    bool done = false;
    bool paused = false;
    bool deferred = false;
    bool headSent = false;
    bool headersOnly = false; // one HEADERS frame with END_STREAM (gRPC Trailers-Only)
    bool grpc = false;        // content-type application/grpc*: resets pass through as they are

    void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> len) override;
    void releaseHead(); // a head held for replace_body (`rewriting`) is submitted
    bool onUpstreamBody(std::string_view data) override;
    void onUpstreamEnd() override;
    void onUpstreamError(int status, const std::string& message) override;
    void onUpstreamConnected() override;
    void onUpstreamConnection(std::int64_t resolvedNs, std::int64_t tcpConnectedNs,
                              std::string_view address) override {
        if (!conn->cap_) return;
        capResolvedNs = resolvedNs;
        capTcpNs = tcpConnectedNs;
        capAddress.assign(address);
    }
    void onUpstreamTls(std::string_view version, std::string_view alpn) override {
        if (!conn->cap_) return;
        capTls.assign(version);
        capAlpn.assign(alpn);
    }
    void onRequestSent() override {
        if (conn->cap_) capSentNs = capture::nowNs();
    }
    void onUpstreamTrailers(std::string_view fields) override { trailers.assign(fields); }
    void onUpstreamHeadersOnly(int status, std::string_view fields) override;
    void onUpstreamReset(std::uint32_t code, bool sent, const std::string& message) override;
    void onRequestBodyConsumed(std::size_t n) override {
        nghttp2_session_consume(conn->session_, id, n);
        conn->flush();
    }
    void wake() {
        if (deferred) {
            deferred = false;
            nghttp2_session_resume_data(conn->session_, id);
        }
        conn->flush();
    }
    ~ProxySink() override {
        if (exchange) exchange->cancel();
    }
};

struct H2Connection::Stream {
    /// Back to a fresh stream for `streamId`, keeping every buffer's capacity.
    void reuse(std::int32_t streamId) {
        id = streamId;
        arena.clear();
        fields.clear();
        method.clear();
        path.clear();
        scheme.clear();
        authority.clear();
        if (body.capacity() > 64 * 1024) std::string().swap(body);
        body.clear();
        fieldBytes = 0;
        earlyStatus = 0;
        dispatched = false;
        streaming = false;
        head = false;
        res.reset();
        res.clearRuleState();
        sent = 0;
        timer.reset();
        proxy.reset();
        start = Clock::now();
        target.clear();
        host.clear();
        capHeadNs = capBodyNs = capRouteNs = capFirstByteNs = capUpstreamNs = capUpstreamByteNs = -1;
        capLabels = {};
        capBody.clear();
        capBodySize = 0;
        capGrpc.reset();
        lastInput = start;
        delayed = false;
        bodyTimedOut = false;
        originHead = false;
        pacing = false;
        paceWaiting = false;
        paceSent = 0;
        paused.reset(); // before its snapshot
        pausedSnapshot.reset();
    }
    struct Field {
        std::uint32_t name, nameLen, value, valueLen;
        bool trailer;
    };
    std::int32_t id = 0;
    std::string arena; // field names and values as received
    std::vector<Field> fields;
    std::string method, path, scheme, authority;
    std::string body;
    std::uint64_t fieldBytes = 0;
    int earlyStatus = 0; // decided while receiving (413, 431)
    bool dispatched = false;
    bool streaming = false; // the request body goes upstream as it arrives (HTTP/2 upstream)
    bool head = false;
    http::Response res;
    std::uint64_t sent = 0; // body bytes handed to nghttp2
    std::optional<boost::asio::steady_timer> timer;
    bool delayed = false; // the response waits for its `latency` (timer)
    // A rule's throttle (H2Connection::startPace): no head before paceStart, then DATA at
    // res.throttle.down bytes per second counted in paceSent; paceWaiting: `timer` will resume it.
    bool pacing = false;
    bool paceWaiting = false;
    std::uint64_t paceSent = 0;
    Clock::time_point paceStart{};
    bool bodyTimedOut = false;        // answered 408 by body_timeout: RST_STREAM(NO_ERROR) after it
    bool originHead = false;          // an intercepted origin's head: its Date and Server pass, none of ours
    std::unique_ptr<ProxySink> proxy; // a `proxy:` route's exchange in progress
    // Held at a rule's breakpoint (serve/breakpoint.h) until H2Connection::resumePaused, with the
    // snapshot it paused in (the Paused points into its RuleSet); only this stream waits.
    std::shared_ptr<const Snapshot> pausedSnapshot; // declared first: outlives `paused`
    std::shared_ptr<serve::Paused> paused;
    Clock::time_point start = Clock::now();
    Clock::time_point lastInput = start; // opened, or its last body bytes (body_timeout)
    std::string target;                  // for the access log
    std::string host;
    // Capture (only when the connection captures).
    std::int64_t capHeadNs = -1, capBodyNs = -1, capRouteNs = -1, capFirstByteNs = -1;
    std::int64_t capUpstreamNs = -1, capUpstreamByteNs = -1;
    capture::RouteLabels capLabels;
    std::string capBody;           // request body prefix
    std::uint64_t capBodySize = 0; // request body bytes (a streamed body counts them for max_body_bytes too)
    std::unique_ptr<capture::GrpcCapture> capGrpc; // a gRPC call's messages
};

} // namespace portico::server

#include <portico/http2/session.h>

#include "io/h2_mem.h"

#include <portico/http/ascii.h>

#include <iterator>

namespace portico::http2 {

Callbacks::Callbacks() {
    if (nghttp2_session_callbacks_new(&table_) != 0) table_ = nullptr;
}

Callbacks::~Callbacks() {
    if (table_) nghttp2_session_callbacks_del(table_);
}

SessionPtr makeSession(const Callbacks& callbacks, void* user, const SessionSettings& s, std::string& error) {
    if (!callbacks.get()) {
        error = "HTTP/2: out of memory for the callbacks table";
        return nullptr;
    }
    nghttp2_option* opt = nullptr;
    if (nghttp2_option_new(&opt) != 0) {
        error = "HTTP/2: out of memory for the session options";
        return nullptr;
    }
    if (s.manualWindowUpdates) nghttp2_option_set_no_auto_window_update(opt, 1);
    if (s.maxOutboundAck) nghttp2_option_set_max_outbound_ack(opt, s.maxOutboundAck);
    if (s.resetBurst || s.resetRatePerSecond)
        nghttp2_option_set_stream_reset_rate_limit(opt, s.resetBurst, s.resetRatePerSecond);
    if (s.maxContinuations) nghttp2_option_set_max_continuations(opt, s.maxContinuations);
    nghttp2_session* raw = nullptr;
    const int rc =
        s.side == Side::Server
            ? nghttp2_session_server_new3(&raw, callbacks.get(), user, opt, io::h2mem::allocator())
            : nghttp2_session_client_new3(&raw, callbacks.get(), user, opt, io::h2mem::allocator());
    nghttp2_option_del(opt);
    if (rc != 0) {
        error = std::string("HTTP/2: cannot create a session: ") + nghttp2_strerror(rc);
        return nullptr;
    }
    SessionPtr session(raw);
    nghttp2_settings_entry entries[5];
    std::size_t n = 0;
    if (s.side == Side::Client) entries[n++] = {NGHTTP2_SETTINGS_ENABLE_PUSH, 0};
    if (s.maxConcurrentStreams)
        entries[n++] = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s.maxConcurrentStreams};
    if (s.streamWindowBytes) entries[n++] = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, s.streamWindowBytes};
    if (s.maxHeaderListBytes) entries[n++] = {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, s.maxHeaderListBytes};
    if (s.noRfc7540Priorities) entries[n++] = {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1};
    if (const int r = nghttp2_submit_settings(session.get(), NGHTTP2_FLAG_NONE, entries, n); r != 0) {
        error = std::string("HTTP/2: SETTINGS: ") + nghttp2_strerror(r);
        return nullptr;
    }
    if (s.connectionWindowBytes) {
        if (s.connectionWindowBytes > 0x7fffffffu) {
            error = "HTTP/2: connection window over 2^31-1 bytes";
            return nullptr;
        }
        const int r = nghttp2_session_set_local_window_size(
            session.get(), NGHTTP2_FLAG_NONE, 0, static_cast<std::int32_t>(s.connectionWindowBytes));
        if (r != 0) {
            error = std::string("HTTP/2: connection window: ") + nghttp2_strerror(r);
            return nullptr;
        }
    }
    return session;
}

bool isConnectionSpecific(std::string_view name, std::string_view value) {
    using http::iequals;
    return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "proxy-connection") ||
           iequals(name, "transfer-encoding") || iequals(name, "upgrade") ||
           (iequals(name, "te") && !iequals(value, "trailers"));
}

} // namespace portico::http2

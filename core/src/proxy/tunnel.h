// A WebSocket upgrade passed through to an HTTP/1.1 upstream (`ws: true` proxy routes): after the
// upstream's 101 (RFC 9110 §7.8, RFC 6455 §4), bytes are piped both ways unchanged; with capture on,
// the frames passing each way are read (ws/observer.h) into the session's record.
#pragma once

#include "capture/hooks.h"
#include "io/session.h"
#include "proxy/forward.h"

#include <memory>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;

namespace portico::proxy {

/// Starts piping between the client's socket (`ssl` when TLS; the tunnel frees it) and the
/// upstream's (`upstreamSsl` for an https:// upstream, null for http://; freed likewise). `toClient` then
/// `leftover` are queued first (the 101 head, then any bytes the upstream sent after it), `toUpstream`
/// likewise (bytes the client sent after its request). Each direction reads at most 64 KiB at a time into the
/// worker thread's scratch buffer and writes it on at once, keeping only what the other side did not take,
/// and reads again only when that was written: a slow side pauses the other (bounded memory), and an idle
/// tunnel holds no buffer. One side's EOF is passed on as a half-close; an error, the worker's drain or the
/// drain timeout closes both. A Session in the worker's list.
///
/// `capture` (null when capture is off) is the session's record (capture::wsBegin): the tunnel
/// publishes it open, adds every message both ways as its bytes are read (`deflate`:
/// permessage-deflate was negotiated in the 101) and publishes it closed. The observation never
/// changes what is forwarded; bytes that are not WebSocket frames stop it for this tunnel (the
/// record's `error` says where and why) and keep flowing.
///
/// `raw` (a forward proxy's CONNECT tunnel): the record is not read as WebSocket frames; it counts
/// the bytes each way (requestBodySize: client → upstream after the 200, responseBodySize: upstream
/// → client) and keeps the first capture.body_bytes of each (kRequestBodyTruncated /
/// kResponseBodyTruncated when there were more). `toClient` (the 200) is not counted.
void startTunnel(io::SessionHost& worker, io::Socket client, SSL* ssl, client::UpstreamSocket upstream,
                 SSL* upstreamSsl, std::string_view toClient, std::string_view leftover,
                 std::string_view toUpstream, capture::WsCapturePtr capture = nullptr, bool deflate = false,
                 bool raw = false);

} // namespace portico::proxy

// A forward proxy's CONNECT (RFC 9110 §9.3.6): the TCP connection to the requested host:port, as a
// client::Call so the downstream session answers it like any forwarded request — a 502 (connect
// failed) or 504 (timed out) through Sink::onUpstreamError, or the connected socket through
// Sink::onUpstreamUpgrade, after which the session answers 200 and pipes bytes (proxy/tunnel.h).
#pragma once

#include "client/call.h"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace portico::proxy {

/// Resolves `host` (a name or an IP literal without brackets; client::resolve, so /etc/hosts
/// first) and connects to `port` on the first address that accepts, within `timeout` for the
/// whole. Then: Sink::onUpstreamConnected(), and Sink::onUpstreamUpgrade("", socket, null, "")
/// hands the socket over (the call is finished). Failure: onUpstreamError(502, "cannot connect to
/// HOST:PORT: reason") or onUpstreamError(504, "timed out connecting to HOST:PORT after N ms").
/// Never calls `sink` before returning; cancel() stops it (no callback after). `owner` is kept
/// alive until the call ends. `hosts` (the config's `hosts:`; null: none), looked at before
/// returning, may give `host` a fixed address; messages still name `host`.
std::shared_ptr<client::Call> startConnect(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                           std::string host, std::uint16_t port,
                                           std::chrono::nanoseconds timeout, client::Sink* sink,
                                           const config::HostOverrides* hosts = nullptr);

} // namespace portico::proxy

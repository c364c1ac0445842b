// The ClientHello's server name (client_hello.h).
#include "tls/client_hello.h"

#include <algorithm>
#include <cstdint>

namespace portico::tls {

namespace {

// A bounds-checked reader over one byte string.
struct Cursor {
    std::string_view b;
    std::size_t at = 0;
    bool ok = true;
    std::size_t left() const { return b.size() - at; }
    std::uint32_t num(std::size_t n) {
        if (!ok || left() < n) {
            ok = false;
            return 0;
        }
        std::uint32_t v = 0;
        for (std::size_t i = 0; i < n; ++i)
            v = (v << 8) | static_cast<std::uint8_t>(b[at + i]);
        at += n;
        return v;
    }
    std::string_view take(std::size_t n) {
        if (!ok || left() < n) {
            ok = false;
            return {};
        }
        std::string_view s = b.substr(at, n);
        at += n;
        return s;
    }
};

} // namespace

HelloScan clientHelloServerName(std::string_view bytes, std::string& serverName) {
    serverName.clear();
    if (bytes.empty()) return HelloScan::NeedMore;
    if (static_cast<std::uint8_t>(bytes[0]) != 0x16) return HelloScan::NotTls;
    // The handshake message from the records' fragments (RFC 8446 §5.1: a handshake message may
    // be split across records; records of another type may not come in between).
    std::string message;
    std::size_t at = 0;
    std::size_t want = 0; // the handshake message's whole size once its header is in
    for (;;) {
        if (want && message.size() >= want) break;
        if (bytes.size() - at < 5) return HelloScan::NeedMore;
        if (static_cast<std::uint8_t>(bytes[at]) != 0x16 || static_cast<std::uint8_t>(bytes[at + 1]) != 0x03)
            return HelloScan::Malformed;
        const std::size_t length =
            (static_cast<std::uint8_t>(bytes[at + 3]) << 8) | static_cast<std::uint8_t>(bytes[at + 4]);
        if (length == 0 || length > 16384 + 256) return HelloScan::Malformed; // RFC 8446 §5.1 limits
        const std::size_t have = std::min(length, bytes.size() - at - 5);
        message.append(bytes.substr(at + 5, have));
        if (!want && message.size() >= 4) {
            if (static_cast<std::uint8_t>(message[0]) != 1) return HelloScan::Malformed; // client_hello
            want = 4 + ((static_cast<std::uint8_t>(message[1]) << 16) |
                        (static_cast<std::uint8_t>(message[2]) << 8) | static_cast<std::uint8_t>(message[3]));
            if (want > kMaxClientHelloBytes) return HelloScan::Malformed;
        }
        if (have < length) {
            if (want && message.size() >= want) break;
            return HelloScan::NeedMore;
        }
        at += 5 + length;
    }
    Cursor c{std::string_view(message).substr(4, want - 4)};
    c.num(2);         // legacy_version
    c.take(32);       // random
    c.take(c.num(1)); // legacy_session_id
    c.take(c.num(2)); // cipher_suites
    c.take(c.num(1)); // legacy_compression_methods
    if (!c.ok) return HelloScan::Malformed;
    if (c.left() == 0) return HelloScan::Done; // no extensions (SSL 3.0-style): no SNI
    Cursor ext{c.take(c.num(2))};
    if (!c.ok) return HelloScan::Malformed;
    while (ext.ok && ext.left() > 0) {
        const std::uint32_t type = ext.num(2);
        Cursor data{ext.take(ext.num(2))};
        if (!ext.ok) return HelloScan::Malformed;
        if (type != 0) continue; // server_name
        Cursor list{data.take(data.num(2))};
        while (list.ok && list.left() > 0) {
            const std::uint32_t nameType = list.num(1);
            std::string_view name = list.take(list.num(2));
            if (!list.ok) return HelloScan::Malformed;
            if (nameType != 0) continue; // host_name
            if (name.empty() || name.size() > 255) return HelloScan::Malformed;
            serverName.assign(name);
            return HelloScan::Done;
        }
        if (!list.ok || !data.ok) return HelloScan::Malformed;
        return HelloScan::Done;
    }
    return ext.ok ? HelloScan::Done : HelloScan::Malformed;
}

} // namespace portico::tls

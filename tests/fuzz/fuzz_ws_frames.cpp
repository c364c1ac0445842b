// Fuzz target: WebSocket frames (RFC 6455 framing, masking, fragmentation, control frames, UTF-8
// checks, permessage-deflate inflation, close handshake, room fan-out) after a real upgrade, over
// a loopback connection to an in-process engine. The first input byte picks the session: echo or
// room, with or without permessage-deflate; the rest is sent as the client's frames.
#include "fuzz_engine.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    portico::fuzz::initEngineTarget(argc, argv);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1 || size > 256 * 1024) return 0;
    const bool room = data[0] & 1;
    const bool deflate = data[0] & 2;
    std::string upgrade = std::string("GET ") + (room ? "/rooms/fuzz" : "/ws") +
                          " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    if (deflate) upgrade += "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
    upgrade += "\r\n";
    portico::fuzz::exchange(upgrade, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1),
                            "\r\n\r\n");
    return 0;
}

// Fuzz target: the passive WebSocket frame reader of `ws: true` tunnels (ws::FrameObserver,
// RFC 6455 §5 and RFC 7692), fed one direction of a connection. The first input byte chooses the
// options: bit 0 client→server (masked frames), bit 1 permessage-deflate, bits 2-3 the prefix
// kept (0, 1, 16 or 125 bytes), bits 4-7 the piece size of the second pass (1..16 bytes); the
// rest is the byte stream. maxInflated is 1 MiB so inflate bombs stop the observer quickly.
// Invariants: feeding the stream at once and in pieces reports the same messages (opcode, size,
// prefix, compressed) and stops with the same error, the pieces no later; a prefix is never longer
// than asked or than the message; a failed observer says why and stays failed.
#include "fuzz_support.h"

#include "ws/observer.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

using namespace portico;

namespace {

struct Seen {
    ws::Opcode opcode;
    std::string prefix;
    std::uint64_t size;
    bool compressed;
    bool operator==(const Seen&) const = default;
};

struct Run {
    std::vector<Seen> messages;
    bool ok = true;
    std::uint64_t offset = 0;
    std::string error;
};

Run observe(const ws::FrameObserver::Options& options, std::string_view bytes, std::size_t piece) {
    Run run;
    ws::FrameObserver observer(options, [&](const ws::ObservedMessage& m) {
        PORTICO_FUZZ_CHECK(m.prefix.size() <= options.prefixBytes);
        PORTICO_FUZZ_CHECK(m.prefix.size() <= m.size);
        PORTICO_FUZZ_CHECK(m.size <= options.maxInflated || !m.compressed);
        run.messages.push_back({m.opcode, std::string(m.prefix), m.size, m.compressed});
    });
    while (!bytes.empty()) {
        const auto n = std::min(piece, bytes.size());
        const bool ok = observer.feed(bytes.substr(0, n));
        bytes.remove_prefix(n);
        if (!ok) {
            PORTICO_FUZZ_CHECK(observer.failed() && !observer.error().empty());
            PORTICO_FUZZ_CHECK(!observer.feed("\x81\x00")); // sticky
            break;
        }
    }
    run.ok = !observer.failed();
    run.offset = observer.offset();
    run.error = observer.error();
    return run;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1 || size > 1 << 16) return 0;
    const std::uint8_t flags = data[0];
    const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
    ws::FrameObserver::Options options;
    options.fromClient = flags & 1;
    options.deflate = flags & 2;
    static constexpr std::size_t kPrefixes[] = {0, 1, 16, 125};
    options.prefixBytes = kPrefixes[(flags >> 2) & 3];
    options.maxInflated = 1 << 20;
    const std::size_t piece = 1 + (flags >> 4);

    const Run whole = observe(options, stream, stream.size() + 1);
    const Run pieces = observe(options, stream, piece);
    PORTICO_FUZZ_CHECK(whole.ok == pieces.ok);
    PORTICO_FUZZ_CHECK(whole.messages == pieces.messages);
    PORTICO_FUZZ_CHECK(whole.error == pieces.error);
    // Smaller pieces stop no later: the offset counts whole pieces, and a payload error (bad
    // compressed data) is found somewhere inside the piece that holds it.
    if (!whole.ok) PORTICO_FUZZ_CHECK(pieces.offset <= whole.offset && whole.offset <= stream.size());
    return 0;
}

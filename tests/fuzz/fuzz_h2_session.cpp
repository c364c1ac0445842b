// Fuzz target: the HTTP/2 server session (nghttp2 plus Portico's stream handling, dispatch, flow
// control, abuse limits and capture) fed arbitrary frames after the h2c connection preface, over
// a real loopback connection to an in-process engine. Invariant: the server keeps accepting and
// answering (checked by the next input's connect, and by a final request).
#include "fuzz_engine.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    portico::fuzz::initEngineTarget(argc, argv);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return 0;
    static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    portico::fuzz::exchange(kPreface, std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}

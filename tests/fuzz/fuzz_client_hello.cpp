// Fuzz target: the forward proxy's ClientHello scan (tls::clientHelloServerName), which reads a
// CONNECT client's first bytes before OpenSSL does. Invariants: never reads past the input, a name
// is 1..255 bytes, NotTls exactly when the first byte is not 0x16, and more bytes never change a
// finished answer (what the proxy decided on stays right when the rest arrives).
#include "fuzz_support.h"

#include "tls/client_hello.h"

#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 128 * 1024) return 0;
    using portico::tls::HelloScan;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::string name;
    const HelloScan r = portico::tls::clientHelloServerName(bytes, name);
    if (size == 0) PORTICO_FUZZ_CHECK(r == HelloScan::NeedMore);
    if (size > 0) PORTICO_FUZZ_CHECK((r == HelloScan::NotTls) == (data[0] != 0x16));
    if (r == HelloScan::Done)
        PORTICO_FUZZ_CHECK(name.size() <= 255);
    else
        PORTICO_FUZZ_CHECK(name.empty());
    if (r == HelloScan::Done || r == HelloScan::NotTls) {
        std::string longer(bytes);
        longer += "\x16\x03\x01\x00\x05more!";
        std::string again;
        PORTICO_FUZZ_CHECK(portico::tls::clientHelloServerName(longer, again) == r);
        PORTICO_FUZZ_CHECK(again == name);
    }
    return 0;
}

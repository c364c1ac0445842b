// Fuzz target: the HAR 1.2 importer. Invariants: a refused file has a positioned error; an accepted
// one exports and imports again to the same number of entries with the same methods and URLs.
#include "fuzz_support.h"

#include <portico/capture/har.h>

#include <string_view>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = capture::fromHar(text);
    if (!r.ok()) {
        PORTICO_FUZZ_CHECK(!r.error.empty());
        PORTICO_FUZZ_CHECK(r.exchanges.empty());
        return 0;
    }
    auto again = capture::fromHar(capture::toHar(r.exchanges));
    PORTICO_FUZZ_CHECK(again.ok());
    PORTICO_FUZZ_CHECK(again.exchanges.size() == r.exchanges.size());
    for (std::size_t i = 0; i < r.exchanges.size(); ++i) {
        PORTICO_FUZZ_CHECK(again.exchanges[i].method == r.exchanges[i].method);
        PORTICO_FUZZ_CHECK(again.exchanges[i].status == r.exchanges[i].status);
    }
    return 0;
}

// Fuzz target: a load run's JSON read back (load::resultFromJson, what `portico bench --merge`
// reads). Invariants: a refused file has an error; an accepted one writes out (toJson) and reads
// back to the same counts, statuses and histogram, and merges with itself to twice the counts.
#include "fuzz_support.h"

#include <portico/load/merge.h>

#include <string_view>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    load::Result r;
    std::string error;
    if (!load::resultFromJson(text, r, error)) {
        PORTICO_FUZZ_CHECK(!error.empty());
        return 0;
    }
    load::Result again;
    PORTICO_FUZZ_CHECK(load::resultFromJson(load::toJson(r), again, error));
    PORTICO_FUZZ_CHECK(again.requests.completed == r.requests.completed);
    PORTICO_FUZZ_CHECK(again.statuses == r.statuses);
    PORTICO_FUZZ_CHECK(again.latency->count() == r.latency->count());
    PORTICO_FUZZ_CHECK(again.latency->max() == r.latency->max());
    PORTICO_FUZZ_CHECK(again.latency->valueAtPercentile(99) == r.latency->valueAtPercentile(99));
    std::vector<load::Result> two;
    two.push_back(std::move(r));
    two.push_back(std::move(again));
    load::Result merged;
    PORTICO_FUZZ_CHECK(load::mergeResults(two, merged, error));
    PORTICO_FUZZ_CHECK(merged.latency->count() == 2 * two[0].latency->count());
    return 0;
}

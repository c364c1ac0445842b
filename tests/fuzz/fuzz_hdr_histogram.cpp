// Fuzz target: HdrHistogram's compressed V2 encoding read back (load::decodeCompressedHistogram,
// the lines of an interval log). Invariants: a refused input has an error; an accepted one has
// ascending buckets whose counts sum to its total, and re-encoding a Portico-layout decode reads
// back to the same buckets.
#include "fuzz_support.h"

#include <portico/load/hdr_output.h>

#include <string_view>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string error;
    const auto h = load::decodeCompressedHistogram(text, &error);
    if (!h) {
        PORTICO_FUZZ_CHECK(!error.empty());
        return 0;
    }
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < h->buckets.size(); ++i) {
        PORTICO_FUZZ_CHECK(h->buckets[i].count > 0);
        PORTICO_FUZZ_CHECK(h->buckets[i].lowestNs <= h->buckets[i].highestNs);
        if (i) PORTICO_FUZZ_CHECK(h->buckets[i - 1].highestNs < h->buckets[i].lowestNs);
        total += h->buckets[i].count;
    }
    PORTICO_FUZZ_CHECK(total == h->totalCount);
    if (h->lowestDiscernibleValue == 1 && h->numberOfSignificantValueDigits == 3 && !h->buckets.empty() &&
        h->buckets.back().highestNs <= stats::Histogram::kHighest) {
        const auto back =
            load::decodeCompressedHistogram(load::encodeCompressedHistogram(h->buckets, h->maxValue), &error);
        PORTICO_FUZZ_CHECK(back && back->buckets.size() == h->buckets.size() &&
                           back->totalCount == h->totalCount);
    }
    return 0;
}

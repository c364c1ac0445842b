// HdrHistogram-compatible outputs of a load run: the percentile distribution text (.hgrm), the V2
// compressed histogram encoding (base64, as in interval logs) and its decoder, the interval log.
//
// Specs followed (HdrHistogram by Gil Tene, the Java reference implementation):
//  - AbstractHistogram.outputPercentileDistribution with PercentileIterator (the .hgrm text that
//    wrk2 prints and HdrHistogram's plotFiles.html plots),
//  - AbstractHistogram.encodeIntoCompressedByteBuffer / decodeFromCompressedByteBuffer (V2 encoding,
//    ZigZag LEB128-64b9B counts, zlib) and HistogramLogWriter / HistogramLogReader (log format 1.3).
// The JavaScript port hdr-histogram-js reads what is written here (tests/js, tst_hdr_js).
//
// Layout: stats::Histogram is an HdrHistogram with lowestDiscernibleValue 1 (unit magnitude 0),
// numberOfSignificantValueDigits 3 (subBucketCount 2048, subBucketHalfCount 1024) and
// highestTrackableValue stats::Histogram::kHighest, values in nanoseconds: its counts index is
// HdrHistogram's (stats::detail::histogramIndex), so 32 buckets, 33792 counts.
// Nothing here throws; nothing here is on a hot path.
#pragma once

#include <portico/load/result.h>
#include <portico/stats/histogram.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

namespace hdr {
/// V2 encoding cookies as HdrHistogram writes them: the V2 bases 0x1c849303 (plain) and 0x1c849304
/// (compressed) with 0x10 or-ed in ("LSBit of wordSize byte indicates TLZE encoding"). Readers compare
/// `cookie & ~0xf0` with the base.
inline constexpr std::uint32_t kEncodingCookieBase = 0x1c849303;
inline constexpr std::uint32_t kCompressedEncodingCookieBase = 0x1c849304;
inline constexpr std::uint32_t kEncodingCookie = kEncodingCookieBase | 0x10;                     // 0x1c849313
inline constexpr std::uint32_t kCompressedEncodingCookie = kCompressedEncodingCookieBase | 0x10; // 0x1c849314
/// stats::Histogram's layout in HdrHistogram's terms (written in every encoded header).
inline constexpr std::uint64_t kLowestDiscernibleValue = 1;                         ///< ns
inline constexpr std::uint64_t kHighestTrackableValue = stats::Histogram::kHighest; ///< ns (1 h)
inline constexpr int kNumberOfSignificantValueDigits = 3;
/// HistogramLogWriter's format version.
inline constexpr const char* kLogFormatVersion = "1.3";
} // namespace hdr

/// HdrHistogram's percentile distribution text (`outputPercentileDistribution(printStream,
/// ticksPerHalfDistance, outputValueUnitScalingRatio)`, not CSV) of `h`:
///
///        Value     Percentile TotalCount 1/(1-Percentile)
///     <blank line>
///        0.001 0.000000000000          1           1.00        ← "%12.3f %2.12f %10d %14.2f"
///        ...                                                   (one row per percentile tick)
///       10.002 1.000000000000      10000                       ← the 100 % row: "%12.3f %2.12f %10d"
///     #[Mean    =        5.001, StdDeviation   =        2.887]
///     #[Max     =       10.002, Total count    =        10000]
///     #[Buckets =           32, SubBuckets     =         2048]
///
/// Rows come from HdrHistogram's PercentileIterator: percentile levels 0, then
/// `ticksPerHalfDistance` equal steps in each half of the remaining distance to 100 % (0, 10, …, 50,
/// 55, …, 75, 77.5, … with 5), each row at the first bucket whose cumulative count reaches the level;
/// a bucket may give several rows; the last bucket gives one row and then the 100 % row. Value =
/// the bucket's highestEquivalentValue / `outputValueUnitScalingRatio` (recorded in ns, so 1e6 gives
/// milliseconds, as wrk2's files), Percentile = level / 100, TotalCount = values up to that bucket.
/// Mean and StdDeviation are HdrHistogram's (from each bucket's medianEquivalentValue, not the exact
/// ones stats::Histogram keeps); Max is highestEquivalentValue(max). An empty histogram gives the
/// header, no rows and a zero footer. Numbers are rounded as Java's Formatter and hdr-histogram-js
/// (Intl.NumberFormat) round them, from the shortest decimal form of the double, half up (C's printf
/// rounds the exact binary value and can differ in the last digit), so the text equals
/// hdr-histogram-js's outputPercentileDistribution byte for byte.
/// `ticksPerHalfDistance` < 1 is taken as 1; a non-positive or non-finite ratio as 1.
std::string percentileDistribution(const stats::Histogram& h, int ticksPerHalfDistance = 5,
                                   double outputValueUnitScalingRatio = 1e6);

/// A histogram in HdrHistogram's V2 compressed encoding, base64 (RFC 4648, padded): exactly what
/// HistogramLogWriter puts in the last field of an interval line ("HISTFAAA…").
///   compressed = be32 kCompressedEncodingCookie, be32 length of the zlib stream, zlib stream
///                (RFC 1950, level 9 as the Java writer's Deflater.BEST_COMPRESSION)
///   inflated   = be32 kEncodingCookie, be32 payload length, be32 normalizingIndexOffset (0),
///                be32 numberOfSignificantValueDigits (3), be64 lowestDiscernibleValue (1),
///                be64 highestTrackableValue (kHighest), be64 integerToDoubleValueConversionRatio
///                (the IEEE bits of 1.0), payload
///   payload    = counts[0 .. countsArrayIndex(maxNs)] as ZigZag LEB128-64b9B longs, a run of k ≥ 2
///                zero counts written as -k.
/// `buckets` are stats::Histogram::Bucket (as forEachBucket or LatencyInterval give them, any order;
/// `lowestNs` picks the index, values above kHighest count at kHighest); `maxNs` is the largest
/// recorded value (0 when empty) and bounds the counts written, as HdrHistogram's raw maxValue does.
std::string encodeCompressedHistogram(const std::vector<stats::Histogram::Bucket>& buckets,
                                      std::uint64_t maxNs);
/// The same for a whole histogram (its buckets and max()).
std::string encodeCompressedHistogram(const stats::Histogram& h);

/// A histogram read back from the V2 compressed encoding.
struct DecodedHistogram {
    /// Layout from the header (values are in the writer's unit: ns for Portico's logs).
    int numberOfSignificantValueDigits = 0;
    std::uint64_t lowestDiscernibleValue = 0;
    std::uint64_t highestTrackableValue = 0;
    /// The non-empty counts, ascending: each index's [lowestEquivalentValue, highestEquivalentValue]
    /// in HdrHistogram's layout for the header above (for Portico's own logs these equal
    /// stats::Histogram's buckets, so `stats::Histogram::record(lowestNs, count)` rebuilds it).
    std::vector<stats::Histogram::Bucket> buckets;
    std::uint64_t totalCount = 0;
    /// highestEquivalentValue of the highest non-empty index, 0 when empty (HdrHistogram's decoder
    /// establishes maxValue the same way: the exact max is not encoded).
    std::uint64_t maxValue = 0;
};

/// Reads what encodeCompressedHistogram (or any HdrHistogram V2 writer: Java, C, JS) wrote. Accepts
/// surrounding ASCII whitespace and any HdrHistogram layout (digits 0..5, lowestDiscernibleValue ≥ 1;
/// normalizingIndexOffset and the conversion ratio are ignored, as the readers do). Rejects, with a one-line
/// reason in `*error` (when given) and std::nullopt: bad base64, a cookie other than V2 compressed (V0/V1
/// included), a zlib length field that does not match the bytes present, a corrupt or truncated zlib stream
/// or bytes after it, an inflated size other than header + payload length, a malformed header, a LEB128 value
/// that runs past the payload, counts or zero runs beyond the layout's counts array, a total that overflows.
/// Never reads out of bounds; memory is bounded by the inflated size, itself bounded by the layout
/// (safe to fuzz).
std::optional<DecodedHistogram> decodeCompressedHistogram(std::string_view base64,
                                                          std::string* error = nullptr);

/// The HdrHistogram interval log (HistogramLogWriter, format version 1.3) of `r.intervals`:
///
///     #[Histogram log format version 1.3]
///     #[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
///     #[BaseTime: 1700000000.123 (seconds since epoch)]
///     "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
///     0.000,1.000,12.583,HISTFAAA…
///
/// StartTime = BaseTime = `r.startedAt` (the end of the warm-up), seconds with 3 decimals (the date
/// as Java's Date.toString() writes it, in UTC). One line per interval, empty ones included:
/// "%.3f,%.3f,%.3f,%s" (rounded as Java's Formatter does) = start in seconds relative to BaseTime, length in
/// seconds, Interval_Max in milliseconds = highestEquivalentValue(maxNs) / 1e6 (HistogramLogWriter writes
/// getMaxValueAsDouble() / maxValueUnitRatio with its default ratio 1e6: the max of the bucket, not
/// the exact max), the encodeCompressedHistogram of the interval. Lines end with "\n". Readers
/// (Java/JS HistogramLogReader) add BaseTime to the timestamps.
std::string intervalLog(const Result& r);

} // namespace portico::load

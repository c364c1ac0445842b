// HdrHistogram-compatible outputs: percentile distribution text, V2 compressed encoding (and its
// decoder), interval log. Follows HdrHistogram's Java sources (AbstractHistogram, PercentileIterator,
// ZigZagEncoding, HistogramLogWriter); see the header for the formats.
#include <portico/load/hdr_output.h>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>

namespace portico::load {

namespace {

using Bucket = stats::Histogram::Bucket;

// ---- layout (HdrHistogram's AbstractHistogram.init) --------------------------------------------

// The index arithmetic of an HdrHistogram layout. Portico's own is unitMagnitude 0,
// subBucketHalfCountMagnitude 10 (stats::detail::histogramIndex / histogramValue).
struct Layout {
    int unitMagnitude = 0;
    int subBucketHalfCountMagnitude = 10;
    std::uint64_t subBucketHalfCount = 1024;
    int bucketCount = 0;
    std::uint64_t countsArrayLength = 0;

    int bucketIndexOf(std::uint64_t index) const {
        return std::max(static_cast<int>(index >> subBucketHalfCountMagnitude) - 1, 0);
    }
    // valueFromIndex: the lowest equivalent value of counts index `index`.
    std::uint64_t valueFromIndex(std::uint64_t index) const {
        int bucketIndex = static_cast<int>(index >> subBucketHalfCountMagnitude) - 1;
        std::uint64_t subBucketIndex = (index & (subBucketHalfCount - 1)) + subBucketHalfCount;
        if (bucketIndex < 0) {
            subBucketIndex -= subBucketHalfCount;
            bucketIndex = 0;
        }
        return subBucketIndex << (bucketIndex + unitMagnitude);
    }
    // sizeOfEquivalentValueRange of the values at `index`.
    std::uint64_t sizeOfRange(std::uint64_t index) const {
        return std::uint64_t{1} << (unitMagnitude + bucketIndexOf(index));
    }
    std::uint64_t highestEquivalentAt(std::uint64_t index) const {
        return valueFromIndex(index) + (sizeOfRange(index) - 1);
    }
    std::uint64_t medianEquivalentAt(std::uint64_t index) const {
        return valueFromIndex(index) + (sizeOfRange(index) >> 1);
    }
};

// AbstractHistogram's constructor checks and establishSize; nullopt (with the reason) when Java
// would refuse the layout.
std::optional<Layout> makeLayout(std::uint64_t lowestDiscernibleValue, std::uint64_t highestTrackableValue,
                                 int numberOfSignificantValueDigits, std::string& error) {
    constexpr auto kLongMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (lowestDiscernibleValue < 1 || lowestDiscernibleValue > kLongMax / 2) {
        error = "lowestDiscernibleValue " + std::to_string(lowestDiscernibleValue) + " out of range";
        return std::nullopt;
    }
    if (highestTrackableValue > kLongMax || highestTrackableValue < 2 * lowestDiscernibleValue) {
        error = "highestTrackableValue " + std::to_string(highestTrackableValue) +
                " out of range (must be >= 2 * lowestDiscernibleValue, < 2^63)";
        return std::nullopt;
    }
    if (numberOfSignificantValueDigits < 0 || numberOfSignificantValueDigits > 5) {
        error = "numberOfSignificantValueDigits " + std::to_string(numberOfSignificantValueDigits) +
                " not in 0..5";
        return std::nullopt;
    }
    std::uint64_t largestValueWithSingleUnitResolution = 2;
    for (int i = 0; i < numberOfSignificantValueDigits; ++i)
        largestValueWithSingleUnitResolution *= 10;
    Layout l;
    l.unitMagnitude = std::bit_width(lowestDiscernibleValue) - 1; // floor(log2)
    const int subBucketCountMagnitude =
        std::bit_width(largestValueWithSingleUnitResolution - 1); // ceil(log2)
    if (subBucketCountMagnitude + l.unitMagnitude > 62) {
        error = "numberOfSignificantValueDigits too large for lowestDiscernibleValue";
        return std::nullopt;
    }
    l.subBucketHalfCountMagnitude = subBucketCountMagnitude - 1;
    l.subBucketHalfCount = std::uint64_t{1} << l.subBucketHalfCountMagnitude;
    // getBucketsNeededToCoverValue
    std::uint64_t smallestUntrackableValue = (l.subBucketHalfCount * 2) << l.unitMagnitude;
    int bucketsNeeded = 1;
    while (smallestUntrackableValue <= highestTrackableValue) {
        if (smallestUntrackableValue > kLongMax / 2) {
            ++bucketsNeeded;
            break;
        }
        smallestUntrackableValue <<= 1;
        ++bucketsNeeded;
    }
    l.bucketCount = bucketsNeeded;
    l.countsArrayLength = static_cast<std::uint64_t>(bucketsNeeded + 1) * l.subBucketHalfCount;
    return l;
}

// Portico's layout (stats::Histogram): always valid.
const Layout& porticoLayout() {
    static const Layout layout = [] {
        std::string unused;
        return *makeLayout(hdr::kLowestDiscernibleValue, hdr::kHighestTrackableValue,
                           hdr::kNumberOfSignificantValueDigits, unused);
    }();
    return layout;
}

std::size_t porticoIndex(std::uint64_t valueNs) {
    return stats::detail::histogramIndex(std::min(valueNs, hdr::kHighestTrackableValue));
}

// ---- text helpers ------------------------------------------------------------------------------

// `s` right-aligned in `width` columns (printf's "%<width>s").
std::string padLeft(std::string s, std::size_t width) {
    if (s.size() < width) s.insert(0, width - s.size(), ' ');
    return s;
}

// printf's "%<width>.<decimals>f" as Java's Formatter and hdr-histogram-js's Intl.NumberFormat
// produce it: from the shortest decimal form that reads back as the same double (not from the
// exact binary value, as C's printf), rounded half away from zero. So 99.97802734375 / 100, a double
// a little below 0.9997802734375, gives "0.999780273438" there and "0.999780273437" from printf.
std::string fixed(double v, int decimals, std::size_t width = 0) {
    if (!std::isfinite(v)) return padLeft(std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity", width);
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific); // shortest
    std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
    const bool negative = sci.front() == '-';
    if (negative) sci.remove_prefix(1);
    const std::size_t e = sci.find('e');
    std::string digits; // significant digits: v = 0.d1d2d3… × 10^(exponent + 1)
    for (char c : sci.substr(0, e))
        if (c != '.') digits += c;
    int exponent = 0;
    std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exponent);
    // Digits kept: those down to 10^-decimals; the next one decides the rounding (half up).
    const long kept = static_cast<long>(exponent) + 1 + decimals;
    std::string units; // v × 10^decimals, rounded, as decimal digits
    if (kept > 0) {
        units = digits.substr(
            0, static_cast<std::size_t>(std::min<long>(kept, static_cast<long>(digits.size()))));
        units.append(static_cast<std::size_t>(kept) - units.size(), '0');
    }
    if (kept >= 0 && static_cast<std::size_t>(kept) < digits.size() &&
        digits[static_cast<std::size_t>(kept)] >= '5') {
        std::size_t i = units.size();
        while (i > 0 && units[i - 1] == '9')
            units[--i] = '0';
        if (i == 0)
            units.insert(units.begin(), '1');
        else
            ++units[i - 1];
    }
    if (units.size() < static_cast<std::size_t>(decimals) + 1)
        units.insert(0, static_cast<std::size_t>(decimals) + 1 - units.size(), '0');
    if (decimals > 0) units.insert(units.size() - static_cast<std::size_t>(decimals), 1, '.');
    const bool zero = units.find_first_not_of("0.") == std::string::npos;
    return padLeft((negative && !zero ? "-" : "") + units, width);
}

std::string integer(std::uint64_t v, std::size_t width) { return padLeft(std::to_string(v), width); }

// RFC 4648 base64 with padding (what Java's Base64Helper and base64-js write).
constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(const std::string& bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                                (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                                static_cast<unsigned char>(bytes[i + 2]);
        for (int s = 18; s >= 0; s -= 6)
            out += kBase64Alphabet[(v >> s) & 63];
    }
    if (const std::size_t rest = bytes.size() - i) {
        std::uint32_t v = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
        if (rest == 2) v |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
        out += kBase64Alphabet[(v >> 18) & 63];
        out += kBase64Alphabet[(v >> 12) & 63];
        out += rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// Strict: length a multiple of 4, alphabet only, '=' only as the last one or two characters.
std::optional<std::string> base64Decode(std::string_view in, std::string& error) {
    if (in.empty() || in.size() % 4 != 0) {
        error = "bad base64: length " + std::to_string(in.size()) + " is not a positive multiple of 4";
        return std::nullopt;
    }
    std::array<int, 256> value{};
    value.fill(-1);
    for (int i = 0; i < 64; ++i)
        value[static_cast<unsigned char>(kBase64Alphabet[i])] = i;
    std::size_t padding = 0;
    if (in.back() == '=') padding = in[in.size() - 2] == '=' ? 2 : 1;
    std::string out;
    out.reserve(in.size() / 4 * 3);
    for (std::size_t i = 0; i < in.size(); i += 4) {
        std::uint32_t v = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            const std::size_t pos = i + j;
            const char c = in[pos];
            int d = value[static_cast<unsigned char>(c)];
            if (c == '=' && pos >= in.size() - padding) d = 0;
            if (d < 0) {
                error = "bad base64: unexpected character at offset " + std::to_string(pos);
                return std::nullopt;
            }
            v = (v << 6) | static_cast<std::uint32_t>(d);
        }
        out += static_cast<char>((v >> 16) & 0xff);
        out += static_cast<char>((v >> 8) & 0xff);
        out += static_cast<char>(v & 0xff);
    }
    out.resize(out.size() - padding);
    return out;
}

void putBe32(std::string& out, std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
        out += static_cast<char>((v >> s) & 0xff);
}
void putBe64(std::string& out, std::uint64_t v) {
    for (int s = 56; s >= 0; s -= 8)
        out += static_cast<char>((v >> s) & 0xff);
}
std::uint64_t getBe(const std::string& in, std::size_t pos, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v = (v << 8) | static_cast<unsigned char>(in[pos + static_cast<std::size_t>(i)]);
    return v;
}

// ZigZagEncoding.putLong: ZigZag, then LEB128 with at most 9 bytes (the 9th holds 8 bits).
void putZigZagLong(std::string& out, std::int64_t value) {
    std::uint64_t v = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
    for (int i = 0; i < 8; ++i) {
        if ((v >> 7) == 0) {
            out += static_cast<char>(v);
            return;
        }
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v); // bits 56..63
}

// ZigZagEncoding.getLong; false when the value runs past `end`.
bool getZigZagLong(const std::string& in, std::size_t& pos, std::size_t end, std::int64_t& value) {
    std::uint64_t v = 0;
    for (int i = 0; i < 9; ++i) {
        if (pos >= end) return false;
        const std::uint64_t b = static_cast<unsigned char>(in[pos++]);
        if (i == 8) {
            v |= b << 56;
            break;
        }
        v |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) break;
    }
    value = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
    return true;
}

constexpr std::size_t kHeaderSize = 40; // ENCODING_HEADER_SIZE

} // namespace

// ---- percentile distribution -------------------------------------------------------------------

std::string percentileDistribution(const stats::Histogram& h, int ticksPerHalfDistance,
                                   double outputValueUnitScalingRatio) {
    const Layout& layout = porticoLayout();
    const int ticks = std::max(ticksPerHalfDistance, 1);
    const double ratio = std::isfinite(outputValueUnitScalingRatio) && outputValueUnitScalingRatio > 0
                             ? outputValueUnitScalingRatio
                             : 1.0;
    // "%12s %14s %10s %14s\n\n"
    std::string out = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n";

    // The non-empty counts, ascending (what the iterators stop at).
    struct Count {
        std::size_t index;
        std::uint64_t count;
    };
    std::vector<Count> counts;
    h.forEachBucket([&](const Bucket& b) { counts.push_back({porticoIndex(b.lowestNs), b.count}); });
    const std::uint64_t total = h.count();

    // PercentileIterator: a level is reached at the first non-empty index whose cumulative count is
    // at or above it ((100 * cum) / total >= level, in doubles); each reached level gives a row and
    // moves the level on; once the cumulative count is the total, one last row at 100 %.
    const auto row = [&](std::size_t index, double level, std::uint64_t cum) {
        const double value = static_cast<double>(layout.highestEquivalentAt(index)) / ratio;
        const double percentile = level / 100.0;
        // "%12.3f %2.12f %10d %14.2f\n", the 100 % row without its last column.
        out += fixed(value, 3, 12) + ' ' + fixed(percentile, 12, 2) + ' ' + integer(cum, 10);
        if (level != 100.0) out += ' ' + fixed(1 / (1.0 - percentile), 2, 14);
        out += '\n';
    };
    double level = 0;
    std::uint64_t cum = 0;
    for (const Count& c : counts) {
        cum += c.count;
        while ((100.0 * static_cast<double>(cum)) / static_cast<double>(total) >= level) {
            row(c.index, level, cum);
            // incrementIterationLevel: ticks per half distance at the current scale. log2 as
            // hdr-histogram-js; Java's log(x)/log(2) gives the same integer for the levels reached.
            const double reportingTicks =
                ticks * std::pow(2.0, std::floor(std::log2(100.0 / (100.0 - level))) + 1);
            const double next = level + 100.0 / reportingTicks;
            if (cum == total) break; // hasNext(): the remaining row is the 100 % one
            if (!(next > level)) {   // steps below the resolution of a double near 100 (> 2^40 values)
                level = next;
                break;
            }
            level = next;
        }
        if (cum == total) {
            row(c.index, 100.0, cum);
            break;
        }
    }

    // Mean and standard deviation over the medianEquivalentValue of each index, summed in
    // ascending order as getMean() / getStdDeviation() do.
    double mean = 0, stddev = 0;
    if (total) {
        double totalValue = 0;
        for (const Count& c : counts)
            totalValue +=
                static_cast<double>(layout.medianEquivalentAt(c.index)) * static_cast<double>(c.count);
        mean = totalValue / static_cast<double>(total);
        double geometricDeviationTotal = 0;
        for (const Count& c : counts) {
            const double deviation = static_cast<double>(layout.medianEquivalentAt(c.index)) - mean;
            geometricDeviationTotal += deviation * deviation * static_cast<double>(c.count);
        }
        stddev = std::sqrt(geometricDeviationTotal / static_cast<double>(total));
    }
    const double max = h.max() ? static_cast<double>(layout.highestEquivalentAt(porticoIndex(h.max()))) : 0.0;
    out += "#[Mean    = " + fixed(mean / ratio, 3, 12) +
           ", StdDeviation   = " + fixed(stddev / ratio, 3, 12) + "]\n";
    out += "#[Max     = " + fixed(max / ratio, 3, 12) + ", Total count    = " + integer(total, 12) + "]\n";
    out += "#[Buckets = " + integer(static_cast<std::uint64_t>(layout.bucketCount), 12) +
           ", SubBuckets     = " + integer(layout.subBucketHalfCount * 2, 12) + "]\n";
    return out;
}

// ---- V2 compressed encoding --------------------------------------------------------------------

std::string encodeCompressedHistogram(const std::vector<Bucket>& buckets, std::uint64_t maxNs) {
    // countsLimit = countsArrayIndex(maxValue) + 1 (at least one count, 0, when empty).
    std::size_t last = porticoIndex(maxNs);
    for (const Bucket& b : buckets)
        if (b.count) last = std::max(last, porticoIndex(b.lowestNs));
    std::vector<std::uint64_t> counts(last + 1, 0);
    for (const Bucket& b : buckets)
        counts[porticoIndex(b.lowestNs)] += b.count;

    std::string payload;
    for (std::size_t i = 0; i < counts.size();) {
        const std::uint64_t count = counts[i++];
        std::int64_t zerosCount = 0;
        if (count == 0) {
            zerosCount = 1;
            while (i < counts.size() && counts[i] == 0) {
                ++zerosCount;
                ++i;
            }
        }
        // Counts above 2^63 - 1 cannot be encoded (a long in Java); saturate rather than wrap.
        putZigZagLong(payload, zerosCount > 1 ? -zerosCount
                                              : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                    count, std::numeric_limits<std::int64_t>::max())));
    }

    std::string plain;
    putBe32(plain, hdr::kEncodingCookie);
    putBe32(plain, static_cast<std::uint32_t>(payload.size()));
    putBe32(plain, 0); // normalizingIndexOffset
    putBe32(plain, static_cast<std::uint32_t>(hdr::kNumberOfSignificantValueDigits));
    putBe64(plain, hdr::kLowestDiscernibleValue);
    putBe64(plain, hdr::kHighestTrackableValue);
    putBe64(plain, std::bit_cast<std::uint64_t>(1.0)); // integerToDoubleValueConversionRatio
    plain += payload;

    uLongf compressedLength = compressBound(static_cast<uLong>(plain.size()));
    std::string compressed(compressedLength, '\0');
    if (compress2(reinterpret_cast<Bytef*>(compressed.data()), &compressedLength,
                  reinterpret_cast<const Bytef*>(plain.data()), static_cast<uLong>(plain.size()),
                  Z_BEST_COMPRESSION) != Z_OK)
        return {}; // only on allocation failure
    compressed.resize(compressedLength);

    std::string framed;
    putBe32(framed, hdr::kCompressedEncodingCookie);
    putBe32(framed, static_cast<std::uint32_t>(compressed.size()));
    framed += compressed;
    return base64Encode(framed);
}

std::string encodeCompressedHistogram(const stats::Histogram& h) {
    std::vector<Bucket> buckets;
    h.forEachBucket([&](const Bucket& b) { buckets.push_back(b); });
    return encodeCompressedHistogram(buckets, h.max());
}

std::optional<DecodedHistogram> decodeCompressedHistogram(std::string_view base64, std::string* error) {
    std::string scratch;
    std::string& err = error ? *error : scratch;
    err.clear();
    const auto fail = [&](std::string why) -> std::optional<DecodedHistogram> {
        err = std::move(why);
        return std::nullopt;
    };

    const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!base64.empty() && isSpace(base64.front()))
        base64.remove_prefix(1);
    while (!base64.empty() && isSpace(base64.back()))
        base64.remove_suffix(1);
    const std::optional<std::string> bytes = base64Decode(base64, err);
    if (!bytes) return std::nullopt;

    // Compressed frame: cookie, zlib length, zlib stream.
    if (bytes->size() < 8)
        return fail("too short for a compressed histogram (" + std::to_string(bytes->size()) + " bytes)");
    const auto cookie = static_cast<std::uint32_t>(getBe(*bytes, 0, 4));
    if ((cookie & ~0xf0u) != hdr::kCompressedEncodingCookieBase) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", cookie);
        return fail(std::string("not a V2 compressed histogram: cookie ") + hex + " (expected 0x1c849314)");
    }
    const auto zlibLength = static_cast<std::int32_t>(getBe(*bytes, 4, 4));
    if (zlibLength < 0 || static_cast<std::size_t>(zlibLength) != bytes->size() - 8)
        return fail("compressed length field says " + std::to_string(zlibLength) + " bytes, " +
                    std::to_string(bytes->size() - 8) + " follow");

    // Inflate: the 40-byte header first, then exactly the payload length it gives (never more).
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) return fail("zlib: inflateInit failed");
    struct End {
        z_stream* zs;
        ~End() { inflateEnd(zs); }
    } end{&zs};
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes->data() + 8));
    zs.avail_in = static_cast<uInt>(zlibLength);

    std::string plain;
    std::size_t limit = kHeaderSize; // grows to header + payload once the header is read
    std::optional<Layout> layout;
    DecodedHistogram d;
    std::size_t payloadLength = 0;
    const auto readHeader = [&]() -> bool {
        const auto innerCookie = static_cast<std::uint32_t>(getBe(plain, 0, 4));
        if ((innerCookie & ~0xf0u) != hdr::kEncodingCookieBase) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", innerCookie);
            err =
                std::string("inflated data is not a V2 histogram: cookie ") + hex + " (expected 0x1c849313)";
            return false;
        }
        const auto length = static_cast<std::int32_t>(getBe(plain, 4, 4));
        d.numberOfSignificantValueDigits = static_cast<std::int32_t>(getBe(plain, 12, 4));
        d.lowestDiscernibleValue = getBe(plain, 16, 8);
        d.highestTrackableValue = getBe(plain, 24, 8);
        // Bytes 8..11, normalizingIndexOffset, say where the writer's counts array started in memory
        // (shifted histograms); the payload is in logical index order anyway, so it is ignored as
        // hdr-histogram-js does (whose writer puts 1 there). Bytes 32..39,
        // integerToDoubleValueConversionRatio, mean nothing for integer histograms.
        layout = makeLayout(d.lowestDiscernibleValue, d.highestTrackableValue,
                            d.numberOfSignificantValueDigits, err);
        if (!layout) {
            err = "bad header: " + err;
            return false;
        }
        // At most 9 bytes per count (V2maxWordSizeInBytes).
        if (length < 0 || static_cast<std::uint64_t>(length) > layout->countsArrayLength * 9) {
            err = "bad header: payload length " + std::to_string(length) + " out of range";
            return false;
        }
        payloadLength = static_cast<std::size_t>(length);
        limit = kHeaderSize + payloadLength;
        return true;
    };
    for (;;) {
        if (!layout && plain.size() >= kHeaderSize && !readHeader()) return std::nullopt;
        if (plain.size() > limit)
            return fail(layout ? "inflated data longer than the header's payload length (" +
                                     std::to_string(payloadLength) + " bytes)"
                               : "inflated data too long");
        // Room for one byte more than allowed, to see a stream that goes on.
        const std::size_t room = std::min<std::size_t>(limit + 1 - plain.size(), 1 << 16);
        const std::size_t before = plain.size();
        plain.resize(before + room);
        zs.next_out = reinterpret_cast<Bytef*>(plain.data() + before);
        zs.avail_out = static_cast<uInt>(room);
        const int rc = inflate(&zs, Z_NO_FLUSH);
        plain.resize(before + (room - zs.avail_out));
        if (rc == Z_STREAM_END) break;
        if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
            return fail(std::string("corrupt zlib stream: ") +
                        (zs.msg ? zs.msg : "error " + std::to_string(rc)));
        if (zs.avail_in == 0 && zs.avail_out != 0) return fail("truncated zlib stream");
        if (rc == Z_BUF_ERROR && zs.avail_in == 0) return fail("truncated zlib stream");
    }
    if (zs.avail_in != 0)
        return fail(std::to_string(zs.avail_in) + " bytes after the end of the zlib stream");
    if (!layout) {
        if (plain.size() < kHeaderSize)
            return fail("inflated data too short for a histogram header (" + std::to_string(plain.size()) +
                        " bytes)");
        if (!readHeader()) return std::nullopt;
    }
    if (plain.size() != limit)
        return fail("payload length says " + std::to_string(payloadLength) + " bytes, " +
                    std::to_string(plain.size() - kHeaderSize) + " inflated");

    // Payload: ZigZag LEB128 counts, negative values are runs of zero counts.
    std::uint64_t dstIndex = 0;
    for (std::size_t pos = kHeaderSize; pos < plain.size();) {
        const std::size_t at = pos - kHeaderSize;
        std::int64_t count = 0;
        if (!getZigZagLong(plain, pos, plain.size(), count))
            return fail("LEB128 value at payload byte " + std::to_string(at) + " runs past the end");
        if (count < 0) {
            const std::uint64_t zerosCount = ~static_cast<std::uint64_t>(count) + 1;
            if (zerosCount > layout->countsArrayLength - dstIndex)
                return fail("run of " + std::to_string(zerosCount) + " zero counts at index " +
                            std::to_string(dstIndex) + " goes beyond the " +
                            std::to_string(layout->countsArrayLength) + " counts of the layout");
            dstIndex += zerosCount;
            continue;
        }
        if (dstIndex >= layout->countsArrayLength)
            return fail("count at index " + std::to_string(dstIndex) + " beyond the " +
                        std::to_string(layout->countsArrayLength) + " counts of the layout");
        if (count > 0) {
            const auto c = static_cast<std::uint64_t>(count);
            if (c > std::numeric_limits<std::uint64_t>::max() - d.totalCount)
                return fail("total count overflows");
            d.totalCount += c;
            const std::uint64_t lowest = layout->valueFromIndex(dstIndex);
            d.buckets.push_back(Bucket{lowest, layout->highestEquivalentAt(dstIndex), c});
            d.maxValue = d.buckets.back().highestNs;
        }
        ++dstIndex;
    }
    return d;
}

// ---- interval log ------------------------------------------------------------------------------

std::string intervalLog(const Result& r) {
    using namespace std::chrono;
    const long long startMs = duration_cast<milliseconds>(r.startedAt.time_since_epoch()).count();
    const double startSec = static_cast<double>(startMs) / 1000.0;

    // Java's Date.toString(): "EEE MMM dd HH:mm:ss zzz yyyy", here in UTC.
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::time_t t = static_cast<std::time_t>(startMs >= 0 ? startMs / 1000 : (startMs - 999) / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    std::snprintf(date, sizeof date, "%s %s %02d %02d:%02d:%02d UTC %d", kDays[tm.tm_wday % 7],
                  kMonths[tm.tm_mon % 12], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);

    std::string out;
    out += "#[Histogram log format version ";
    out += hdr::kLogFormatVersion;
    out += "]\n";
    out += "#[StartTime: " + fixed(startSec, 3) + " (seconds since epoch), " + date + "]\n";
    out += "#[BaseTime: " + fixed(startSec, 3) + " (seconds since epoch)]\n";
    out += "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
    const Layout& layout = porticoLayout();
    for (const LatencyInterval& in : r.intervals) {
        const double maxMs =
            in.maxNs ? static_cast<double>(layout.highestEquivalentAt(porticoIndex(in.maxNs))) / 1e6 : 0.0;
        // "%.3f,%.3f,%.3f,%s\n"
        out += fixed(static_cast<double>(in.start.count()) / 1e9, 3) + ',' +
               fixed(static_cast<double>(in.length.count()) / 1e9, 3) + ',' + fixed(maxMs, 3) + ',';
        out += encodeCompressedHistogram(in.buckets, in.maxNs);
        out += '\n';
    }
    return out;
}

} // namespace portico::load

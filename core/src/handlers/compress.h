// Content-coding negotiation (Accept-Encoding) and one-shot gzip / Brotli compression.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::handlers {

enum class Coding : unsigned char { Identity, Brotli, Gzip };

/// Content-Encoding token for `c` ("br", "gzip"; "" for identity).
std::string_view codingToken(Coding c);

/// The codings a client accepts among the ones Portico produces, best first.
struct AcceptedCodings {
    Coding order[2] = {Coding::Identity, Coding::Identity};
    std::size_t count = 0;
};

/// Reads an Accept-Encoding value (RFC 9110 §12.5.3): q-values are honoured, "q=0" refuses a
/// coding, "*" stands for codings not listed, "x-gzip" counts as gzip. Ties prefer Brotli (smaller
/// output). An empty value accepts nothing but identity (we do not compress for clients that did
/// not ask, although §12.5.3 would allow it). Never allocates.
AcceptedCodings acceptedCodings(std::string_view acceptEncoding);

/// Compresses `in` into `out` (replaced) as a gzip member (zlib deflate, windowBits 31) at `level`
/// 1..9. False on a zlib error.
bool gzipCompress(std::string_view in, int level, std::string& out);

/// Compresses `in` into `out` (replaced) with Brotli (BrotliEncoderCompress) at `quality` 0..11.
/// False on an encoder error.
bool brotliCompress(std::string_view in, int quality, std::string& out);

} // namespace portico::handlers

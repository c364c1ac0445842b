// Accept-Encoding negotiation and the zlib / libbrotli calls behind static-file compression.
#include "handlers/compress.h"

#include "handlers/http_util.h"

#include <portico/http/message.h>

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <climits>

namespace portico::handlers {
namespace {

// q-value in thousandths (RFC 9110 §12.4.2: at most three decimals); -1 when malformed.
int parseQ(std::string_view v) {
    v = trimOws(v);
    if (v.empty() || (v[0] != '0' && v[0] != '1')) return -1;
    int whole = v[0] - '0';
    int frac = 0, scale = 100;
    if (v.size() > 1) {
        if (v[1] != '.') return -1;
        for (std::size_t i = 2; i < v.size() && i < 5; ++i) {
            if (v[i] < '0' || v[i] > '9') return -1;
            frac += (v[i] - '0') * scale;
            scale /= 10;
        }
    }
    return std::min(1000, whole * 1000 + frac);
}

} // namespace

std::string_view codingToken(Coding c) {
    switch (c) {
    case Coding::Brotli:
        return "br";
    case Coding::Gzip:
        return "gzip";
    default:
        return "";
    }
}

AcceptedCodings acceptedCodings(std::string_view value) {
    int qBr = -1, qGz = -1, qStar = -1;
    while (!value.empty()) {
        std::size_t comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        std::size_t semi = item.find(';');
        std::string_view token = trimOws(item.substr(0, semi));
        std::string_view params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
        int q = 1000;
        while (!params.empty()) {
            std::size_t next = params.find(';');
            std::string_view param = trimOws(params.substr(0, next));
            params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
            if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=')
                q = parseQ(param.substr(2));
        }
        if (q < 0) continue; // a malformed weight: ignore the whole item
        if (http::iequals(token, "br"))
            qBr = q;
        else if (http::iequals(token, "gzip") || http::iequals(token, "x-gzip"))
            qGz = std::max(qGz, q);
        else if (token == "*")
            qStar = q;
    }
    if (qBr < 0) qBr = qStar;
    if (qGz < 0) qGz = qStar;
    AcceptedCodings out;
    if (qBr > 0 && qBr >= qGz) {
        out.order[out.count++] = Coding::Brotli;
        if (qGz > 0) out.order[out.count++] = Coding::Gzip;
    } else if (qGz > 0) {
        out.order[out.count++] = Coding::Gzip;
        if (qBr > 0) out.order[out.count++] = Coding::Brotli;
    }
    return out;
}

bool gzipCompress(std::string_view in, int level, std::string& out) {
    z_stream zs{};
    // windowBits 15 + 16 asks zlib for a gzip wrapper instead of a zlib one.
    if (deflateInit2(&zs, std::clamp(level, 1, 9), Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    out.resize(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    int rc = deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return rc == Z_STREAM_END;
}

bool brotliCompress(std::string_view in, int quality, std::string& out) {
    std::size_t size = BrotliEncoderMaxCompressedSize(in.size());
    if (size == 0) size = in.size() + 1024;
    out.resize(size);
    if (!BrotliEncoderCompress(std::clamp(quality, 0, 11), BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC,
                               in.size(), reinterpret_cast<const uint8_t*>(in.data()), &size,
                               reinterpret_cast<uint8_t*>(out.data())))
        return false;
    out.resize(size);
    return true;
}

} // namespace portico::handlers

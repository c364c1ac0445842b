// UTF-8 validation, handshake keys, and permessage-deflate on zlib.
#include "ws/codec.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <zlib.h>

#include <algorithm>
#include <memory>

namespace portico::ws {

namespace {
// Björn Höhrmann's UTF-8 DFA (http://bjoern.hoehrmann.de/utf-8/decoder/dfa/), MIT licence:
// character classes, then transitions; state 0 accepts, 12 rejects.
constexpr std::uint8_t kUtf8[] = {
    // byte → class
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 10, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 3, 3, 11, 6, 6, 6, 5,
    8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
    // state × class → state
    0, 12, 24, 36, 60, 96, 84, 12, 12, 12, 48, 72, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 0, 12,
    12, 12, 12, 12, 0, 12, 0, 12, 12, 12, 24, 12, 12, 12, 12, 12, 24, 12, 24, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 24, 12, 12, 12, 12, 12, 24, 12, 12, 12, 12, 12, 12, 12, 24, 12, 12, 12, 12, 12, 12, 12, 12, 12, 36,
    12, 36, 12, 12, 12, 36, 12, 12, 12, 12, 12, 36, 12, 36, 12, 12, 12, 36, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12};
constexpr std::uint32_t kReject = 12;

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"; // RFC 6455 §1.3
constexpr unsigned char kTail[4] = {0x00, 0x00, 0xff, 0xff};               // RFC 7692 §7.2.1
} // namespace

bool Utf8Validator::feed(std::string_view bytes) {
    std::uint32_t state = state_;
    if (state == kReject) return false;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const auto* end = p + bytes.size();
    while (p < end) {
        if (state == 0) {
            // ASCII fast path: 8 bytes at a time while no byte has its top bit set.
            while (end - p >= 8) {
                std::uint64_t w;
                std::memcpy(&w, p, 8);
                if (w & 0x8080808080808080ull) break;
                p += 8;
            }
            if (p == end) break;
        }
        state = kUtf8[256 + state + kUtf8[*p++]];
        if (state == kReject) break;
    }
    state_ = state;
    return state != kReject;
}

bool validUtf8(std::string_view bytes) {
    Utf8Validator v;
    return v.feed(bytes) && v.complete();
}

bool validCloseCode(std::uint16_t code) {
    if (code >= 3000 && code <= 4999) return true;
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014);
}

std::string acceptKey(std::string_view key) {
    std::string in(key);
    in += kGuid;
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(in.data()), in.size(), digest);
    unsigned char out[32];
    int n = EVP_EncodeBlock(out, digest, SHA_DIGEST_LENGTH);
    return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

bool validKey(std::string_view key) {
    if (key.size() != 24 || !key.ends_with("==")) return false;
    for (std::size_t i = 0; i < 22; ++i) {
        char c = key[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                  c == '/';
        if (!ok) return false;
    }
    // The 16th byte's low 4 bits are the last character's padding bits: they must be zero.
    static constexpr std::string_view kLast = "AQgw";
    return kLast.find(key[21]) != std::string_view::npos;
}

Deflater::Deflater(int windowBits) : z_(new z_stream{}) {
    // Raw deflate (negative window bits), default memory level.
    if (deflateInit2(z_, 6, Z_DEFLATED, -windowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        delete z_;
        z_ = nullptr;
    }
}

Deflater::~Deflater() {
    if (z_) deflateEnd(z_);
    delete z_;
}

Deflater& Deflater::local(int windowBits) {
    thread_local std::unique_ptr<Deflater> d[16];
    windowBits = std::clamp(windowBits, 9, 15);
    if (!d[windowBits]) d[windowBits] = std::make_unique<Deflater>(windowBits);
    return *d[windowBits];
}

bool Deflater::compress(std::string_view in, std::string& out) {
    if (!z_) return false;
    const std::size_t start = out.size();
    std::size_t cap = deflateBound(z_, in.size()) + 16;
    out.resize(start + cap);
    z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_->avail_in = static_cast<uInt>(in.size());
    z_->next_out = reinterpret_cast<Bytef*>(out.data() + start);
    z_->avail_out = static_cast<uInt>(cap);
    int rc = ::deflate(z_, Z_SYNC_FLUSH);
    while (rc == Z_OK && z_->avail_out == 0) { // deflateBound is an upper bound; be safe anyway
        std::size_t used = out.size() - start;
        out.resize(out.size() + 1024);
        z_->next_out = reinterpret_cast<Bytef*>(out.data() + start + used);
        z_->avail_out = 1024;
        rc = ::deflate(z_, Z_SYNC_FLUSH);
    }
    std::size_t produced = out.size() - start - z_->avail_out;
    deflateReset(z_); // server_no_context_takeover
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
        out.resize(start);
        return false;
    }
    out.resize(start + produced);
    if (produced >= 4 && std::memcmp(out.data() + out.size() - 4, kTail, 4) == 0) out.resize(out.size() - 4);
    return true;
}

Inflater::Inflater(bool noContextTakeover) : z_(new z_stream{}), noContext_(noContextTakeover) {
    if (inflateInit2(z_, -15) != Z_OK) {
        delete z_;
        z_ = nullptr;
    }
}

Inflater::~Inflater() {
    if (z_) inflateEnd(z_);
    delete z_;
}

Inflater::Result Inflater::run(const unsigned char* p, std::size_t n, std::string& out, std::uint64_t limit) {
    if (ended_ && n > 0) return Result::Error; // bytes after the message's final deflate block
    z_->next_in = const_cast<Bytef*>(p);
    z_->avail_in = static_cast<uInt>(n);
    while (z_->avail_in > 0) {
        if (out.size() >= limit) return Result::TooBig;
        const std::size_t start = out.size();
        std::size_t chunk = std::min<std::uint64_t>(std::max<std::size_t>(n * 4, 4096), limit - start);
        chunk = std::min<std::size_t>(chunk, 1 << 20);
        out.resize(start + chunk);
        z_->next_out = reinterpret_cast<Bytef*>(out.data() + start);
        z_->avail_out = static_cast<uInt>(chunk);
        int rc = ::inflate(z_, Z_SYNC_FLUSH);
        out.resize(start + chunk - z_->avail_out);
        if (rc == Z_STREAM_END) {
            // A final deflate block: anything after it is garbage for this message's stream, in
            // this piece or a later one (ended_ until the message ends).
            inflateReset(z_);
            ended_ = true;
            if (z_->avail_in > 0) return Result::Error;
            break;
        }
        if (rc == Z_BUF_ERROR && z_->avail_out > 0) break; // needs more input
        if (rc != Z_OK && rc != Z_BUF_ERROR) return Result::Error;
    }
    // inflate may hold decompressed bytes when the output filled exactly: drain them.
    for (;;) {
        if (out.size() > limit) return Result::TooBig;
        if (z_->avail_out != 0) break;
        const std::size_t start = out.size();
        if (start >= limit) {
            // Probe one more byte to tell "exactly at the limit" from "over it".
            char probe;
            z_->next_out = reinterpret_cast<Bytef*>(&probe);
            z_->avail_out = 1;
            int rc = ::inflate(z_, Z_SYNC_FLUSH);
            if (z_->avail_out == 0) return Result::TooBig;
            if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) return Result::Error;
            break;
        }
        std::size_t chunk = std::min<std::uint64_t>(4096, limit - start);
        out.resize(start + chunk);
        z_->next_out = reinterpret_cast<Bytef*>(out.data() + start);
        z_->avail_out = static_cast<uInt>(chunk);
        int rc = ::inflate(z_, Z_SYNC_FLUSH);
        out.resize(start + chunk - z_->avail_out);
        if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) return Result::Error;
        if (z_->avail_out != 0) break;
    }
    return out.size() > limit ? Result::TooBig : Result::Ok;
}

Inflater::Result Inflater::inflate(std::string_view in, bool final, std::string& out, std::uint64_t limit) {
    if (!z_) return Result::Error;
    Result r = run(reinterpret_cast<const unsigned char*>(in.data()), in.size(), out, limit);
    if (r == Result::Ok && final) {
        if (!ended_) r = run(kTail, sizeof kTail, out, limit); // a stream that ended needs no tail
        ended_ = false;
        if (noContext_) inflateReset(z_);
    }
    return r;
}

Inflater::Result Inflater::runSkim(const unsigned char* p, std::size_t n, std::string& prefix,
                                   std::size_t keep, std::uint64_t& total, std::uint64_t limit) {
    if (ended_ && n > 0) return Result::Error; // bytes after the message's final deflate block
    unsigned char buf[16 * 1024];
    z_->next_in = const_cast<Bytef*>(p);
    z_->avail_in = static_cast<uInt>(n);
    // Each turn either consumes input or fills `buf`, and `total` is bounded by `limit`: bounded.
    for (;;) {
        z_->next_out = buf;
        z_->avail_out = sizeof buf;
        const int rc = ::inflate(z_, Z_SYNC_FLUSH);
        const std::size_t produced = sizeof buf - z_->avail_out;
        if (prefix.size() < keep)
            prefix.append(reinterpret_cast<const char*>(buf), std::min(produced, keep - prefix.size()));
        total += produced;
        if (total > limit) return Result::TooBig;
        if (rc == Z_STREAM_END) {
            inflateReset(z_); // a final deflate block: anything after it in this message is garbage
            ended_ = true;
            return z_->avail_in > 0 ? Result::Error : Result::Ok;
        }
        if (rc == Z_BUF_ERROR) return z_->avail_in == 0 ? Result::Ok : Result::Error; // no progress
        if (rc != Z_OK) return Result::Error;
        if (z_->avail_in == 0 && z_->avail_out != 0) return Result::Ok; // all in, all out
    }
}

Inflater::Result Inflater::skim(std::string_view in, bool final, std::string& prefix, std::size_t keep,
                                std::uint64_t& total, std::uint64_t limit) {
    if (!z_) return Result::Error;
    Result r = Result::Ok;
    // zlib takes at most 4 GiB per call (uInt): a frame's piece is far smaller, but stay exact.
    for (std::size_t at = 0; r == Result::Ok && at < in.size();) {
        const std::size_t n = std::min<std::size_t>(in.size() - at, 1u << 30);
        r = runSkim(reinterpret_cast<const unsigned char*>(in.data()) + at, n, prefix, keep, total, limit);
        at += n;
    }
    if (r == Result::Ok && final) {
        if (!ended_) r = runSkim(kTail, sizeof kTail, prefix, keep, total, limit);
        ended_ = false;
        if (noContext_) inflateReset(z_);
    }
    return r;
}

} // namespace portico::ws

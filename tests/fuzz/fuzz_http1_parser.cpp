// Fuzz target: the HTTP/1.1 request-head parser and the chunked decoder (RFC 9112).
// Invariants checked besides "no crash, no sanitizer report":
// - a Complete head consumes no more than the input and its views point into the input;
// - the chunked decoder gives the same result (status, body, consumed bytes) whether the body
//   arrives at once or one byte at a time.
#include "fuzz_support.h"

#include <portico/http1/parser.h>

#include <string>

using namespace portico;

namespace {

bool inside(std::string_view outer, std::string_view v) {
    return v.empty() || (v.data() >= outer.data() && v.data() + v.size() <= outer.data() + outer.size());
}

// rawPath may also be the parser's static "/" (an absolute-form target with an empty path).
bool pathInside(std::string_view outer, std::string_view v) { return inside(outer, v) || v == "/"; }

struct Decoded {
    http1::ChunkedDecoder::Status status = http1::ChunkedDecoder::Status::NeedMore;
    std::string body;
    std::size_t consumed = 0;
};

Decoded decodeWhole(std::string_view in) {
    Decoded d;
    http1::ChunkedDecoder dec;
    dec.reset(1 << 20);
    http1::ParseError err;
    d.status = dec.decode(in, d.body, d.consumed, err);
    return d;
}

// Feeds `in` growing by one byte, re-presenting the unconsumed rest as a caller must.
Decoded decodeBytewise(std::string_view in) {
    Decoded d;
    http1::ChunkedDecoder dec;
    dec.reset(1 << 20);
    http1::ParseError err;
    std::size_t start = 0; // first byte not yet consumed
    for (std::size_t end = 1; end <= in.size(); ++end) {
        std::size_t used = 0;
        d.status = dec.decode(in.substr(start, end - start), d.body, used, err);
        start += used;
        if (d.status != http1::ChunkedDecoder::Status::NeedMore) break;
    }
    d.consumed = start;
    return d;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size); // exact-size heap copy
    const std::string_view in(input);
    http1::ParserLimits limits;
    limits.maxHeaderBytes = 4096;
    limits.maxRequestLineBytes = 1024;
    http1::RequestHead head;
    std::size_t consumed = 0;
    http1::ParseError error;
    const auto st = http1::parseHead(in, limits, head, consumed, error);
    if (st == http1::ParseStatus::Complete) {
        PORTICO_FUZZ_CHECK(consumed <= in.size());
        PORTICO_FUZZ_CHECK(pathInside(in, head.rawPath));
        PORTICO_FUZZ_CHECK(inside(in, head.host));
        const std::string_view body = in.substr(consumed);
        if (head.framing == http1::RequestHead::Framing::Chunked && body.size() <= 4096) {
            const auto whole = decodeWhole(body);
            const auto bytewise = decodeBytewise(body);
            PORTICO_FUZZ_CHECK(whole.status == bytewise.status);
            if (whole.status == http1::ChunkedDecoder::Status::Done) {
                PORTICO_FUZZ_CHECK(whole.body == bytewise.body);
                PORTICO_FUZZ_CHECK(whole.consumed == bytewise.consumed);
            }
        }
    } else if (st == http1::ParseStatus::Error) {
        PORTICO_FUZZ_CHECK(error.status >= 400 && error.status <= 505);
    }
    return 0;
}

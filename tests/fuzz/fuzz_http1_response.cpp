// Fuzz target: the HTTP/1.1 response parser (http1/response_parser.h) that the reverse proxy, the
// load generator and replay share. The first input byte picks HEAD or not; the rest is the
// upstream's bytes. Invariants checked besides "no crash, no sanitizer report":
// - heads and body pieces are views into the input; a head's fields are inside the head;
// - fed whole or one byte at a time (the unconsumed rest presented again, as a client must), the
//   parser gives the same statuses, the same body bytes and the same verdict;
// - CountOnly (the load generator) agrees with Events on the statuses of final responses and the
//   verdict, except that it refuses a 101.
#include "fuzz_support.h"

#include <portico/http1/response_parser.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace portico;
using http1::ResponseParser;

namespace {

bool inside(std::string_view outer, std::string_view v) {
    return v.empty() || (v.data() >= outer.data() && v.data() + v.size() <= outer.data() + outer.size());
}

struct Outcome {
    std::vector<int> statuses; // every head (Events) or every complete response (CountOnly)
    std::string bodies;        // the body pieces, each response's followed by '|'
    bool error = false;
    bool upgraded = false;
    std::size_t consumed = 0;
};

// `step` 0: all bytes at once; else they arrive `step` at a time.
Outcome run(std::string_view in, bool headRequest, ResponseParser::Deliver deliver, std::size_t step) {
    Outcome o;
    ResponseParser p;
    bool active = false;
    std::size_t start = 0; // first byte not consumed
    std::size_t end = step ? 0 : in.size();
    for (;;) {
        if (step) end = std::min(in.size(), end + step);
        for (;;) {
            if (!active) {
                if (start == end) break;
                p.begin(headRequest, deliver);
                active = true;
            }
            const std::string_view avail = in.substr(start, end - start);
            std::size_t used = 0;
            const auto st = p.parse(avail.data(), avail.size(), used);
            PORTICO_FUZZ_CHECK(used <= avail.size());
            start += used;
            if (st == ResponseParser::Status::Head) {
                const auto& h = p.head();
                PORTICO_FUZZ_CHECK(inside(avail.substr(0, used), h.fields));
                PORTICO_FUZZ_CHECK(inside(avail.substr(0, used), h.reason));
                PORTICO_FUZZ_CHECK(h.status >= 100 && h.status <= 599);
                o.statuses.push_back(h.status);
                if (h.status == 101) {
                    o.upgraded = true;
                    o.consumed = start;
                    return o;
                }
                continue;
            }
            if (st == ResponseParser::Status::Body) {
                PORTICO_FUZZ_CHECK(!p.body().empty() && inside(avail.substr(0, used), p.body()));
                o.bodies.append(p.body());
                continue;
            }
            if (st == ResponseParser::Status::Error) {
                o.error = true;
                o.consumed = start;
                return o;
            }
            if (st == ResponseParser::Status::NeedMore) break;
            if (deliver == ResponseParser::Deliver::CountOnly) o.statuses.push_back(p.status());
            o.bodies += '|';
            active = false;
        }
        if (end == in.size()) break;
    }
    o.consumed = start;
    return o;
}

std::vector<int> finals(const std::vector<int>& statuses) {
    std::vector<int> out;
    for (int s : statuses)
        if (s >= 200) out.push_back(s);
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool headRequest = data[0] & 1;
    const std::string input(reinterpret_cast<const char*>(data + 1), size - 1); // exact-size copy
    const std::string_view in(input);
    const Outcome whole = run(in, headRequest, ResponseParser::Deliver::Events, 0);
    const Outcome bytewise = run(in, headRequest, ResponseParser::Deliver::Events, 1);
    PORTICO_FUZZ_CHECK(whole.statuses == bytewise.statuses);
    PORTICO_FUZZ_CHECK(whole.bodies == bytewise.bodies);
    PORTICO_FUZZ_CHECK(whole.error == bytewise.error);
    PORTICO_FUZZ_CHECK(whole.upgraded == bytewise.upgraded);
    PORTICO_FUZZ_CHECK(whole.error || whole.consumed == bytewise.consumed);
    const Outcome counted = run(in, headRequest, ResponseParser::Deliver::CountOnly, 0);
    if (!whole.upgraded) {
        PORTICO_FUZZ_CHECK(counted.error == whole.error);
        if (!whole.error) {
            // Events lists the heads of finished and unfinished responses; CountOnly the finished.
            const auto f = finals(whole.statuses);
            PORTICO_FUZZ_CHECK(counted.statuses.size() <= f.size());
            PORTICO_FUZZ_CHECK(std::equal(counted.statuses.begin(), counted.statuses.end(), f.begin()));
        }
    } else {
        PORTICO_FUZZ_CHECK(counted.error);
    }
    return 0;
}

// Reading run objects back from JSON and merging the runs of several generators (merge.h).
#include <portico/load/merge.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace portico::load {

namespace {

using nlohmann::json;

// Thrown inside resultFromJson only, caught there: "where: what".
struct ReadError {
    std::string text;
};

[[noreturn]] void bad(const std::string& where, const std::string& what) {
    throw ReadError{where + ": " + what};
}

const json& field(const json& object, const char* key, const std::string& where) {
    if (!object.is_object()) bad(where, "not an object");
    const auto it = object.find(key);
    if (it == object.end()) bad(where + "." + key, "missing");
    return *it;
}

std::uint64_t count(const json& object, const char* key, const std::string& where) {
    const json& v = field(object, key, where);
    if (!v.is_number_unsigned()) bad(where + "." + key, "not a whole number ≥ 0");
    return v.get<std::uint64_t>();
}

double number(const json& object, const char* key, const std::string& where) {
    const json& v = field(object, key, where);
    if (!v.is_number()) bad(where + "." + key, "not a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) bad(where + "." + key, "not finite");
    return d;
}

std::string text(const json& object, const char* key, const std::string& where) {
    const json& v = field(object, key, where);
    if (!v.is_string()) bad(where + "." + key, "not a string");
    return v.get<std::string>();
}

std::chrono::nanoseconds secondsField(const json& object, const char* key, const std::string& where) {
    const double s = number(object, key, where);
    if (s < 0 || s > 1e9) bad(where + "." + key, "out of range");
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(s * 1e9)));
}

RequestCounts counts(const json& v, const std::string& where) {
    RequestCounts c;
    c.started = count(v, "started", where);
    c.completed = count(v, "completed", where);
    c.failed = count(v, "failed", where);
    c.cancelled = count(v, "cancelled", where);
    return c;
}

ErrorCounts errors(const json& v, const std::string& where, bool withConnect) {
    ErrorCounts e;
    if (withConnect) e.connect = count(v, "connect", where);
    e.reset = count(v, "reset", where);
    e.timeout = count(v, "timeout", where);
    e.protocol = count(v, "protocol", where);
    return e;
}

std::map<int, std::uint64_t> statuses(const json& v, const std::string& where) {
    if (!v.is_object()) bad(where, "not an object");
    std::map<int, std::uint64_t> out;
    for (const auto& [key, value] : v.items()) {
        int code = 0;
        for (char c : key)
            code = (c >= '0' && c <= '9' && code < 1000) ? code * 10 + (c - '0') : 10000;
        if (key.size() != 3 || code < 100 || code > 599) bad(where, "'" + key + "' is not a status code");
        if (!value.is_number_unsigned()) bad(where + "." + key, "not a whole number ≥ 0");
        out[code] = value.get<std::uint64_t>();
    }
    return out;
}

std::unique_ptr<stats::Histogram> histogram(const json& v, const std::string& where) {
    const json& list = field(v, "buckets", where);
    if (!list.is_array()) bad(where + ".buckets", "not an array");
    std::vector<stats::Histogram::Bucket> buckets;
    buckets.reserve(list.size());
    for (const auto& b : list) {
        if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
            !b[2].is_number_unsigned())
            bad(where + ".buckets", "each bucket is [lowestNs, highestNs, count]");
        buckets.push_back({b[0].get<std::uint64_t>(), b[1].get<std::uint64_t>(), b[2].get<std::uint64_t>()});
    }
    auto h = std::make_unique<stats::Histogram>();
    if (!h->restore(buckets.data(), buckets.size(), count(v, "min", where), count(v, "max", where),
                    number(v, "mean", where), number(v, "stddev", where)))
        bad(where + ".buckets",
            "not buckets of this histogram layout (1 ns unit, 3 significant digits), not ascending, or "
            "min/max outside them");
    if (h->count() != count(v, "count", where)) bad(where + ".count", "differs from the sum of the buckets");
    return h;
}

// Header fields as [[name, value], ...]: strings, names not empty.
std::vector<std::pair<std::string, std::string>> fieldPairs(const json& h, const std::string& where) {
    if (!h.is_array()) bad(where, "not an array of [name, value]");
    std::vector<std::pair<std::string, std::string>> fields;
    fields.reserve(h.size());
    for (const json& f : h) {
        if (!f.is_array() || f.size() != 2 || !f[0].is_string() || !f[1].is_string() ||
            f[0].get_ref<const std::string&>().empty())
            bad(where, "not an array of [name, value] (strings, names not empty)");
        fields.emplace_back(f[0].get<std::string>(), f[1].get<std::string>());
    }
    return fields;
}

// Result::samples: each entry's types and ranges, against the run's requests and connections.
std::vector<ExchangeSample> samples(const json& list, std::size_t requests, unsigned connections) {
    if (!list.is_array()) bad("samples", "not an array");
    constexpr std::int64_t kMaxNs = std::int64_t{1} << 62;
    std::vector<ExchangeSample> out;
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string where = "samples[" + std::to_string(i) + "]";
        const json& e = list[i];
        auto whole = [&](const char* key, std::uint64_t max) {
            const auto v = count(e, key, where);
            if (v > max) bad(where + "." + key, "out of range (at most " + std::to_string(max) + ")");
            return v;
        };
        auto time = [&](const char* key) {
            const json& v = field(e, key, where);
            if (!v.is_number_integer()) bad(where + "." + key, "not a whole number of ns");
            const auto t = v.get<std::int64_t>();
            if (t < 0 || t > kMaxNs) bad(where + "." + key, "out of range (0..2^62 ns)");
            return t;
        };
        ExchangeSample x;
        if (requests == 0 || count(e, "request", where) >= requests)
            bad(where + ".request", "not an index of target.requests");
        x.request = static_cast<std::uint32_t>(count(e, "request", where));
        x.status = static_cast<int>(whole("status", 599));
        if (x.status != 0 && x.status < 100) bad(where + ".status", "not 0 or a status code 100..599");
        const json& failure = field(e, "failure", where);
        if (failure.is_null()) {
            x.failure = 0;
        } else {
            const std::string kind = failure.is_string() ? failure.get<std::string>() : "";
            x.failure = kind == "reset" ? 1 : kind == "timeout" ? 2 : kind == "protocol" ? 3 : 0;
            if (!x.failure) bad(where + ".failure", "not null, \"reset\", \"timeout\" or \"protocol\"");
            if (x.status != 0) bad(where + ".status", "not 0 for a failed request");
        }
        x.intendedNs = time("intendedNs");
        x.sentNs = time("sentNs");
        x.doneNs = time("doneNs");
        if (x.intendedNs > x.sentNs || x.sentNs > x.doneNs) bad(where, "not intendedNs ≤ sentNs ≤ doneNs");
        if (e.contains("firstByteNs")) { // optional: absent when no byte of the response came
            x.firstByteNs = time("firstByteNs");
            if (x.firstByteNs < x.sentNs || x.firstByteNs > x.doneNs)
                bad(where + ".firstByteNs", "not sentNs ≤ firstByteNs ≤ doneNs");
        }
        x.latencyNs = count(e, "latencyNs", where);
        if (x.latencyNs != static_cast<std::uint64_t>(x.doneNs - x.intendedNs))
            bad(where + ".latencyNs", "not doneNs − intendedNs");
        if (whole("connection", std::numeric_limits<std::uint32_t>::max()) >= connections)
            bad(where + ".connection", "not below options.connections");
        x.connection = static_cast<std::uint32_t>(count(e, "connection", where));
        x.sequence = static_cast<std::uint32_t>(whole("sequence", std::numeric_limits<std::uint32_t>::max()));
        x.localPort = static_cast<std::uint16_t>(whole("localPort", 65535));
        if (e.contains("responseHeaders")) { // optional: kept heads only
            if (x.failure) bad(where + ".responseHeaders", "present for a failed request");
            x.responseHeaders = fieldPairs(e["responseHeaders"], where + ".responseHeaders");
        }
        if (e.contains("requestId")) { // optional: runs with Options::requestId
            const json& id = e["requestId"];
            const bool visible =
                id.is_string() && !id.get_ref<const std::string&>().empty() &&
                id.get_ref<const std::string&>().size() <= 256 &&
                std::all_of(id.get_ref<const std::string&>().begin(), id.get_ref<const std::string&>().end(),
                            [](unsigned char c) { return c > 0x20 && c < 0x7f; });
            if (!visible) bad(where + ".requestId", "not 1..256 visible ASCII characters");
            x.requestId = id.get<std::string>();
        }
        out.push_back(std::move(x));
    }
    return out;
}

} // namespace

bool resultFromJson(std::string_view input, Result& out, std::string& error) {
    const json doc = json::parse(input.begin(), input.end(), nullptr, false);
    if (doc.is_discarded()) {
        error = "not JSON (or not complete)";
        return false;
    }
    try {
        Result r;
        if (!doc.is_object()) bad("the document", "not an object");
        if (doc.contains("kind")) bad("kind", "a suite result; merge the run objects of its routes instead");
        if (count(doc, "schema", "") != 1) bad("schema", "only schema 1 is read");
        if (doc.contains("error")) bad("error", "the run did not take place: " + text(doc, "error", ""));
        const json& target = field(doc, "target", "");
        r.address = text(target, "address", "target");
        const json& requests = field(target, "requests", "target");
        if (!requests.is_array() || requests.empty()) bad("target.requests", "not a non-empty array");
        for (std::size_t i = 0; i < requests.size(); ++i) {
            const std::string where = "target.requests[" + std::to_string(i) + "]";
            RequestSpec spec;
            spec.url = text(requests[i], "url", where);
            spec.method = text(requests[i], "method", where);
            const auto weight = count(requests[i], "weight", where);
            if (weight < 1 || weight > std::numeric_limits<unsigned>::max())
                bad(where + ".weight", "out of range");
            spec.weight = static_cast<unsigned>(weight);
            if (requests[i].contains("headers")) // optional: only requests given fields have it
                spec.headers = fieldPairs(requests[i]["headers"], where + ".headers");
            r.options.requests.push_back(std::move(spec));
        }
        const json& o = field(doc, "options", "");
        auto small = [&](const char* key) {
            const auto v = count(o, key, "options");
            if (v > 100'000'000) bad(std::string("options.") + key, "out of range");
            return static_cast<unsigned>(v);
        };
        r.options.connections = small("connections");
        r.options.threads = small("threads");
        r.options.pipeline = small("pipeline");
        r.options.protocol = text(o, "protocol", "options") == "h2" ? Protocol::Http2 : Protocol::Http1;
        r.options.streams = std::max(1u, small("streams"));
        r.options.insecure = field(o, "insecure", "options").is_boolean() && o["insecure"].get<bool>();
        r.options.duration = secondsField(o, "durationSeconds", "options");
        r.options.count = count(o, "count", "options");
        r.options.rate = number(o, "rate", "options");
        if (r.options.rate < 0 || r.options.rate > 1e8) bad("options.rate", "out of range (0..1e8)");
        r.options.warmup = secondsField(o, "warmupSeconds", "options");
        r.options.timeout = secondsField(o, "timeoutSeconds", "options");
        r.options.stopGrace = secondsField(o, "stopGraceSeconds", "options");
        if (o.contains("samples") && !o["samples"].is_boolean()) bad("options.samples", "not true or false");
        r.options.samples = o.contains("samples") ? o["samples"].get<bool>() : doc.contains("samples");
        if (o.contains("requestId") && !o["requestId"].is_boolean())
            bad("options.requestId", "not true or false");
        r.options.requestId = o.contains("requestId") && o["requestId"].get<bool>();
        if (o.contains("proxy")) r.options.proxy = text(o, "proxy", "options");
        // "" is no start time (isoTime of the epoch, what toJson writes for a run without one).
        if (const std::string started =
                doc.contains("startedAt") ? text(doc, "startedAt", "") : std::string();
            !started.empty() && !parseIsoTime(started, r.startedAt))
            bad("startedAt", "not an ISO 8601 time");
        r.measured = secondsField(doc, "measuredSeconds", "");
        r.requests = counts(field(doc, "requests", ""), "requests");
        r.warmup = counts(field(doc, "warmup", ""), "warmup");
        r.missedArrivals = doc.contains("missedArrivals") ? count(doc, "missedArrivals", "") : 0;
        r.errors = errors(field(doc, "errors", ""), "errors", true);
        r.statuses = statuses(field(doc, "statuses", ""), "statuses");
        const json& b = field(doc, "bytes", "");
        r.bytesRead = count(b, "read", "bytes");
        r.bytesWritten = count(b, "written", "bytes");
        r.measuredBytesRead = count(b, "measuredRead", "bytes");
        r.measuredBytesWritten = count(b, "measuredWritten", "bytes");
        r.latency = histogram(field(doc, "latency", ""), "latency");
        const json& service = field(doc, "serviceTime", "");
        if (r.options.model() == Model::Open)
            r.serviceTime = histogram(service, "serviceTime");
        else
            r.serviceTime = std::make_unique<stats::Histogram>(*r.latency);
        {
            const json& list = field(doc, "byRequest", "");
            if (!list.is_array() || list.size() != r.options.requests.size())
                bad("byRequest", "not one entry per target request");
            for (std::size_t i = 0; i < list.size(); ++i) {
                const std::string where = "byRequest[" + std::to_string(i) + "]";
                RequestBreakdown k;
                k.requests = counts(field(list[i], "requests", where), where + ".requests");
                k.errors = errors(field(list[i], "errors", where), where + ".errors", false);
                k.statuses = statuses(field(list[i], "statuses", where), where + ".statuses");
                k.latency = histogram(field(list[i], "latency", where), where + ".latency");
                if (list[i].contains("seriesCompleted")) {
                    const json& slots = list[i]["seriesCompleted"];
                    if (!slots.is_array()) bad(where + ".seriesCompleted", "not an array");
                    for (const auto& n : slots) {
                        if (!n.is_number_unsigned()) bad(where + ".seriesCompleted", "not whole numbers ≥ 0");
                        k.perSlot.push_back(n.get<std::uint64_t>());
                    }
                }
                r.byRequest.push_back(std::move(k));
            }
        }
        const json& series = field(doc, "series", "");
        if (count(series, "slotMilliseconds", "series") != static_cast<std::uint64_t>(Result::kSlot.count()))
            bad("series.slotMilliseconds", "only 100 ms slots are read");
        const json& slots = field(series, "completed", "series");
        if (!slots.is_array()) bad("series.completed", "not an array");
        for (const auto& n : slots) {
            if (!n.is_number_unsigned()) bad("series.completed", "not whole numbers ≥ 0");
            r.perSlot.push_back(n.get<std::uint64_t>());
        }
        // series.failed came later (2026-12-06): a file without it has no known series (left empty).
        if (series.contains("failed")) {
            const json& failed = series["failed"];
            if (!failed.is_array() || failed.size() != r.perSlot.size())
                bad("series.failed", "not an array as long as series.completed");
            std::uint64_t sum = 0;
            for (const auto& n : failed) {
                if (!n.is_number_unsigned()) bad("series.failed", "not whole numbers ≥ 0");
                r.failedPerSlot.push_back(n.get<std::uint64_t>());
                sum += r.failedPerSlot.back();
            }
            if (sum != r.requests.failed) bad("series.failed", "does not sum to requests.failed");
        } // else unknown: failedPerSlot stays empty (Result::failedPerSlot)
        if (doc.contains("samples"))
            r.samples = samples(doc["samples"], r.options.requests.size(), r.options.connections);
        const json& cpu = field(doc, "cpu", "");
        r.cpuUserSeconds = number(cpu, "userSeconds", "cpu");
        r.cpuSystemSeconds = number(cpu, "systemSeconds", "cpu");
        if (r.cpuUserSeconds < 0 || r.cpuUserSeconds > 1e9 || r.cpuSystemSeconds < 0 ||
            r.cpuSystemSeconds > 1e9)
            bad("cpu", "seconds out of range (0..1e9)");
        out = std::move(r);
        return true;
    } catch (const ReadError& e) {
        error = e.text;
    } catch (const json::exception& e) {
        error = e.what();
    }
    return false;
}

bool mergeResults(std::vector<Result>& runs, Result& merged, std::string& error) {
    if (runs.empty()) {
        error = "nothing to merge";
        return false;
    }
    const auto& first = runs.front().options.requests;
    for (std::size_t n = 1; n < runs.size(); ++n) {
        const auto& other = runs[n].options.requests;
        const Options& a = runs.front().options;
        const Options& b = runs[n].options;
        if (a.model() != b.model() || a.protocol != b.protocol || a.proxy != b.proxy ||
            a.requestId != b.requestId) {
            error = "run " + std::to_string(n + 1) + " used another " +
                    (a.model() != b.model()     ? "load model (closed or open)"
                     : a.protocol != b.protocol ? "protocol"
                     : a.proxy != b.proxy       ? "proxy (--proxy)"
                                                : "request id setting (--request-id)") +
                    " than run 1: merge runs of one test only";
            return false;
        }
        bool same = other.size() == first.size();
        for (std::size_t i = 0; same && i < first.size(); ++i)
            same = other[i].url == first[i].url && other[i].method == first[i].method;
        if (!same) {
            error = "run " + std::to_string(n + 1) +
                    " sent other requests than run 1 (each run must have the "
                    "same methods and URLs in the same order)";
            return false;
        }
    }
    Result m;
    m.options = runs.front().options;
    m.address = runs.front().address;
    m.options.connections = m.options.threads = 0;
    m.options.count = 0;
    m.options.rate = 0;
    m.latency = std::make_unique<stats::Histogram>();
    m.serviceTime = std::make_unique<stats::Histogram>();
    // The earliest start; runs without a start time are taken as starting with it.
    auto start = std::chrono::system_clock::time_point::max();
    for (const auto& r : runs)
        if (r.startedAt != std::chrono::system_clock::time_point{}) start = std::min(start, r.startedAt);
    if (start == std::chrono::system_clock::time_point::max()) start = {};
    for (std::size_t n = 0; n < runs.size(); ++n)
        if (runs[n].startedAt != std::chrono::system_clock::time_point{} &&
            runs[n].startedAt - start > std::chrono::hours(24)) {
            error = "run " + std::to_string(n + 1) +
                    " started more than 24 hours after the first: runs to merge are made at the same time";
            return false;
        }
    m.startedAt = start;
    const bool byRequest = std::all_of(runs.begin(), runs.end(),
                                       [&](const Result& r) { return r.byRequest.size() == first.size(); });
    if (byRequest) {
        m.byRequest.resize(first.size());
        for (auto& k : m.byRequest)
            k.latency = std::make_unique<stats::Histogram>();
    }
    auto add = [](RequestCounts& a, const RequestCounts& b) {
        a.started += b.started;
        a.completed += b.completed;
        a.failed += b.failed;
        a.cancelled += b.cancelled;
    };
    auto addErrors = [](ErrorCounts& a, const ErrorCounts& b) {
        a.connect += b.connect;
        a.reset += b.reset;
        a.timeout += b.timeout;
        a.protocol += b.protocol;
    };
    std::chrono::nanoseconds end{0};
    bool failedKnown = true;
    for (auto& r : runs) {
        const unsigned connectionBase = m.options.connections; // this run's connections follow
        m.options.connections += r.options.connections;
        m.options.threads += r.options.threads;
        m.options.count += r.options.count;
        m.options.rate += r.options.rate;
        add(m.requests, r.requests);
        add(m.warmup, r.warmup);
        addErrors(m.errors, r.errors);
        for (const auto& [code, n] : r.statuses)
            m.statuses[code] += n;
        m.bytesRead += r.bytesRead;
        m.bytesWritten += r.bytesWritten;
        m.measuredBytesRead += r.measuredBytesRead;
        m.measuredBytesWritten += r.measuredBytesWritten;
        m.missedArrivals += r.missedArrivals;
        m.cpuUserSeconds += r.cpuUserSeconds;
        m.cpuSystemSeconds += r.cpuSystemSeconds;
        if (r.latency) m.latency->merge(*r.latency);
        if (r.serviceTime) m.serviceTime->merge(*r.serviceTime);
        const auto offset = r.startedAt == std::chrono::system_clock::time_point{}
                                ? std::chrono::nanoseconds(0)
                                : std::chrono::duration_cast<std::chrono::nanoseconds>(r.startedAt - start);
        const auto shift = static_cast<std::size_t>((offset + Result::kSlot / 2) / Result::kSlot);
        // The series is placed at the offset rounded to a slot (up to half a slot later than the
        // run began): the measured time reaches the end of that placement too, so the last slot
        // is not read as a full slot's completions in the few milliseconds left of it.
        const std::chrono::nanoseconds placed = Result::kSlot * static_cast<std::int64_t>(shift);
        end = std::max({end, offset + r.measured, placed + r.measured});
        auto addSeries = [shift](std::vector<std::uint64_t>& to, const std::vector<std::uint64_t>& from) {
            if (to.size() < shift + from.size()) to.resize(shift + from.size());
            for (std::size_t s = 0; s < from.size(); ++s)
                to[shift + s] += from[s];
        };
        addSeries(m.perSlot, r.perSlot);
        if (r.failedPerSlot.size() == r.perSlot.size()) // known (a run without failures: zeros)
            addSeries(m.failedPerSlot, r.failedPerSlot);
        else
            failedKnown = false;
        for (ExchangeSample x : r.samples) {
            x.intendedNs += offset.count();
            x.sentNs += offset.count();
            x.doneNs += offset.count();
            if (x.firstByteNs >= 0) x.firstByteNs += offset.count();
            x.connection += connectionBase;
            m.samples.push_back(x);
        }
        if (byRequest)
            for (std::size_t i = 0; i < first.size(); ++i) {
                auto& k = m.byRequest[i];
                const auto& part = r.byRequest[i];
                add(k.requests, part.requests);
                addErrors(k.errors, part.errors);
                for (const auto& [code, n] : part.statuses)
                    k.statuses[code] += n;
                if (part.latency) k.latency->merge(*part.latency);
                addSeries(k.perSlot, part.perSlot);
            }
    }
    // The failures' series only when every run had one (a file from before it existed has none).
    if (failedKnown) {
        m.perSlot.resize(std::max(m.perSlot.size(), m.failedPerSlot.size()));
        m.failedPerSlot.resize(m.perSlot.size());
    } else {
        m.failedPerSlot.clear();
    }
    for (auto& k : m.byRequest)
        k.perSlot.resize(m.perSlot.size());
    m.options.threads = std::min(256u, std::max(1u, m.options.threads));
    m.options.samples =
        std::any_of(runs.begin(), runs.end(), [](const Result& r) { return r.options.samples; });
    std::stable_sort(m.samples.begin(), m.samples.end(),
                     [](const ExchangeSample& a, const ExchangeSample& b) { return a.doneNs < b.doneNs; });
    m.measured = end;
    merged = std::move(m);
    return true;
}

} // namespace portico::load

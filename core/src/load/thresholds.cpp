// Threshold parsing and judging (thresholds.h).
#include <portico/load/thresholds.h>

#include "json_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace portico::load {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// A non-negative finite decimal number, the whole of `text` up to the returned position.
bool parseNumber(std::string_view text, double& out, std::string_view& rest) {
    if (text.empty() || text.front() == '-' || text.front() == '+') return false;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::fixed);
    if (r.ec != std::errc{} || !std::isfinite(out) || out < 0) return false;
    rest = text.substr(static_cast<std::size_t>(r.ptr - text.data()));
    return true;
}

bool parseDurationNs(std::string_view text, double& ns) {
    double v = 0;
    std::string_view unit;
    if (!parseNumber(text, v, unit)) return false;
    unit = trim(unit);
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"ns", 1},   {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"\xCE\xBCs", 1e3},
        {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
    for (const auto& [name, factor] : kUnits)
        if (unit == name) {
            ns = v * factor;
            return true;
        }
    return false;
}

bool parsePercent(std::string_view text, double& percent) {
    std::string_view rest;
    if (!parseNumber(text, percent, rest) || trim(rest) != "%") return false;
    return percent <= 100;
}

bool isLatency(Threshold::Metric m) {
    return m == Threshold::Metric::Percentile || m == Threshold::Metric::Min || m == Threshold::Metric::Mean;
}

} // namespace

std::optional<Threshold> parseThreshold(std::string_view text, std::string& error) {
    Threshold t;
    const std::string_view expr = trim(text);
    t.expr = std::string(expr);
    auto fail = [&](const std::string& why) -> std::optional<Threshold> {
        error = "threshold '" + t.expr + "': " + why;
        return std::nullopt;
    };
    // A bound nothing measured can meet (every value is ≥ 0, a share ≤ 100 %) is a typo, not a
    // test: refused rather than always breached.
    auto possible = [&](const Threshold& th) -> std::optional<Threshold> {
        const bool share = th.metric == Threshold::Metric::Errors || th.metric == Threshold::Metric::Status;
        if ((th.op == Threshold::Op::Less && th.limit <= 0) ||
            (th.op == Threshold::Op::LessEqual && th.limit < 0))
            return fail("can never be met: no measured value is below 0");
        if (share && ((th.op == Threshold::Op::Greater && th.limit >= 100) ||
                      (th.op == Threshold::Op::GreaterEqual && th.limit > 100)))
            return fail("can never be met: a share is at most 100%");
        return th;
    };
    const auto opAt = expr.find_first_of("<>");
    if (opAt == std::string_view::npos)
        return fail("expected KEY<VALUE or KEY>VALUE, e.g. p99<250ms, rps>1000, errors<1%");
    const std::string_view key = trim(expr.substr(0, opAt));
    std::string_view rest = expr.substr(opAt);
    const bool orEqual = rest.size() > 1 && rest[1] == '=';
    const std::string op(rest.substr(0, orEqual ? 2 : 1));
    t.op = rest[0] == '<' ? (orEqual ? Threshold::Op::LessEqual : Threshold::Op::Less)
                          : (orEqual ? Threshold::Op::GreaterEqual : Threshold::Op::Greater);
    const std::string_view value = trim(rest.substr(op.size()));
    if (value.find_first_of("<>=") != std::string_view::npos) return fail("one comparison only");

    if (key == "max" || key == "min" || key == "mean" || (key.size() > 1 && key[0] == 'p')) {
        if (key == "max") {
            t.percentile = 100;
        } else if (key == "min") {
            t.metric = Threshold::Metric::Min;
        } else if (key == "mean") {
            t.metric = Threshold::Metric::Mean;
        } else {
            std::string_view after;
            if (!parseNumber(key.substr(1), t.percentile, after) || !after.empty() || t.percentile <= 0 ||
                t.percentile > 100)
                return fail("a percentile key is p followed by a number in (0, 100], e.g. p99 or p99.9");
        }
        if (!parseDurationNs(value, t.limit))
            return fail("expected a duration with a unit after '" + op + "', e.g. 250ms, 1.5s, 800us");
        return possible(t);
    }
    if (key == "rps") {
        t.metric = Threshold::Metric::Rps;
        std::string_view after;
        if (!parseNumber(value, t.limit, after) || !after.empty())
            return fail("expected requests per second after '" + op + "', e.g. rps>1000");
        return possible(t);
    }
    if (key == "errors") {
        t.metric = Threshold::Metric::Errors;
        if (!parsePercent(value, t.limit))
            return fail("expected a percentage 0..100 after '" + op + "', e.g. errors<1%");
        return possible(t);
    }
    if (key.starts_with("status:")) {
        t.metric = Threshold::Metric::Status;
        const std::string_view code = key.substr(7);
        if (code.size() == 3 && code[0] >= '1' && code[0] <= '5' && (code[1] == 'x' || code[1] == 'X') &&
            (code[2] == 'x' || code[2] == 'X')) {
            t.statusClass = true;
            t.status = code[0] - '0';
        } else if (code.size() == 3 &&
                   std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                   code[0] >= '1' && code[0] <= '5') {
            t.status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
        } else {
            return fail("a status key is status:Nxx (a class, e.g. status:5xx) or status:NNN (a code)");
        }
        if (!parsePercent(value, t.limit))
            return fail("expected a percentage 0..100 after '" + op + "', e.g. status:5xx<0.1%");
        return possible(t);
    }
    return fail(
        "unknown key '" + std::string(key) +
        "' (keys: p50, p90, p99, p99.9 or any pN, max, min, mean, rps, errors, status:5xx, status:503)");
}

ThresholdOutcome judge(const Threshold& t, const Result& r) {
    ThresholdOutcome out;
    out.expr = t.expr;
    const double ended = static_cast<double>(r.requests.completed + r.requests.failed);
    const double completed = static_cast<double>(r.requests.completed);
    switch (t.metric) {
    case Threshold::Metric::Percentile:
        out.value = r.latency ? static_cast<double>(r.latency->valueAtPercentile(t.percentile)) : 0;
        break;
    case Threshold::Metric::Min:
        out.value = r.latency ? static_cast<double>(r.latency->min()) : 0;
        break;
    case Threshold::Metric::Mean:
        out.value = r.latency ? r.latency->mean() : 0;
        break;
    case Threshold::Metric::Rps:
        out.value = r.requestsPerSecond();
        break;
    case Threshold::Metric::Errors:
        out.value = ended > 0 ? static_cast<double>(r.requests.failed) * 100 / ended : 0;
        break;
    case Threshold::Metric::Status: {
        std::uint64_t n = 0;
        for (const auto& [code, count] : r.statuses)
            if (t.statusClass ? code / 100 == t.status : code == t.status) n += count;
        out.value = completed > 0 ? static_cast<double>(n) * 100 / completed : 0;
        break;
    }
    }
    switch (t.op) {
    case Threshold::Op::Less:
        out.ok = out.value < t.limit;
        break;
    case Threshold::Op::LessEqual:
        out.ok = out.value <= t.limit;
        break;
    case Threshold::Op::Greater:
        out.ok = out.value > t.limit;
        break;
    case Threshold::Op::GreaterEqual:
        out.ok = out.value >= t.limit;
        break;
    }
    out.unit = isLatency(t.metric) ? "ns" : t.metric == Threshold::Metric::Rps ? "req/s" : "%";
    // No completed request: there is no latency to judge, and a dead target must not pass.
    if (isLatency(t.metric) && r.requests.completed == 0) out.ok = false;
    return out;
}

bool judgeAll(const std::vector<Threshold>& thresholds, Result& result) {
    result.thresholds.clear();
    bool ok = true;
    for (const auto& t : thresholds) {
        result.thresholds.push_back(judge(t, result));
        ok = ok && result.thresholds.back().ok;
    }
    return ok;
}

std::string thresholdsText(const Result& r) {
    if (r.thresholds.empty()) return {};
    std::size_t width = 0;
    for (const auto& t : r.thresholds)
        width = std::max(width, t.expr.size());
    std::string s = "Thresholds:\n";
    char line[512];
    for (const auto& t : r.thresholds) {
        std::string measured;
        if (t.unit == "ns" && r.requests.completed == 0) {
            measured = "nothing: no request completed";
        } else if (t.unit == "ns") {
            measured = detail::durationText(t.value);
        } else {
            char buf[64];
            std::snprintf(buf, sizeof buf, t.unit == "%" ? "%.3g%%" : "%.2f req/s", t.value);
            measured = buf;
        }
        std::snprintf(line, sizeof line, "  %-8s  %-*s  (measured %s)\n", t.ok ? "met" : "BREACHED",
                      static_cast<int>(width), t.expr.c_str(), measured.c_str());
        s += line;
    }
    return s;
}

} // namespace portico::load

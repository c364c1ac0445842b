// The HTML report of a load run (report.h): escaped text, tables and inline SVG plots, no script.
#include <portico/load/report.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

namespace portico::load {

namespace {

// ---------------------------------------------------------------------------------------------
// Text: escaping and number formatting (the units of summaryText in result.cpp).

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

// Appends `s` as HTML text or attribute content: & < > " ' escaped; invalid UTF-8, NUL, C0 controls
// other than tab, LF and CR, DEL and C1 controls replaced by U+FFFD.
void appendText(std::string& out, std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                    out += kReplacement;
                else
                    out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        // Length and the allowed range of the second byte (RFC 3629: no overlongs, no surrogates).
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
        for (std::size_t k = 2; ok && k < len; ++k)
            ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
        if (ok && len == 2 && c == 0xC2 && p[i + 1] <= 0x9F) ok = false; // C1 control
        if (ok) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out += kReplacement;
            ++i;
        }
    }
}

std::string esc(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    appendText(out, s);
    return out;
}

template <class... A> std::string fmt(const char* format, A... a) {
    char buf[160];
    const int n = std::snprintf(buf, sizeof buf, format, a...);
    if (n < 0) return {};
    return std::string(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

constexpr const char* kDash = "\xE2\x80\x94"; // —, for "no value"

std::string count(std::uint64_t v) { return std::to_string(v); }

// A duration in ns as the text summary writes it ("162.56 µs"): ns below 1 µs, then two decimals.
std::string duration(double ns) {
    if (!std::isfinite(ns) || ns < 0) return kDash;
    if (ns < 1e3) return fmt("%.0f ns", ns);
    if (ns < 1e6) return fmt("%.2f \xC2\xB5s", ns / 1e3);
    if (ns < 1e9) return fmt("%.2f ms", ns / 1e6);
    return fmt("%.2f s", ns / 1e9);
}
std::string duration(std::chrono::nanoseconds d) { return duration(static_cast<double>(d.count())); }

std::string bytes(double b) {
    if (!std::isfinite(b) || b < 0) return kDash;
    if (b < 1024) return fmt("%.0f B", b);
    if (b < 1024.0 * 1024) return fmt("%.2f KiB", b / 1024);
    if (b < 1024.0 * 1024 * 1024) return fmt("%.2f MiB", b / (1024.0 * 1024));
    return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

std::string fixed2(double v) { return std::isfinite(v) ? fmt("%.2f", v) : std::string(kDash); }

double seconds(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; }

std::string isoUtc(std::chrono::system_clock::time_point t) {
    if (t.time_since_epoch().count() == 0) return "not recorded";
    const auto s = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
    const std::time_t tt = static_cast<std::time_t>(s);
    std::tm g{};
    if (!gmtime_r(&tt, &g)) return "not recorded";
    char buf[40];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &g);
    return n ? std::string(buf, n) : std::string("not recorded");
}

bool isTls(const Options& o) {
    if (o.requests.empty()) return false;
    const std::string& u = o.requests.front().url;
    return u.size() >= 6 && (u.compare(0, 6, "https:") == 0 || u.compare(0, 6, "HTTPS:") == 0);
}

// Percentile labels: 50 → "p50", 99.9 → "p99.9".
std::string pLabel(double p) { return fmt("p%g", p); }

// "90%", "99%", "99.9%" for a decade d of the 1/(1−p) axis (0 → "0%").
std::string decadeLabel(int d) {
    if (d <= 0) return "0%";
    if (d == 1) return "90%";
    return "99" + (d > 2 ? "." + std::string(static_cast<std::size_t>(d - 2), '9') : std::string()) + "%";
}

// ---------------------------------------------------------------------------------------------
// SVG plotting.

// Finite, for coordinates: NaN and infinities become 0.
double finite(double v) { return std::isfinite(v) ? v : 0.0; }
std::string coord(double v) { return fmt("%.1f", finite(v)); }

// A plot area in a viewBox of w × h user units, mapping data ranges [x0, x1] × [y0, y1].
struct Frame {
    double w = 1040, h = 330;
    double left = 78, right = 24, top = 22, bottom = 54;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    double px(double x) const { return finite(left + (x - x0) / (x1 - x0) * (w - left - right)); }
    double py(double y) const { return finite(h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom)); }
    double plotW() const { return w - left - right; }
};

// A plot for half the page's width (two side by side).
Frame halfFrame() {
    Frame f;
    f.w = 540;
    f.h = 340;
    f.left = 64;
    f.right = 36;
    return f;
}

// About how wide `s` is in 12 px sans-serif, user units (6.6 per character; UTF-8 lead bytes counted).
double textWidth(std::string_view s) {
    double n = 0;
    for (unsigned char c : s)
        n += (c & 0xC0) != 0x80 ? 1 : 0;
    return n * 6.6;
}

// Round step (1, 2, 5 × 10^k) ticks covering [lo, hi] with about `target` intervals.
double niceStep(double span, int target) {
    if (!(span > 0) || !std::isfinite(span)) return 1;
    const double raw = span / target;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}
std::vector<double> niceTicks(double lo, double hi, double step) {
    std::vector<double> t;
    if (!(step > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return t;
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9 && t.size() < 40; v += step)
        t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    return t;
}

// Compact number for tick labels: 1500 → "1.5k", 2e6 → "2M".
std::string compact(double v) {
    const double a = std::abs(v);
    if (a >= 1e15) return fmt("%.3g", v);
    if (a >= 1e12) return fmt("%gT", std::round(v / 1e9) / 1e3);
    if (a >= 1e9) return fmt("%gG", std::round(v / 1e6) / 1e3);
    if (a >= 1e6) return fmt("%gM", std::round(v / 1e3) / 1e3);
    if (a >= 1e3) return fmt("%gk", std::round(v) / 1e3);
    return fmt("%g", std::round(v * 1000) / 1000);
}

// A latency unit for an axis whose largest value is `maxNs`.
struct TimeUnit {
    double div;
    const char* name;
};
TimeUnit unitFor(double maxNs) {
    if (maxNs < 1e3) return {1, "ns"};
    if (maxNs < 1e6) return {1e3, "\xC2\xB5s"};
    if (maxNs < 1e9) return {1e6, "ms"};
    return {1e9, "s"};
}
// A tick on a log time axis: "100 µs", "2 ms".
std::string timeTick(double ns) {
    const TimeUnit u = unitFor(ns * 1.0000001);
    return fmt("%.3g %s", ns / u.div, u.name);
}

void svgOpen(std::string& out, const Frame& f, const char* id, const char* label) {
    out += "<svg id=\"";
    out += id;
    out +=
        "\" class=\"plot\" viewBox=\"0 0 " + coord(f.w) + " " + coord(f.h) + "\" role=\"img\" aria-label=\"";
    out += label;
    out += "\" preserveAspectRatio=\"xMidYMid meet\">\n";
}

// Grid line and label for each x tick (labels[i] at data x xs[i]).
void xTicks(std::string& out, const Frame& f, const std::vector<double>& xs,
            const std::vector<std::string>& labels, bool grid = true) {
    const double base = f.h - f.bottom;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const std::string x = coord(f.px(xs[i]));
        if (grid)
            out += "<line class=\"grid\" x1=\"" + x + "\" y1=\"" + coord(f.top) + "\" x2=\"" + x +
                   "\" y2=\"" + coord(base) + "\"/>";
        out += "<line class=\"tick\" x1=\"" + x + "\" y1=\"" + coord(base) + "\" x2=\"" + x + "\" y2=\"" +
               coord(base + 5) + "\"/>";
        // A label at the right end would stick out of the view box: it ends at its tick instead.
        const bool atEnd = f.px(xs[i]) + textWidth(labels[i]) / 2 > f.w - 2;
        out += "<text class=\"tl\" x=\"" + coord(atEnd ? f.w - 2 : f.px(xs[i])) + "\" y=\"" +
               coord(base + 19) + "\" text-anchor=\"" + (atEnd ? "end" : "middle") + "\">" + labels[i] +
               "</text>\n";
    }
}
void yTicks(std::string& out, const Frame& f, const std::vector<double>& ys,
            const std::vector<std::string>& labels) {
    for (std::size_t i = 0; i < ys.size(); ++i) {
        const std::string y = coord(f.py(ys[i]));
        out += "<line class=\"grid\" x1=\"" + coord(f.left) + "\" y1=\"" + y + "\" x2=\"" +
               coord(f.w - f.right) + "\" y2=\"" + y + "\"/>";
        out += "<text class=\"tl\" x=\"" + coord(f.left - 8) + "\" y=\"" + coord(f.py(ys[i]) + 4) +
               "\" text-anchor=\"end\">" + labels[i] + "</text>\n";
    }
}
// The axes' lines and titles (titles are fixed text, not user input).
void axes(std::string& out, const Frame& f, const std::string& xTitle, const std::string& yTitle) {
    const double base = f.h - f.bottom;
    out += "<line class=\"axis\" x1=\"" + coord(f.left) + "\" y1=\"" + coord(base) + "\" x2=\"" +
           coord(f.w - f.right) + "\" y2=\"" + coord(base) + "\"/>";
    out += "<line class=\"axis\" x1=\"" + coord(f.left) + "\" y1=\"" + coord(f.top) + "\" x2=\"" +
           coord(f.left) + "\" y2=\"" + coord(base) + "\"/>\n";
    out += "<text class=\"at\" x=\"" + coord(f.left + f.plotW() / 2) + "\" y=\"" + coord(f.h - 10) +
           "\" text-anchor=\"middle\">" + xTitle + "</text>\n";
    const double cy = f.top + (base - f.top) / 2;
    out += "<text class=\"at\" x=\"18\" y=\"" + coord(cy) +
           "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " + coord(cy) + ")\">" + yTitle + "</text>\n";
}

// A latency axis from 0 to a round value ≥ maxNs: the frame's y range (ns) and the ticks.
void latencyYAxis(std::string& out, Frame& f, double maxNs, std::string& unitName) {
    const TimeUnit u = unitFor(std::max(maxNs, 1.0));
    const double maxU = std::max(maxNs / u.div, 1e-9);
    const double step = niceStep(maxU, 5);
    const double topU = std::max(step, std::ceil(maxU / step - 1e-9) * step);
    f.y0 = 0;
    f.y1 = topU * u.div;
    std::vector<double> ys;
    std::vector<std::string> labels;
    for (double t : niceTicks(0, topU, step)) {
        ys.push_back(t * u.div);
        labels.push_back(fmt("%g", t));
    }
    yTicks(out, f, ys, labels);
    unitName = u.name;
}

const stats::Histogram* nonEmpty(const std::unique_ptr<stats::Histogram>& h) {
    return h && h->count() ? h.get() : nullptr;
}

// Latency by percentile: x = log10(1/(1−p)), sampled 20 times per decade up to the last rank, then
// the maximum at the right end. Non-decreasing in x and in latency.
std::vector<std::pair<double, double>> percentileCurve(const stats::Histogram& h, int decades) {
    std::vector<std::pair<double, double>> pts;
    const double n = static_cast<double>(h.count());
    const double xLast = std::min(std::log10(n), static_cast<double>(decades));
    for (int k = 0;; ++k) {
        const double x = k / 20.0;
        if (x >= xLast) break;
        const double p = 100.0 * (1.0 - std::pow(10.0, -x));
        pts.emplace_back(x, static_cast<double>(h.valueAtPercentile(p)));
    }
    const double pLast = 100.0 * (1.0 - std::pow(10.0, -xLast));
    pts.emplace_back(xLast, static_cast<double>(h.valueAtPercentile(pLast)));
    pts.emplace_back(static_cast<double>(decades), static_cast<double>(h.max()));
    return pts;
}

std::string percentilePlot(const Result& r) {
    const stats::Histogram* lat = nonEmpty(r.latency);
    if (!lat) return "<p class=\"empty\">No measured request completed: nothing to plot.</p>\n";
    const bool open = r.options.model() == Model::Open;
    const stats::Histogram* svc = open ? nonEmpty(r.serviceTime) : nullptr;
    const double n = static_cast<double>(lat->count());
    const int decades = std::clamp(static_cast<int>(std::ceil(std::log10(n) - 1e-9)), 1, 8);
    Frame f = halfFrame();
    f.x0 = 0;
    f.x1 = decades;
    std::string out;
    svgOpen(out, f, "plot-percentiles", "latency by percentile");
    double maxNs = static_cast<double>(lat->max());
    if (svc) maxNs = std::max(maxNs, static_cast<double>(svc->max()));
    std::string unit;
    latencyYAxis(out, f, maxNs, unit);
    std::vector<double> xs;
    std::vector<std::string> labels;
    for (int d = 0; d <= decades; ++d) {
        xs.push_back(d);
        labels.push_back(decadeLabel(d));
    }
    xTicks(out, f, xs, labels);
    axes(out, f, "percentile (log scale of 1/(1\xE2\x88\x92p))", "latency (" + unit + ")");
    auto polyline = [&](const stats::Histogram& h, const char* cls) {
        out += "<polyline class=\"";
        out += cls;
        out += "\" points=\"";
        bool first = true;
        for (const auto& [x, y] : percentileCurve(h, decades)) {
            if (!first) out += ' ';
            first = false;
            out += coord(f.px(x)) + "," + coord(f.py(y));
        }
        out += "\"/>\n";
    };
    if (svc) polyline(*svc, "pl-svc");
    polyline(*lat, "pl-lat");
    // Marks at the table's percentiles that the run has the resolution for; a label that would
    // overlap an earlier one moves up a line.
    struct Box {
        double x0, x1, y0, y1;
    };
    std::vector<Box> placed;
    for (double p : {50.0, 90.0, 99.0, 99.9, 99.99}) {
        const double x = std::log10(1.0 / (1.0 - p / 100.0));
        if (x > std::log10(n) + 1e-9) break;
        const double v = static_cast<double>(lat->valueAtPercentile(p));
        const std::string cx = coord(f.px(x)), cy = coord(f.py(v));
        out += "<circle class=\"mark\" cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"3.5\"><title>" + pLabel(p) +
               " " + duration(v) + "</title></circle>";
        const std::string label = pLabel(p) + " " + duration(v);
        const double lx = std::min(f.px(x) + 6, f.w - 2 - textWidth(label));
        double ly = f.py(v) - 7;
        for (int tries = 0; tries < 8; ++tries) {
            const bool clash = std::any_of(placed.begin(), placed.end(), [&](const Box& b) {
                return lx < b.x1 && lx + textWidth(label) > b.x0 && ly - 12 < b.y1 && ly > b.y0;
            });
            if (!clash) break;
            ly -= 14;
        }
        placed.push_back({lx, lx + textWidth(label), ly - 12, ly});
        out += "<text class=\"ml\" x=\"" + coord(lx) + "\" y=\"" + coord(ly) + "\">" + label + "</text>\n";
    }
    out += "</svg>\n";
    return out;
}

std::string histogramPlot(const Result& r) {
    const stats::Histogram* lat = nonEmpty(r.latency);
    if (!lat) return "<p class=\"empty\">No measured request completed: nothing to plot.</p>\n";
    std::vector<stats::Histogram::Bucket> buckets;
    lat->forEachBucket([&](const stats::Histogram::Bucket& b) { buckets.push_back(b); });
    if (buckets.empty()) return "<p class=\"empty\">No latency buckets.</p>\n";
    // Log10 of the range [first bucket's lowest, last bucket's highest + 1), widened to ≥ 0.1 decade.
    double llo = std::log10(std::max<double>(1, static_cast<double>(buckets.front().lowestNs)));
    double lhi = std::log10(static_cast<double>(buckets.back().highestNs) + 1);
    if (lhi - llo < 0.1) {
        const double c = (llo + lhi) / 2;
        llo = c - 0.05;
        lhi = c + 0.05;
    }
    constexpr int kBars = 80;
    const double width = (lhi - llo) / kBars;
    std::vector<double> bars(kBars, 0.0);
    for (const auto& b : buckets) {
        const double mid = (std::log10(std::max<double>(1, static_cast<double>(b.lowestNs))) +
                            std::log10(static_cast<double>(b.highestNs) + 1)) /
                           2;
        const int i = std::clamp(static_cast<int>(std::floor((mid - llo) / width)), 0, kBars - 1);
        bars[static_cast<std::size_t>(i)] += static_cast<double>(b.count);
    }
    const double top = *std::max_element(bars.begin(), bars.end());
    Frame f = halfFrame();
    f.x0 = llo;
    f.x1 = lhi;
    const double step = niceStep(std::max(top, 1.0), 5);
    f.y0 = 0;
    f.y1 = std::max(step, std::ceil(std::max(top, 1.0) / step - 1e-9) * step);
    std::string out;
    svgOpen(out, f, "plot-histogram", "latency histogram");
    {
        std::vector<double> ys;
        std::vector<std::string> labels;
        for (double t : niceTicks(0, f.y1, step)) {
            ys.push_back(t);
            labels.push_back(compact(t));
        }
        yTicks(out, f, ys, labels);
    }
    // X ticks at 1, 2, 5 × 10^k (or every m × 10^k on a narrow axis; a linear spread on a very narrow one).
    std::vector<double> xs;
    std::vector<std::string> labels;
    auto logTicks = [&](std::initializer_list<int> mantissas) {
        xs.clear();
        labels.clear();
        for (int e = static_cast<int>(std::floor(llo)); e <= static_cast<int>(std::ceil(lhi)); ++e)
            for (int m : mantissas) {
                const double v = m * std::pow(10.0, e), lv = std::log10(v);
                if (lv >= llo - 1e-9 && lv <= lhi + 1e-9) {
                    xs.push_back(lv);
                    labels.push_back(timeTick(v));
                }
            }
    };
    // The densest set whose labels fit side by side (with room between them) and that has ≥ 3 ticks.
    const auto fits = [&] {
        double w = 0;
        for (const auto& l : labels)
            w += textWidth(l) + 14;
        return w <= f.plotW();
    };
    bool found = false;
    for (const auto& set : {std::initializer_list<int>{1, 2, 5}, std::initializer_list<int>{1, 3},
                            std::initializer_list<int>{1}}) {
        logTicks(set);
        if (fits() && xs.size() >= 3) {
            found = true;
            break;
        }
    }
    if (!found) {
        logTicks({1, 2, 3, 4, 5, 6, 7, 8, 9});
        if (!fits()) logTicks({1});
    }
    if (xs.size() < 3 && !(xs.size() == 2 && fits())) {
        xs.clear();
        labels.clear();
        const double a = std::pow(10.0, llo), b = std::pow(10.0, lhi);
        for (double v : niceTicks(a, b, niceStep(b - a, 4))) {
            xs.push_back(std::log10(v));
            labels.push_back(timeTick(v));
        }
    }
    xTicks(out, f, xs, labels);
    axes(out, f, "latency (log scale)", "requests per bar");
    const double base = f.py(0);
    for (int i = 0; i < kBars; ++i) {
        const double c = bars[static_cast<std::size_t>(i)];
        if (c <= 0) continue;
        const double xa = f.px(llo + i * width), xb = f.px(llo + (i + 1) * width);
        const double yt = f.py(c);
        out += "<rect class=\"bar\" x=\"" + coord(xa + 0.5) + "\" y=\"" + coord(yt) + "\" width=\"" +
               coord(std::max(0.5, xb - xa - 1)) + "\" height=\"" + coord(std::max(0.0, base - yt)) +
               "\"><title>" + duration(std::pow(10.0, llo + i * width)) + " \xE2\x80\x93 " +
               duration(std::pow(10.0, llo + (i + 1) * width)) + ": " + fmt("%.0f", c) +
               " requests</title></rect>\n";
    }
    // p50 / p90 / p99 as dashed lines with staggered labels.
    const char* classes[] = {"m50", "m90", "m99"};
    const double ps[] = {50, 90, 99};
    for (int k = 0; k < 3; ++k) {
        const double v = static_cast<double>(lat->valueAtPercentile(ps[k]));
        const double lv = std::log10(std::max(1.0, v));
        if (lv < llo || lv > lhi) continue;
        const std::string x = coord(f.px(lv));
        out += "<line class=\"pm " + std::string(classes[k]) + "\" x1=\"" + x + "\" y1=\"" + coord(f.top) +
               "\" x2=\"" + x + "\" y2=\"" + coord(base) + "\"/>";
        const bool leftSide = f.px(lv) > f.w - f.right - 150;
        out += "<text class=\"pl " + std::string(classes[k]) + "\" x=\"" +
               coord(f.px(lv) + (leftSide ? -5 : 5)) + "\" y=\"" + coord(f.top + 14 + 16 * k) + "\"" +
               (leftSide ? " text-anchor=\"end\"" : "") + ">" + pLabel(ps[k]) + " " + duration(v) +
               "</text>\n";
    }
    out += "</svg>\n";
    return out;
}

std::string throughputPlot(const Result& r) {
    if (r.perSlot.empty()) return "<p class=\"empty\">No time series was recorded.</p>\n";
    // Groups of g slots (at most 500 points): rate = completions / (slots × 100 ms).
    const std::size_t n = r.perSlot.size();
    const std::size_t g = (n + 499) / 500;
    const double slotS = std::chrono::duration<double>(Result::kSlot).count();
    // The measured time ends inside the last slot: each group's rate is over the time it covers,
    // and a last group that covers less than half its span is left out (as the GUI's plot does),
    // so the end of a run is not drawn as a collapse.
    const double measuredS = std::chrono::duration<double>(r.measured).count();
    const double coveredS =
        measuredS > 0 ? std::min(static_cast<double>(n) * slotS, measuredS) : static_cast<double>(n) * slotS;
    // Failed requests per second on the same groups (Result::failedPerSlot), when there were any.
    const bool failures = r.requests.failed > 0 && r.failedPerSlot.size() == n;
    std::vector<double> rates, failedRates;
    for (std::size_t i = 0; i < n; i += g) {
        double sum = 0, failed = 0;
        const std::size_t end = std::min(n, i + g);
        for (std::size_t k = i; k < end; ++k) {
            sum += static_cast<double>(r.perSlot[k]);
            if (failures) failed += static_cast<double>(r.failedPerSlot[k]);
        }
        const double span = static_cast<double>(end - i) * slotS;
        const double covered = std::clamp(coveredS - static_cast<double>(i) * slotS, 0.0, span);
        if (!rates.empty() && covered < span / 2) break;
        rates.push_back(sum / std::max(covered, span / 2));
        failedRates.push_back(failed / std::max(covered, span / 2));
    }
    const double totalS = std::max(coveredS, slotS / 2);
    double top = std::max(*std::max_element(rates.begin(), rates.end()),
                          failures ? *std::max_element(failedRates.begin(), failedRates.end()) : 0.0);
    const double mean = r.requestsPerSecond();
    const bool open = r.options.model() == Model::Open;
    top = std::max({top, finite(mean), open ? finite(r.options.rate) : 0.0, 1.0});
    Frame f;
    f.h = 290;
    f.x0 = 0;
    f.x1 = totalS;
    const double ystep = niceStep(top, 5);
    f.y0 = 0;
    f.y1 = std::max(ystep, std::ceil(top / ystep - 1e-9) * ystep);
    std::string out;
    svgOpen(out, f, "plot-throughput", "throughput over time");
    {
        std::vector<double> ys;
        std::vector<std::string> labels;
        for (double t : niceTicks(0, f.y1, ystep)) {
            ys.push_back(t);
            labels.push_back(compact(t));
        }
        yTicks(out, f, ys, labels);
        std::vector<double> xs;
        labels.clear();
        for (double t : niceTicks(0, totalS, niceStep(totalS, 8))) {
            xs.push_back(t);
            labels.push_back(fmt("%g", std::round(t * 1000) / 1000));
        }
        xTicks(out, f, xs, labels);
    }
    axes(out, f, "time after warm-up (s)", "requests per second");
    // A step line: each group is flat over its time span; filled down to 0.
    std::string line;
    const double groupS = static_cast<double>(g) * slotS;
    for (std::size_t i = 0; i < rates.size(); ++i) {
        const double t0 = static_cast<double>(i) * groupS;
        const double t1 = std::min(totalS, t0 + groupS);
        const std::string y = coord(f.py(rates[i]));
        line += (i ? " " : "") + coord(f.px(t0)) + "," + y + " " + coord(f.px(t1)) + "," + y;
    }
    const std::string base = coord(f.py(0));
    out += "<polygon class=\"area\" points=\"" + coord(f.px(0)) + "," + base + " " + line + " " +
           coord(f.px(totalS)) + "," + base + "\"/>\n";
    out += "<polyline class=\"tp\" points=\"" + line + "\"/>\n";
    if (failures) {
        std::string failedLine;
        for (std::size_t i = 0; i < failedRates.size(); ++i) {
            const double t0 = static_cast<double>(i) * groupS;
            const double t1 = std::min(totalS, t0 + groupS);
            const std::string y = coord(f.py(failedRates[i]));
            failedLine += (i ? " " : "") + coord(f.px(t0)) + "," + y + " " + coord(f.px(t1)) + "," + y;
        }
        out += "<polyline class=\"failed\" points=\"" + failedLine + "\"/>\n";
        out += "<text class=\"fl\" x=\"" + coord(f.left + 6) + "\" y=\"" + coord(f.top + 14) +
               "\">failed requests per second (" + compact(static_cast<double>(r.requests.failed)) +
               " in all)</text>\n";
    }
    // A dashed level with its label above it, at the right end (`right`) or the left end.
    auto hline = [&](double v, const char* cls, const std::string& label, bool right, bool below = false) {
        const std::string y = coord(f.py(v));
        out += "<line class=\"" + std::string(cls) + "\" x1=\"" + coord(f.left) + "\" y1=\"" + y +
               "\" x2=\"" + coord(f.w - f.right) + "\" y2=\"" + y + "\"/>";
        out += "<text class=\"hl\" x=\"" + coord(right ? f.w - f.right - 4 : f.left + 6) + "\" y=\"" +
               coord(f.py(v) + (below ? 16 : -6)) + "\" text-anchor=\"" + (right ? "end" : "start") + "\">" +
               label + "</text>\n";
    };
    if (mean > 0 && std::isfinite(mean))
        hline(mean, "mean", "mean " + fixed2(mean) + " req/s", true,
              open && f.py(mean) - f.py(r.options.rate) >= 0 &&
                  f.py(mean) - f.py(r.options.rate) < 18); // under the target's line
    if (open && std::isfinite(r.options.rate))
        hline(r.options.rate, "target", "target " + fixed2(r.options.rate) + " req/s", false);
    out += "</svg>\n";
    return out;
}

// ---------------------------------------------------------------------------------------------
// Page parts.

constexpr const char* kStyle = R"css(
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--bg:#f5f6f8;--card:#fff;--accent:#2563eb;
--ok:#15803d;--okbg:#dcfce7;--bad:#b91c1c;--badbg:#fee2e2;--warn:#a16207;--warnbg:#fef9c3}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif}
header.top{background:#111827;color:#f9fafb;padding:20px 32px}
header.top h1{margin:0;font-size:22px;font-weight:600;letter-spacing:.2px}
header.top .sub{margin-top:6px;color:#d1d5db;font-size:13px;display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center}
header.top .sub .u{font-family:ui-monospace,"DejaVu Sans Mono",monospace;color:#f9fafb;word-break:break-all}
main{max-width:1120px;margin:0 auto;padding:20px 24px 40px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px;margin:0 0 16px}
section h2{margin:0 0 12px;font-size:16px;font-weight:600}
section h2 .note{font-weight:400;color:var(--muted);font-size:13px;margin-left:8px}
.cards{display:grid;grid-template-columns:repeat(6,1fr);gap:12px;margin:0 0 16px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.4px}
.card .v{font-size:22px;font-weight:600;margin-top:2px;font-variant-numeric:tabular-nums;white-space:nowrap}
.card .s{color:var(--muted);font-size:12px}
.card.bad .v{color:var(--bad)}.card.warn .v{color:var(--warn)}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}
.grid2>section{margin:0 0 16px}
table{border-collapse:collapse;width:100%}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{color:var(--muted);font-weight:500;font-size:12px;text-transform:uppercase;letter-spacing:.3px}
td.req{min-width:300px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv th{width:1%;white-space:nowrap;text-transform:none;font-size:13px;letter-spacing:0;padding-right:16px}
tr:last-child td,tr:last-child th{border-bottom:none}
table.kv td.n{white-space:normal}
.u{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:13px;word-break:break-all}
.hdr{color:var(--muted);font-size:12px}
.method{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;font-weight:600;
background:#eef2ff;color:#3730a3;border-radius:4px;padding:1px 6px;margin-right:6px}
.chip{display:inline-block;white-space:nowrap;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;margin:1px 4px 1px 0;
font-variant-numeric:tabular-nums}
.ok{background:var(--okbg);color:var(--ok)}.bad{background:var(--badbg);color:var(--bad)}
.warn{background:var(--warnbg);color:var(--warn)}.info{background:#e0f2fe;color:#0369a1}
.s2{background:var(--okbg);color:var(--ok)}.s3{background:#e0f2fe;color:#0369a1}
.s4{background:var(--warnbg);color:var(--warn)}.s5,.s1{background:var(--badbg);color:var(--bad)}
.alert{border-radius:8px;padding:10px 14px;margin:0 0 16px;font-weight:500}
.alert.warn{border:1px solid #fde68a}.alert.bad{border:1px solid #fecaca}
.muted{color:var(--muted)}
.legend{display:flex;gap:18px;color:var(--muted);font-size:12px;margin:-4px 0 6px}
.sw{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:6px;border-radius:2px}
svg.plot{width:100%;height:auto;display:block}
svg .grid{stroke:#eef0f3;stroke-width:1}
svg .axis{stroke:#9ca3af;stroke-width:1}
svg .tick{stroke:#9ca3af}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
svg .tl{font-size:12px;fill:#4b5563}
svg .at{font-size:13px;fill:#374151}
svg .pl-lat{fill:none;stroke:var(--accent);stroke-width:2.2;stroke-linejoin:round}
svg .pl-svc{fill:none;stroke:#f59e0b;stroke-width:2;stroke-dasharray:6 4}
svg .mark{fill:#fff;stroke:var(--accent);stroke-width:2}
svg .ml{font-size:12px;fill:#1e3a8a}
svg .ml,svg .pl,svg .hl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .bar{fill:#60a5fa}
svg .bar:hover{fill:var(--accent)}
svg .pm{stroke-width:1.5;stroke-dasharray:5 4}
svg .pl{font-size:12px;font-weight:600}
svg line.m50{stroke:#16a34a}svg text.m50{fill:#15803d}
svg line.m90{stroke:#d97706}svg text.m90{fill:#b45309}
svg line.m99{stroke:#dc2626}svg text.m99{fill:#b91c1c}
svg .area{fill:#2563eb;fill-opacity:.12;stroke:none}
svg .tp{fill:none;stroke:var(--accent);stroke-width:1.6;stroke-linejoin:round}
svg .failed{fill:none;stroke:var(--bad);stroke-width:1.4;stroke-linejoin:round}
svg .fl{fill:var(--bad);font-size:12px}
svg .mean{stroke:#16a34a;stroke-width:1.5;stroke-dasharray:6 4}
svg .target{stroke:#dc2626;stroke-width:1.5;stroke-dasharray:2 3}
svg .hl{font-size:12px;fill:#374151}
.empty{color:var(--muted);font-style:italic;margin:4px 0}
footer{color:var(--muted);font-size:12px;text-align:center;padding:8px 0 24px}
@media (max-width:900px){.cards{grid-template-columns:repeat(3,1fr)}.grid2{grid-template-columns:1fr}}
@media print{body{background:#fff}section,.card{break-inside:avoid}header.top{background:#fff;color:#000}}
)css";

void head(std::string& out, const std::string& title) {
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    // The page loads nothing: no script, no image, no font, no frame, no form target.
    out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
           "'unsafe-inline'; base-uri 'none'; form-action 'none'\">\n";
    out += "<meta name=\"referrer\" content=\"no-referrer\">\n";
    out += "<meta name=\"generator\" content=\"portico bench ";
    appendText(out, PORTICO_VERSION);
    out += "\">\n<title>" + title + "</title>\n<style>";
    out += kStyle;
    out += "</style>\n</head>\n<body>\n";
}

void tail(std::string& out) {
    out += "<footer>Generated by portico bench ";
    appendText(out, PORTICO_VERSION);
    out += " \xC2\xB7 self-contained report: no script, nothing fetched</footer>\n</body>\n</html>\n";
}

std::string firstUrl(const Options& o) { return o.requests.empty() ? std::string() : o.requests.front().url; }

std::string statusChips(const std::map<int, std::uint64_t>& statuses) {
    if (statuses.empty()) return "<span class=\"muted\">none</span>";
    std::string s;
    for (const auto& [code, n] : statuses) {
        const int cls = std::clamp(code / 100, 1, 5);
        s += "<span class=\"chip s" + std::to_string(cls) + "\">" + std::to_string(code) + ": " + count(n) +
             "</span>";
    }
    return s;
}

// A threshold's measured value in its unit ("ns" as a duration, "req/s", "%" as thresholdsText
// writes them). Without a unit, the unit is guessed from the key the expression names.
std::string thresholdValue(const ThresholdOutcome& t) {
    std::string unit = t.unit;
    if (unit.empty()) {
        std::string key;
        for (char c : t.expr) {
            if (c == '<' || c == '>' || c == '=' || c == ' ') break;
            key += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        }
        if (key == "rps")
            unit = "req/s";
        else if (key == "errors" || key.rfind("status", 0) == 0)
            unit = "%";
        else if ((key.size() > 1 && key[0] == 'p' && key[1] >= '0' && key[1] <= '9') || key == "max" ||
                 key == "min" || key == "mean")
            unit = "ns";
    }
    if (!std::isfinite(t.value)) return kDash;
    if (unit == "ns") return duration(t.value);
    if (unit == "req/s") return fixed2(t.value) + " req/s";
    if (unit == "%") return fmt("%.3g%%", t.value);
    return fmt("%g", t.value) + (unit.empty() ? "" : " " + esc(unit));
}

void thresholdsSection(std::string& out, const Result& r) {
    if (r.thresholds.empty()) return;
    std::size_t breached = 0;
    for (const auto& t : r.thresholds)
        breached += t.ok ? 0 : 1;
    out +=
        "<section id=\"thresholds\"><h2>Thresholds <span class=\"note\">" +
        (breached ? std::to_string(breached) + " of " + std::to_string(r.thresholds.size()) + " breached"
                  : "all " + std::to_string(r.thresholds.size()) + " met") +
        "</span></h2>\n<table><thead><tr><th>threshold</th><th class=\"n\">measured</th><th>result</th></tr>"
        "</thead><tbody>\n";
    for (const auto& t : r.thresholds) {
        // A latency threshold of a run that completed nothing has no measured value (judge breaches
        // it and stores 0): a dash, as the terminal's "measured nothing".
        const std::string value = t.unit == "ns" && r.requests.completed == 0
                                      ? std::string(kDash) + " (nothing completed)"
                                      : thresholdValue(t);
        out += "<tr class=\"" + std::string(t.ok ? "met" : "breached") + "\"><td class=\"u\">" + esc(t.expr) +
               "</td><td class=\"n\">" + value + "</td><td><span class=\"chip " +
               (t.ok ? "ok\">\xE2\x9C\x93 met" : "bad\">\xE2\x9C\x97 breached") + "</span></td></tr>\n";
    }
    out += "</tbody></table></section>\n";
}

void requestKinds(std::string& out, const Options& o) {
    for (const auto& q : o.requests) {
        out += "<div><span class=\"method\">" + esc(q.method) + "</span><span class=\"u\">" + esc(q.url) +
               "</span>";
        if (o.requests.size() > 1)
            out += " <span class=\"muted\">weight " + std::to_string(q.weight) + "</span>";
        if (!q.body.empty())
            out += " <span class=\"muted\">body " + bytes(static_cast<double>(q.body.size())) + "</span>";
        for (const auto& [name, value] : q.headers)
            out += "<div class=\"hdr u\">" + esc(name) + ": " + esc(value) + "</div>";
        out += "</div>\n";
    }
}

void parametersSection(std::string& out, const Result& r) {
    const Options& o = r.options;
    auto row = [&](const char* k, const std::string& v) {
        out += "<tr><th>";
        out += k;
        out += "</th><td>" + v + "</td></tr>\n";
    };
    out += "<section id=\"parameters\"><h2>Run parameters</h2><table class=\"kv\"><tbody>\n";
    row("Target address",
        r.address.empty() ? std::string(kDash) : "<span class=\"u\">" + esc(r.address) + "</span>");
    {
        std::string kinds;
        std::swap(out, kinds);
        requestKinds(out, o);
        std::swap(out, kinds);
        row(o.requests.size() > 1 ? "Requests" : "Request", kinds);
    }
    row("Model", o.model() == Model::Open
                     ? "open: " + fixed2(o.rate) +
                           " req/s arrival rate (latency from intended send, corrected "
                           "for coordinated omission)"
                     : std::string("closed: as fast as answered (latency from actual send)"));
    const bool tls = isTls(o);
    row("Protocol",
        o.protocol == Protocol::Http2
            ? std::string(tls ? "h2" : "h2c") + ", " + std::to_string(o.streams) + " stream(s) per connection"
            : "HTTP/1.1, pipeline " + std::to_string(o.pipeline));
    row("TLS", tls ? (o.insecure ? std::string("yes, certificate not verified (insecure)")
                                 : "yes, certificate verified" + (o.caFile.empty()
                                                                      ? std::string()
                                                                      : " (also trusting <span class=\"u\">" +
                                                                            esc(o.caFile) + "</span>)"))
                   : std::string("no"));
    row("Connections", std::to_string(o.connections));
    row("Threads", std::to_string(std::max(1u, std::min(o.threads, o.connections))));
    std::string bound;
    if (o.duration.count()) bound = duration(o.duration);
    if (o.count) bound += (bound.empty() ? "" : " or ") + count(o.count) + " requests";
    if (o.duration.count() && o.count) bound += ", whichever first";
    row("Duration / count", bound.empty() ? std::string(kDash) : bound);
    row("Warm-up", o.warmup.count() ? duration(o.warmup) : std::string("none"));
    row("Timeout / stop grace", duration(o.timeout) + " / " + duration(o.stopGrace));
    row("Measured", fmt("%.3f s", seconds(r.measured)));
    row("Started (UTC)", isoUtc(r.startedAt));
    row("Tool", "portico bench " + esc(PORTICO_VERSION));
    out += "</tbody></table></section>\n";
}

void totalsSection(std::string& out, const Result& r) {
    const Options& o = r.options;
    auto row = [&](const char* k, const std::string& v) {
        out += "<tr><th>";
        out += k;
        out += "</th><td class=\"n\">" + v + "</td></tr>\n";
    };
    const double s = seconds(r.measured);
    out += "<section id=\"totals\"><h2>Totals <span class=\"note\">started = completed + failed + "
           "cancelled</span></h2><table class=\"kv\"><tbody>\n";
    row("Requests started", count(r.requests.started));
    row("Completed", count(r.requests.completed));
    row("Failed", count(r.requests.failed));
    row("Cancelled", count(r.requests.cancelled));
    if (r.warmup.started)
        row("In warm-up (not measured)",
            count(r.warmup.started) + " started, " + count(r.warmup.completed) + " completed");
    row("Requests/sec", fixed2(r.requestsPerSecond()));
    row("Transfer/sec", bytes(s > 0 ? static_cast<double>(r.measuredBytesRead) / s : 0) + " read");
    row("Measured transfer", bytes(static_cast<double>(r.measuredBytesRead)) + " read, " +
                                 bytes(static_cast<double>(r.measuredBytesWritten)) + " written");
    row("Whole run (with warm-up)", bytes(static_cast<double>(r.bytesRead)) + " read, " +
                                        bytes(static_cast<double>(r.bytesWritten)) + " written");
    const auto& e = r.errors;
    const bool anyError = e.connect || e.reset || e.timeout || e.protocol;
    row("Errors", anyError ? "<span class=\"chip bad\">connect " + count(e.connect) + "</span>" +
                                 "<span class=\"chip bad\">reset " + count(e.reset) + "</span>" +
                                 "<span class=\"chip bad\">timeout " + count(e.timeout) + "</span>" +
                                 "<span class=\"chip bad\">protocol " + count(e.protocol) + "</span>"
                           : std::string("<span class=\"chip ok\">none</span>"));
    row("Status codes", statusChips(r.statuses));
    if (o.model() == Model::Open)
        row("Missed arrivals", r.missedArrivals
                                   ? "<span class=\"chip warn\">" + count(r.missedArrivals) + "</span>"
                                   : std::string("0"));
    const unsigned threads = std::max(1u, std::min(o.threads, o.connections));
    row("Generator CPU", fmt("%.2f s user, %.2f s system (%.0f %% of %u thread(s))", finite(r.cpuUserSeconds),
                             finite(r.cpuSystemSeconds), finite(r.cpuShare() * 100), threads));
    out += "</tbody></table></section>\n";
}

const double kTablePercentiles[] = {50, 75, 90, 99, 99.9, 99.99};

void latencyRow(std::string& out, const char* name, const stats::Histogram* h) {
    out += "<tr><th>";
    out += name;
    out += "</th>";
    auto cell = [&](double v) {
        out += "<td class=\"n\">" + (h ? duration(v) : std::string(kDash)) + "</td>";
    };
    cell(h ? static_cast<double>(h->min()) : 0);
    cell(h ? h->mean() : 0);
    cell(h ? h->stddev() : 0);
    for (double p : kTablePercentiles)
        cell(h ? static_cast<double>(h->valueAtPercentile(p)) : 0);
    cell(h ? static_cast<double>(h->max()) : 0);
    out += "</tr>\n";
}

void latencySection(std::string& out, const Result& r) {
    const bool open = r.options.model() == Model::Open;
    out += "<section id=\"latency\"><h2>Latency <span class=\"note\">";
    out += open ? "from each request's intended send time (coordinated omission corrected)"
                : "from each request's actual send time";
    out += "</span></h2>\n";
    const stats::Histogram* lat = nonEmpty(r.latency);
    if (!lat || r.requests.completed == 0) {
        out += "<p class=\"empty\">No measured request completed: no latency to report.</p></section>\n";
        return;
    }
    out += "<table id=\"latency-table\"><thead><tr><th></th><th class=\"n\">min</th><th class=\"n\">mean</th>"
           "<th class=\"n\">stddev</th>";
    for (double p : kTablePercentiles)
        out += "<th class=\"n\">" + pLabel(p) + "</th>";
    out += "<th class=\"n\">max</th></tr></thead><tbody>\n";
    latencyRow(out, open ? "latency (corrected)" : "latency", lat);
    if (open) latencyRow(out, "service time (uncorrected)", nonEmpty(r.serviceTime));
    out += "</tbody></table>\n";
    if (open) {
        const stats::Histogram* svc = nonEmpty(r.serviceTime);
        out += "<p class=\"muted\">Uncorrected (from actual send): p50 " +
               (svc ? duration(static_cast<double>(svc->valueAtPercentile(50))) : std::string(kDash)) +
               ", p99 " +
               (svc ? duration(static_cast<double>(svc->valueAtPercentile(99))) : std::string(kDash)) +
               ", max " + (svc ? duration(static_cast<double>(svc->max())) : std::string(kDash)) + "</p>\n";
    }
    out += "</section>\n";
}

void perRequestSection(std::string& out, const Result& r) {
    const auto& reqs = r.options.requests;
    const std::size_t n = std::min(reqs.size(), r.byRequest.size());
    if (reqs.size() < 2 || n == 0) return;
    const double s = seconds(r.measured);
    out += "<section id=\"per-request\"><h2>By request</h2>\n<table><thead><tr><th>request</th>"
           "<th class=\"n\">completed</th><th class=\"n\">req/s</th><th class=\"n\">p50</th><th "
           "class=\"n\">p90</th>"
           "<th class=\"n\">p99</th><th class=\"n\">max</th><th class=\"n\">errors</th><th>statuses</th></tr>"
           "</thead><tbody>\n";
    for (std::size_t i = 0; i < n; ++i) {
        const auto& q = reqs[i];
        const auto& b = r.byRequest[i];
        const stats::Histogram* h = nonEmpty(b.latency);
        auto pct = [&](double p) {
            return "<td class=\"n\">" +
                   (h ? duration(static_cast<double>(h->valueAtPercentile(p))) : std::string(kDash)) +
                   "</td>";
        };
        const std::uint64_t errors = b.errors.reset + b.errors.timeout + b.errors.protocol + b.errors.connect;
        out += "<tr><td class=\"req\"><span class=\"method\">" + esc(q.method) + "</span><span class=\"u\">" +
               esc(q.url) + "</span></td><td class=\"n\">" + count(b.requests.completed) +
               "</td><td class=\"n\">" + fixed2(s > 0 ? static_cast<double>(b.requests.completed) / s : 0) +
               "</td>" + pct(50) + pct(90) + pct(99) + "<td class=\"n\">" +
               (h ? duration(static_cast<double>(h->max())) : std::string(kDash)) + "</td><td class=\"n\">" +
               (errors ? "<span class=\"chip bad\" title=\"reset " + count(b.errors.reset) + ", timeout " +
                             count(b.errors.timeout) + ", protocol " + count(b.errors.protocol) + "\">" +
                             count(errors) + "</span>"
                       : std::string("0")) +
               "</td><td>" + statusChips(b.statuses) + "</td></tr>\n";
    }
    out += "</tbody></table></section>\n";
}

void cards(std::string& out, const Result& r) {
    const stats::Histogram* lat = nonEmpty(r.latency);
    const double s = seconds(r.measured);
    // `tone`: "", "bad" (red) or "warn" (yellow).
    auto card = [&](const char* k, const std::string& v, const std::string& sub, const char* tone = "") {
        out += std::string("<div class=\"card ") + tone + "\"><div class=\"k\">" + k +
               "</div><div class=\"v\">" + v + "</div><div class=\"s\">" + sub + "</div></div>\n";
    };
    out += "<div class=\"cards\">\n";
    card("Requests/sec", fixed2(r.requestsPerSecond()), fmt("over %.2f s", s));
    card("Latency p50", lat ? duration(static_cast<double>(lat->valueAtPercentile(50))) : std::string(kDash),
         lat ? "mean " + duration(lat->mean()) : std::string("no completions"));
    card("Latency p99", lat ? duration(static_cast<double>(lat->valueAtPercentile(99))) : std::string(kDash),
         lat ? "max " + duration(static_cast<double>(lat->max())) : std::string("no completions"));
    card("Completed", count(r.requests.completed), "of " + count(r.requests.started) + " started");
    const std::uint64_t failed = r.requests.failed;
    card("Failed", count(failed),
         r.errors.connect ? count(r.errors.connect) + " connect error(s)"
                          : count(r.requests.cancelled) + " cancelled",
         failed             ? "bad"
         : r.errors.connect ? "warn"
                            : "");
    card("Transfer/sec", bytes(s > 0 ? static_cast<double>(r.measuredBytesRead) / s : 0),
         bytes(static_cast<double>(r.measuredBytesRead)) + " read");
    out += "</div>\n";
}

void topHeader(std::string& out, const Result& r, const std::string& verdict) {
    out += "<header class=\"top\"><h1>portico bench report</h1><div class=\"sub\">";
    const Options& o = r.options;
    if (!o.requests.empty()) {
        out += "<span class=\"u\">" + esc(o.requests.front().method) + " " + esc(firstUrl(o)) + "</span>";
        if (o.requests.size() > 1)
            out += "<span>and " + std::to_string(o.requests.size() - 1) + " more request kind(s)</span>";
    }
    out +=
        "<span>" + isoUtc(r.startedAt) + "</span><span>portico " + esc(PORTICO_VERSION) + "</span>" + verdict;
    out += "</div></header>\n";
}

std::string errorPage(const Result& r) {
    std::string out;
    head(out, "portico bench report \xE2\x80\x94 error");
    topHeader(out, r, "<span class=\"chip bad\">run failed</span>");
    out += "<main>\n<div id=\"error\" class=\"alert bad\">The run could not take place: <span class=\"u\">" +
           esc(r.error) + "</span></div>\n";
    if (!r.options.requests.empty()) {
        out += "<section><h2>Requested</h2>";
        requestKinds(out, r.options);
        out += "</section>\n";
    }
    out += "</main>\n";
    tail(out);
    return out;
}

std::string page(const Result& r) {
    if (!r.ok()) return errorPage(r);
    const Options& o = r.options;
    std::string out;
    out.reserve(64 * 1024);
    std::string title = "portico bench report";
    if (!o.requests.empty()) title += " \xE2\x80\x94 " + esc(firstUrl(o));
    title += " \xE2\x80\x94 " + isoUtc(r.startedAt);
    head(out, title);
    std::size_t breached = 0;
    for (const auto& t : r.thresholds)
        breached += t.ok ? 0 : 1;
    std::string verdict;
    if (!r.thresholds.empty())
        verdict = breached ? "<span class=\"chip bad\">" + std::to_string(breached) +
                                 " threshold(s) breached</span>"
                           : std::string("<span class=\"chip ok\">all thresholds met</span>");
    topHeader(out, r, verdict);
    out += "<main>\n";
    cards(out, r);
    if (r.missedArrivals)
        out += "<div id=\"missed\" class=\"alert warn\">Rate not met: sent " + count(r.requests.started) +
               " of " + count(r.requests.started + r.missedArrivals) + " arrivals (" +
               count(r.missedArrivals) +
               " found no free connection; counted in the latency with the time they had waited)</div>\n";
    if (finite(r.cpuShare()) > 0.9)
        out += "<div class=\"alert warn\">Generator CPU at " + fmt("%.0f %%", finite(r.cpuShare()) * 100) +
               ": the generator may be the bottleneck.</div>\n";
    thresholdsSection(out, r);
    latencySection(out, r);
    perRequestSection(out, r);
    out += "<div class=\"grid2\">\n<section id=\"percentiles\"><h2>Latency by percentile</h2>\n";
    if (o.model() == Model::Open && nonEmpty(r.serviceTime))
        out += "<div class=\"legend\"><span><span class=\"sw\" style=\"background:#2563eb\"></span>latency "
               "(corrected)</span><span><span class=\"sw\" style=\"background:#f59e0b\"></span>service time "
               "(uncorrected)</span></div>\n";
    out += percentilePlot(r) + "</section>\n";
    out +=
        "<section id=\"histogram\"><h2>Latency histogram <span class=\"note\">buckets grouped into 80 bars, "
        "log scale</span></h2>\n";
    out += histogramPlot(r) + "</section>\n</div>\n";
    out += "<section id=\"throughput\"><h2>Throughput over time <span class=\"note\">completions per " +
           std::to_string(Result::kSlot.count()) + " ms slot, as req/s</span></h2>\n";
    out += throughputPlot(r) + "</section>\n";
    out += "<div class=\"grid2\">\n";
    parametersSection(out, r);
    totalsSection(out, r);
    out += "</div>\n</main>\n";
    tail(out);
    return out;
}

} // namespace

std::string htmlReport(const Result& result) {
    try {
        return page(result);
    } catch (...) {
        return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>portico bench "
               "report</title></head><body><p>The report could not be built (out of "
               "memory).</p></body></html>\n";
    }
}

} // namespace portico::load

// unifiedDiff: common ends set aside, an LCS table over the rest, hunks with context.
#include "textdiff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace portico::ui {

namespace {

// Lines with their '\n' (the last one may have none).
std::vector<std::string_view> splitLines(std::string_view text) {
    std::vector<std::string_view> lines;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        const std::size_t n = eol == std::string_view::npos ? text.size() : eol + 1;
        lines.push_back(text.substr(0, n));
        text.remove_prefix(n);
    }
    return lines;
}

enum class Op : std::uint8_t { Same, Removed, Added };

struct Step {
    Op op;
    std::size_t a; ///< lines of `a` before this step
    std::size_t b; ///< lines of `b` before this step
};

void appendLine(std::string& out, char mark, std::string_view line) {
    out += mark;
    if (!line.empty() && line.back() == '\n') {
        out += line;
    } else {
        out += line;
        out += "\n\\ No newline at end of file\n";
    }
}

std::string range(std::size_t start, std::size_t count) {
    // diff -u: "start,count", ",1" left out; an empty range names the line before it.
    if (count == 0) return std::to_string(start) + ",0";
    return std::to_string(start + 1) + (count == 1 ? std::string() : "," + std::to_string(count));
}

} // namespace

TextDiff unifiedDiff(std::string_view a, std::string_view b, std::string_view labelA, std::string_view labelB,
                     std::size_t context, std::size_t maxLines) {
    TextDiff d;
    const std::vector<std::string_view> la = splitLines(a), lb = splitLines(b);
    d.linesA = la.size();
    d.linesB = lb.size();
    if (a == b) {
        d.ok = d.same = true;
        return d;
    }
    std::size_t prefix = 0;
    while (prefix < la.size() && prefix < lb.size() && la[prefix] == lb[prefix])
        ++prefix;
    std::size_t suffix = 0;
    while (suffix < la.size() - prefix && suffix < lb.size() - prefix &&
           la[la.size() - 1 - suffix] == lb[lb.size() - 1 - suffix])
        ++suffix;
    const std::size_t n = la.size() - prefix - suffix, m = lb.size() - prefix - suffix;
    if (n > maxLines || m > maxLines) return d; // not ok: too large for the quadratic table

    // lcs[i][j]: the longest common subsequence of the middle lines from i (a) and j (b) on.
    // At most 2000 lines each side, so it fits 16 bits.
    const std::size_t w = m + 1;
    std::vector<std::uint16_t> lcs((n + 1) * w, 0);
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m; j-- > 0;)
            lcs[i * w + j] = la[prefix + i] == lb[prefix + j]
                                 ? static_cast<std::uint16_t>(lcs[(i + 1) * w + j + 1] + 1)
                                 : std::max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);

    std::vector<Step> steps;
    steps.reserve(la.size() + lb.size());
    for (std::size_t k = 0; k < prefix; ++k)
        steps.push_back({Op::Same, k, k});
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && la[prefix + i] == lb[prefix + j]) {
            steps.push_back({Op::Same, prefix + i, prefix + j});
            ++i;
            ++j;
        } else if (j == m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
            steps.push_back({Op::Removed, prefix + i, prefix + j});
            ++i;
        } else {
            steps.push_back({Op::Added, prefix + i, prefix + j});
            ++j;
        }
    }
    for (std::size_t k = 0; k < suffix; ++k)
        steps.push_back({Op::Same, prefix + n + k, prefix + m + k});

    d.ok = true;
    d.text = "--- " + std::string(labelA) + "\n+++ " + std::string(labelB) + "\n";
    std::size_t k = 0;
    while (k < steps.size()) {
        while (k < steps.size() && steps[k].op == Op::Same)
            ++k;
        if (k == steps.size()) break;
        // A hunk: from `context` lines before this change to `context` lines after the last
        // change that is at most 2 * context unchanged lines from the previous one.
        const std::size_t begin = k > context ? k - context : 0;
        std::size_t end = k; // one past the last change
        std::size_t scan = k;
        while (scan < steps.size()) {
            if (steps[scan].op != Op::Same) {
                end = ++scan;
                continue;
            }
            std::size_t run = scan;
            while (run < steps.size() && steps[run].op == Op::Same)
                ++run;
            if (run == steps.size() || run - scan > 2 * context) break;
            scan = run;
        }
        const std::size_t stop = std::min(steps.size(), end + context);
        std::size_t countA = 0, countB = 0;
        for (std::size_t s = begin; s < stop; ++s) {
            countA += steps[s].op != Op::Added;
            countB += steps[s].op != Op::Removed;
        }
        d.text += "@@ -" + range(steps[begin].a, countA) + " +" + range(steps[begin].b, countB) + " @@\n";
        for (std::size_t s = begin; s < stop; ++s) {
            switch (steps[s].op) {
            case Op::Same:
                appendLine(d.text, ' ', la[steps[s].a]);
                break;
            case Op::Removed:
                appendLine(d.text, '-', la[steps[s].a]);
                ++d.removed;
                break;
            case Op::Added:
                appendLine(d.text, '+', lb[steps[s].b]);
                ++d.added;
                break;
            }
        }
        k = stop;
    }
    return d;
}

} // namespace portico::ui

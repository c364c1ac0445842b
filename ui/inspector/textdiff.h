// A line diff of two texts in the unified format of `diff -u` (the inspector's Compare tab shows
// how a resent response's body differs from the original's).
//
// The longest common subsequence of the lines (after the common first and last lines are set
// aside), by dynamic programming: quadratic, so bounded — more than kTextDiffMaxLines lines on
// either side (after the common ends) is refused and the caller shows a summary instead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::ui {

inline constexpr std::size_t kTextDiffMaxLines = 2000;

struct TextDiff {
    bool ok = false;   ///< false: too many lines to compare (see kTextDiffMaxLines)
    bool same = false; ///< when ok: the texts are equal (`text` is empty)
    /// When ok and not same: "--- A\n+++ B\n@@ -1,3 +1,3 @@\n line\n-old\n+new\n ...", hunks of
    /// changed lines with `context` unchanged lines around them (hunks closer than twice that
    /// merge), line numbers from 1; a last line without a newline is followed by
    /// "\ No newline at end of file", as diff prints it.
    std::string text;
    std::size_t added = 0;   ///< lines only in `b`
    std::size_t removed = 0; ///< lines only in `a`
    std::size_t linesA = 0, linesB = 0;
};

TextDiff unifiedDiff(std::string_view a, std::string_view b, std::string_view labelA = "a",
                     std::string_view labelB = "b", std::size_t context = 3,
                     std::size_t maxLines = kTextDiffMaxLines);

} // namespace portico::ui

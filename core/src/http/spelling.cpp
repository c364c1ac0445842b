#include "portico/http/spelling.h"

#include <algorithm>
#include <vector>

namespace portico::http {

std::size_t editDistance(std::string_view a, std::string_view b) {
    // One row of the dynamic-programming table: row[j] is the distance between a[0, i) and b[0, j).
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string_view closestWord(std::string_view word, std::span<const std::string_view> candidates,
                             std::size_t maxDistance) {
    std::string_view best;
    std::size_t bestDistance = maxDistance + 1;
    bool tie = false;
    for (std::string_view c : candidates) {
        const std::size_t d = editDistance(word, c);
        if (d < bestDistance) {
            bestDistance = d;
            best = c;
            tie = false;
        } else if (d == bestDistance) {
            tie = true;
        }
    }
    return tie ? std::string_view{} : best;
}

} // namespace portico::http

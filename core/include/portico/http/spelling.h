// "Did you mean" for names a user typed: config keys and values, filter keys. One edit distance for
// every caller, so the config reader and the traffic filter suggest the same way.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace portico::http {

/// Levenshtein distance between `a` and `b`: the fewest single-byte insertions, deletions and
/// substitutions (each costs 1) that turn one into the other. Bytes are compared as they are
/// (names here are ASCII; no case folding). O(|a|·|b|) time, O(|b|) memory.
std::size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is at most `maxDistance` edits away and no other
/// candidate is as close; an empty view otherwise (none close enough, a tie, or an exact match
/// is not asked for: a candidate equal to `word` is returned like any other at distance 0).
std::string_view closestWord(std::string_view word, std::span<const std::string_view> candidates,
                             std::size_t maxDistance = 2);

} // namespace portico::http

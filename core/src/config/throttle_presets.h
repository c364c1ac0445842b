// Chrome DevTools' network throttling presets for a rule's `throttle:` (config::RuleAction), shared
// by the reader (a preset's name → its values) and the writer (values still a preset's → its name).
// Private to the config library.
#pragma once

#include <portico/config/config.h>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace portico::config {

/// One preset, named as DevTools names it (case-sensitive), with its numbers: latency, then
/// download and upload in bytes per second (Chrome's kbit/s figures divided by 8).
struct ThrottlePreset {
    std::string_view name;
    Duration latency;
    std::uint64_t down, up;
};

/// Chrome renamed "Fast 3G" to "Slow 4G" in 2024; both names are kept.
inline constexpr ThrottlePreset kThrottlePresets[] = {
    {"Slow 3G", std::chrono::milliseconds(2000), 50000, 50000},    // 400 kbit/s both ways
    {"Fast 3G", std::chrono::microseconds(562500), 180000, 84375}, // 1.44 Mbit/s, 675 kbit/s
    {"Slow 4G", std::chrono::microseconds(562500), 180000, 84375}, // the same, renamed
    {"Fast 4G", std::chrono::milliseconds(165), 1012500, 168750},  // 8.1 Mbit/s, 1.35 Mbit/s
};

} // namespace portico::config

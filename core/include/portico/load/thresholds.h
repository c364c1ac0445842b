// Pass/fail criteria for a load run (`portico bench --threshold`), after k6's thresholds with the
// field's keys: latency percentiles, throughput, error and status rates.
#pragma once

#include <portico/load/result.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

/// One parsed threshold: `KEY OP VALUE`, spaces allowed around OP.
///
/// | KEY                       | VALUE                                  | measured                          |
/// |---------------------------|----------------------------------------|-----------------------------------|
/// | `pN` (N in (0, 100], e.g. `p50`, `p99.9`), `max`, `min`, `mean` | a duration with a unit: `ns`,
/// `us`/`µs`, `ms`, `s`, `m` (decimals allowed: `1.5ms`) | Result::latency (corrected in the open model), ns
/// | | `rps`                     | requests per second, a number          | Result::requestsPerSecond() | |
/// `errors`                  | a percentage, `N%`                     | failed / (completed + failed) × 100 |
/// | `status:Nxx`, `status:NNN`| a percentage, `N%`                     | completed with that class/code /
/// (completed + failed) × 100 |
///
/// OP is one of `<`, `<=`, `>`, `>=`. Examples: `p99<250ms`, `max <= 2s`, `rps>5000`, `errors<1%`,
/// `status:5xx<0.1%`. A run that completed and failed nothing meets no latency or rate threshold
/// it cannot measure: latency keys and `errors`/`status` are then judged on 0, `rps` on 0.
struct Threshold {
    enum class Metric : std::uint8_t { Percentile, Min, Mean, Rps, Errors, Status };
    enum class Op : std::uint8_t { Less, LessEqual, Greater, GreaterEqual };
    std::string expr; ///< as given (trimmed)
    Metric metric = Metric::Percentile;
    Op op = Op::Less;
    double percentile = 0; ///< Percentile: 0 < p ≤ 100 (`max` is 100)
    int status = 0;        ///< Status: a class 1..5 (`5xx`) or a code 100..599
    bool statusClass = false;
    double limit = 0; ///< ns for latency metrics, req/s for Rps, percent for Errors and Status
};

/// Parses one threshold; nullopt with a one-line `error` naming the expression and what was
/// expected ("threshold 'p99<fast': expected a duration with a unit after '<', e.g. 250ms").
std::optional<Threshold> parseThreshold(std::string_view expr, std::string& error);

/// The measured value of `t` in its unit (see Threshold) and whether it meets the limit.
ThresholdOutcome judge(const Threshold& t, const Result& result);

/// Judges every threshold against `result` and stores the outcomes in `result.thresholds`, in
/// order. Returns true when all are met (also when there are none).
bool judgeAll(const std::vector<Threshold>& thresholds, Result& result);

/// "Thresholds:" and one line per outcome: met/BREACHED, the expression, the measured value with
/// its unit. Empty when `result.thresholds` is empty.
std::string thresholdsText(const Result& result);

} // namespace portico::load

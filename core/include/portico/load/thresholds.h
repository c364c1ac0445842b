// Pass/fail criteria for a load run (`portico bench --threshold`), after k6's thresholds with the
// field's keys: latency percentiles, throughput, error and status rates.
#pragma once

#include <portico/load/result.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

/// One parsed threshold: `KEY OP VALUE`, spaces allowed around OP; OP is `<`, `<=`, `>` or `>=`.
/// - `pN` (N in (0, 100], e.g. `p50`, `p99.9`), `max` (= p100), `min`, `mean`: VALUE is a duration
///   with a unit, `ns`, `us`/`µs`/`μs`, `ms`, `s`, `m` or `h`, decimals allowed (`1.5ms`); measured
///   on Result::latency (corrected in the open model), in ns.
/// - `rps`: VALUE is requests per second; measured as Result::requestsPerSecond().
/// - `errors`: VALUE is a percentage `N%`; measured as failed / (completed + failed) × 100.
/// - `status:Nxx` (a class) or `status:NNN` (a code): VALUE is a percentage `N%`; measured as the
///   responses with that class or code / completed × 100.
/// Examples: `p99<250ms`, `max <= 2s`, `rps>5000`, `errors<1%`, `status:5xx<0.1%`. A run in which no
/// request completed breaches every latency threshold (there is nothing to measure; the value is
/// 0); `errors`, `status` and `rps` are judged on what was counted (0 when nothing ended).
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

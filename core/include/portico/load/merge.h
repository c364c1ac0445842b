// Results of several load generators combined into one (`portico bench --merge A.json B.json ...`):
// read back from their JSON (docs/load-results.md) and merged exactly.
#pragma once

#include <portico/load/result.h>

#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

/// Reads a run object that `toJson` wrote (schema 1) back into `out`: options, target, counts,
/// statuses, bytes, CPU, `startedAt`, the latency histogram (from `latency.buckets` with its exact
/// min, max, mean and stddev), the service-time histogram (from its buckets in the open model; a
/// copy of the latency in the closed model), `byRequest` (required) and the 100 ms series. Request bodies
/// are not in the JSON: each request's body is empty. Not read back: intervals, thresholds.
/// False with a one-line `error` ("latency.buckets: not ascending", "not a JSON object: ...") on
/// anything else, including a run object that holds an `error`, a suite object and schema ≠ 1.
bool resultFromJson(std::string_view json, Result& out, std::string& error);

/// Merges runs made at the same time by several generators against one target into one result,
/// as if one generator had made them all:
/// - counts, errors, statuses, bytes, missed arrivals and CPU seconds are summed; options keep
///   the first run's, with `connections`, `threads`, `count` and `rate` summed;
/// - latency, service time and each `byRequest` histogram are the sums of the runs' histograms
///   (same buckets, same layout), so every percentile of the merge equals the percentile of one
///   histogram that recorded every sample; min and max are exact;
/// - `startedAt` is the earliest start; `measured` runs from it to the latest end (of a run, or of
///   its series as placed: at most half a slot later); each run's
///   100 ms series (completed and failed) is shifted by its start's offset (rounded to a slot) and
///   added;
/// - `samples` are concatenated, their times shifted by each run's exact start offset, their
///   connection numbers after the earlier runs' connections, sorted by `doneNs`.
/// Refused (false with `error`) when fewer than one run is given, the runs did not send the
/// same requests (same count, method and URL at each index), used another model (closed/open) or
/// protocol, or one started more than 24 h after the earliest.
bool mergeResults(std::vector<Result>& runs, Result& merged, std::string& error);

} // namespace portico::load

// A load run as one self-contained HTML page (`portico bench --report FILE.html`): tables and plots
// that a browser shows offline, with scripts disabled, and that fetch nothing.
#pragma once

#include <portico/load/result.h>

#include <string>

namespace portico::load {

/// The result as one HTML5 document, UTF-8, from `<!DOCTYPE html>` to `</html>\n`.
///
/// Shape, top to bottom (each part only when it has something to show):
/// - header: "portico bench report", the first URL, the date (`startedAt`, ISO 8601 UTC,
///   "2026-11-30T23:45:12Z"; "not recorded" at the epoch), the version (PORTICO_VERSION) and a verdict
///   chip (thresholds met / breached);
/// - key figures: req/s, p50, p99, completed of started, failed, transfer/s; then a warning
///   "Rate not met: sent N of M arrivals" when `missedArrivals` > 0 and one when the generator's CPU
///   share is above 90 %;
/// - thresholds (`Result::thresholds`): expression, measured value, "met" / "breached";
/// - latency table (min, mean, stddev, p50, p75, p90, p99, p99.9, p99.99, max) and, in the open
///   model, a second row for the uncorrected service time (also as "p50 …, p99 …, max …");
/// - per-request table (one row per `Options::requests[i]` from `Result::byRequest[i]`: method, URL,
///   completed, req/s, p50, p90, p99, max, errors, statuses) when there is more than one request kind;
/// - three inline SVG plots: latency by percentile (x: HdrHistogram's log scale 1/(1−p), ticks 0 %,
///   90 %, 99 %, 99.9 %…; y: latency, linear; the open model adds the service time), a latency
///   histogram (the non-empty buckets grouped into 80 bars of equal width on a log time axis; y:
///   requests per bar; p50 / p90 / p99 marked) and throughput over time (`perSlot`, 100 ms slots as
///   req/s, at most 500 steps; x: seconds after the warm-up; the mean and, open model, the target
///   rate; the failed requests per second (`failedPerSlot`) as a second line when there were any);
/// - run parameters: address, every request kind (method, URL, weight, body bytes, header lines),
///   model (closed / open at N req/s), protocol (HTTP/1.1 + pipeline, h2 / h2c + streams), TLS,
///   connections, threads, duration / count, warm-up, timeout, stop grace, measured time, date, tool;
/// - totals: requests started, completed, failed, cancelled (+ warm-up), req/s, transfer, errors by
///   kind, status codes, missed arrivals (open model), generator CPU.
///
/// Units are the text summary's (summaryText): durations in ns / µs / ms / s with two decimals
/// (µs written "µs", not "us"), bytes in B / KiB / MiB / GiB, rates in req/s with two decimals, counts
/// as plain integers. A threshold's value is shown in its `unit`: "ns" as a duration, "req/s", "%"
/// (as thresholdsText writes them); without a unit it is guessed from the expression's key.
///
/// Guarantees: no script; no `src`/`href`/`url()` attribute or reference (a Content-Security-Policy
/// meta of `default-src 'none'` also forbids the browser to fetch anything); every user-controlled
/// string (URLs, header lines, error text, threshold expressions, CA file) is HTML-escaped and made
/// valid UTF-8 (invalid bytes and control characters become U+FFFD), so an absolute URL appears only
/// as text. A failed run (`!ok()`) gives a short page with the error message. Any input gives a valid
/// page: no completions, one sample, one slot, null histograms, empty `byRequest`, huge counts (every
/// SVG coordinate is finite). Does not throw: if building the page fails (allocation), a minimal page
/// saying so is returned.
std::string htmlReport(const Result& result);

} // namespace portico::load

// Reads Portico's HdrHistogram outputs with another project's reader, hdr-histogram-js (the
// TypeScript port of HdrHistogram), and prints what it sees as one JSON object on stdout.
//
//   node hdr_check.mjs MODULES_DIR LOG_FILE HGRM_FILE
//
// MODULES_DIR: the folder whose node_modules holds hdr-histogram-js (installers/dev.sh test puts it
// in <build>/js). LOG_FILE: an interval log (load::intervalLog). HGRM_FILE: a percentile
// distribution (load::percentileDistribution, ms).
//
// Output: { version, startTimeSec, baseTimeSec,
//           intervals: [{ startMs, endMs, totalCount, maxValue, p50, p90, p99, p999, distribution }],
//           merged: { totalCount, maxValue, p50, p90, p99, p999, distribution },
//           plot: [[x, y], ...] }
// Values in the log's unit (ns); `distribution` is outputPercentileDistribution(5, 1e6) (ms);
// `plot` is HGRM_FILE parsed as HdrHistogram's plotFiles.html does (x = 1/(1-Percentile), y = Value).
// Exit status 2 with a message on stderr when the reader throws.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [modulesDir, logFile, hgrmFile] = process.argv.slice(2);
if (!modulesDir || !logFile || !hgrmFile) {
  process.stderr.write("usage: node hdr_check.mjs MODULES_DIR LOG_FILE HGRM_FILE\n");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
const hdr = require("hdr-histogram-js");
const { version } = require("hdr-histogram-js/package.json");

const percentiles = (h) => ({
  p50: h.getValueAtPercentile(50),
  p90: h.getValueAtPercentile(90),
  p99: h.getValueAtPercentile(99),
  p999: h.getValueAtPercentile(99.9),
});

try {
  // 64-bit counts (Float64Histogram), the reader's widest.
  const reader = new hdr.HistogramLogReader(readFileSync(logFile, "utf8"), 64);
  const intervals = [];
  let merged = null;
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
    intervals.push({
      startMs: h.startTimeStampMsec,
      endMs: h.endTimeStampMsec,
      totalCount: h.totalCount,
      maxValue: h.maxValue,
      ...percentiles(h),
      distribution: h.outputPercentileDistribution(5, 1e6),
    });
    if (merged === null) {
      // Same layout as the decoded intervals, so that the footer's bucket count is theirs.
      merged = hdr.build({
        bitBucketSize: 64,
        autoResize: false,
        lowestDiscernibleValue: h.lowestDiscernibleValue,
        highestTrackableValue: h.highestTrackableValue,
        numberOfSignificantValueDigits: h.numberOfSignificantValueDigits,
      });
    }
    merged.add(h);
  }

  // plotFiles.html: rows with four space-separated fields, not comments.
  const plot = [];
  for (const line of readFileSync(hgrmFile, "utf8").split("\n")) {
    const values = line.trim().split(/[ ]+/);
    if (line.trim()[0] !== "#" && values.length === 4) {
      const y = parseFloat(values[0]);
      const x = parseFloat(values[3]);
      if (!isNaN(x) && !isNaN(y)) plot.push([x, y]);
    }
  }

  const out = {
    version,
    startTimeSec: reader.startTimeSec,
    baseTimeSec: reader.baseTimeSec,
    intervals,
    merged:
      merged === null
        ? null
        : {
            totalCount: merged.totalCount,
            maxValue: merged.maxValue,
            ...percentiles(merged),
            distribution: merged.outputPercentileDistribution(5, 1e6),
          },
    plot,
  };
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (e) {
  process.stderr.write(`hdr-histogram-js failed: ${e && e.stack ? e.stack : e}\n`);
  process.exit(2);
}

// YAML config writing (yaml-cpp's emitter): the inverse of reader.h, used by the GUI's Save.
#pragma once

#include <portico/config/config.h>

#include <string>

namespace portico::config {

/// The YAML text of `config`, in the schema of docs/configuration.md, such that
/// loadConfigText(text, ..., baseDir) gives back an equal config. Paths under `baseDir` are written
/// relative to it ("./site"); others stay absolute. Values equal to their defaults are left out;
/// groups are written flattened (the loaded model has none). Comments of the original file are not
/// kept.
std::string configToYaml(const Config& config, const std::string& baseDir);

/// A route's match as written after `path:` (Pattern, Exact) or `location:` (the others): the
/// nginx modifier of `kind` ("= ", "^~ ", "~ ", "~* "; none for Pattern and Prefix), then `path`.
/// Route::spec holds this for a route read from a file.
std::string matchSpec(MatchKind kind, const std::string& path);

/// Writes configToYaml(config, directory of `path`) to `path` atomically (a temporary file in the
/// same folder, then rename). False with `error` ("portico.yaml: Permission denied") on failure,
/// leaving the old file in place.
bool saveConfigFile(const Config& config, const std::string& path, std::string& error);

/// "16KiB" for 16384, "1000" for 1000: the shortest exact form loadable by parseSize.
std::string formatSize(std::uint64_t bytes);
/// "250ms", "10s", "2m": the largest unit that divides the value exactly (parseDuration's units).
std::string formatDuration(Duration d);

} // namespace portico::config

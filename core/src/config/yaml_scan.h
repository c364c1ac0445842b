// YAML helpers of the config reader that other YAML readers of the core share (the bench suite
// file, load/suite_file.cpp): counting a stream's documents safely and naming a node in a message.
// Internal to core/src: not a public header.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace portico::config::yaml {

/// The documents of a YAML stream, counted from parser events (at most 3 are read): yaml-cpp 0.7's
/// LoadAll loops for ever on a token that cannot start a node (jbeder/yaml-cpp#1040), so readers
/// count this way before loading. `stuck`: the parser began a document where the previous one
/// began, i.e. made no progress; `stuckAt` is there (position 0 when outside the text).
struct DocumentScan {
    int documents = 0;
    YAML::Mark second; ///< where the second document starts (documents ≥ 2)
    bool stuck = false;
    YAML::Mark stuckAt;
};
/// Throws what yaml-cpp's parser throws on a syntax error (YAML::ParserException).
DocumentScan scanDocuments(std::string_view text);

/// A node for an "expected X, got Y" message: "a map", "a list", "'value'" (cut to 40 characters)
/// or "nothing".
std::string describe(const YAML::Node& n);

} // namespace portico::config::yaml

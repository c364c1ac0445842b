// YAML helpers shared by the config reader and the bench suite file reader (yaml_scan.h).
#include "yaml_scan.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <vector>

namespace portico::config::yaml {

DocumentScan scanDocuments(std::string_view text) {
    struct Counter final : YAML::EventHandler {
        std::vector<YAML::Mark> starts;
        void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
        void OnDocumentEnd() override {}
        void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
        void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
        void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
        void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                             YAML::EmitterStyle::value) override {}
        void OnSequenceEnd() override {}
        void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                        YAML::EmitterStyle::value) override {}
        void OnMapEnd() override {}
    } counter;
    std::stringstream in{std::string(text)};
    YAML::Parser parser(in);
    DocumentScan scan;
    while (counter.starts.size() < 3 && parser.HandleNextDocument(counter)) {
        const auto n = counter.starts.size();
        if (n >= 2 && counter.starts[n - 1].pos == counter.starts[n - 2].pos) {
            scan.stuck = true;
            scan.stuckAt = counter.starts[n - 1];
            break;
        }
    }
    scan.documents = static_cast<int>(counter.starts.size());
    if (scan.documents >= 2) scan.second = counter.starts[1];
    if (scan.stuck && (scan.stuckAt.pos < 0 || static_cast<std::size_t>(scan.stuckAt.pos) >= text.size()))
        scan.stuckAt.pos = 0;
    return scan;
}

std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
    case YAML::NodeType::Map:
        return "a map";
    case YAML::NodeType::Sequence:
        return "a list";
    case YAML::NodeType::Scalar: {
        std::string s = n.Scalar();
        if (s.size() > 40) s = s.substr(0, 37) + "...";
        return "'" + s + "'";
    }
    default:
        return "nothing";
    }
}

} // namespace portico::config::yaml

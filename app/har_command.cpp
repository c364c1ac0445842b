// `portico har export FILE.db OUT.har` and `portico har import IN.har FILE.db`: HAR 1.2 files from
// and to capture session files (docs/cli.md, docs/capture.md).
#include "cli_checks.h"
#include "commands.h"

#include <portico/capture/filter.h>
#include <portico/capture/har.h>
#include <portico/capture/store.h>
#include <portico/engine/engine.h>

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace portico::app {
namespace {

struct HarOptions {
    std::string db;
    std::string har;
    std::string filter;
    std::string descriptorSet; // --descriptor-set: gRPC messages as JSON with this FileDescriptorSet
    bool compact = false;
};

bool readFile(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return true;
}

int exportHar(const HarOptions& o) {
    std::string error;
    auto filter = capture::Filter::parse(o.filter, error);
    if (!filter) {
        std::cerr << "portico: --filter: " << error << "\n";
        return kExitUsage;
    }
    auto store = capture::Store::open(o.db, error);
    if (!store) {
        std::cerr << "portico: " << error << "\n";
        return kExitFailure;
    }
    std::vector<capture::Exchange> chosen;
    auto all = store->load();
    if (!store->error().empty()) {
        std::cerr << "portico: " << o.db << ": " << store->error() << "\n";
        return kExitFailure;
    }
    for (auto& e : all)
        if (filter->matches(e)) chosen.push_back(std::move(e));
    if (chosen.empty() && !filter->empty()) {
        std::cerr << "portico: " << nothingMatches(o.db, o.filter, all.size()) << "; nothing written\n";
        return kExitFailure;
    }
    capture::HarOptions ho;
    ho.creatorVersion = engine::version();
    ho.pretty = !o.compact;
    std::shared_ptr<const capture::GrpcSchema> schema;
    if (!o.descriptorSet.empty()) {
        schema = capture::GrpcSchema::load(o.descriptorSet, error);
        if (!schema) {
            std::cerr << "portico: --descriptor-set: " << error << "\n";
            return kExitFailure;
        }
        ho.grpcSchema = [&schema](const capture::Exchange&) { return schema.get(); };
    }
    const std::string text = capture::toHar(chosen, ho);
    std::ostream* out = &std::cout;
    std::ofstream file;
    if (o.har != "-") {
        // Exported traffic holds cookies and tokens: a new file is the owner's only (0600).
        if (const int fd = ::open(o.har.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0)
            ::close(fd);
        file.open(o.har, std::ios::binary | std::ios::trunc);
        if (!file) {
            std::cerr << "portico: " << o.har << ": cannot write\n";
            return kExitFailure;
        }
        out = &file;
    }
    *out << text;
    out->flush();
    if (!*out) {
        std::cerr << "portico: " << o.har << ": write failed\n";
        return kExitFailure;
    }
    if (o.har != "-") std::cerr << "portico: wrote " << chosen.size() << " entries to " << o.har << "\n";
    return kExitOk;
}

int importHar(const HarOptions& o) {
    std::string text;
    if (!readFile(o.har, text)) {
        std::cerr << "portico: " << o.har << ": cannot read\n";
        return kExitFailure;
    }
    auto result = capture::fromHar(text);
    if (!result.ok()) {
        std::cerr << "portico: " << o.har << ":" << result.error << "\n";
        return kExitFailure;
    }
    for (const auto& w : result.warnings)
        std::cerr << "portico: " << o.har << ": warning: " << w << "\n";
    std::string error;
    auto store = capture::Store::open(o.db, error);
    if (!store) {
        std::cerr << "portico: " << error << "\n";
        return kExitFailure;
    }
    if (!store->append(result.exchanges) || !store->commit()) {
        std::cerr << "portico: " << o.db << ": " << store->error() << "\n";
        return kExitFailure;
    }
    std::cerr << "portico: imported " << result.exchanges.size() << " entries into " << o.db << "\n";
    return kExitOk;
}

} // namespace

Command addHarCommand(CLI::App& app) {
    auto opts = std::make_shared<HarOptions>();
    auto* har = app.add_subcommand("har", "Export a session file to HAR 1.2, or import a HAR file into one");
    har->require_subcommand(1);
    auto* ex =
        har->add_subcommand("export", "Write the exchanges of FILE.db as HAR 1.2 (OUT.har, - = stdout)");
    ex->add_option("db", opts->db, "Session file (serve --record)")->required()->check(existingFile());
    ex->add_option("out", opts->har, "HAR file to write (- = stdout)")->required();
    ex->add_option("--filter", opts->filter, "Only matching exchanges (e.g. 'status:>=400 path:/api')");
    ex->add_flag("--compact", opts->compact, "One line of JSON instead of indented");
    ex->add_option("--descriptor-set", opts->descriptorSet,
                   "gRPC messages as JSON with this FileDescriptorSet (protoc --descriptor_set_out)");
    auto* im = har->add_subcommand("import",
                                   "Read a HAR file (Chrome, Firefox, HTTP Toolkit, mitmproxy) into FILE.db");
    im->add_option("har", opts->har, "HAR file to read")->required()->check(existingFile());
    im->add_option("db", opts->db, "Session file (created if missing)")->required();
    return Command{har, [opts, ex, im] {
                       if (ex->parsed()) return exportHar(*opts);
                       if (im->parsed()) return importHar(*opts);
                       return kExitUsage;
                   }};
}

} // namespace portico::app

// Fuzz target: the bench suite file reader (load/suite_file.h). Invariants: it never throws; a
// refused file has at least one error, each with its line inside the text (or no position); an
// accepted one has at least one route, unique names, targets that start with "/", and thresholds
// that parse again from their own text.
#include "fuzz_support.h"

#include <portico/load/suite_file.h>

#include <algorithm>
#include <set>
#include <string>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    load::SuiteFile file;
    std::vector<config::ConfigError> errors;
    const bool ok = load::parseSuiteFile(text, "fuzz.yaml", file, errors);
    const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    if (!ok) {
        PORTICO_FUZZ_CHECK(!errors.empty());
        for (const auto& e : errors)
            PORTICO_FUZZ_CHECK(e.where.line <= lines + 1);
        return 0;
    }
    PORTICO_FUZZ_CHECK(errors.empty());
    PORTICO_FUZZ_CHECK(!file.routes.empty());
    std::set<std::string> names;
    for (const auto& r : file.routes) {
        PORTICO_FUZZ_CHECK(names.insert(r.route.name).second);
        PORTICO_FUZZ_CHECK(!r.route.target.empty() && r.route.target.front() == '/');
        for (const auto& t : r.thresholds) {
            std::string error;
            PORTICO_FUZZ_CHECK(load::parseThreshold(t.expr, error).has_value());
        }
    }
    return 0;
}

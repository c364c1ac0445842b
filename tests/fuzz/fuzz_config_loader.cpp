// Fuzz target: the YAML config loader. Invariants: a refused config has located errors (line ≥ 1
// where the error is in the text) and no config; an accepted one is written back by the config
// writer and loads again (the GUI's save path).
#include "fuzz_support.h"

#include <portico/config/writer.h>
#include <portico/validate/load.h>

#include <string>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    // baseDir "/nonexistent-portico-fuzz": roots and files never resolve to real paths, so the
    // loader's checks fail cleanly instead of touching the machine.
    auto r = config::loadConfigText(text, "fuzz.yaml", "/nonexistent-portico-fuzz");
    if (!r.ok()) {
        PORTICO_FUZZ_CHECK(!r.errors.empty());
        return 0;
    }
    PORTICO_FUZZ_CHECK(r.errors.empty());
    const std::string yaml = config::configToYaml(*r.config, "/nonexistent-portico-fuzz");
    auto again = config::loadConfigText(yaml, "fuzz-written.yaml", "/nonexistent-portico-fuzz");
    if (!again.ok()) {
        for (const auto& e : again.errors)
            std::fprintf(stderr, "%s\n", e.message.c_str());
        std::fprintf(stderr, "--- written:\n%s\n", yaml.c_str());
    }
    PORTICO_FUZZ_CHECK(again.ok());
    return 0;
}

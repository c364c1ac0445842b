#include <portico/capture/har.h>
#include <portico/capture/session_file.h>
#include <portico/capture/store.h>

#include <fstream>
#include <sstream>
#include <string_view>

namespace portico::capture {

std::vector<Exchange> loadSessionFile(const std::string& path, std::string& error) {
    error.clear();
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        error = path + ": cannot read";
        return {};
    }
    char magic[16] = {};
    f.read(magic, sizeof magic);
    if (f.gcount() == sizeof magic &&
        std::string_view(magic, sizeof magic) == std::string_view("SQLite format 3\0", 16)) {
        f.close();
        auto store = Store::open(path, error);
        if (!store) return {};
        auto all = store->load();
        if (!store->error().empty()) error = path + ": " + store->error();
        return all;
    }
    f.clear();
    f.seekg(0);
    std::ostringstream ss;
    ss << f.rdbuf();
    auto r = fromHar(ss.str());
    if (!r.ok()) {
        error = path + ":" + r.error;
        return {};
    }
    return std::move(r.exchanges);
}

} // namespace portico::capture

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
    const std::string text = ss.str();
    // HAR is a JSON object: after an optional UTF-8 byte order mark and white space, '{'. Anything
    // else is neither format (a truncated or overwritten session file, a wrong file): saying
    // "syntax error at 1:1" would send the user looking for a JSON mistake.
    std::size_t first = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    while (first < text.size() &&
           (text[first] == ' ' || text[first] == '\t' || text[first] == '\r' || text[first] == '\n'))
        ++first;
    const bool harName = path.ends_with(".har") || path.ends_with(".json");
    if (!harName && (first == text.size() || text[first] != '{')) {
        error = path + (text.empty() ? ": empty file; " : ": corrupt or not a session file; ") +
                "a Portico session file starts with the SQLite header and a HAR file with '{'";
        return {};
    }
    auto r = fromHar(text);
    if (!r.ok()) {
        error = path + ":" + r.error;
        return {};
    }
    return std::move(r.exchanges);
}

} // namespace portico::capture

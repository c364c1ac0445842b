// loadConfigText / loadConfigFile: the reader, then validate, errors merged by position.
#include <portico/validate/load.h>
#include <portico/validate/validate.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace portico::config {

namespace {

namespace fs = std::filesystem;

LoadResult finish(ReadResult read) {
    // Validation runs even after reading errors, so one run reports both (as the one-pass loader
    // did); a partial config only holds the values that did read.
    std::vector<ConfigError> errors = std::move(read.errors);
    std::vector<ConfigError> more = validate::validate(*read.config, read.map);
    errors.insert(errors.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    LoadResult result;
    if (errors.empty()) {
        result.config = std::move(read.config);
        return result;
    }
    std::stable_sort(errors.begin(), errors.end(), [](const ConfigError& a, const ConfigError& b) {
        return std::tie(a.where.line, a.where.column) < std::tie(b.where.line, b.where.column);
    });
    result.errors = std::move(errors);
    return result;
}

std::string normalise(const fs::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

} // namespace

LoadResult loadConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir) {
    return finish(readConfigText(text, fileName, baseDir, fileName));
}

LoadResult loadConfigFile(const std::string& path) {
    std::error_code ec;
    std::string abs = normalise(fs::absolute(path, ec));
    std::ifstream in;
    if (fs::is_regular_file(abs, ec)) in.open(abs, std::ios::binary);
    std::ostringstream data;
    if (in) data << in.rdbuf();
    if (!in.is_open() || in.bad()) {
        int err = errno;
        std::string why = fs::is_directory(abs, ec) ? "is a directory"
                          : !fs::exists(abs, ec)    ? "no such file"
                                                    : std::strerror(err);
        LoadResult r;
        r.errors.push_back(ConfigError{Location{path, 0, 0}, "", "cannot read config file: " + why});
        return r;
    }
    return finish(readConfigText(data.str(), path, fs::path(abs).parent_path().string(), abs));
}

} // namespace portico::config

// Chromium through the intercepting proxy, and `proxy env`'s exports (see browser_launch.h).
#include "browser_launch.h"

#include <portico/tls/local_ca.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace portico::launch {

namespace {

bool executableFile(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` on PATH ("" when not there); a name with '/' is taken as a path.
std::string onPath(const std::string& name) {
    if (name.find('/') != std::string::npos) return executableFile(name) ? name : std::string();
    const char* path = std::getenv("PATH");
    std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        if (executableFile(candidate)) return candidate;
        start = end + 1;
    }
    return {};
}

std::string shellQuoted(const std::string& text) {
    std::string out = "'";
    for (char ch : text)
        out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

} // namespace

bool isUnsupportedBrowser(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return name.find("firefox") != std::string::npos || name.find("iceweasel") != std::string::npos ||
           name.find("librewolf") != std::string::npos;
}

std::string findChromium(const std::string& explicitPath, std::string& error) {
    std::string wanted = explicitPath;
    std::string from = "--browser";
    if (wanted.empty())
        if (const char* env = std::getenv("PORTICO_BROWSER"); env && *env) {
            wanted = env;
            from = "PORTICO_BROWSER";
        }
    if (!wanted.empty()) {
        const std::string found = onPath(wanted);
        if (found.empty()) error = from + ": " + wanted + ": not an executable file (or not on PATH)";
        return found;
    }
    for (const auto& name : kChromiumNames)
        if (std::string found = onPath(name); !found.empty()) return found;
    error = "no Chromium or Chrome on PATH (looked for chromium, chromium-browser, google-chrome, "
            "google-chrome-stable); name one with --browser PATH or PORTICO_BROWSER";
    return {};
}

std::string spkiSha256Base64(const std::string& certPem, std::string& error) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(certPem.data(), int(certPem.size())),
                                                  BIO_free);
    std::unique_ptr<X509, decltype(&X509_free)> cert(
        bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr, X509_free);
    if (!cert) {
        ERR_clear_error();
        error = "not a PEM certificate";
        return {};
    }
    unsigned char* der = nullptr;
    const int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert.get()), &der);
    if (length <= 0) {
        ERR_clear_error();
        error = "cannot encode the certificate's public key";
        return {};
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digestLength = 0;
    const bool hashed =
        EVP_Digest(der, std::size_t(length), digest, &digestLength, EVP_sha256(), nullptr) == 1;
    OPENSSL_free(der);
    if (!hashed) {
        ERR_clear_error();
        error = "SHA-256 failed";
        return {};
    }
    std::string out(4 * ((digestLength + 2) / 3) + 1, '\0');
    out.resize(std::size_t(
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), digest, int(digestLength))));
    return out;
}

std::vector<std::string> chromiumArgs(const std::string& profileDir, std::uint16_t port,
                                      const std::string& spki, const std::vector<std::string>& extra,
                                      const std::string& url) {
    std::vector<std::string> args{
        "--user-data-dir=" + profileDir, "--proxy-server=http://127.0.0.1:" + std::to_string(port),
        // Chromium never sends loopback through a proxy unless told to.
        "--proxy-bypass-list=<-loopback>", "--ignore-certificate-errors-spki-list=" + spki, "--no-first-run",
        "--no-default-browser-check"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (!url.empty()) args.push_back(url);
    return args;
}

std::optional<BrowserLaunch> prepareChromium(const std::string& browser, std::uint16_t port,
                                             const std::vector<std::string>& extra, const std::string& url,
                                             const std::filesystem::path& dataDir, std::string& error) {
    BrowserLaunch out;
    out.program = findChromium(browser, error);
    if (out.program.empty()) return std::nullopt;
    if (isUnsupportedBrowser(out.program)) {
        error = out.program + ": Chromium/Chrome only (Firefox is not supported)";
        return std::nullopt;
    }
    auto ca = tls::LocalCa::openOrCreate(dataDir, error);
    if (!ca) {
        error = "local CA: " + error;
        return std::nullopt;
    }
    out.spki = spkiSha256Base64(ca->certPem(), error);
    if (out.spki.empty()) {
        error = ca->certPath().string() + ": " + error;
        return std::nullopt;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/portico-browser-XXXXXX";
    if (!::mkdtemp(pattern.data())) { // mode 0700
        error = "cannot make a profile folder " + pattern + ": " + std::generic_category().message(errno);
        return std::nullopt;
    }
    out.profileDir = pattern;
    out.args = chromiumArgs(out.profileDir, port, out.spki, extra, url);
    error.clear();
    return out;
}

void closeInheritedAtExec() {
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
    // Kernels before 5.11: one fcntl per possible descriptor.
    rlimit limit{};
    const long last = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                          ? long(limit.rlim_cur)
                          : 65536;
    for (int fd = 3; fd < last && fd < 1 << 20; ++fd)
        if (const int flags = ::fcntl(fd, F_GETFD); flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

bool removeProfileDir(const std::string& dir) {
    if (dir.empty()) return true;
    for (int attempt = 0; attempt < 10; ++attempt) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        if (!ec && !std::filesystem::exists(dir, ec)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

std::optional<std::string> proxyEnvText(int port, const std::filesystem::path& dataDir, std::string& error) {
    auto ca = tls::LocalCa::openOrCreate(dataDir, error);
    if (!ca) {
        error = "local CA: " + error;
        return std::nullopt;
    }
    std::string bundle;
    for (const char* roots : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
        std::ifstream in(roots, std::ios::binary);
        if (!in) continue;
        bundle.assign(std::istreambuf_iterator<char>(in), {});
        break;
    }
    if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
    bundle += ca->certPem();
    const std::filesystem::path bundlePath = ca->certPath().parent_path() / "bundle.pem";
    std::string old;
    if (std::ifstream in(bundlePath, std::ios::binary); in)
        old.assign(std::istreambuf_iterator<char>(in), {});
    if (old != bundle) {
        const std::filesystem::path tmp = bundlePath.string() + ".tmp";
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << bundle;
        out.close();
        std::error_code ec;
        if (!out || (std::filesystem::rename(tmp, bundlePath, ec), ec)) {
            error = "cannot write " + bundlePath.string();
            return std::nullopt;
        }
    }
    const std::string proxy = "http://127.0.0.1:" + std::to_string(port);
    const std::string b = shellQuoted(bundlePath.string());
    const std::string c = shellQuoted(ca->certPath().string());
    return "# Portico's forward proxy on " + proxy + " (start it with `portico proxy --port " +
           std::to_string(port) +
           "`), and its local CA trusted.\n"
           "# Apply with: eval \"$(portico proxy env)\"\n"
           "export HTTP_PROXY=" +
           proxy + " HTTPS_PROXY=" + proxy + " http_proxy=" + proxy + " https_proxy=" + proxy +
           "\n"
           "export NO_PROXY= no_proxy=   # nothing bypasses the proxy, localhost included\n"
           "export SSL_CERT_FILE=" +
           b + " CURL_CA_BUNDLE=" + b + " REQUESTS_CA_BUNDLE=" + b + " GIT_SSL_CAINFO=" + b +
           "\n"
           "export NODE_EXTRA_CA_CERTS=" +
           c + "\n";
}

} // namespace portico::launch

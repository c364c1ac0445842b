// The local development CA: OpenSSL 3 (EVP/X509) for keys and certificates, POSIX for files,
// permissions and the creation lock.
#include <portico/tls/local_ca.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <system_error>

namespace portico::tls {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

template <auto Free> struct Deleter {
    template <class T> void operator()(T* p) const { Free(p); }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;

constexpr std::size_t kMaxPemFileBytes = 1 << 20;
constexpr std::chrono::hours kBackdate{1};
constexpr std::chrono::hours kCaValidity{24 * 3650};

/// Empties this thread's OpenSSL error queue on scope exit: TLS workers call in here between SSL_*
/// calls, and SSL_get_error() misreports when stale entries are left behind.
struct ErrorQueueGuard {
    ~ErrorQueueGuard() { ERR_clear_error(); }
};

/// The reason of the most recent OpenSSL error ("no start line"), and clears the queue.
std::string opensslReason(const char* fallback = "OpenSSL error") {
    unsigned long e = ERR_peek_last_error();
    std::string r;
    if (e != 0) {
        const char* reason = ERR_reason_error_string(e);
        if (reason) {
            r = reason;
        } else {
            char buf[256];
            ERR_error_string_n(e, buf, sizeof buf);
            r = buf;
        }
    } else {
        r = fallback;
    }
    ERR_clear_error();
    return r;
}

std::string errnoText(int e) { return std::error_code(e, std::generic_category()).message(); }

// ---- files ----------------------------------------------------------------------------------------

/// Reads a regular file of at most 1 MiB into `out`; false with `reason` ("Permission denied").
bool readSmallFile(const fs::path& path, std::string& out, std::string& reason) {
    // O_NONBLOCK so that a FIFO does not block the open; it does not affect regular files.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        reason = errnoText(errno);
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        reason = errnoText(errno);
        ::close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        reason = S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file";
        ::close(fd);
        return false;
    }
    if (static_cast<std::uint64_t>(st.st_size) > kMaxPemFileBytes) {
        reason = "larger than 1 MiB (not a PEM file)";
        ::close(fd);
        return false;
    }
    out.clear();
    char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            reason = errnoText(errno);
            ::close(fd);
            return false;
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > kMaxPemFileBytes) {
            reason = "larger than 1 MiB (not a PEM file)";
            ::close(fd);
            return false;
        }
    }
    ::close(fd);
    return true;
}

std::string randomHex(std::size_t bytes) {
    std::vector<unsigned char> b(bytes);
    if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1) {
        ERR_clear_error();
        // Only names a temporary file; uniqueness also comes from the pid and O_EXCL.
        for (auto& c : b)
            c = static_cast<unsigned char>(std::rand());
    }
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned char c : b) {
        s += hex[c >> 4];
        s += hex[c & 15];
    }
    return s;
}

/// Writes `data` to `target` atomically: a new temporary file in the same directory, created with
/// `mode` (O_EXCL, so never with wider permissions), fsync'd when `durable`, then renamed over
/// `target`. False with `error` ("PATH: reason"). Leaf cache files are not `durable`: a file a crash
/// left empty or cut fails leafFor's checks and is issued again, and an fsync on the request path
/// of an intercepting proxy's first CONNECT to a host cost tens of milliseconds.
bool writeFileAtomically(const fs::path& target, std::string_view data, mode_t mode, std::string& error,
                         bool durable = true) {
    fs::path tmp = target;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + randomHex(4);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        error = tmp.string() + ": " + errnoText(errno);
        return false;
    }
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = tmp.string() + ": " + errnoText(errno);
            ::close(fd);
            ::unlink(tmp.c_str());
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    if ((durable && ::fsync(fd) != 0) || ::close(fd) != 0) {
        error = tmp.string() + ": " + errnoText(errno);
        ::unlink(tmp.c_str());
        return false;
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
        error = target.string() + ": " + errnoText(errno);
        ::unlink(tmp.c_str());
        return false;
    }
    return true;
}

/// Creates `dir` with mode 0700 unless it exists (as a directory). False with `error`.
bool makePrivateDir(const fs::path& dir, std::string& error) {
    if (::mkdir(dir.c_str(), 0700) == 0) return true;
    int e = errno;
    struct stat st {};
    if (e == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
    error = dir.string() + ": " + (e == EEXIST ? std::string("exists and is not a directory") : errnoText(e));
    return false;
}

// ---- OpenSSL helpers ------------------------------------------------------------------------------

int refusePassphrase(char*, int, int, void*) { return -1; }

std::string bioText(BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

std::string certToPem(X509* cert) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
    return bioText(bio.get());
}

std::string keyToPem(EVP_PKEY* key) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
        return {};
    return bioText(bio.get());
}

bool isNoStartLine(unsigned long e) {
    return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/// Every PEM certificate in `pem`, in order. Empty with `reason` when there is none or one is broken.
std::vector<X509Ptr> parseCertificates(std::string_view pem, std::string& reason) {
    std::vector<X509Ptr> certs;
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) {
        reason = opensslReason();
        return {};
    }
    for (;;) {
        X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, refusePassphrase, nullptr));
        if (!cert) break;
        certs.push_back(std::move(cert));
    }
    unsigned long e = ERR_peek_last_error();
    if (e != 0 && !isNoStartLine(e)) {
        reason = "certificate " + std::to_string(certs.size() + 1) + ": " + opensslReason();
        return {};
    }
    ERR_clear_error();
    if (certs.empty()) reason = "no certificate found";
    return certs;
}

/// The first PEM private key in `pem`. Null with `reason` when there is none, it is encrypted, or
/// it is broken.
PkeyPtr parsePrivateKey(std::string_view pem, std::string& reason) {
    if (pem.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string_view::npos ||
        pem.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos) {
        reason = "encrypted private keys are not supported";
        return nullptr;
    }
    // Any PEM private key ("PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"); without this check
    // OpenSSL 3's decoders report text that holds none as "unsupported".
    if (pem.find("PRIVATE KEY-----") == std::string_view::npos) {
        reason = "no private key found";
        return nullptr;
    }
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, refusePassphrase, nullptr) : nullptr);
    if (!key) {
        unsigned long e = ERR_peek_last_error();
        reason = isNoStartLine(e) ? std::string("no private key found") : "private key: " + opensslReason();
        ERR_clear_error();
    }
    return key;
}

Clock::time_point toTimePoint(const ASN1_TIME* t) {
    struct tm tm {};
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return Clock::time_point{};
    return Clock::from_time_t(::timegm(&tm));
}

std::string isoDate(Clock::time_point t) {
    std::time_t tt = Clock::to_time_t(t);
    struct tm tm {};
    ::gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

std::string fingerprint(X509* cert) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (X509_digest(cert, EVP_sha256(), md, &len) != 1) return {};
    static const char* hex = "0123456789ABCDEF";
    std::string s;
    for (unsigned int i = 0; i < len; ++i) {
        if (i) s += ':';
        s += hex[md[i] >> 4];
        s += hex[md[i] & 15];
    }
    return s;
}

std::string commonNameOf(X509* cert) {
    X509_NAME* name = X509_get_subject_name(cert);
    int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
    if (i < 0) return {};
    ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, s);
    if (n < 0) return {};
    std::string r(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
    OPENSSL_free(utf8);
    return r;
}

/// subjectAltName entries as text: DNS names verbatim, IP addresses in inet_ntop form.
std::vector<std::string> subjectAltNames(X509* cert) {
    std::vector<std::string> names;
    GeneralNamesPtr gens(
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
    if (!gens) return names;
    for (int i = 0; i < sk_GENERAL_NAME_num(gens.get()); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(gens.get(), i);
        if (g->type == GEN_DNS) {
            const ASN1_STRING* s = g->d.dNSName;
            names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                               static_cast<std::size_t>(ASN1_STRING_length(s)));
        } else if (g->type == GEN_IPADD) {
            const ASN1_STRING* s = g->d.iPAddress;
            char buf[INET6_ADDRSTRLEN] = {};
            int len = ASN1_STRING_length(s);
            int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
            if (family && ::inet_ntop(family, ASN1_STRING_get0_data(s), buf, sizeof buf))
                names.emplace_back(buf);
            else
                names.emplace_back("?");
        } else {
            names.emplace_back("?");
        }
    }
    return names;
}

bool setRandomSerial(X509* cert) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
    bytes[0] &= 0x7f; // positive (RFC 5280 §4.1.2.2), at most 20 octets
    bytes[15] |= 1;   // never zero
    BnPtr bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
    return bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) != nullptr;
}

bool addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
    return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool addNameEntry(X509_NAME* name, const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0) == 1;
}

/// A certificate for `key` named `subject`, issued by `issuer` (null: self-issued), valid from
/// `notBefore` for `validity`, without extensions and unsigned.
X509Ptr newCertificate(EVP_PKEY* key, X509_NAME* subject, X509* issuer, Clock::time_point notBefore,
                       Clock::duration validity) {
    X509Ptr cert(X509_new());
    if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 || !setRandomSerial(cert.get()) ||
        !ASN1_TIME_set(X509_getm_notBefore(cert.get()), Clock::to_time_t(notBefore)) ||
        !ASN1_TIME_set(X509_getm_notAfter(cert.get()), Clock::to_time_t(notBefore + validity)) ||
        X509_set_subject_name(cert.get(), subject) != 1 ||
        X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject) != 1 ||
        X509_set_pubkey(cert.get(), key) != 1)
        return nullptr;
    return cert;
}

PkeyPtr newP256Key() { return PkeyPtr(EVP_EC_gen("P-256")); }

/// "user@host" of the effective user, printable ASCII only.
std::string userAtHost() {
    std::string user;
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name)
        user = found->pw_name;
    if (user.empty() && std::getenv("USER")) user = std::getenv("USER");
    if (user.empty()) user = "user";
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || !host[0]) std::snprintf(host, sizeof host, "localhost");
    std::string s = user + "@" + host;
    for (char& c : s)
        if (c < 0x20 || c > 0x7e) c = '?';
    return s;
}

/// What a leaf is issued for: the normalised name and its subjectAltName entries.
struct LeafSpec {
    std::string name;               ///< lower-case DNS name or canonical IP text
    std::vector<std::string> names; ///< SAN entries as IssuedCert::names
    std::string sanConf;            ///< for X509V3_EXT_nconf ("DNS:localhost,IP:127.0.0.1")
    std::string fileStem;           ///< cache file name without ".pem"
};

std::string printable(std::string_view s) {
    std::string r;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            r += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            r += buf;
        }
    }
    return r;
}

std::optional<LeafSpec> leafSpecFor(std::string_view name, std::string& error) {
    auto invalid = [&](const std::string& why) {
        std::string shown = name.size() > 80 ? printable(name.substr(0, 80)) + "..." : printable(name);
        error = "invalid name \"" + shown + "\": " + why;
        return std::nullopt;
    };
    if (name.empty()) return invalid("empty");
    if (name.size() > 253) return invalid("longer than 253 characters");

    LeafSpec spec;
    std::string text(name);
    unsigned char addr[16];
    char buf[INET6_ADDRSTRLEN] = {};
    if (::inet_pton(AF_INET, text.c_str(), addr) == 1 && ::inet_ntop(AF_INET, addr, buf, sizeof buf)) {
        spec.name = buf;
    } else if (::inet_pton(AF_INET6, text.c_str(), addr) == 1 &&
               ::inet_ntop(AF_INET6, addr, buf, sizeof buf)) {
        spec.name = buf;
    }
    if (!spec.name.empty()) {
        spec.names = {spec.name};
        spec.sanConf = "IP:" + spec.name;
    } else {
        std::string lower;
        for (char c : name)
            lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        std::size_t start = 0;
        for (std::size_t label = 0;; ++label) {
            std::size_t end = lower.find('.', start);
            std::string_view l =
                std::string_view(lower).substr(start, end == std::string::npos ? end : end - start);
            if (l.empty()) return invalid("empty label (leading, trailing or doubled '.')");
            if (l.size() > 63) return invalid("label longer than 63 characters");
            for (char c : l) {
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '*';
                if (!ok)
                    return invalid("character '" + printable(std::string_view(&c, 1)) + "' is not allowed");
            }
            if (l.find('*') != std::string_view::npos && (label != 0 || l != "*" || end == std::string::npos))
                return invalid("'*' is allowed only as a whole leading \"*.\" label");
            if (end == std::string::npos) break;
            start = end + 1;
        }
        spec.name = lower;
        spec.names = {lower};
        spec.sanConf = "DNS:" + lower;
        if (lower == "localhost") {
            spec.names = {"localhost", "127.0.0.1", "::1"};
            spec.sanConf = "DNS:localhost,IP:127.0.0.1,IP:::1";
        }
    }
    for (char c : spec.name) {
        if (c == '*')
            spec.fileStem += "_wildcard";
        else if (c == ':')
            spec.fileStem += '_';
        else
            spec.fileStem += c;
    }
    // File names are limited to 255 bytes (NAME_MAX), and a DNS name may have 253 characters:
    // long names keep a readable prefix and get a digest of the whole name ('_' cannot occur in a
    // DNS name, so this cannot collide with a short name's file).
    if (spec.fileStem.size() > 160) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (EVP_Digest(spec.name.data(), spec.name.size(), md, &len, EVP_sha256(), nullptr) != 1) {
            error = "hashing a long name: " + opensslReason();
            return std::nullopt;
        }
        static const char* hex = "0123456789abcdef";
        spec.fileStem.resize(100);
        spec.fileStem += '_';
        for (unsigned int i = 0; i < 16; ++i) {
            spec.fileStem += hex[md[i] >> 4];
            spec.fileStem += hex[md[i] & 15];
        }
    }
    return spec;
}

} // namespace

// ---- LocalCa ----------------------------------------------------------------------------------------

struct LocalCa::State {
    fs::path dataDir;
    fs::path certPath;
    fs::path keyPath;
    fs::path certsDir;
    X509Ptr cert;
    PkeyPtr key;
    std::string certPem;
    std::string commonName;
    std::string fingerprint;
    Clock::time_point notAfter;

    std::mutex mutex; // guards `leaves` and every use of `key` for signing
    std::map<std::string, IssuedCert, std::less<>> leaves;
};

LocalCa::LocalCa(std::unique_ptr<State> state) : state_(std::move(state)) {}
LocalCa::~LocalCa() = default;

namespace {

const char* kStartOver = "; to start over with a new CA, delete ";

/// Generates the CA key and certificate and writes them (key first, both via rename).
bool createCa(const fs::path& certPath, const fs::path& keyPath, std::string& error) {
    PkeyPtr key = newP256Key();
    if (!key) {
        error = "generating the CA key: " + opensslReason();
        return false;
    }
    std::string cn = "Portico Local Development CA (" + userAtHost();
    if (cn.size() > 63) cn.resize(63); // ub-common-name is 64
    cn += ")";
    NamePtr subject(X509_NAME_new());
    if (!subject || !addNameEntry(subject.get(), "O", "Portico") || !addNameEntry(subject.get(), "CN", cn)) {
        error = "building the CA name: " + opensslReason();
        return false;
    }
    X509Ptr cert = newCertificate(key.get(), subject.get(), nullptr, Clock::now() - kBackdate, kCaValidity);
    if (!cert || !addExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !addExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !addExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash") ||
        X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
        error = "building the CA certificate: " + opensslReason();
        return false;
    }
    std::string keyPem = keyToPem(key.get());
    std::string certPem = certToPem(cert.get());
    if (keyPem.empty() || certPem.empty()) {
        error = "encoding the CA: " + opensslReason();
        return false;
    }
    return writeFileAtomically(keyPath, keyPem, 0600, error) &&
           writeFileAtomically(certPath, certPem, 0644, error);
}

} // namespace

std::shared_ptr<LocalCa> LocalCa::openOrCreate(const fs::path& dataDir, std::string& error) {
    ErrorQueueGuard guard;
    error.clear();
    auto state = std::make_unique<State>();
    state->dataDir = dataDir;
    fs::path caDir = dataDir / "ca";
    state->certPath = caDir / "ca.crt";
    state->keyPath = caDir / "ca.key";
    state->certsDir = dataDir / "certs";

    std::error_code ec;
    if (dataDir.has_parent_path() && !fs::exists(dataDir, ec)) {
        fs::create_directories(dataDir.parent_path(), ec);
        if (ec) {
            error = dataDir.parent_path().string() + ": " + ec.message();
            return nullptr;
        }
    }
    if (!makePrivateDir(dataDir, error) || !makePrivateDir(caDir, error)) return nullptr;

    // Sets `out` to whether `p` exists; false (with `error`) when that cannot be determined.
    auto exists = [&](const fs::path& p, bool& out) {
        struct stat st {};
        out = ::stat(p.c_str(), &st) == 0;
        if (out || errno == ENOENT) return true;
        error = p.string() + ": " + errnoText(errno);
        return false;
    };
    bool haveCert = false, haveKey = false;
    if (!exists(state->certPath, haveCert) || !exists(state->keyPath, haveKey)) return nullptr;
    if (!haveCert || !haveKey) {
        // Create under an exclusive lock, so that two processes starting together agree on one CA.
        fs::path lockPath = caDir / ".lock";
        int lockFd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lockFd < 0) {
            error = lockPath.string() + ": " + errnoText(errno);
            return nullptr;
        }
        while (::flock(lockFd, LOCK_EX) != 0 && errno == EINTR) {
        }
        bool ok = exists(state->certPath, haveCert) && exists(state->keyPath, haveKey);
        if (ok && haveCert != haveKey) {
            error = (haveCert ? state->keyPath : state->certPath).string() + ": missing (while " +
                    (haveCert ? state->certPath : state->keyPath).string() + " exists)" + kStartOver +
                    caDir.string();
            ok = false;
        }
        if (ok && !haveCert) ok = createCa(state->certPath, state->keyPath, error);
        ::close(lockFd); // releases the lock
        if (!ok) return nullptr;
    }

    std::string text, reason;
    if (!readSmallFile(state->certPath, text, reason)) {
        error = state->certPath.string() + ": " + reason;
        return nullptr;
    }
    auto certs = parseCertificates(text, reason);
    if (certs.empty()) {
        error = state->certPath.string() + ": " + reason + kStartOver + caDir.string();
        return nullptr;
    }
    state->cert = std::move(certs.front());
    if (!readSmallFile(state->keyPath, text, reason)) {
        error = state->keyPath.string() + ": " + reason;
        return nullptr;
    }
    state->key = parsePrivateKey(text, reason);
    if (!state->key) {
        error = state->keyPath.string() + ": " + reason + kStartOver + caDir.string();
        return nullptr;
    }
    if (X509_check_private_key(state->cert.get(), state->key.get()) != 1) {
        error = state->keyPath.string() + ": does not match the certificate " + state->certPath.string() +
                kStartOver + caDir.string();
        return nullptr;
    }
    if (X509_check_ca(state->cert.get()) < 1) {
        error = state->certPath.string() + ": not a CA certificate" + kStartOver + caDir.string();
        return nullptr;
    }
    state->notAfter = toTimePoint(X509_get0_notAfter(state->cert.get()));
    if (state->notAfter <= Clock::now()) {
        error = state->certPath.string() + ": expired on " + isoDate(state->notAfter) + kStartOver +
                caDir.string() + " (and trust the new CA)";
        return nullptr;
    }
    state->certPem = certToPem(state->cert.get());
    state->commonName = commonNameOf(state->cert.get());
    state->fingerprint = fingerprint(state->cert.get());
    if (state->certPem.empty() || state->fingerprint.empty()) {
        error = state->certPath.string() + ": " + opensslReason();
        return nullptr;
    }
    return std::shared_ptr<LocalCa>(new LocalCa(std::move(state)));
}

fs::path LocalCa::certPath() const { return state_->certPath; }
fs::path LocalCa::keyPath() const { return state_->keyPath; }
std::string LocalCa::certPem() const { return state_->certPem; }
std::string LocalCa::commonName() const { return state_->commonName; }
std::string LocalCa::fingerprintSha256() const { return state_->fingerprint; }
Clock::time_point LocalCa::notAfter() const { return state_->notAfter; }

namespace {

/// True if `leaf` with `key` can still be served for `spec`: signed by `caCert`, key matching,
/// the expected names, already valid and not expiring within the renewal window.
bool leafStillGood(X509* leaf, EVP_PKEY* key, X509* caCert, const LeafSpec& spec, Clock::time_point now) {
    EVP_PKEY* caKey = X509_get0_pubkey(caCert);
    bool ok = caKey && X509_check_issued(caCert, leaf) == X509_V_OK && X509_verify(leaf, caKey) == 1 &&
              X509_check_private_key(leaf, key) == 1 && subjectAltNames(leaf) == spec.names &&
              toTimePoint(X509_get0_notBefore(leaf)) <= now &&
              toTimePoint(X509_get0_notAfter(leaf)) - now > LocalCa::kLeafRenewBefore;
    ERR_clear_error();
    return ok;
}

} // namespace

std::optional<IssuedCert> LocalCa::leafFor(std::string_view name, std::string& error) {
    ErrorQueueGuard guard;
    error.clear();
    auto spec = leafSpecFor(name, error);
    if (!spec) return std::nullopt;

    State& s = *state_;
    std::lock_guard lock(s.mutex);
    const auto now = Clock::now();
    if (auto it = s.leaves.find(spec->name); it != s.leaves.end()) {
        if (it->second.notAfter - now > kLeafRenewBefore) return it->second;
        s.leaves.erase(it);
    }

    // The disk cache: leaf certificate, CA certificate, key.
    const fs::path file = s.certsDir / (spec->fileStem + ".pem");
    std::string text, reason;
    if (readSmallFile(file, text, reason)) {
        std::string ignored;
        auto certs = parseCertificates(text, ignored);
        PkeyPtr key = certs.empty() ? nullptr : parsePrivateKey(text, ignored);
        if (key && leafStillGood(certs.front().get(), key.get(), s.cert.get(), *spec, now)) {
            IssuedCert issued{certToPem(certs.front().get()) + s.certPem, keyToPem(key.get()),
                              toTimePoint(X509_get0_notAfter(certs.front().get())), spec->names};
            if (!issued.keyPem.empty()) return s.leaves[spec->name] = std::move(issued);
        }
        ERR_clear_error();
    }

    // Issue a new one.
    PkeyPtr key = newP256Key();
    NamePtr subject(X509_NAME_new());
    bool ok = key && subject && addNameEntry(subject.get(), "O", "Portico local development certificate");
    if (ok && spec->name.size() <= 64) ok = addNameEntry(subject.get(), "CN", spec->name);
    X509Ptr leaf =
        ok ? newCertificate(key.get(), subject.get(), s.cert.get(), now - kBackdate, kLeafValidity) : nullptr;
    X509* ca = s.cert.get();
    if (!leaf || !addExtension(leaf.get(), ca, NID_basic_constraints, "critical,CA:FALSE") ||
        !addExtension(leaf.get(), ca, NID_key_usage, "critical,digitalSignature") ||
        !addExtension(leaf.get(), ca, NID_ext_key_usage, "serverAuth") ||
        !addExtension(leaf.get(), ca, NID_subject_key_identifier, "hash") ||
        !addExtension(leaf.get(), ca, NID_authority_key_identifier, "keyid:always") ||
        !addExtension(leaf.get(), ca, NID_subject_alt_name, spec->sanConf) ||
        X509_sign(leaf.get(), s.key.get(), EVP_sha256()) <= 0) {
        error = "issuing a certificate for " + spec->name + ": " + opensslReason();
        return std::nullopt;
    }
    std::string leafPem = certToPem(leaf.get());
    std::string keyPem = keyToPem(key.get());
    if (leafPem.empty() || keyPem.empty()) {
        error = "encoding the certificate for " + spec->name + ": " + opensslReason();
        return std::nullopt;
    }
    IssuedCert issued{leafPem + s.certPem, keyPem, toTimePoint(X509_get0_notAfter(leaf.get())), spec->names};
    std::string writeError;
    if (!makePrivateDir(s.certsDir, writeError) ||
        !writeFileAtomically(file, issued.chainPem + issued.keyPem, 0600, writeError, false))
        error = "certificate for " + spec->name + " issued but not cached on disk: " + writeError;
    return s.leaves[spec->name] = std::move(issued);
}

// ---- free functions ---------------------------------------------------------------------------------

fs::path defaultDataDir() {
    auto env = [](const char* name) -> std::string {
        const char* v = std::getenv(name);
        return v ? v : "";
    };
    if (auto d = env("PORTICO_DATA_DIR"); !d.empty()) return d;
    if (auto x = env("XDG_DATA_HOME"); !x.empty() && x.front() == '/') return fs::path(x) / "portico";
    std::string home = env("HOME");
    if (home.empty()) {
        struct passwd pw {};
        struct passwd* found = nullptr;
        std::vector<char> buf(16384);
        if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_dir)
            home = found->pw_dir;
    }
    return fs::path(home) / ".local" / "share" / "portico";
}

std::string checkCertKeyPair(const std::string& certFile, const std::string& keyFile) {
    ErrorQueueGuard guard;
    std::string text, reason;
    if (!readSmallFile(certFile, text, reason)) return certFile + ": " + reason;
    auto certs = parseCertificates(text, reason);
    if (certs.empty()) return certFile + ": " + reason;
    if (!readSmallFile(keyFile, text, reason)) return keyFile + ": " + reason;
    PkeyPtr key = parsePrivateKey(text, reason);
    if (!key) return keyFile + ": " + reason;
    if (X509_check_private_key(certs.front().get(), key.get()) != 1)
        return keyFile + ": does not match certificate " + certFile;
    return "";
}

} // namespace portico::tls

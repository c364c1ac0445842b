// The local development CA behind `tls: auto` (and `portico cert`): a per-user certification
// authority, created on first use, that issues short-lived leaf certificates for local names.
// Like Caddy's internal issuer and mkcert. No OpenSSL types appear here; every function leaves the
// calling thread's OpenSSL error queue empty, so it is safe to call between SSL_* calls on a worker.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::tls {

/// A leaf certificate issued by the local CA.
struct IssuedCert {
    /// PEM of the leaf certificate followed by the CA certificate (the chain a server sends).
    std::string chainPem;
    /// PEM (PKCS#8, unencrypted) of the leaf's EC P-256 private key.
    std::string keyPem;
    /// End of the leaf's validity (its notAfter, second precision).
    std::chrono::system_clock::time_point notAfter;
    /// The subjectAltName entries, in certificate order: DNS names as lower-case text, IP
    /// addresses in canonical text form ("127.0.0.1", "::1").
    std::vector<std::string> names;
};

/// Default data directory: $PORTICO_DATA_DIR if set (non-empty), else $XDG_DATA_HOME/portico (if
/// set and absolute, as the XDG Base Directory spec requires), else $HOME/.local/share/portico
/// (HOME from the password database when unset). Not created here.
std::filesystem::path defaultDataDir();

/// A CA on disk: `dataDir/ca/ca.crt` (PEM certificate) and `dataDir/ca/ca.key` (PEM PKCS#8 private
/// key), plus a leaf cache in `dataDir/certs/`. Immutable after opening except for the leaf cache.
class LocalCa {
public:
    ~LocalCa();
    LocalCa(const LocalCa&) = delete;
    LocalCa& operator=(const LocalCa&) = delete;

    /// Opens the CA under `dataDir/"ca"`, creating it on first use: EC P-256 key; self-signed
    /// X.509 v3 certificate with basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
    /// keyCertSign|cRLSign, subjectKeyIdentifier; validity from one hour ago for 3650 days;
    /// subject "O=Portico, CN=Portico Local Development CA (user@host)"; random positive 127-bit
    /// serial. Directories it creates are mode 0700; the key file is created with mode 0600
    /// (O_EXCL, never wider, even briefly), the certificate 0644. Creation is serialised across
    /// processes by flock() on `ca/.lock`, so two processes starting at once end up with one CA.
    /// Returns nullptr and sets `error` ("PATH: reason") when the directory cannot be read or
    /// created, when only one of the two files exists, when a file is corrupt, when the key does
    /// not match the certificate, when the certificate is not a CA, or when it has expired.
    /// An existing CA is never replaced: the fix for a broken one is to delete `dataDir/ca`.
    static std::shared_ptr<LocalCa> openOrCreate(const std::filesystem::path& dataDir, std::string& error);

    /// `dataDir/ca/ca.crt` and `dataDir/ca/ca.key`.
    std::filesystem::path certPath() const;
    std::filesystem::path keyPath() const;
    /// The CA certificate, PEM.
    std::string certPem() const;
    /// The subject's commonName, e.g. "Portico Local Development CA (ada@laptop)".
    std::string commonName() const;
    /// SHA-256 fingerprint of the CA certificate's DER, "AB:CD:..." (32 upper-case hex pairs).
    std::string fingerprintSha256() const;
    /// End of the CA certificate's validity.
    std::chrono::system_clock::time_point notAfter() const;

    /// The leaf for `name`: a DNS name ("localhost", "app.test", "*.app.test"; matched and stored
    /// lower-case) or an IP literal ("127.0.0.1", "::1"; no brackets, no zone). subjectAltName:
    /// the name as a DNS or IP entry; for "localhost" also IP 127.0.0.1 and IP ::1. Leaf profile:
    /// EC P-256 key, basicConstraints critical CA:FALSE, keyUsage critical digitalSignature,
    /// extendedKeyUsage serverAuth, subject/authority key identifiers, ECDSA-SHA256 signature,
    /// validity from one hour ago for `kLeafValidity`.
    ///
    /// Cached in memory and on disk in `dataDir/certs/<file name>.pem` (leaf certificate, CA
    /// certificate and key, mode 0600, written to a temporary file and renamed into place, not
    /// fsync'd: a cache file a crash cut fails the checks below and is issued again). The
    /// file name is the lower-cased name with '*' spelled "_wildcard" and ':' as '_' (characters
    /// a DNS name cannot contain, so names never collide); a name whose file name would exceed 160
    /// characters keeps its first 100 plus '_' and 32 hex digits of its SHA-256. A cached leaf is reissued
    /// when the file is missing or unreadable, was not signed by this CA, its key does not match, its names
    /// differ, or it expires within `kLeafRenewBefore`.
    ///
    /// Thread-safe (one mutex; issuance takes about a millisecond and happens rarely).
    /// Which names may be issued is the caller's policy; this function refuses only names that are
    /// syntactically invalid: empty; longer than 253 characters; for DNS names, characters outside
    /// [A-Za-z0-9.-*], an empty label (leading, trailing or doubled '.'), a label longer than 63,
    /// or a '*' anywhere except as a whole leading "*." label. Errors give nullopt and `error`
    /// ("invalid name \"a b\": ..." or the OpenSSL/file-system reason).
    /// On success `error` is cleared, except when the disk cache could not be written: the leaf is
    /// still returned (and kept in memory) and `error` holds that warning.
    std::optional<IssuedCert> leafFor(std::string_view name, std::string& error);

    /// Validity of issued leaves (30 days, like a short-lived ACME certificate) and how long before
    /// expiry a cached one is replaced (7 days).
    static constexpr std::chrono::hours kLeafValidity{24 * 30};
    static constexpr std::chrono::hours kLeafRenewBefore{24 * 7};

private:
    struct State;
    explicit LocalCa(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

/// Validates a user-supplied certificate chain file and private key file: both readable regular
/// files; the chain file holds at least one PEM certificate and every PEM certificate in it
/// parses; the key file holds an unencrypted PEM private key; the key matches the first
/// certificate. Returns "" when fine, else one message naming the file and the problem, e.g.
/// "cert.pem: no certificate found", "key.pem: does not match certificate cert.pem",
/// "key.pem: Permission denied", "key.pem: encrypted private keys are not supported".
/// File names appear as given. Never prompts for a passphrase.
std::string checkCertKeyPair(const std::string& certFile, const std::string& keyFile);

} // namespace portico::tls

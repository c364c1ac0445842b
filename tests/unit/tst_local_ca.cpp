// The local development CA (tls/local_ca.h): creation and file modes, reopening, corrupt files,
// leaf profiles checked with OpenSSL's own verifier, the memory and disk caches and their renewal,
// name validation, concurrency, and checkCertKeyPair's messages.
#include <portico/tls/local_ca.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

using portico::tls::checkCertKeyPair;
using portico::tls::LocalCa;
namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

namespace {

template <auto Free> struct Deleter {
    template <class T> void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

std::vector<X509Ptr> certsFromPem(const std::string& pem) {
    std::vector<X509Ptr> out;
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
        out.emplace_back(c);
    ERR_clear_error();
    return out;
}

PkeyPtr keyFromPem(const std::string& pem) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    ERR_clear_error();
    return key;
}

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeFile(const fs::path& p, const std::string& data) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
}

mode_t modeOf(const fs::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
}

std::string serialHex(X509* cert) {
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
    char* hex = BN_bn2hex(bn);
    std::string s = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    return s;
}

std::string certToPem(X509* cert) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(bio.get(), cert);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

std::string keyToPem(EVP_PKEY* key) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

/// SAN entries as "DNS:x" / "IP:x".
QStringList sans(X509* cert) {
    QStringList out;
    auto* gens = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            out << "DNS:" +
                       QString::fromLatin1(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                                           ASN1_STRING_length(g->d.dNSName));
        } else if (g->type == GEN_IPADD) {
            char buf[INET6_ADDRSTRLEN] = {};
            int len = ASN1_STRING_length(g->d.iPAddress);
            inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress), buf, sizeof buf);
            out << "IP:" + QString::fromLatin1(buf);
        } else {
            out << "other";
        }
    }
    GENERAL_NAMES_free(gens);
    return out;
}

/// X509_verify_cert of `leaf` against a store holding only `ca`, for TLS server use and, when
/// given, the host name or IP. Returns the verify error text, "" when it verifies.
QString verifyAgainst(X509* ca, X509* leaf, const char* host = nullptr, const char* ip = nullptr) {
    StorePtr store(X509_STORE_new());
    X509_STORE_add_cert(store.get(), ca);
    StoreCtxPtr ctx(X509_STORE_CTX_new());
    X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host) X509_VERIFY_PARAM_set1_host(param, host, 0);
    if (ip) X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    int ok = X509_verify_cert(ctx.get());
    QString err =
        ok == 1 ? QString()
                : QString::fromLatin1(X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
    ERR_clear_error();
    return err;
}

qint64 secondsUntil(const ASN1_TIME* t) {
    int days = 0, secs = 0;
    ASN1_TIME_diff(&days, &secs, nullptr, t);
    return qint64(days) * 86400 + secs;
}

/// Writes `dataDir/certs/<file>` holding a leaf for `dns` signed by the CA in `dataDir`, valid
/// from an hour ago for `validity`, in the cache file layout (leaf, CA, key).
void writeCachedLeaf(const fs::path& dataDir, const std::string& file, const std::string& dns,
                     std::chrono::seconds validity, std::string& serialOut) {
    auto caCerts = certsFromPem(readFile(dataDir / "ca" / "ca.crt"));
    PkeyPtr caKey = keyFromPem(readFile(dataDir / "ca" / "ca.key"));
    QVERIFY(!caCerts.empty() && caKey);
    PkeyPtr key(EVP_EC_gen("P-256"));
    X509Ptr cert(X509_new());
    X509_set_version(cert.get(), X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 4242);
    time_t now = time(nullptr);
    ASN1_TIME_set(X509_getm_notBefore(cert.get()), now - 3600);
    ASN1_TIME_set(X509_getm_notAfter(cert.get()), now + validity.count());
    NamePtr name(X509_NAME_new());
    X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(dns.c_str()), -1, -1, 0);
    X509_set_subject_name(cert.get(), name.get());
    X509_set_issuer_name(cert.get(), X509_get_subject_name(caCerts[0].get()));
    X509_set_pubkey(cert.get(), key.get());
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, caCerts[0].get(), cert.get(), nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:" + dns},
                              std::pair{NID_authority_key_identifier, std::string("keyid:always")},
                              std::pair{NID_ext_key_usage, std::string("serverAuth")}}) {
        ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
        QVERIFY(ext);
        X509_add_ext(cert.get(), ext.get(), -1);
    }
    QVERIFY(X509_sign(cert.get(), caKey.get(), EVP_sha256()) > 0);
    fs::create_directories(dataDir / "certs");
    writeFile(dataDir / "certs" / file,
              certToPem(cert.get()) + certToPem(caCerts[0].get()) + keyToPem(key.get()));
    serialOut = serialHex(cert.get());
}

std::shared_ptr<LocalCa> openCa(const fs::path& dir) {
    std::string error;
    auto ca = LocalCa::openOrCreate(dir, error);
    if (!ca) qWarning("openOrCreate: %s", error.c_str());
    return ca;
}

} // namespace

class TestLocalCa : public QObject {
    Q_OBJECT
private slots:
    void createsCaWithPrivateModes() {
        QTemporaryDir tmp;
        fs::path data = fs::path(tmp.path().toStdString()) / "data"; // does not exist yet
        auto ca = openCa(data);
        QVERIFY(ca);
        QCOMPARE(ca->certPath(), data / "ca" / "ca.crt");
        QCOMPARE(ca->keyPath(), data / "ca" / "ca.key");
        QCOMPARE(modeOf(data / "ca"), mode_t(0700));
        QCOMPARE(modeOf(data), mode_t(0700));
        QCOMPARE(modeOf(ca->keyPath()), mode_t(0600));

        auto certs = certsFromPem(readFile(ca->certPath()));
        QCOMPARE(certs.size(), std::size_t(1));
        QCOMPARE(certToPem(certs[0].get()), ca->certPem());
        X509* cert = certs[0].get();
        PkeyPtr key = keyFromPem(readFile(ca->keyPath()));
        QVERIFY(key);
        QCOMPARE(X509_check_private_key(cert, key.get()), 1);
        QCOMPARE(EVP_PKEY_get_base_id(key.get()), EVP_PKEY_EC);
        char group[64] = {};
        QVERIFY(EVP_PKEY_get_group_name(key.get(), group, sizeof group, nullptr));
        QCOMPARE(QByteArray(group), QByteArray("prime256v1"));
        // CA:TRUE pathlen:0, keyCertSign|cRLSign, self-signed, ~10 years.
        QCOMPARE(X509_check_ca(cert), 1);
        QCOMPARE(X509_get_pathlen(cert), 0L);
        QCOMPARE(X509_get_key_usage(cert), uint32_t(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
        QCOMPARE(X509_check_issued(cert, cert), X509_V_OK);
        QVERIFY(secondsUntil(X509_get0_notBefore(cert)) < 0);
        qint64 life = secondsUntil(X509_get0_notAfter(cert));
        QVERIFY2(life > 3640LL * 86400 && life < 3660LL * 86400, QByteArray::number(life));
        QVERIFY(QString::fromStdString(ca->commonName()).startsWith("Portico Local Development CA ("));
        QVERIFY(ca->commonName().find('@') != std::string::npos);
        // Fingerprint format and value.
        unsigned char md[32];
        unsigned len = 0;
        X509_digest(cert, EVP_sha256(), md, &len);
        QCOMPARE(QString::fromStdString(ca->fingerprintSha256()),
                 QString::fromLatin1(QByteArray(reinterpret_cast<char*>(md), 32).toHex(':').toUpper()));
        // Two CAs never share a serial or a key.
        QTemporaryDir other;
        auto ca2 = openCa(other.path().toStdString());
        QVERIFY(ca2);
        auto certs2 = certsFromPem(ca2->certPem());
        QVERIFY(serialHex(certs2[0].get()) != serialHex(cert));
        QVERIFY(ca2->fingerprintSha256() != ca->fingerprintSha256());
    }

    void reopenGivesSameCa() {
        QTemporaryDir tmp;
        auto a = openCa(tmp.path().toStdString());
        QVERIFY(a);
        auto b = openCa(tmp.path().toStdString());
        QVERIFY(b);
        QCOMPARE(b->fingerprintSha256(), a->fingerprintSha256());
        QCOMPARE(b->certPem(), a->certPem());
    }

    void corruptFilesGiveClearErrors() {
        QTemporaryDir tmp;
        fs::path data = tmp.path().toStdString();
        QVERIFY(openCa(data));
        const std::string goodKey = readFile(data / "ca" / "ca.key");
        std::string error;

        writeFile(data / "ca" / "ca.key", "this is not a key\n");
        QVERIFY(!LocalCa::openOrCreate(data, error));
        QVERIFY2(error.find((data / "ca" / "ca.key").string()) != std::string::npos, error.c_str());
        QVERIFY2(error.find("no private key found") != std::string::npos, error.c_str());

        // A valid key that is not the CA's.
        QTemporaryDir other;
        QVERIFY(openCa(other.path().toStdString()));
        writeFile(data / "ca" / "ca.key", readFile(fs::path(other.path().toStdString()) / "ca" / "ca.key"));
        QVERIFY(!LocalCa::openOrCreate(data, error));
        QVERIFY2(error.find("does not match") != std::string::npos, error.c_str());

        // A truncated certificate.
        writeFile(data / "ca" / "ca.key", goodKey);
        const std::string goodCert = readFile(data / "ca" / "ca.crt");
        writeFile(data / "ca" / "ca.crt", goodCert.substr(0, goodCert.size() / 2));
        QVERIFY(!LocalCa::openOrCreate(data, error));
        QVERIFY2(error.find((data / "ca" / "ca.crt").string()) != std::string::npos, error.c_str());

        // Only one of the two files: refused, never silently replaced.
        fs::remove(data / "ca" / "ca.crt");
        QVERIFY(!LocalCa::openOrCreate(data, error));
        QVERIFY2(error.find("missing") != std::string::npos, error.c_str());
        QCOMPARE(readFile(data / "ca" / "ca.key"), goodKey);

        // Restored: opens again with the same fingerprint as before.
        writeFile(data / "ca" / "ca.crt", goodCert);
        QVERIFY(LocalCa::openOrCreate(data, error));
        QCOMPARE(ERR_peek_error(), 0ul); // the thread's OpenSSL error queue is left empty
    }

    void unusableDataDirIsAnError() {
        QTemporaryDir tmp;
        fs::path file = fs::path(tmp.path().toStdString()) / "plainfile";
        writeFile(file, "x");
        std::string error;
        QVERIFY(!LocalCa::openOrCreate(file, error));
        QVERIFY2(error.find(file.string()) != std::string::npos, error.c_str());
        QVERIFY(!LocalCa::openOrCreate(file / "below", error));
        QVERIFY2(!error.empty(), error.c_str());
    }

    void localhostLeaf() {
        QTemporaryDir tmp;
        auto ca = openCa(tmp.path().toStdString());
        QVERIFY(ca);
        std::string error = "stale";
        auto leaf = ca->leafFor("localhost", error);
        QVERIFY2(leaf, error.c_str());
        QVERIFY(error.empty());
        QCOMPARE(leaf->names, (std::vector<std::string>{"localhost", "127.0.0.1", "::1"}));

        auto chain = certsFromPem(leaf->chainPem);
        QCOMPARE(chain.size(), std::size_t(2));
        QCOMPARE(certToPem(chain[1].get()), ca->certPem());
        X509* cert = chain[0].get();
        QCOMPARE(sans(cert), (QStringList{"DNS:localhost", "IP:127.0.0.1", "IP:::1"}));
        auto caCert = certsFromPem(ca->certPem());
        QCOMPARE(verifyAgainst(caCert[0].get(), cert, "localhost"), QString());
        QCOMPARE(verifyAgainst(caCert[0].get(), cert, nullptr, "127.0.0.1"), QString());
        QCOMPARE(verifyAgainst(caCert[0].get(), cert, nullptr, "::1"), QString());
        QVERIFY(!verifyAgainst(caCert[0].get(), cert, "example.com").isEmpty()); // the check can fail
        // Not trusted by a different CA.
        QTemporaryDir other;
        auto otherCa = openCa(other.path().toStdString());
        QVERIFY(!verifyAgainst(certsFromPem(otherCa->certPem())[0].get(), cert, "localhost").isEmpty());

        PkeyPtr key = keyFromPem(leaf->keyPem);
        QVERIFY(key);
        QCOMPARE(X509_check_private_key(cert, key.get()), 1);
        char group[64] = {};
        QVERIFY(EVP_PKEY_get_group_name(key.get(), group, sizeof group, nullptr));
        QCOMPARE(QByteArray(group), QByteArray("prime256v1"));
        QCOMPARE(X509_check_ca(cert), 0);
        QVERIFY(X509_get_extended_key_usage(cert) & XKU_SSL_SERVER);
        QVERIFY(X509_get_key_usage(cert) & KU_DIGITAL_SIGNATURE);
        qint64 before = secondsUntil(X509_get0_notBefore(cert));
        QVERIFY2(before < -60 && before > -2 * 3600, QByteArray::number(before));
        qint64 after = secondsUntil(X509_get0_notAfter(cert));
        QVERIFY2(after > 29 * 86400 && after <= 30 * 86400, QByteArray::number(after));
        auto reported =
            std::chrono::duration_cast<std::chrono::seconds>(leaf->notAfter - Clock::now()).count();
        QVERIFY(std::abs(reported - after) <= 2);
        QCOMPARE(modeOf(fs::path(tmp.path().toStdString()) / "certs" / "localhost.pem"), mode_t(0600));
        QCOMPARE(modeOf(fs::path(tmp.path().toStdString()) / "certs"), mode_t(0700));
    }

    void ipAndDnsLeaves() {
        QTemporaryDir tmp;
        auto ca = openCa(tmp.path().toStdString());
        QVERIFY(ca);
        auto caCert = certsFromPem(ca->certPem());
        std::string error;

        auto v4 = ca->leafFor("127.0.0.1", error);
        QVERIFY2(v4, error.c_str());
        QCOMPARE(sans(certsFromPem(v4->chainPem)[0].get()), QStringList{"IP:127.0.0.1"});
        QCOMPARE(verifyAgainst(caCert[0].get(), certsFromPem(v4->chainPem)[0].get(), nullptr, "127.0.0.1"),
                 QString());

        // Non-canonical IPv6 text is canonicalised, and shares the cache entry with "::1".
        auto v6 = ca->leafFor("0:0:0:0:0:0:0:1", error);
        QVERIFY2(v6, error.c_str());
        QCOMPARE(sans(certsFromPem(v6->chainPem)[0].get()), QStringList{"IP:::1"});
        QCOMPARE(v6->names, std::vector<std::string>{"::1"});
        auto v6b = ca->leafFor("::1", error);
        QCOMPARE(serialHex(certsFromPem(v6b->chainPem)[0].get()),
                 serialHex(certsFromPem(v6->chainPem)[0].get()));

        auto dns = ca->leafFor("App.Test", error);
        QVERIFY2(dns, error.c_str());
        QCOMPARE(sans(certsFromPem(dns->chainPem)[0].get()), QStringList{"DNS:app.test"});
        QCOMPARE(verifyAgainst(caCert[0].get(), certsFromPem(dns->chainPem)[0].get(), "app.test"), QString());

        auto wild = ca->leafFor("*.app.test", error);
        QVERIFY2(wild, error.c_str());
        QCOMPARE(sans(certsFromPem(wild->chainPem)[0].get()), QStringList{"DNS:*.app.test"});
        QCOMPARE(verifyAgainst(caCert[0].get(), certsFromPem(wild->chainPem)[0].get(), "api.app.test"),
                 QString());
        QVERIFY(fs::exists(fs::path(tmp.path().toStdString()) / "certs" / "_wildcard.app.test.pem"));
        QVERIFY(fs::exists(fs::path(tmp.path().toStdString()) / "certs" / "__1.pem"));
    }

    void cachedLeafIsReused() {
        QTemporaryDir tmp;
        fs::path data = tmp.path().toStdString();
        std::string error;
        std::string first;
        {
            auto ca = openCa(data);
            QVERIFY(ca);
            auto a = ca->leafFor("localhost", error);
            auto b = ca->leafFor("localhost", error);
            QVERIFY(a && b);
            first = serialHex(certsFromPem(a->chainPem)[0].get());
            QCOMPARE(serialHex(certsFromPem(b->chainPem)[0].get()), first);
            QCOMPARE(b->keyPem, a->keyPem);
        }
        auto reopened = openCa(data);
        QVERIFY(reopened);
        auto c = reopened->leafFor("localhost", error);
        QVERIFY2(c, error.c_str());
        QCOMPARE(serialHex(certsFromPem(c->chainPem)[0].get()), first);
        // A different name gets a different certificate.
        auto d = reopened->leafFor("app.test", error);
        QVERIFY(d && serialHex(certsFromPem(d->chainPem)[0].get()) != first);
    }

    void expiringCachedLeafIsReissued() {
        QTemporaryDir tmp;
        fs::path data = tmp.path().toStdString();
        QVERIFY(openCa(data));
        std::string error;

        // Valid for 20 more days: kept (and the test helper's layout is one the cache reads).
        std::string serial;
        writeCachedLeaf(data, "app.test.pem", "app.test", std::chrono::hours(24 * 20), serial);
        auto kept = openCa(data)->leafFor("app.test", error);
        QVERIFY2(kept, error.c_str());
        QCOMPARE(serialHex(certsFromPem(kept->chainPem)[0].get()), serial);

        // Expiring in 6 days (inside the 7-day renewal window): replaced, on disk too.
        writeCachedLeaf(data, "app.test.pem", "app.test", std::chrono::hours(24 * 6), serial);
        auto ca = openCa(data);
        auto renewed = ca->leafFor("app.test", error);
        QVERIFY2(renewed, error.c_str());
        auto renewedCerts = certsFromPem(renewed->chainPem);
        X509* cert = renewedCerts[0].get();
        QVERIFY(serialHex(cert) != serial);
        QVERIFY(secondsUntil(X509_get0_notAfter(cert)) > 29 * 86400);
        auto onDisk = certsFromPem(readFile(data / "certs" / "app.test.pem"));
        QCOMPARE(serialHex(onDisk[0].get()), serialHex(cert));

        // Already expired.
        writeCachedLeaf(data, "app.test.pem", "app.test", std::chrono::seconds(-60), serial);
        auto expired = openCa(data)->leafFor("app.test", error);
        QVERIFY(expired && serialHex(certsFromPem(expired->chainPem)[0].get()) != serial);
    }

    void foreignOrBrokenCachedLeafIsReissued() {
        QTemporaryDir tmp, otherTmp;
        fs::path data = tmp.path().toStdString(), other = otherTmp.path().toStdString();
        auto ca = openCa(data);
        auto otherCa = openCa(other);
        QVERIFY(ca && otherCa);
        std::string error;
        // Issued by another CA (e.g. the CA directory was deleted and recreated).
        auto foreign = otherCa->leafFor("localhost", error);
        QVERIFY(foreign);
        fs::create_directories(data / "certs");
        fs::copy_file(other / "certs" / "localhost.pem", data / "certs" / "localhost.pem");
        auto mine = ca->leafFor("localhost", error);
        QVERIFY2(mine, error.c_str());
        auto caCert = certsFromPem(ca->certPem());
        QCOMPARE(verifyAgainst(caCert[0].get(), certsFromPem(mine->chainPem)[0].get(), "localhost"),
                 QString());
        QVERIFY(mine->keyPem != foreign->keyPem);

        // Garbage in the cache file, and a cache file whose names differ.
        writeFile(data / "certs" / "app.test.pem", "garbage");
        auto fixed = openCa(data)->leafFor("app.test", error);
        QVERIFY2(fixed, error.c_str());
        QCOMPARE(sans(certsFromPem(fixed->chainPem)[0].get()), QStringList{"DNS:app.test"});
        std::string serial;
        writeCachedLeaf(data, "other.test.pem", "wrong.test", std::chrono::hours(24 * 20), serial);
        auto renamed = openCa(data)->leafFor("other.test", error);
        QVERIFY2(renamed, error.c_str());
        QCOMPARE(sans(certsFromPem(renamed->chainPem)[0].get()), QStringList{"DNS:other.test"});
    }

    void unwritableCacheStillIssues() {
        QTemporaryDir tmp;
        fs::path data = tmp.path().toStdString();
        auto ca = openCa(data);
        QVERIFY(ca);
        writeFile(data / "certs", "a file where the cache directory should be");
        std::string error;
        auto leaf = ca->leafFor("localhost", error);
        QVERIFY(leaf);
        QVERIFY2(error.find("not cached on disk") != std::string::npos, error.c_str());
        auto again = ca->leafFor("localhost", error); // from memory
        QVERIFY(again && again->keyPem == leaf->keyPem);
    }

    void invalidNamesRefused_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<QString>("reason");
        QTest::newRow("empty") << QByteArray() << "empty";
        QTest::newRow("too long") << QByteArray("a.").repeated(126) + "ab"
                                  << "longer than 253";
        QTest::newRow("long label") << QByteArray(64, 'a') + ".test"
                                    << "63";
        QTest::newRow("space") << QByteArray("a b.test") << "character ' '";
        QTest::newRow("underscore") << QByteArray("a_b.test") << "character '_'";
        QTest::newRow("non-ascii") << QByteArray("\xC3\xBC.test") << "\\xC3";
        QTest::newRow("nul") << QByteArray("a\0b", 3) << "\\x00";
        QTest::newRow("slash") << QByteArray("a/b.test") << "character '/'";
        QTest::newRow("traversal") << QByteArray("../../etc/passwd") << "empty label";
        QTest::newRow("leading dot") << QByteArray(".app.test") << "empty label";
        QTest::newRow("trailing dot") << QByteArray("app.test.") << "empty label";
        QTest::newRow("double dot") << QByteArray("app..test") << "empty label";
        QTest::newRow("dot dot") << QByteArray("..") << "empty label";
        QTest::newRow("lone star") << QByteArray("*") << "'*'";
        QTest::newRow("inner star") << QByteArray("a.*.test") << "'*'";
        QTest::newRow("partial star") << QByteArray("*x.test") << "'*'";
        QTest::newRow("double star") << QByteArray("*.*.test") << "'*'";
        QTest::newRow("ipv6 zone") << QByteArray("fe80::1%eth0") << "character ':'";
        QTest::newRow("bracketed") << QByteArray("[::1]") << "character '['";
    }
    void invalidNamesRefused() {
        QFETCH(QByteArray, name);
        QFETCH(QString, reason);
        QTemporaryDir tmp;
        auto ca = openCa(tmp.path().toStdString());
        QVERIFY(ca);
        std::string error;
        auto leaf = ca->leafFor(std::string_view(name.constData(), std::size_t(name.size())), error);
        QVERIFY(!leaf);
        QVERIFY2(QString::fromStdString(error).startsWith("invalid name \""), error.c_str());
        QVERIFY2(QString::fromStdString(error).contains(reason), error.c_str());
        QVERIFY(!fs::exists(fs::path(tmp.path().toStdString()) / "certs")); // nothing written
    }

    void validEdgeNamesAccepted() {
        QTemporaryDir tmp;
        auto ca = openCa(tmp.path().toStdString());
        QVERIFY(ca);
        std::string error;
        std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') +
                              "." + std::string(61, 'd'); // 253 characters
        QCOMPARE(longest.size(), std::size_t(253));
        for (std::string name : {std::string("a-b.test"), std::string("x"), std::string("*.test"), longest}) {
            auto leaf = ca->leafFor(name, error);
            QVERIFY2(leaf, (name + ": " + error).c_str());
            QCOMPARE(leaf->names, std::vector<std::string>{name});
        }
    }

    void concurrentCallersShareOneLeaf() {
        QTemporaryDir tmp;
        auto ca = openCa(tmp.path().toStdString());
        QVERIFY(ca);
        const std::vector<std::string> names{"localhost", "a.test", "b.test", "127.0.0.1"};
        std::vector<std::map<std::string, std::string>> seen(8);
        std::vector<std::thread> threads;
        std::atomic<int> failures{0};
        for (int t = 0; t < 8; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < 20; ++i) {
                    const auto& n = names[std::size_t(i + t) % names.size()];
                    std::string error;
                    auto leaf = ca->leafFor(n, error);
                    if (!leaf || ERR_peek_error() != 0) {
                        ++failures;
                        continue;
                    }
                    auto certs = certsFromPem(leaf->chainPem);
                    auto serial = serialHex(certs[0].get());
                    auto [it, inserted] = seen[std::size_t(t)].emplace(n, serial);
                    if (!inserted && it->second != serial) ++failures;
                }
            });
        }
        for (auto& th : threads)
            th.join();
        QCOMPARE(failures.load(), 0);
        for (const auto& n : names) {
            std::set<std::string> serials;
            for (const auto& m : seen)
                if (m.count(n)) serials.insert(m.at(n));
            QCOMPARE(serials.size(), std::size_t(1));
        }
    }

    void defaultDataDirPrecedence() {
        const QByteArray saved[3] = {qgetenv("PORTICO_DATA_DIR"), qgetenv("XDG_DATA_HOME"), qgetenv("HOME")};
        const bool had[3] = {qEnvironmentVariableIsSet("PORTICO_DATA_DIR"),
                             qEnvironmentVariableIsSet("XDG_DATA_HOME"), qEnvironmentVariableIsSet("HOME")};
        qputenv("HOME", "/home/ada");
        qputenv("XDG_DATA_HOME", "/xdg");
        qputenv("PORTICO_DATA_DIR", "/explicit/dir");
        QCOMPARE(portico::tls::defaultDataDir(), fs::path("/explicit/dir"));
        qunsetenv("PORTICO_DATA_DIR");
        QCOMPARE(portico::tls::defaultDataDir(), fs::path("/xdg/portico"));
        qputenv("XDG_DATA_HOME", "relative/ignored");
        QCOMPARE(portico::tls::defaultDataDir(), fs::path("/home/ada/.local/share/portico"));
        qunsetenv("XDG_DATA_HOME");
        QCOMPARE(portico::tls::defaultDataDir(), fs::path("/home/ada/.local/share/portico"));
        const char* names[3] = {"PORTICO_DATA_DIR", "XDG_DATA_HOME", "HOME"};
        for (int i = 0; i < 3; ++i) {
            if (had[i])
                qputenv(names[i], saved[i]);
            else
                qunsetenv(names[i]);
        }
    }

    void checkCertKeyPairMessages() {
        QTemporaryDir tmp, otherTmp;
        fs::path data = tmp.path().toStdString();
        auto ca = openCa(data);
        auto other = openCa(otherTmp.path().toStdString());
        QVERIFY(ca && other);
        std::string error;
        auto leaf = ca->leafFor("localhost", error);
        auto otherLeaf = other->leafFor("localhost", error);
        QVERIFY(leaf && otherLeaf);
        const std::string cert = (data / "cert.pem").string(), key = (data / "key.pem").string();
        writeFile(cert, leaf->chainPem);
        writeFile(key, leaf->keyPem);
        QCOMPARE(checkCertKeyPair(cert, key), std::string());
        // The combined file of the disk cache (chain and key in one) works as both.
        const std::string combined = (data / "certs" / "localhost.pem").string();
        QCOMPARE(checkCertKeyPair(combined, combined), std::string());

        const std::string wrongKey = (data / "wrong.key").string();
        writeFile(wrongKey, otherLeaf->keyPem);
        QCOMPARE(checkCertKeyPair(cert, wrongKey), wrongKey + ": does not match certificate " + cert);

        const std::string missing = (data / "missing.pem").string();
        QCOMPARE(checkCertKeyPair(missing, key), missing + ": No such file or directory");
        QCOMPARE(checkCertKeyPair(cert, missing), missing + ": No such file or directory");

        const std::string garbage = (data / "garbage.pem").string();
        writeFile(garbage, "hello, world\n");
        QCOMPARE(checkCertKeyPair(garbage, key), garbage + ": no certificate found");
        QCOMPARE(checkCertKeyPair(cert, garbage), garbage + ": no private key found");
        QCOMPARE(checkCertKeyPair(key, key), key + ": no certificate found"); // a key is not a certificate

        // A broken second certificate in the chain.
        const std::string broken = (data / "broken.pem").string();
        writeFile(broken,
                  leaf->chainPem.substr(0, leaf->chainPem.size() - 200) + "-----END CERTIFICATE-----\n");
        QVERIFY2(checkCertKeyPair(broken, key).rfind(broken + ": certificate 2: ", 0) == 0,
                 checkCertKeyPair(broken, key).c_str());

        QCOMPARE(checkCertKeyPair(data.string(), key), data.string() + ": is a directory");

        const std::string encrypted = (data / "enc.key").string();
        writeFile(encrypted,
                  "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n");
        QCOMPARE(checkCertKeyPair(cert, encrypted), encrypted + ": encrypted private keys are not supported");
        QCOMPARE(ERR_peek_error(), 0ul);
    }

    void checkCertKeyPairUnreadableFile() {
        if (::geteuid() == 0)
            QSKIP("running as root: file permissions do not apply (tst_cert_cli covers EACCES)");
        QTemporaryDir tmp;
        fs::path data = tmp.path().toStdString();
        auto ca = openCa(data);
        QVERIFY(ca);
        std::string error;
        auto leaf = ca->leafFor("localhost", error);
        QVERIFY(leaf);
        const std::string cert = (data / "cert.pem").string(), key = (data / "key.pem").string();
        writeFile(cert, leaf->chainPem);
        writeFile(key, leaf->keyPem);
        QCOMPARE(checkCertKeyPair(cert, key), std::string());
        QFile::setPermissions(QString::fromStdString(key), QFileDevice::Permissions{});
        QCOMPARE(checkCertKeyPair(cert, key), key + ": Permission denied");
    }
};

QTEST_GUILESS_MAIN(TestLocalCa)
#include "tst_local_ca.moc"

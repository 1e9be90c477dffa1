/* The agent's TLS credentials (see agent_tls.h): both files read through secret_file (the key
 * as a secret), then parsed with GnuTLS, the library that libmicrohttpd serves TLS with, and
 * paired as libmicrohttpd pairs them (gnutls_certificate_set_x509_key_mem), so that whatever
 * passes here the server takes, and each refusal says which file is wrong. */
#include "tui/agent/agent_tls.h"

#include "backend/core/errbuf.h"
#include "backend/core/secret_file.h"
#include "tui/agent/http_libs.h"

#include <errno.h>
#include <string.h>

/* A PEM text as GnuTLS takes it: up to the first NUL, as libmicrohttpd passes it (strlen). */
static gnutls_datum_t agent_tls_datum(const char *pem) {
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    return d;
}

/* At least one PEM certificate, every one of them well formed. */
static int agent_tls_check_cert(const struct agent_tls *t, const char *path, char *err,
                                size_t errlen) {
    gnutls_datum_t d = agent_tls_datum(t->cert_pem);
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    int rc = tls_fn.gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    for (unsigned k = 0; rc >= 0 && k < n; k++)
        tls_fn.gnutls_x509_crt_deinit(crts[k]);
    (*tls_fn.gnutls_free_at)(crts);
    if (rc < 0 || n == 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "--tls-cert %s: no PEM certificate in it (%s): give the server's "
                          "certificate, '-----BEGIN CERTIFICATE-----' and what follows",
                          path, rc < 0 ? tls_fn.gnutls_strerror(rc) : "none found");
    return 0;
}

/* A PEM private key that needs no passphrase. */
static int agent_tls_check_key(const struct agent_tls *t, const char *path, char *err,
                               size_t errlen) {
    gnutls_x509_privkey_t key;
    if (tls_fn.gnutls_x509_privkey_init(&key) < 0)
        return errbuf_set(err, errlen, -ENOMEM, "--tls-key %s: out of memory", path);
    gnutls_datum_t d = agent_tls_datum(t->key_pem);
    int rc = tls_fn.gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    tls_fn.gnutls_x509_privkey_deinit(key);
    if (rc >= 0)
        return 0;
    if (strstr(t->key_pem, "ENCRYPTED"))
        return errbuf_set(err, errlen, -EINVAL,
                          "--tls-key %s: the key is encrypted and the agent asks for no "
                          "passphrase: keep it unencrypted, mode 0600 (openssl pkey -in %s -out "
                          "NEW)",
                          path, path);
    return errbuf_set(err, errlen, -EINVAL, "--tls-key %s: no PEM private key in it (%s)", path,
                      tls_fn.gnutls_strerror(rc));
}

/* The key is the certificate's: the pairing libmicrohttpd asks of GnuTLS at its start. */
static int agent_tls_check_pair(const struct agent_tls *t, const char *cert_path,
                                const char *key_path, char *err, size_t errlen) {
    gnutls_certificate_credentials_t cred;
    if (tls_fn.gnutls_certificate_allocate_credentials(&cred) < 0)
        return errbuf_set(err, errlen, -ENOMEM, "--tls-key %s: out of memory", key_path);
    gnutls_datum_t c = agent_tls_datum(t->cert_pem), k = agent_tls_datum(t->key_pem);
    int rc = tls_fn.gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
    tls_fn.gnutls_certificate_free_credentials(cred);
    if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
        return errbuf_set(err, errlen, -EINVAL,
                          "--tls-key %s: not the key of the certificate in --tls-cert %s", key_path,
                          cert_path);
    if (rc < 0)
        return errbuf_set(err, errlen, -EINVAL, "--tls-cert %s with --tls-key %s: refused (%s)",
                          cert_path, key_path, tls_fn.gnutls_strerror(rc));
    return 0;
}

int agent_tls_load(struct agent_tls *t, const char *cert_path, const char *key_path, char *err,
                   size_t errlen) {
    char why[1024];
    memset(t, 0, sizeof(*t));
    int rc = http_libs_server(err, errlen);
    if (rc != 0)
        return rc;
    if (mhd_fn.MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return errbuf_set(err, errlen, -ENOTSUP,
                          "--tls-cert: this libmicrohttpd was built without TLS: install one "
                          "built with GnuTLS, or serve plain HTTP behind a TLS proxy");
    rc = secret_file_read(cert_path, "TLS certificate", false, AGENT_TLS_MAX_BYTES, &t->cert_pem,
                          &t->cert_len, why, sizeof(why));
    if (rc < 0)
        return errbuf_set(err, errlen, rc, "--tls-cert %s", why);
    rc = secret_file_read(key_path, "TLS key file", true, AGENT_TLS_MAX_BYTES, &t->key_pem,
                          &t->key_len, why, sizeof(why));
    if (rc < 0)
        rc = errbuf_set(err, errlen, rc, "--tls-key %s", why);
    else if ((rc = agent_tls_check_cert(t, cert_path, err, errlen)) == 0 &&
             (rc = agent_tls_check_key(t, key_path, err, errlen)) == 0)
        rc = agent_tls_check_pair(t, cert_path, key_path, err, errlen);
    if (rc < 0)
        agent_tls_fini(t);
    return rc;
}

void agent_tls_fini(struct agent_tls *t) {
    secret_file_free(t->key_pem, t->key_len);
    secret_file_free(t->cert_pem, t->cert_len); /* public, but one way to free both */
    memset(t, 0, sizeof(*t));
}

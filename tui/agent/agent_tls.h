/* The agent's TLS credentials (--tls-cert, --tls-key): a PEM certificate (or chain) and its
 * private key, read and checked at start-up before anything else starts, so that a bad file is
 * one line naming it: each file parses as libmicrohttpd's GnuTLS will parse it, and the key is
 * the certificate's. libmicrohttpd takes them from memory and keeps the pointers
 * (MHD_OPTION_HTTPS_MEM_CERT and _KEY), so they are held for the server's life; the key's bytes
 * are wiped when they are released. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_TLS_H
#define RINGSIDE_TUI_AGENT_AGENT_TLS_H

#include <stddef.h>

#define AGENT_TLS_MAX_BYTES (1u << 20) /* a certificate chain or a key file, at most */

struct agent_tls {
    char *cert_pem; /* the certificate file's text with a NUL after it; NULL: none loaded */
    size_t cert_len;
    char *key_pem; /* the key file's text with a NUL after it; wiped by agent_tls_fini */
    size_t key_len;
};

/* Read and check cert_path and key_path into t (empty before). 0; or, t left empty, -ENOTSUP
 * (this libmicrohttpd serves no TLS), -errno, -ENODATA (empty), -EFBIG (over
 * AGENT_TLS_MAX_BYTES) or -EINVAL (not a regular file, no PEM certificate or private key in it,
 * an encrypted key, a key that is not the certificate's), with err one line naming the option
 * and the file ("--tls-key /etc/ringside/key.pem: empty"). One warning line on stderr when
 * other users can read or change the key file. */
int agent_tls_load(struct agent_tls *t, const char *cert_path, const char *key_path, char *err,
                   size_t errlen);

/* Wipe the key, free both texts: t is empty again. Only once no server uses them (after
 * agent_http_stop). An empty t: a no-op. */
void agent_tls_fini(struct agent_tls *t);

#endif

/* The HTTP libraries' tables and their loads (see http_libs.h). The sonames and files are the
 * ones this build was configured with (RS_*_SONAME, RS_*_PATH: tui/agent/CMakeLists.txt). */
#include "tui/agent/http_libs.h"

struct http_mhd_fns mhd_fn;
struct http_tls_fns tls_fn;
struct http_curl_fns curl_fn;

#define HTTP_MHD_SYM(f)  DYNLIB_SYM(struct http_mhd_fns, f)
#define HTTP_TLS_SYM(f)  DYNLIB_SYM(struct http_tls_fns, f)
#define HTTP_CURL_SYM(f) DYNLIB_SYM(struct http_curl_fns, f)

static const struct dynlib_sym http_mhd_syms[] = {HTTP_LIBS_MHD_CALLS(HTTP_MHD_SYM)};
static const struct dynlib_sym http_tls_syms[] = {
    HTTP_LIBS_TLS_CALLS(HTTP_TLS_SYM){"gnutls_free", offsetof(struct http_tls_fns, gnutls_free_at)},
};
static const struct dynlib_sym http_curl_syms[] = {HTTP_LIBS_CURL_CALLS(HTTP_CURL_SYM)};

static struct dynlib http_mhd_lib = DYNLIB_INIT(RS_MHD_SONAME, RS_MHD_PATH, "libmicrohttpd",
                                                RS_MHD_PACKAGE, http_mhd_syms, &mhd_fn);
static struct dynlib http_tls_lib = DYNLIB_INIT(RS_GNUTLS_SONAME, RS_GNUTLS_PATH, "GnuTLS",
                                                RS_GNUTLS_PACKAGE, http_tls_syms, &tls_fn);
static struct dynlib http_curl_lib =
    DYNLIB_INIT(RS_CURL_SONAME, RS_CURL_PATH, "libcurl", RS_CURL_PACKAGE, http_curl_syms, &curl_fn);

int http_libs_server(char *err, size_t errlen) {
    int rc = dynlib_load(&http_mhd_lib, err, errlen);
    return rc != 0 ? rc : dynlib_load(&http_tls_lib, err, errlen);
}

int http_libs_client(char *err, size_t errlen) {
    return dynlib_load(&http_curl_lib, err, errlen);
}

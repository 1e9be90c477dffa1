/* The HTTP libraries, loaded at run time by the commands that use them (backend/core/dynlib.h):
 * libmicrohttpd and GnuTLS for the agent's server (ringside agent), libcurl for the attach
 * client (ringside attach). Every other command (the dashboard, watch, probe, train) maps none
 * of them, nor the TLS stack they link (some 5 MiB of memory a process). Calls go through the
 * tables: mhd_fn.MHD_start_daemon(...), tls_fn.gnutls_strerror(...), curl_fn.curl_easy_init(). */
#ifndef RINGSIDE_TUI_AGENT_HTTP_LIBS_H
#define RINGSIDE_TUI_AGENT_HTTP_LIBS_H

#include "backend/core/dynlib.h"

#define CURL_DISABLE_TYPECHECK /* calls go through curl_fn, not through the header's macros */
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stddef.h>

/* Every entry point each library is called through, each one required. */
#define HTTP_LIBS_MHD_CALLS(X)                                                                     \
    X(MHD_start_daemon)                                                                            \
    X(MHD_stop_daemon)                                                                             \
    X(MHD_is_feature_supported)                                                                    \
    X(MHD_get_connection_info)                                                                     \
    X(MHD_get_connection_values)                                                                   \
    X(MHD_get_connection_values_n)                                                                 \
    X(MHD_lookup_connection_value)                                                                 \
    X(MHD_create_response_from_buffer)                                                             \
    X(MHD_create_response_from_callback)                                                           \
    X(MHD_add_response_header)                                                                     \
    X(MHD_queue_response)                                                                          \
    X(MHD_destroy_response)

#define HTTP_LIBS_TLS_CALLS(X)                                                                     \
    X(gnutls_strerror)                                                                             \
    X(gnutls_x509_crt_list_import2)                                                                \
    X(gnutls_x509_crt_deinit)                                                                      \
    X(gnutls_x509_privkey_init)                                                                    \
    X(gnutls_x509_privkey_import2)                                                                 \
    X(gnutls_x509_privkey_deinit)                                                                  \
    X(gnutls_certificate_allocate_credentials)                                                     \
    X(gnutls_certificate_set_x509_key_mem)                                                         \
    X(gnutls_certificate_free_credentials)

#define HTTP_LIBS_CURL_CALLS(X)                                                                    \
    X(curl_global_init)                                                                            \
    X(curl_easy_init)                                                                              \
    X(curl_easy_setopt)                                                                            \
    X(curl_easy_getinfo)                                                                           \
    X(curl_easy_strerror)                                                                          \
    X(curl_easy_cleanup)                                                                           \
    X(curl_slist_append)                                                                           \
    X(curl_slist_free_all)                                                                         \
    X(curl_multi_init)                                                                             \
    X(curl_multi_add_handle)                                                                       \
    X(curl_multi_remove_handle)                                                                    \
    X(curl_multi_perform)                                                                          \
    X(curl_multi_poll)                                                                             \
    X(curl_multi_wakeup)                                                                           \
    X(curl_multi_info_read)                                                                        \
    X(curl_multi_cleanup)

struct http_mhd_fns {
    HTTP_LIBS_MHD_CALLS(DYNLIB_MEMBER)
};

struct http_tls_fns {
    HTTP_LIBS_TLS_CALLS(DYNLIB_MEMBER)
    /* GnuTLS's free is a variable (gnutls_free_function gnutls_free): its address */
    __typeof__(gnutls_free) *gnutls_free_at;
};

struct http_curl_fns {
    HTTP_LIBS_CURL_CALLS(DYNLIB_MEMBER)
};

/* Set by http_libs_server / http_libs_client; read only once that returned 0 in this process
 * (the agent's and the client's code runs only after it: their start functions load). */
extern struct http_mhd_fns mhd_fn;
extern struct http_tls_fns tls_fn;
extern struct http_curl_fns curl_fn;

/* Load libmicrohttpd and GnuTLS (the agent's server), unless loaded: 0, or -errno with err one
 * line naming the library and the package to install (dynlib_load's). Any thread. */
int http_libs_server(char *err, size_t errlen);

/* Load libcurl (the attach client), as http_libs_server. */
int http_libs_client(char *err, size_t errlen);

#endif

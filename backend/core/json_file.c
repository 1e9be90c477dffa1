/* JSON files a person writes (config, themes, rules): read whole, parsed strictly, with the
 * line and column of a mistake. */
#include "backend/core/json_file.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int json_file_config_dir(char *out, size_t outlen) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/ringside", xdg);
    else if (home && home[0])
        n = snprintf(out, outlen, "%s/.config/ringside", home);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

void json_file_line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

/* The whole file into a NUL-terminated malloc'd buffer. 0 or -errno / -EFBIG with err. */
static int json_file_slurp(const char *path, const char *shown, size_t max_bytes, char **buf,
                           size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return errbuf_set(err, errlen, -errno, "%s: cannot open: %s", shown, strerror(errno));
    char *b = malloc(max_bytes + 1);
    size_t n = b ? fread(b, 1, max_bytes + 1, f) : 0;
    int rc = !b ? errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown) : 0;
    if (rc == 0 && ferror(f))
        rc = errbuf_set(err, errlen, -EIO, "%s: cannot read: %s", shown, strerror(errno));
    else if (rc == 0 && n > max_bytes)
        rc = errbuf_set(err, errlen, -EFBIG, "%s: larger than %zu KiB", shown, max_bytes >> 10);
    fclose(f);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* Parse buf; anything but whitespace after the value is an error too. */
static int json_file_parse(const char *buf, size_t n, const char *shown, struct json_object **out,
                           char *err, size_t errlen) {
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown);
    struct json_object *root = json_tokener_parse_ex(tok, buf, (int)n);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    const char *why =
        je == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(je);
    if (root) {
        while (end < n && strchr(" \t\r\n", buf[end]))
            end++;
        why = end < n ? "unexpected data after the JSON value" : NULL;
    }
    if (!why) {
        *out = root;
        return 0;
    }
    json_object_put(root);
    int line, col;
    json_file_line_col(buf, end, &line, &col);
    return errbuf_set(err, errlen, -EINVAL, "%s: invalid JSON at line %d, column %d: %s", shown,
                      line, col, why);
}

int json_file_read(const char *path, const char *shown, size_t max_bytes, struct json_object **out,
                   char *err, size_t errlen) {
    char *buf = NULL;
    size_t n = 0;
    int rc = json_file_slurp(path, shown, max_bytes, &buf, &n, err, errlen);
    if (rc != 0)
        return rc;
    rc = json_file_parse(buf, n, shown, out, err, errlen);
    free(buf);
    return rc;
}

/* Parsing one JSON object out of a text, for the recording, status and telemetry readers. */
#include "backend/core/json_text.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdint.h>

bool json_text_blank(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
            return false;
    return true;
}

int json_text_parse(const char *text, size_t len, json_object **out, char *why, size_t whylen) {
    *out = NULL;
    if (len > INT32_MAX)
        return errbuf_set(why, whylen, -EINVAL, "invalid JSON: over 2 GiB");
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return errbuf_set(why, whylen, -ENOMEM, "out of memory");
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = 0;
    if (jerr == json_tokener_continue)
        rc = errbuf_set(why, whylen, -EINVAL, "invalid JSON (the line is cut short)");
    else if (!o || jerr != json_tokener_success)
        rc = errbuf_set(why, whylen, -EINVAL, "invalid JSON at column %zu: %s", end + 1,
                        json_tokener_error_desc(jerr));
    else if (!json_text_blank(text + end, len - end)) {
        while (json_text_blank(text + end, 1))
            end++;
        rc = errbuf_set(why, whylen, -EINVAL, "invalid JSON at column %zu: text after the object",
                        end + 1);
    } else if (!json_object_is_type(o, json_type_object))
        rc = errbuf_set(why, whylen, -EINVAL, "not a JSON object");
    if (rc != 0) {
        json_object_put(o);
        return rc;
    }
    *out = o;
    return 0;
}

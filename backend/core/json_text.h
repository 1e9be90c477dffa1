/* One JSON object from a line or a file's text, with the error a person can act on. */
#ifndef RINGSIDE_BACKEND_CORE_JSON_TEXT_H
#define RINGSIDE_BACKEND_CORE_JSON_TEXT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether text[0..len) is only blanks (spaces, tabs, CR, LF). */
bool json_text_blank(const char *text, size_t len);

/* Parse exactly one JSON object from text[0..len) (blanks around it allowed). 0 with *out (the
 * caller puts it), or -ENOMEM, or -EINVAL with why: "invalid JSON (the line is cut short)",
 * "invalid JSON at column N: <json-c's reason>", "invalid JSON at column N: text after the
 * object", "not a JSON object". */
int json_text_parse(const char *text, size_t len, json_object **out, char *why, size_t whylen);

#endif

/* Writing JSON text: the one string escape and the one number format of every writer. */
#ifndef RINGSIDE_BACKEND_CORE_JSON_OUT_H
#define RINGSIDE_BACKEND_CORE_JSON_OUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any text json_out_num writes, with its NUL ("-2.2250738585072014e-308" is 24). */
#define JSON_OUT_NUM_MAX 32

/* s as the inside of a JSON string (without the quotes) into buf[0..cap): '"' and '\' behind a
 * backslash, control characters (below 0x20, and DEL) as \u00XX, every other byte as it is
 * (UTF-8 passes through). Returns the length of the whole text, as snprintf. When that is cap
 * or more, buf holds the escapes and characters that fitted whole (a UTF-8 sequence is not
 * split), NUL-terminated; cap 0 writes nothing (buf may then be NULL). */
size_t json_out_escape(char *buf, size_t cap, const char *s);

/* How json_out_num writes a whole number below 1e15 in magnitude. */
enum json_out_whole {
    JSON_OUT_POINT, /* "30.0": stays a double to readers that type numbers, as json-c does */
    JSON_OUT_INT,   /* "30" */
};

/* The shortest text that strtod reads back as exactly v: a whole number below 1e15 in
 * magnitude without an exponent (as whole says; "-0.0" keeps the sign of zero), any other
 * value with the fewest %g digits that give it back ("0.0002", "0.1", "1e+300", "5e-324").
 * JSON has no NaN or infinity: those are written "null". Returns the length, as snprintf
 * (under JSON_OUT_NUM_MAX). */
int json_out_num(char *buf, size_t cap, double v, enum json_out_whole whole);

/* v as a json-c double that is written as json_out_num's text (JSON_OUT_POINT) rather than
 * json-c's %.17g; NULL (which json-c writes as null) when v is NaN or infinite, or when out of
 * memory. */
json_object *json_out_double(double v);

/* Members of the object j under key, for the writers of options: a string (NULL or "" is an
 * option that is not set: null), an integer, a double (json_out_double), a boolean. */
void json_out_put_str(json_object *j, const char *key, const char *s);
void json_out_put_int(json_object *j, const char *key, int64_t v);
void json_out_put_num(json_object *j, const char *key, double v);
void json_out_put_bool(json_object *j, const char *key, bool v);

#endif

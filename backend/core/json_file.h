/* JSON files a person writes (the config file, themes, remedies and doctor rules): where the
 * user's files live, and a strict read with the line and column of a mistake. */
#ifndef RINGSIDE_BACKEND_CORE_JSON_FILE_H
#define RINGSIDE_BACKEND_CORE_JSON_FILE_H

#include <stddef.h>

struct json_object;

/* "<$XDG_CONFIG_HOME or $HOME/.config>/ringside" into out. 0, or -ENOENT when neither variable
 * is set (or XDG_CONFIG_HOME is not absolute and HOME is unset), -ENAMETOOLONG. */
int json_file_config_dir(char *out, size_t outlen);

/* Parse a JSON file of at most max_bytes into *out (the caller puts it). shown names the file
 * in errors. 0, -errno when unreadable, or -EINVAL with
 * "SHOWN: invalid JSON at line L, column C: json-c's reason". */
int json_file_read(const char *path, const char *shown, size_t max_bytes, struct json_object **out,
                   char *err, size_t errlen);

/* json_file_read, keeping the file's text: *text (NUL-terminated; the caller frees it) for
 * json_file_key_at. */
int json_file_read_text(const char *path, const char *shown, size_t max_bytes,
                        struct json_object **out, char **text, char *err, size_t errlen);

/* Where the top-level object of text (valid JSON, as json_file_read_text keeps it) holds key:
 * the byte offsets of the key's opening quote and of its value. 0, or -ENOENT. */
int json_file_key_at(const char *text, const char *key, size_t *key_off, size_t *value_off);

/* 1-based line and column of byte offset off in text. */
void json_file_line_col(const char *text, size_t off, int *line, int *col);

#endif

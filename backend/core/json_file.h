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

/* 1-based line and column of byte offset off in text. */
void json_file_line_col(const char *text, size_t off, int *line, int *col);

#endif

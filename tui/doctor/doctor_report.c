/* ringside doctor: the report's rows and its three printed forms (table, JSON, Markdown). */
#include "tui/doctor/doctor.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

static const char *const doctor_status_names[] = {"ok", "warn", "fail", "skip"};

const char *doctor_status_name(enum doctor_status s) {
    return (unsigned)s < 4 ? doctor_status_names[s] : "?";
}

/* Control characters (a newline in a value read from a file) would break a row: '?'. */
static void doctor_clean(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

struct doctor_row *doctor_add(struct doctor_report *r, const char *group, const char *name,
                              enum doctor_status st, const char *fmt, ...) {
    if (r->n >= DOCTOR_MAX_ROWS) {
        r->dropped++;
        return NULL;
    }
    struct doctor_row *row = &r->rows[r->n++];
    memset(row, 0, sizeof(*row));
    snprintf(row->group, sizeof(row->group), "%s", group);
    snprintf(row->name, sizeof(row->name), "%s", name);
    row->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->value, sizeof(row->value), fmt, ap);
    va_end(ap);
    doctor_clean(row->name);
    doctor_clean(row->value);
    return row;
}

void doctor_remedy(struct doctor_row *row, const char *fmt, ...) {
    if (!row)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->remedy, sizeof(row->remedy), fmt, ap);
    va_end(ap);
    doctor_clean(row->remedy);
}

enum doctor_status doctor_worst(const struct doctor_report *r) {
    enum doctor_status w = DOCTOR_OK;
    for (size_t i = 0; i < r->n; i++)
        if (r->rows[i].status != DOCTOR_SKIP && r->rows[i].status > w)
            w = r->rows[i].status;
    return w;
}

int doctor_exit_status(const struct doctor_report *r) {
    return doctor_worst(r) == DOCTOR_FAIL ? 1 : 0;
}

/* Rows per status, for the summaries. */
static void doctor_counts(const struct doctor_report *r, size_t counts[4]) {
    memset(counts, 0, 4 * sizeof(size_t));
    for (size_t i = 0; i < r->n; i++)
        counts[r->rows[i].status < 4 ? r->rows[i].status : 3]++;
}

static int doctor_flush(FILE *out) {
    return fflush(out) == 0 && !ferror(out) ? 0 : -(errno ? errno : EIO);
}

/* ---- table ---- */

int doctor_print_table(FILE *out, const struct doctor_report *r, bool colour) {
    static const char *const sgr[] = {"\033[32m", "\033[33m", "\033[1;31m", "\033[2m"};
    int name_w = 4;
    for (size_t i = 0; i < r->n; i++) {
        int n = (int)strlen(r->rows[i].name);
        name_w = n > name_w ? n : name_w;
    }
    name_w = name_w > 32 ? 32 : name_w;
    const char *group = "";
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_row *row = &r->rows[i];
        if (strcmp(row->group, group) != 0) {
            fprintf(out, "%s%s%s\n", i ? "\n" : "", colour ? "\033[1m" : "", row->group);
            if (colour)
                fputs("\033[0m", out);
            group = row->group;
        }
        const char *st = doctor_status_name(row->status);
        fprintf(out, "  %-*.*s  %s%-4s%s  %s\n", name_w, name_w, row->name,
                colour ? sgr[row->status & 3] : "", st, colour ? "\033[0m" : "", row->value);
        if (row->remedy[0])
            fprintf(out, "  %-*s        %s%s%s\n", name_w, "", colour ? "\033[2m" : "", row->remedy,
                    colour ? "\033[0m" : "");
    }
    size_t c[4];
    doctor_counts(r, c);
    fprintf(out, "\n%zu ok, %zu warn, %zu fail, %zu skipped", c[0], c[1], c[2], c[3]);
    if (r->dropped)
        fprintf(out, " (%zu rows did not fit)", r->dropped);
    fputc('\n', out);
    return doctor_flush(out);
}

/* ---- JSON ---- */

json_object *doctor_report_json(const struct doctor_report *r) {
    json_object *j = json_object_new_object(), *rows = json_object_new_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_row *row = &r->rows[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "group", json_object_new_string(row->group));
        json_object_object_add(o, "name", json_object_new_string(row->name));
        json_object_object_add(o, "status",
                               json_object_new_string(doctor_status_name(row->status)));
        json_object_object_add(o, "value", json_object_new_string(row->value));
        json_object_object_add(o, "remedy",
                               row->remedy[0] ? json_object_new_string(row->remedy) : NULL);
        json_object_array_add(rows, o);
    }
    size_t c[4];
    doctor_counts(r, c);
    json_object *sum = json_object_new_object();
    for (int s = 0; s < 4; s++)
        json_object_object_add(sum, doctor_status_names[s], json_object_new_int64((int64_t)c[s]));
    json_object_object_add(sum, "dropped", json_object_new_int64((int64_t)r->dropped));
    json_object_object_add(sum, "result",
                           json_object_new_string(doctor_status_name(doctor_worst(r))));
    json_object_object_add(j, "rows", rows);
    json_object_object_add(j, "summary", sum);
    return j;
}

int doctor_print_json(FILE *out, const struct doctor_report *r) {
    json_object *j = doctor_report_json(r);
    fprintf(out, "%s\n",
            json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(j);
    return doctor_flush(out);
}

/* ---- Markdown ---- */

/* s with '|' escaped and nothing else that could end a cell. */
static void doctor_md_cell(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else
            fputc(*s, out);
    }
}

int doctor_print_markdown(FILE *out, const struct doctor_report *r) {
    size_t c[4];
    doctor_counts(r, c);
    fprintf(out, "### ringside doctor: %s (%zu ok, %zu warn, %zu fail, %zu skipped)\n\n",
            doctor_status_name(doctor_worst(r)), c[0], c[1], c[2], c[3]);
    fputs("| group | check | status | found | what to do |\n|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_row *row = &r->rows[i];
        const char *fields[] = {row->group, row->name, NULL, row->value, row->remedy};
        fputc('|', out);
        for (int k = 0; k < 5; k++) {
            fputc(' ', out);
            if (k == 2)
                fprintf(out, row->status == DOCTOR_FAIL ? "**%s**" : "%s",
                        doctor_status_name(row->status));
            else
                doctor_md_cell(out, fields[k]);
            fputs(" |", out);
        }
        fputc('\n', out);
    }
    return doctor_flush(out);
}

/* The GPU overlay's doctor section: the summary of the latest environment checks the dashboard
 * ran (D), then its fail and warn rows with what to do, as many as the lines given allow. */
#include "tui/view/gpu_view.h"
#include "tui/view/gpu_view_internal.h"

#include <stdio.h>
#include <string.h>

void gpu_view_doctor_counts(const struct doctor_report *r, size_t counts[DOCTOR_SKIP + 1]) {
    memset(counts, 0, sizeof(size_t) * (DOCTOR_SKIP + 1));
    for (size_t k = 0; r && k < r->n; k++)
        if ((unsigned)r->rows[k].status <= DOCTOR_SKIP)
            counts[r->rows[k].status]++;
}

/* The rows of status st, each with its remedy on the next line; false when the lines ran out
 * (*shown counts the rows listed, left the rows of both statuses still to list). */
static bool gpu_view_doctor_rows(struct gpu_view_out *o, const struct doctor_report *r,
                                 enum doctor_status st, size_t *shown, size_t *left) {
    for (size_t k = 0; k < r->n; k++) {
        const struct doctor_row *row = &r->rows[k];
        if (row->status != st)
            continue;
        int need = 1 + (row->remedy[0] ? 1 : 0) + (*left > 1 ? 1 : 0); /* + the "more" line */
        if (o->n + need > o->max)
            return false;
        gpu_view_add(o, st == DOCTOR_FAIL ? THEME_ERROR : THEME_WARN, "  %-4s  %-28s %s",
                     doctor_status_name(st), row->name, row->value);
        if (row->remedy[0])
            gpu_view_add(o, THEME_DIM, "        %s", row->remedy);
        (*shown)++;
        (*left)--;
    }
    return true;
}

int gpu_view_doctor(const struct doctor_report *r, time_t when, bool running,
                    struct gpu_view_line *out, int max) {
    struct gpu_view_out o = {out, 0, max};
    if (!r) {
        gpu_view_add(&o, THEME_DIM, "%s",
                     running ? "doctor: running the environment checks..."
                             : "doctor: not run yet (D runs the environment checks)");
        return o.n;
    }
    size_t c[DOCTOR_SKIP + 1];
    gpu_view_doctor_counts(r, c);
    char hms[16] = "??:??:??";
    struct tm tm;
    if (localtime_r(&when, &tm))
        strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
    gpu_view_add(&o,
                 c[DOCTOR_FAIL]   ? THEME_ERROR
                 : c[DOCTOR_WARN] ? THEME_WARN
                                  : THEME_OK,
                 "doctor %s: %zu ok, %zu warn, %zu fail, %zu skipped%s", hms, c[DOCTOR_OK],
                 c[DOCTOR_WARN], c[DOCTOR_FAIL], c[DOCTOR_SKIP],
                 running ? " (running again...)" : "");
    size_t shown = 0, left = c[DOCTOR_FAIL] + c[DOCTOR_WARN];
    if (gpu_view_doctor_rows(&o, r, DOCTOR_FAIL, &shown, &left))
        gpu_view_doctor_rows(&o, r, DOCTOR_WARN, &shown, &left);
    if (left > 0)
        gpu_view_add(&o, THEME_DIM,
                     "  ... %zu more warn/fail row(s): 'ringside doctor' lists them all", left);
    return o.n;
}

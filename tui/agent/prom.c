/* The Prometheus text exposition format: families, samples, histograms, escaping. */
#include "tui/agent/prom.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void prom_init(struct prom_writer *w, FILE *out) {
    memset(w, 0, sizeof(*w));
    w->out = out;
}

void prom_init_openmetrics(struct prom_writer *w, FILE *out) {
    prom_init(w, out);
    w->openmetrics = true;
}

static bool prom_name_ok(const char *s, bool colon) {
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (colon && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

bool prom_metric_name_ok(const char *s) {
    return prom_name_ok(s, true);
}

bool prom_label_name_ok(const char *s) {
    return prom_name_ok(s, false) && strncmp(s, "__", 2) != 0;
}

const char *prom_escape(const char *s, bool quote, char *out, size_t n) {
    size_t k = 0;
    if (n == 0)
        return out;
    for (; *s && k + 2 < n; s++) {
        const char *rep = *s == '\\'           ? "\\\\"
                          : *s == '\n'         ? "\\n"
                          : quote && *s == '"' ? "\\\""
                                               : NULL;
        if (rep) {
            out[k++] = rep[0];
            out[k++] = rep[1];
        } else {
            out[k++] = *s;
        }
    }
    out[k] = '\0';
    return out;
}

static void prom_fail(struct prom_writer *w, int err) {
    if (!w->err)
        w->err = err;
}

void prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help) {
    static const char *const types[] = {"counter", "gauge", "histogram"};
    if (!prom_metric_name_ok(name) || strlen(name) >= sizeof(w->family)) {
        prom_fail(w, -EINVAL);
        return;
    }
    if (strcmp(w->family, name) == 0)
        return;
    size_t len = strlen(name);
    if (w->openmetrics && type == PROM_COUNTER) { /* the family is the name without _total */
        if (len < 7 || strcmp(name + len - 6, "_total") != 0) {
            prom_fail(w, -EINVAL);
            return;
        }
        len -= 6;
    }
    char esc[1024];
    prom_escape(help, w->openmetrics, esc, sizeof(esc));
    fprintf(w->out, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)len, name, esc, (int)len, name,
            types[type]);
    snprintf(w->family, sizeof(w->family), "%s", name);
}

/* A value as Prometheus parses it. */
static void prom_value(FILE *out, double v) {
    if (isnan(v))
        fputs("NaN", out);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", out);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.17g", v);
}

/* name{labels[,extra="value"]} */
static bool prom_series(struct prom_writer *w, const char *name, const struct prom_label *labels,
                        size_t n, const char *extra, const char *extra_value) {
    if (!prom_metric_name_ok(name)) {
        prom_fail(w, -EINVAL);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!prom_label_name_ok(labels[i].name)) {
            prom_fail(w, -EINVAL);
            return false;
        }
    fputs(name, w->out);
    if (n == 0 && !extra)
        return true;
    char esc[1024];
    fputc('{', w->out);
    for (size_t i = 0; i < n; i++)
        fprintf(w->out, "%s%s=\"%s\"", i ? "," : "", labels[i].name,
                prom_escape(labels[i].value ? labels[i].value : "", true, esc, sizeof(esc)));
    if (extra)
        fprintf(w->out, "%s%s=\"%s\"", n ? "," : "", extra, extra_value);
    fputc('}', w->out);
    return true;
}

void prom_sample(struct prom_writer *w, const char *name, const struct prom_label *labels,
                 size_t n_labels, double value) {
    if (!prom_series(w, name, labels, n_labels, NULL, NULL))
        return;
    fputc(' ', w->out);
    prom_value(w->out, value);
    fputc('\n', w->out);
}

void prom_histogram(struct prom_writer *w, const char *name, const struct prom_label *labels,
                    size_t n_labels, const double *bounds, const uint64_t *counts, size_t n,
                    double sum, uint64_t count) {
    for (size_t i = 1; i < n; i++)
        if (!(bounds[i] > bounds[i - 1])) {
            prom_fail(w, -EINVAL);
            return;
        }
    char part[160], le[40];
    snprintf(part, sizeof(part), "%s_bucket", name);
    uint64_t cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += counts[i];
        snprintf(le, sizeof(le), "%.17g", bounds[i]);
        if (!prom_series(w, part, labels, n_labels, "le", le))
            return;
        fprintf(w->out, " %llu\n", (unsigned long long)(cum < count ? cum : count));
    }
    if (!prom_series(w, part, labels, n_labels, "le", "+Inf"))
        return;
    fprintf(w->out, " %llu\n", (unsigned long long)count);
    snprintf(part, sizeof(part), "%s_sum", name);
    prom_sample(w, part, labels, n_labels, sum);
    snprintf(part, sizeof(part), "%s_count", name);
    prom_sample(w, part, labels, n_labels, (double)count);
}

int prom_finish(struct prom_writer *w) {
    if (w->openmetrics)
        fputs("# EOF\n", w->out);
    if (fflush(w->out) != 0 || ferror(w->out))
        prom_fail(w, -(errno ? errno : EIO));
    return w->err;
}

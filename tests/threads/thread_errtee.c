/* The stderr tee under several writing threads: every line reaches the log whole (each is one
 * write, shorter than PIPE_BUF) and each writer's lines in its order, while the tee's thread
 * copies them; then stderr is the former one again. */
#include "backend/core/errbuf.h"
#include "backend/run/errtee.h"
#include "tests/support/rs_test.h"
#include "tests/threads/thread_cases.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TE_WRITERS 3
#define TE_LINES   5

static void *thread_errtee_writer(void *arg) {
    int w = (int)(intptr_t)arg;
    for (int i = 0; i < TE_LINES; i++) {
        char line[64];
        int n = snprintf(line, sizeof(line), "tee case: writer %d line %d\n", w, i);
        if (write(2, line, (size_t)n) != n)
            break;
    }
    return NULL;
}

int thread_case_errtee_writers(char *why, size_t whylen) {
    char dir[512], log[600], err[512] = "";
    if (rs_test_tmpdir(dir, sizeof(dir)) != 0)
        return errbuf_set(why, whylen, -1, "cannot create a temp dir");
    snprintf(log, sizeof(log), "%s/session.log", dir);
    struct errtee *t = NULL;
    if (errtee_start(&t, log, err, sizeof(err)) != 0)
        return errbuf_set(why, whylen, -1, "errtee_start: %s", err);
    pthread_t th[TE_WRITERS];
    int started = 0;
    for (; started < TE_WRITERS; started++)
        if (pthread_create(&th[started], NULL, thread_errtee_writer, (void *)(intptr_t)started))
            break;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    errtee_stop(t);
    FILE *f = fopen(log, "r");
    int next[TE_WRITERS] = {0}, lines = 0, rc = 0;
    char line[128];
    while (rc == 0 && f && fgets(line, sizeof(line), f)) {
        int w, i;
        if (sscanf(line, "tee case: writer %d line %d\n", &w, &i) != 2 || w < 0 ||
            w >= TE_WRITERS || i != next[w])
            rc = errbuf_set(why, whylen, -1, "line %d of the log out of place: %s", lines, line);
        else
            next[w]++;
        lines++;
    }
    if (f)
        fclose(f);
    if (rc == 0 && (started != TE_WRITERS || lines != TE_WRITERS * TE_LINES))
        rc = errbuf_set(why, whylen, -1, "%d lines in the log from %d writers, want %d", lines,
                        started, TE_WRITERS * TE_LINES);
    rs_test_rmtree(dir);
    return rc;
}

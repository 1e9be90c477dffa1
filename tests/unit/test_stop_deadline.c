/* The stop deadline: its clock (when it aborts, when it leaves, a new way out starting over)
 * and its thread calling the owner's abort and abandon at their times. */
#include "backend/core/mono.h"
#include "backend/run/stop_deadline.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#define S 1000000000ull

Test(stop_deadline, waits_while_nothing_is_on_its_way_out) {
    struct stop_deadline_clock c = {0};
    for (uint64_t now = 0; now < 100 * S; now += S)
        cr_assert_eq(stop_deadline_step(&c, 0, now, 2 * S, S), STOP_DEADLINE_WAIT);
}

Test(stop_deadline, aborts_at_the_timeout_then_leaves_after_the_grace) {
    struct stop_deadline_clock c = {0};
    uint64_t t0 = 50 * S;
    cr_assert_eq(stop_deadline_step(&c, t0, t0, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, t0, t0 + 2 * S - 1, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, t0, t0 + 2 * S, 2 * S, S), STOP_DEADLINE_ABORT);
    cr_assert_eq(stop_deadline_step(&c, t0, t0 + 2 * S + 1, 2 * S, S), STOP_DEADLINE_WAIT,
                 "one abort a way out");
    cr_assert_eq(stop_deadline_step(&c, t0, t0 + 3 * S - 1, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, t0, t0 + 3 * S, 2 * S, S), STOP_DEADLINE_ABANDON);
}

/* A look that comes late (a loaded machine) still aborts first: the grace runs from the abort,
 * not from the deadline. */
Test(stop_deadline, a_late_look_aborts_before_it_leaves) {
    struct stop_deadline_clock c = {0};
    cr_assert_eq(stop_deadline_step(&c, S, 60 * S, 2 * S, S), STOP_DEADLINE_ABORT);
    cr_assert_eq(stop_deadline_step(&c, S, 60 * S + S / 2, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, S, 61 * S, 2 * S, S), STOP_DEADLINE_ABANDON);
}

/* The loop's way out ended (the front end stays): disarmed; the front end's own way out later
 * is timed from its own start. */
Test(stop_deadline, a_new_way_out_starts_over) {
    struct stop_deadline_clock c = {0};
    cr_assert_eq(stop_deadline_step(&c, S, 3 * S, 2 * S, S), STOP_DEADLINE_ABORT);
    cr_assert_eq(stop_deadline_step(&c, 0, 4 * S, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, 0, 400 * S, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, 500 * S, 501 * S, 2 * S, S), STOP_DEADLINE_WAIT);
    cr_assert_eq(stop_deadline_step(&c, 500 * S, 502 * S, 2 * S, S), STOP_DEADLINE_ABORT);
}

/* A way out stamped after the look's clock (another thread's clock read) waits. */
Test(stop_deadline, a_start_in_the_future_waits) {
    struct stop_deadline_clock c = {0};
    cr_assert_eq(stop_deadline_step(&c, 10 * S, 5 * S, 2 * S, S), STOP_DEADLINE_WAIT);
}

/* ---- the thread, with an owner that records the calls ---- */

struct owner {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t since;
    uint64_t abort_ns, abandon_ns;
    int aborts, abandons, looks;
};

static uint64_t owner_since(void *ctx) {
    struct owner *o = ctx;
    pthread_mutex_lock(&o->mu);
    o->looks++;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    return atomic_load(&o->since);
}

static void owner_abort(void *ctx, uint64_t waited_ns) {
    struct owner *o = ctx;
    (void)waited_ns;
    pthread_mutex_lock(&o->mu);
    o->abort_ns = mono_now_ns();
    o->aborts++;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static void owner_abandon(void *ctx, uint64_t waited_ns) {
    struct owner *o = ctx;
    (void)waited_ns;
    pthread_mutex_lock(&o->mu);
    o->abandon_ns = mono_now_ns();
    o->abandons++;
    atomic_store(&o->since, 0); /* as if it had left: nothing more to time */
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static const struct stop_deadline_ops owner_ops = {owner_since, owner_abort, owner_abandon};

Test(stop_deadline, the_thread_aborts_and_then_abandons_in_order) {
    struct owner o = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct stop_deadline *d;
    const uint64_t timeout = 200000000ull, grace = 300000000ull;
    cr_assert_eq(stop_deadline_start(&d, timeout, grace, &owner_ops, &o), 0);
    uint64_t t0 = mono_now_ns();
    atomic_store(&o.since, t0);
    pthread_mutex_lock(&o.mu);
    while (o.abandons == 0)
        pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    stop_deadline_stop(d);
    cr_assert_eq(o.aborts, 1);
    cr_assert_eq(o.abandons, 1);
    cr_assert_geq(o.abort_ns - t0, timeout, "aborted %.3f s in", (double)(o.abort_ns - t0) / 1e9);
    /* the owner hears of each step a little after the thread took it (a loaded machine: long
     * after), so the grace is measured from the start, which the thread's clock counts from */
    cr_assert_gt(o.abandon_ns, o.abort_ns, "abandoned before it aborted");
    cr_assert_geq(o.abandon_ns - t0, timeout + grace, "abandoned %.3f s in",
                  (double)(o.abandon_ns - t0) / 1e9);
}

Test(stop_deadline, the_thread_calls_nothing_while_nothing_leaves) {
    struct owner o = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct stop_deadline *d;
    cr_assert_eq(stop_deadline_start(&d, 1, 1, &owner_ops, &o), 0);
    pthread_mutex_lock(&o.mu); /* three looks at a 1 ns deadline with nothing leaving */
    while (o.looks < 3)
        pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    stop_deadline_stop(d); /* prompt: the nap ends on the stop */
    cr_assert_eq(o.aborts, 0);
    cr_assert_eq(o.abandons, 0);
}

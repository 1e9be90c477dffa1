/* Quit requests as flags for the UI loop, and a terminal left sane by a crash. */
#include "tui/dashboard/app_signals.h"

#include "backend/core/quit_signal.h"

#include <curses.h>
#include <signal.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

static int app_signals_taken; /* the quit signal app_signals_take gave (UI thread) */
static struct termios app_signals_tty;
static volatile sig_atomic_t app_signals_have_tty;
static char app_signals_leave[256]; /* rmcup, cnorm, sgr0: fixed when installed */
static size_t app_signals_leave_len;

static const int app_signals_crashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

void app_signals_save_tty(void) {
    app_signals_have_tty = tcgetattr(0, &app_signals_tty) == 0;
}

void app_signals_restore_tty(void) {
    if (app_signals_leave_len) {
        ssize_t n = write(1, app_signals_leave, app_signals_leave_len);
        (void)n;
    }
    if (app_signals_have_tty)
        tcsetattr(0, TCSANOW, &app_signals_tty);
}

/* SA_RESETHAND made the disposition the default again: re-raised, the signal kills the process
 * (and dumps core) as it would have without us, once the handler returns. */
static void app_signals_on_crash(int sig) {
    app_signals_restore_tty();
    raise(sig);
}

/* A terminfo string appended to the leave sequence, when the terminal has it. */
static void app_signals_add(const char *cap) {
    char *s = tigetstr((char *)cap);
    if (!s || s == (char *)-1)
        return;
    size_t n = strlen(s);
    if (app_signals_leave_len + n < sizeof(app_signals_leave)) {
        memcpy(app_signals_leave + app_signals_leave_len, s, n);
        app_signals_leave_len += n;
    }
}

void app_signals_install(void) {
    app_signals_leave_len = 0;
    app_signals_add("sgr0");
    app_signals_add("cnorm");
    app_signals_add("rmcup");
    /* the first quit signal is the UI's to act on (app_signals_take); the second leaves at
     * once from the handler, the terminal put back first */
    struct quit_signal_conf q = {.prefix = "ringside: ", .leave = app_signals_restore_tty};
    app_signals_taken = 0;
    quit_signal_install(&q);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = app_signals_on_crash;
    sa.sa_flags = (int)SA_RESETHAND;
    for (size_t i = 0; i < sizeof(app_signals_crashes) / sizeof(app_signals_crashes[0]); i++)
        sigaction(app_signals_crashes[i], &sa, NULL);
}

int app_signals_take(void) {
    if (app_signals_taken || !quit_signal_first())
        return 0;
    return app_signals_taken = quit_signal_first();
}

bool app_signals_waiting(void) {
    return !app_signals_taken && quit_signal_first() != 0;
}

void app_signals_uninstall(void) {
    quit_signal_uninstall();
    for (size_t i = 0; i < sizeof(app_signals_crashes) / sizeof(app_signals_crashes[0]); i++)
        signal(app_signals_crashes[i], SIG_DFL);
    app_signals_leave_len = 0;
}

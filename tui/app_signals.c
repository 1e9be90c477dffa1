/* Quit requests as flags for the UI loop, and a terminal left sane by a crash. */
#include "tui/app_signals.h"

#include <curses.h>
#include <signal.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

static volatile sig_atomic_t app_signals_pending;
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

static void app_signals_on_quit(int sig) {
    app_signals_pending = sig;
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
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = app_signals_on_quit;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = app_signals_on_crash;
    sa.sa_flags = (int)SA_RESETHAND;
    for (size_t i = 0; i < sizeof(app_signals_crashes) / sizeof(app_signals_crashes[0]); i++)
        sigaction(app_signals_crashes[i], &sa, NULL);
}

int app_signals_take(void) {
    int sig = app_signals_pending;
    app_signals_pending = 0;
    return sig;
}

bool app_signals_waiting(void) {
    return app_signals_pending != 0;
}

void app_signals_uninstall(void) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    for (size_t i = 0; i < sizeof(app_signals_crashes) / sizeof(app_signals_crashes[0]); i++)
        signal(app_signals_crashes[i], SIG_DFL);
    app_signals_leave_len = 0;
}

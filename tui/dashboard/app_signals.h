/* Signals while the dashboard owns the terminal: the first quit request (SIGINT, SIGTERM,
 * SIGHUP) becomes a flag the UI loop reads, a second leaves at once (status 130, the terminal
 * put back first, from the handler: backend/core/quit_signal.h); a crash (SIGSEGV, SIGBUS, SIGABRT,
 * SIGFPE, SIGILL) restores the terminal with async-signal-safe calls only and then dies of the same
 * signal. */
#ifndef RINGSIDE_TUI_DASHBOARD_APP_SIGNALS_H
#define RINGSIDE_TUI_DASHBOARD_APP_SIGNALS_H

#include <stdbool.h>

/* Before the terminal is taken: remember its settings (restored by a crash). */
void app_signals_save_tty(void);

/* After curses set up the terminal: install the handlers and keep the strings that leave the
 * alternate screen and show the cursor again. */
void app_signals_install(void);

/* The first quit request, the one time it is asked for after it came: SIGINT, SIGTERM or
 * SIGHUP; else 0. */
int app_signals_take(void);

/* Whether a quit request is waiting (it stays for app_signals_take). */
bool app_signals_waiting(void);

/* Default dispositions again (before the terminal is given back). */
void app_signals_uninstall(void);

/* What the crash handler does, callable directly (tests): restore the saved terminal settings
 * and write the strings that leave curses' screen, with write(2) and tcsetattr(3) only. */
void app_signals_restore_tty(void);

#endif

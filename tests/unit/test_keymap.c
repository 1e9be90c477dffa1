/* The key map: lookups per source, the help lines and footer hints made from the table (pure
 * functions, no terminal), and the table's own consistency. */
#include "tui/dashboard/keymap.h"

#include <criterion/criterion.h>
#include <curses.h>
#include <stdio.h>
#include <string.h>

TestSuite(keymap, .timeout = 10);

static const unsigned km_sources[] = {KEYMAP_LIVE, KEYMAP_REPLAY, KEYMAP_ATTACH};

static bool km_has_key(const struct keymap_row *row, int ch) {
    for (int k = 0; k < KEYMAP_KEYS && row->keys[k]; k++)
        if (row->keys[k] == ch)
            return true;
    return false;
}

/* A word of the space-separated list s equal to w. */
static bool km_has_word(const char *s, const char *w) {
    size_t n = strlen(w);
    for (const char *p = s; (p = strstr(p, w)); p++)
        if ((p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

Test(keymap, every_row_has_keys_an_action_and_a_place) {
    cr_assert_leq(keymap_rows, KEYMAP_ROWS_MAX);
    bool acted[KEYMAP_ACTION_COUNT] = {false};
    for (size_t r = 0; r < keymap_rows; r++) {
        const struct keymap_row *row = &keymap_table[r];
        cr_assert_neq(row->keys[0], 0, "row %zu has no key", r);
        cr_assert_lt((unsigned)row->act, KEYMAP_ACTION_COUNT, "row %zu", r);
        cr_assert_neq(row->where & KEYMAP_ALL, 0, "row %zu applies nowhere", r);
        cr_assert_eq(row->hint_keys != NULL, row->hint != NULL, "row %zu: half a hint", r);
        acted[row->act] = true;
    }
    for (unsigned act = 0; act < KEYMAP_ACTION_COUNT; act++) {
        cr_assert(acted[act], "no key for %s", keymap_action_name(act));
        cr_assert_str_neq(keymap_action_name(act), "?");
    }
    cr_assert_str_eq(keymap_action_name(KEYMAP_ACTION_COUNT), "?");
}

/* Where a source has a key, one row has it: a lookup is never a matter of order. */
Test(keymap, no_key_has_two_rows_in_one_source) {
    for (size_t s = 0; s < 3; s++)
        for (size_t r = 0; r < keymap_rows; r++)
            for (size_t o = r + 1; o < keymap_rows; o++) {
                const struct keymap_row *a = &keymap_table[r], *b = &keymap_table[o];
                if (!(a->where & b->where & km_sources[s]))
                    continue;
                for (int k = 0; k < KEYMAP_KEYS && a->keys[k]; k++)
                    cr_assert_not(km_has_key(b, a->keys[k]), "key %d in rows %zu and %zu",
                                  a->keys[k], r, o);
            }
}

Test(keymap, find_by_key_and_source) {
    cr_assert_eq(keymap_find('q', KEYMAP_LIVE)->act, KEYMAP_QUIT);
    cr_assert_eq(keymap_find('Q', KEYMAP_REPLAY)->act, KEYMAP_QUIT);
    cr_assert_eq(keymap_find('+', KEYMAP_ATTACH)->act, KEYMAP_CHUNK_UP);
    cr_assert_eq(keymap_find('=', KEYMAP_LIVE)->act, KEYMAP_CHUNK_UP);
    cr_assert_eq(keymap_find('-', KEYMAP_REPLAY)->act, KEYMAP_CHUNK_DOWN);
    cr_assert_eq(keymap_find('c', KEYMAP_LIVE)->act, KEYMAP_CLEANUP);
    cr_assert_eq(keymap_find('m', KEYMAP_ATTACH)->act, KEYMAP_PROBE);
    cr_assert_null(keymap_find('c', KEYMAP_REPLAY), "nothing to clean up in a recording");
    cr_assert_null(keymap_find('m', KEYMAP_REPLAY));
    cr_assert_eq(keymap_find('7', KEYMAP_LIVE)->act, KEYMAP_SELECT_GPU);
    cr_assert_eq(keymap_find(KEY_BTAB, KEYMAP_LIVE)->act, KEYMAP_FOCUS_PREV);
    cr_assert_eq(keymap_find(KEY_NPAGE, KEYMAP_LIVE)->act, KEYMAP_PANEL_NAV);
    cr_assert_eq(keymap_find(27, KEYMAP_LIVE)->act, KEYMAP_PANEL_DETAILS);
    cr_assert_eq(keymap_find(KEY_RESIZE, KEYMAP_REPLAY)->act, KEYMAP_RESIZE);
    cr_assert_null(keymap_find('x', KEYMAP_LIVE));
    cr_assert_null(keymap_find(0, KEYMAP_LIVE), "the end of a row's keys is no key");
    const struct keymap_row *p = keymap_find(0x170, KEYMAP_LIVE); /* its low byte is 'p' */
    cr_assert(!p || p->act != KEYMAP_PAUSE, "a curses key code is no 'p'");
    cr_assert_null(keymap_find('q', 0), "a row applies where it says");
}

Test(keymap, sources_by_their_names) {
    cr_assert_eq(keymap_where("live"), KEYMAP_LIVE);
    cr_assert_eq(keymap_where("replay"), KEYMAP_REPLAY);
    cr_assert_eq(keymap_where("attach"), KEYMAP_ATTACH);
    cr_assert_eq(keymap_where(NULL), KEYMAP_LIVE);
}

Test(keymap, the_loop_keys_are_source_actions) {
    static const struct {
        int ch;
        enum source_action act;
    } want[] = {{'p', SOURCE_PAUSE_TOGGLE},
                {'+', SOURCE_CHUNK_UP},
                {'-', SOURCE_CHUNK_DOWN},
                {'c', SOURCE_CLEANUP},
                {'m', SOURCE_PROBE}};
    bool seen[SOURCE_ACTIONS] = {false};
    for (size_t k = 0; k < 5; k++) {
        enum source_action act = SOURCE_ACTIONS;
        cr_assert(keymap_source_action(keymap_find(want[k].ch, KEYMAP_LIVE)->act, &act));
        cr_assert_eq(act, want[k].act, "'%c'", want[k].ch);
        seen[act] = true;
    }
    for (unsigned a = 0; a < SOURCE_ACTIONS; a++)
        cr_assert(seen[a], "source action %u has no key", a);
    enum source_action act;
    cr_assert_not(keymap_source_action(KEYMAP_THEME, &act), "t is the app's own");
    cr_assert_not(keymap_source_action(KEYMAP_QUIT, &act), "q stops through stop()");
}

/* The help screen's lines are the table's: every row with a line and applying to the source
 * has it (the replay's own wording where it has one), labelled with its keys, in table order,
 * and nothing else. */
Test(keymap, help_lines_list_every_row_of_the_source) {
    static char lines[KEYMAP_ROWS_MAX][KEYMAP_HELP_BYTES];
    for (size_t s = 0; s < 3; s++) {
        unsigned where = km_sources[s];
        size_t n = keymap_help_lines(where, lines, KEYMAP_ROWS_MAX), k = 0;
        for (size_t r = 0; r < keymap_rows; r++) {
            const struct keymap_row *row = &keymap_table[r];
            if (!row->help || !(row->where & where))
                continue;
            const char *help =
                where == KEYMAP_REPLAY && row->help_replay ? row->help_replay : row->help;
            cr_assert_lt(k, n, "source %u: no line for '%s'", where, help);
            char want[KEYMAP_HELP_BYTES];
            snprintf(want, sizeof(want), "%-*s", KEYMAP_LABEL_COLS, row->label);
            cr_assert(strncmp(lines[k], want, strlen(want)) == 0, "'%s' for '%s'", lines[k],
                      row->label);
            const char *text = lines[k] + strlen(row->label);
            cr_assert(text[0] == ' ' && strcmp(text + strspn(text, " "), help) == 0,
                      "'%s' is not '%s'", lines[k], help);
            k++;
        }
        cr_assert_eq(k, n, "source %u: %zu lines for %zu rows", where, n, k);
    }
    size_t n = keymap_help_lines(KEYMAP_REPLAY, lines, KEYMAP_ROWS_MAX);
    for (size_t k = 0; k < n; k++)
        cr_assert_not(strstr(lines[k], "cleanup") || strstr(lines[k], "memory probe"),
                      "a replay lists %s", lines[k]);
    cr_assert_eq(keymap_help_lines(KEYMAP_LIVE, lines, 3), 3, "max holds");
}

/* A row without a line of its own is one of a pair its partner's line names ('-' in "+ -"),
 * or no key a user presses: every key a user presses is on the help screen. */
Test(keymap, every_key_is_on_the_help_screen) {
    for (size_t r = 0; r < keymap_rows; r++) {
        const struct keymap_row *row = &keymap_table[r];
        if (row->help || row->act == KEYMAP_RESIZE)
            continue;
        cr_assert_gt(r, 0);
        const struct keymap_row *partner = &keymap_table[r - 1];
        cr_assert_not_null(partner->help, "row %zu ('%s')", r, row->label);
        cr_assert(km_has_word(partner->label, row->label), "'%s' does not name '%s'",
                  partner->label, row->label);
        cr_assert_eq(partner->where, row->where, "'%s' and '%s'", partner->label, row->label);
    }
}

/* The footer is the table's hints, as it has always read. */
Test(keymap, footer_hints_per_source) {
    char buf[256];
    const char *live = " q quit  p pause  +/- chunk  c cleanup  </> zoom  Tab focus  Enter "
                       "details  f freeze  t theme  ? help";
    int len = keymap_footer(KEYMAP_LIVE, buf, sizeof(buf));
    cr_assert_str_eq(buf, live);
    cr_assert_eq(len, (int)strlen(live));
    keymap_footer(KEYMAP_ATTACH, buf, sizeof(buf));
    cr_assert_str_eq(buf, live);
    keymap_footer(KEYMAP_REPLAY, buf, sizeof(buf));
    cr_assert_str_eq(buf, " q quit  p pause  +/- speed  </> zoom  Tab focus  Enter details  f "
                          "freeze  t theme  ? help");
    char small[8];
    cr_assert_eq(keymap_footer(KEYMAP_LIVE, small, sizeof(small)), (int)strlen(live));
    cr_assert_str_eq(small, " q quit");
    struct keymap_hint hints[KEYMAP_ROWS_MAX];
    for (size_t s = 0; s < 3; s++) {
        size_t n = keymap_hints(km_sources[s], hints, KEYMAP_ROWS_MAX), loop = 0;
        for (size_t k = 0; k < n; k++)
            if (hints[k].loop) {
                loop++;
                cr_assert(strchr("p+c", hints[k].keys[0]), "%s", hints[k].keys);
            }
        cr_assert_eq(loop, km_sources[s] == KEYMAP_REPLAY ? 0 : 3, "source %u", km_sources[s]);
    }
}

/* The overlays' scroll keys, one move each; any other key is not one. */
Test(keymap, scroll_keys_of_the_overlays) {
    static const struct {
        int key;
        enum textview_move move;
    } want[] = {{KEY_UP, TEXTVIEW_UP},         {KEY_DOWN, TEXTVIEW_DOWN},
                {KEY_PPAGE, TEXTVIEW_PAGE_UP}, {KEY_NPAGE, TEXTVIEW_PAGE_DOWN},
                {KEY_HOME, TEXTVIEW_HOME},     {KEY_END, TEXTVIEW_END}};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        enum textview_move m = (enum textview_move) - 1;
        cr_assert(keymap_scroll(want[k].key, &m), "key %d", want[k].key);
        cr_assert_eq(m, want[k].move, "key %d", want[k].key);
    }
    enum textview_move m = TEXTVIEW_UP;
    static const int others[] = {KEY_LEFT, KEY_RIGHT, '\t', '\n', 27, 'q', 'j', ' '};
    for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++)
        cr_assert_not(keymap_scroll(others[k], &m), "key %d", others[k]);
}

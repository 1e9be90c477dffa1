/* The dashboard model's parts shared between its files. */
#ifndef RINGSIDE_TUI_VIEW_UI_MODEL_INTERNAL_H
#define RINGSIDE_TUI_VIEW_UI_MODEL_INTERNAL_H

#include "tui/view/ui_model.h"

/* Add an entry to the events list (a repeat of the newest but for its numbers replaces it and
 * counts the repeat). */
void ui_model_list_add(struct ui_model *m, struct ui_event *u);

/* Fold a kernel-log event: the list entry, the timeline marker, its ring's seq gaps. */
void ui_model_kmsg(struct ui_model *m, const struct ev *e);

#endif

/* Names of the kernel-log categories, vendors and sources, and the categories' labels and
 * letters, generated from the X-macro lists. */
#include "backend/kmsg/kmsg.h"

#include <string.h>

#define KMSG_NAME_ENTRY(id, name) name,

#define KMSG_CAT_NAME(id, name, label, letter)   name,
#define KMSG_CAT_LABEL(id, name, label, letter)  label,
#define KMSG_CAT_LETTER(id, name, label, letter) letter[0],

#define KMSG_CAT_ONE_LETTER(id, name, label, letter)                                               \
    _Static_assert(sizeof(letter) == 2, "category " name ": one letter");
KMSG_CATEGORIES(KMSG_CAT_ONE_LETTER)

static const char *const kmsg_category_names[] = {KMSG_CATEGORIES(KMSG_CAT_NAME)};
static const char *const kmsg_category_labels[] = {KMSG_CATEGORIES(KMSG_CAT_LABEL)};
static const char kmsg_category_letters[] = {KMSG_CATEGORIES(KMSG_CAT_LETTER)};

const char *kmsg_category_name(unsigned c) {
    return c < KMSG_CAT_COUNT ? kmsg_category_names[c] : "?";
}

const char *kmsg_category_label(unsigned c) {
    return c < KMSG_CAT_COUNT ? kmsg_category_labels[c] : "?";
}

char kmsg_category_letter(unsigned c) {
    return c < KMSG_CAT_COUNT ? kmsg_category_letters[c] : '?';
}

const char *kmsg_source_name(unsigned s) {
    static const char *const names[] = {KMSG_SOURCES(KMSG_NAME_ENTRY)};
    return s < KMSG_SRC_COUNT ? names[s] : "?";
}

const char *kmsg_vendor_name(unsigned v) {
    static const char *const names[] = {KMSG_VENDORS(KMSG_NAME_ENTRY)};
    return v < KMSG_VENDOR_COUNT ? names[v] : "?";
}

int kmsg_category_from_name(const char *name) {
    for (unsigned i = 0; i < KMSG_CAT_COUNT; i++)
        if (strcmp(kmsg_category_name(i), name) == 0)
            return (int)i;
    return -1;
}

int kmsg_vendor_from_name(const char *name) {
    for (unsigned i = 1; i < KMSG_VENDOR_COUNT; i++)
        if (strcmp(kmsg_vendor_name(i), name) == 0)
            return (int)i;
    return -1;
}

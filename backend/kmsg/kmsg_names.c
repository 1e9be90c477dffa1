/* Names of the kernel-log categories and vendors, generated from the X-macro lists. */
#include "backend/kmsg/kmsg.h"

#include <string.h>

#define KMSG_NAME_ENTRY(id, name) name,

const char *kmsg_category_name(unsigned c) {
    static const char *const names[] = {KMSG_CATEGORIES(KMSG_NAME_ENTRY)};
    return c < KMSG_CAT_COUNT ? names[c] : "?";
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

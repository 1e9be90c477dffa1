/* The kernel-log vocabulary's names and the Xid catalogue (the types are in
 * backend/core/kmsg_event.h, since every event can carry a kernel-log event). */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_H
#define RINGSIDE_BACKEND_KMSG_KMSG_H

#include "backend/core/kmsg_event.h"

const char *kmsg_category_name(unsigned c);
const char *kmsg_vendor_name(unsigned v);
const char *kmsg_source_name(unsigned s);
/* A category's label in the dashboard's list ("ring timeout"; "driver" for none) and its
 * letter on the timeline (T ring timeout, M MES, R reset, P page fault, S sq_intr, K KFD,
 * X Xid, ! fatal, D other driver failure; ' ' for none); "?" and '?' out of range. */
const char *kmsg_category_label(unsigned c);
char kmsg_category_letter(unsigned c);
/* Reverse lookups; -1 when unknown. */
int kmsg_category_from_name(const char *name);
int kmsg_vendor_from_name(const char *name);

/* What an NVIDIA Xid number means (NVIDIA's Xid catalogue), and the severity ringside gives it;
 * NULL / SEV_WARNING for a number it does not know. */
const char *kmsg_xid_meaning(unsigned xid);
int kmsg_xid_severity(unsigned xid);

#endif

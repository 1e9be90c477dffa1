/* Time zones for exports written in exchange-local time (--tz): an IANA zone read from the
 * system's compiled zone files (TZif, RFC 8536), so a local wall-clock time becomes UTC with
 * the daylight-saving rules of its date. Everything inside ringside stays UTC. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_TZ_H
#define RINGSIDE_BACKEND_DATA_DATA_TZ_H

#include <stddef.h>
#include <stdint.h>

struct data_tz;

/* Open zone name ("America/Chicago", "Europe/London") from $TZDIR or /usr/share/zoneinfo; "UTC"
 * and "Etc/UTC" need no file. 0; -ENOENT (no such zone: err says where it looked and that tzdata
 * provides the files), -EINVAL (a name with "..", or a file that is not a zone file), or
 * -ENOMEM. */
int data_tz_open(const char *name, struct data_tz **out, char *err, size_t errlen);
void data_tz_close(struct data_tz *tz);

/* UTC seconds of the local wall-clock time local_s (seconds since 1970-01-01 00:00 as if the
 * local time were UTC). A time that occurs twice (the hour the clocks go back) is the first
 * of its two instants after after_utc_s (pass INT64_MIN for the earlier): bars in order stay in
 * order across the change. 0 and *utc_s; -ERANGE for a time the clocks skipped (the hour they
 * go forward). */
int data_tz_to_utc(const struct data_tz *tz, int64_t local_s, int64_t after_utc_s, int64_t *utc_s);

/* The zone's UTC offset in seconds at UTC time utc_s (east positive). */
int32_t data_tz_offset(const struct data_tz *tz, int64_t utc_s);

#endif

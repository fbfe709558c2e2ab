/*
 * explain_show.c -- `simhash explain`'s answer for a reader: the node's
 * JSON (or the snapshot's, made the same way) as aligned "name  value"
 * lines, one object a block, nested ones indented under their name.
 *
 * The printing follows the JSON rather than a list of known fields, so a
 * field the node adds is shown without a change here; only the units are
 * known by name: Unix times (now, time, since, restored, *_time, *_at)
 * are printed as a UTC date and an age relative to the answer's own "now"
 * (the node's clock, not this machine's), "age" as a duration, null as
 * "none", booleans as yes and no.  Parsed with Debian's libjansson rather
 * than by hand: the answer is the node's, and a parser of our own would be
 * one more thing to fuzz.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "explain_show.h"

static int
ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

static int
is_time(const char *name)
{
    return strcmp(name, "now") == 0 || strcmp(name, "time") == 0
           || strcmp(name, "since") == 0 || strcmp(name, "restored") == 0
           || ends_with(name, "_time") || ends_with(name, "_at");
}

/* "9 s", "14 min", "3 h", "2 days": the largest unit that fits twice */
void
explain_duration(long long s, char *buf, size_t size)
{
    if (s < 0) {
        s = 0;
    }
    if (s < 120) {
        snprintf(buf, size, "%lld s", s);
    } else if (s < 2 * 3600) {
        snprintf(buf, size, "%lld min", s / 60);
    } else if (s < 2 * 86400) {
        snprintf(buf, size, "%lld h", s / 3600);
    } else {
        snprintf(buf, size, "%lld days", s / 86400);
    }
}

static void
show_time(long long t, long long now, FILE *out)
{
    char       date[64], age[32];
    time_t     tt = (time_t) t;
    struct tm  tm;

    if (t <= 0) {
        fputs("never", out);
        return;
    }
    if (gmtime_r(&tt, &tm) == NULL
        || strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    {
        fprintf(out, "%lld", t);
        return;
    }
    fputs(date, out);
    if (now > 0 && t <= now) {
        explain_duration(now - t, age, sizeof(age));
        fprintf(out, " (%s ago)", age);
    } else if (now > 0) {
        explain_duration(t - now, age, sizeof(age));
        fprintf(out, " (in %s)", age);
    }
}

static void
show_scalar(const char *name, json_t *v, long long now, FILE *out)
{
    char buf[32];

    switch (json_typeof(v)) {
    case JSON_STRING:
        fputs(json_string_value(v), out);
        break;
    case JSON_INTEGER:
        if (is_time(name)) {
            show_time((long long) json_integer_value(v), now, out);
        } else if (strcmp(name, "age") == 0) {
            explain_duration((long long) json_integer_value(v), buf,
                             sizeof(buf));
            fputs(buf, out);
        } else {
            fprintf(out, "%lld", (long long) json_integer_value(v));
        }
        break;
    case JSON_REAL:
        /* a score in nats as X-Simhash-Score writes it, four decimals */
        fprintf(out, strcmp(name, "score") == 0 ? "%.4f" : "%.4g",
                json_real_value(v));
        break;
    case JSON_TRUE:
        fputs("yes", out);
        break;
    case JSON_FALSE:
        fputs("no", out);
        break;
    case JSON_NULL:
        fputs("none", out);
        break;
    default:
        break;
    }
}

/* names as words: last_decision -> last decision */
static void
show_name(const char *name, int indent, int width, FILE *out)
{
    int n = 0;

    fprintf(out, "%*s", indent, "");
    for (; *name; name++, n++) {
        fputc(*name == '_' ? ' ' : *name, out);
    }
    if (width > 0) {
        fprintf(out, "%*s", width - n + 2, "");
    }
}

static int
is_list_of_scalars(json_t *a)
{
    size_t  i;
    json_t *e;

    json_array_foreach(a, i, e) {
        if (json_is_object(e) || json_is_array(e)) {
            return 0;
        }
    }
    return 1;
}

static void show_object(json_t *o, int indent, long long now, FILE *out);

static void
show_array(const char *name, json_t *a, int indent, int width, long long now,
           FILE *out)
{
    size_t  i;
    json_t *e;

    show_name(name, indent, json_array_size(a) == 0
                            || is_list_of_scalars(a) ? width : 0, out);
    if (json_array_size(a) == 0) {
        fputs("none\n", out);
        return;
    }
    if (is_list_of_scalars(a)) {
        json_array_foreach(a, i, e) {
            fputs(i ? ", " : "", out);
            show_scalar(name, e, now, out);
        }
        fputc('\n', out);
        return;
    }
    fprintf(out, " (%zu)\n", json_array_size(a));
    json_array_foreach(a, i, e) {
        if (json_is_object(e)) {
            fprintf(out, "%*s%zu.\n", indent + 2, "", i + 1);
            show_object(e, indent + 4, now, out);
        } else {
            fprintf(out, "%*s%zu. ", indent + 2, "", i + 1);
            show_scalar(name, e, now, out);
            fputc('\n', out);
        }
    }
}

static void
show_object(json_t *o, int indent, long long now, FILE *out)
{
    const char *name;
    json_t     *v;
    int         width = 0, n;

    json_object_foreach(o, name, v) {
        n = (int) strlen(name);
        width = n > width ? n : width;
    }
    json_object_foreach(o, name, v) {
        if (json_is_object(v)) {
            show_name(name, indent, 0, out);
            fputc('\n', out);
            show_object(v, indent + 2, now, out);
        } else if (json_is_array(v)) {
            show_array(name, v, indent, width, now, out);
        } else {
            show_name(name, indent, width, out);
            show_scalar(name, v, now, out);
            fputc('\n', out);
        }
    }
}

void
explain_show(const char *title, json_t *answer, FILE *out)
{
    json_t    *now = json_object_get(answer, "now");
    long long  t = json_is_integer(now) ? (long long) json_integer_value(now)
                                        : (long long) time(NULL);

    if (title != NULL) {
        fprintf(out, "%s\n", title);
    }
    show_object(answer, title != NULL ? 2 : 0, t, out);
}

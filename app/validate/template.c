/* `pbf validate`: the reports' text templates (template.h). */
#define _POSIX_C_SOURCE 200809L

#include "validate_template.h"

#include <string.h>

static const tvalue *find_value(const tvalue *v, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; ++i)
        if (strlen(v[i].name) == len && strncmp(v[i].name, name, len) == 0) return &v[i];
    return NULL;
}

/* One placeholder: {NAME} or {NAME:FORMAT}; the format's conversion must be the value's type. */
static void put_value(FILE *f, const tvalue *t, const char *spec, size_t slen) {
    char fmt[32];
    if (slen == 0 || slen >= sizeof fmt) {
        snprintf(fmt, sizeof fmt, "%s", t->type == 'd' ? "%d" : t->type == 's' ? "%s" : "%g");
    } else {
        memcpy(fmt, spec, slen);
        fmt[slen] = '\0';
    }
    char conv = fmt[strlen(fmt) - 1];
    int ok = conv == 'd' ? t->type == 'd' : conv == 's' ? t->type == 's' : t->type == 'f';
    if (!ok)
        fprintf(f, "{%s: not a %c}", t->name, conv); /* a template error, never in a report */
    else if (t->type == 'd')
        fprintf(f, fmt, t->i);
    else if (t->type == 's')
        fprintf(f, fmt, t->s);
    else
        fprintf(f, fmt, t->d);
}

void template_write(FILE *f, const char *text, const tvalue *v, size_t n) {
    const char *p = text;
    while (*p) {
        const char *open = strchr(p, '{');
        if (!open) {
            fputs(p, f);
            return;
        }
        const char *close = strchr(open, '}');
        size_t len = close ? strcspn(open + 1, ":}") : 0;
        const tvalue *t = close ? find_value(v, n, open + 1, len) : NULL;
        fwrite(p, 1, (size_t)(open - p), f);
        if (!t) { /* not a placeholder: the brace itself */
            fputc('{', f);
            p = open + 1;
            continue;
        }
        const char *spec = open + 1 + len;
        put_value(f, t, *spec == ':' ? spec + 1 : spec,
                  *spec == ':' ? (size_t)(close - spec - 1) : 0);
        p = close + 1;
    }
}

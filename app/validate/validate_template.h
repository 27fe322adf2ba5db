/*
 * `pbf validate`'s report templates: a report's fixed text is data, with placeholders {NAME} or
 * {NAME:FORMAT} (a printf conversion of one value: %.3f, %+.1f, %d, %s) filled from a table of
 * named values. Text outside the placeholders is written as it is ("%" is a percent sign).
 */
#ifndef PBFAPP_VALIDATE_TEMPLATE_H
#define PBFAPP_VALIDATE_TEMPLATE_H

#include <stddef.h>
#include <stdio.h>

/* A named value: type 'f' (d), 'd' (i) or 's' (s). */
typedef struct tvalue {
    const char *name;
    char type;
    double d;
    int i;
    const char *s;
} tvalue;

#define TV_F(name, v)                                                                              \
    { (name), 'f', (double)(v), 0, NULL }
#define TV_D(name, v)                                                                              \
    { (name), 'd', 0.0, (int)(v), NULL }
#define TV_S(name, v)                                                                              \
    { (name), 's', 0.0, 0, (v) }

/* Writes text with its placeholders filled from v[0..n). */
void template_write(FILE *f, const char *text, const tvalue *v, size_t n);

#endif /* PBFAPP_VALIDATE_TEMPLATE_H */

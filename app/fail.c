#include "fail.h"

#include <stdarg.h>
#include <stdio.h>

pbf_status pbfapp_fail(pbf_error *err, pbf_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

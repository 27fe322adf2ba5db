/*
 * The ground floor: error reporting (pbf_set_error) and the status strings of the public API.
 * Every layer above may call it; it calls nothing of the library.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

void pbf_set_error(pbf_error *err, pbf_status status, const char *fmt, ...) {
    if (!err) return;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

const char *pbf_status_string(pbf_status status) {
    switch (status) {
    case PBF_OK: return "ok";
    case PBF_ERR_INVALID_ARGUMENT: return "invalid argument";
    case PBF_ERR_OUT_OF_MEMORY: return "out of memory";
    case PBF_ERR_LIMIT: return "limit exceeded";
    case PBF_ERR_IO: return "input/output error";
    }
    return "unknown status";
}

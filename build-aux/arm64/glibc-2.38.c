// SPDX-License-Identifier: MIT
// The four glibc 2.38 functions that Debian sid's arm64 Swift static runtime (built against
// glibc 2.38+) calls, for a gattd linked against Debian 12's glibc 2.36 (scripts/build-arm64).
// glibc 2.38 redirects strtol/strtoll/sscanf to their C23 variants, which differ only in
// also accepting a "0b" binary prefix; the runtime parses environment variables with them
// (SWIFT_DEBUG_*, LIBDISPATCH_*), never binary literals, so the C99 functions answer alike.
// strlcpy is new in 2.38 and written out here (libdispatch uses it for a debug string).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *nptr, char **endptr, int base) {
    return strtol(nptr, endptr, base);
}

long long __isoc23_strtoll(const char *nptr, char **endptr, int base) {
    return strtoll(nptr, endptr, base);
}

int __isoc23_sscanf(const char *str, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int result = vsscanf(str, format, arguments);
    va_end(arguments);
    return result;
}

size_t strlcpy(char *destination, const char *source, size_t size) {
    size_t length = strlen(source);
    if (size > 0) {
        size_t copied = length < size - 1 ? length : size - 1;
        memcpy(destination, source, copied);
        destination[copied] = '\0';
    }
    return length;
}

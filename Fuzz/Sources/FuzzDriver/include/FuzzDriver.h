#ifndef FUZZ_DRIVER_H
#define FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's own driver, from the runtime `-sanitize=fuzzer` links. Each target's main
/// calls it, rather than taking libFuzzer's `main`: SwiftPM renames an executable's entry
/// point in debug builds, which a target with no `main` of its own cannot satisfy.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif

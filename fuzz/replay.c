/* replay.c: a fuzz target's entry point run without libFuzzer, on the files
 * named and on generated inputs, so that the fuzzers' checks (the tables
 * against their model, the pool's blocks against their marks, khl_check and
 * khl_pool_check) run where libFuzzer and the sanitizers do not: another
 * word size and another byte order, built by a cross compiler and run under
 * qemu-user (make check-cross).
 *
 *     replay [-n COUNT] [-s SEED] [FILE...]
 *
 * The files first, then COUNT inputs of pseudo-random bytes (1 to 4 KiB,
 * from support/prng.h, so the same SEED gives the same inputs on every
 * machine).  Both targets read any bytes as a program, so random ones are
 * valid inputs.  A failed check aborts; the input that failed is then
 * written to replay-crash, to be run again by the libFuzzer build. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/prng.h"

#define REPLAY_MAX (1u << 20)
#define REPLAY_GENERATED_MAX 4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t input[REPLAY_MAX];
static size_t input_size;

/* On a failed check (abort) or a crash: only calls that are safe in a
 * signal handler, then the signal again, unhandled. */
static void save_input(int sig)
{
    static const char said[] = "replay: the failing input is in replay-crash\n";
    int fd = open("replay-crash", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && write(fd, input, input_size) == (ssize_t)input_size &&
        write(STDERR_FILENO, said, sizeof said - 1) > 0) {
    }
    if (fd >= 0)
        close(fd);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    input_size = fread(input, 1, sizeof input, f);
    fclose(f);
    LLVMFuzzerTestOneInput(input, input_size);
    return 0;
}

static void replay_generated(uint64_t *state)
{
    input_size = 1 + (size_t)(prng_next(state) % REPLAY_GENERATED_MAX);
    for (size_t i = 0; i < input_size; i += 8) {
        uint64_t w = prng_next(state);
        for (size_t j = 0; j < 8 && i + j < input_size; ++j)
            input[i + j] = (uint8_t)(w >> (8 * j));
    }
    LLVMFuzzerTestOneInput(input, input_size);
}

int main(int argc, char **argv)
{
    unsigned long count = 0;
    uint64_t state = 1;
    int i = 1, files = 0;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "-n"))
            count = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "-s"))
            state = strtoull(argv[i + 1], NULL, 10);
        else
            break;
    }
    if (i < argc && argv[i][0] == '-') {
        fprintf(stderr, "usage: %s [-n COUNT] [-s SEED] [FILE...]\n", argv[0]);
        return 2;
    }
    signal(SIGABRT, save_input);
    signal(SIGSEGV, save_input);
    for (; i < argc; ++i, ++files)
        if (replay_file(argv[i]) < 0)
            return 2;
    for (unsigned long n = 0; n < count; ++n)
        replay_generated(&state);
    printf("replay: %d files and %lu generated inputs passed\n", files, count);
    return 0;
}

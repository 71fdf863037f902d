/* The chaos run's wall-clock step (benches/chaos.py), preloaded into one gearwheel server:
 * CLOCK_REALTIME (and its coarse variant) read through clock_gettime is shifted by the
 * signed milliseconds stored in the 8 bytes of the file $CHAOS_CLOCK_FILE, read at every
 * call, so the script steps the running server's clock forward and back by writing the file,
 * as an NTP step would. The monotonic clocks are untouched, as a real step leaves them.
 * Built by the script: cc -shared -fPIC -O2 -o libchaosclock.so chaos_clock.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static volatile int64_t *offset_ms;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *path = getenv("CHAOS_CLOCK_FILE");
    if (path == NULL)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED)
        offset_ms = (volatile int64_t *)m;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    pthread_once(&once, init);
    if (real_clock_gettime == NULL)
        return -1;
    int r = real_clock_gettime(id, ts);
    if (r == 0 && offset_ms != NULL && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + *offset_ms * 1000000;
        ts->tv_sec = ns / 1000000000;
        ts->tv_nsec = ns % 1000000000;
    }
    return r;
}

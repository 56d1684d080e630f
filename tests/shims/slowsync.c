/* A slow disk where dm-delay or FUSE cannot be had: preloaded, every fsync and fdatasync of the
 * process waits CUZK_SLOW_SYNC_MS milliseconds (a -D at build time) before it is made. Used by
 * tests/reliability.rs and by docs/measurements/2026-12-07-load/slow-disk.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
int fsync(int fd) {
    if (!real_fsync) real_fsync = dlsym(RTLD_NEXT, "fsync");
    usleep(CUZK_SLOW_SYNC_MS * 1000);
    return real_fsync(fd);
}
int fdatasync(int fd) {
    if (!real_fdatasync) real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    usleep(CUZK_SLOW_SYNC_MS * 1000);
    return real_fdatasync(fd);
}

/* Crash points for the crash-test harness (tests/crash.rs), preloaded into `cuzk serve`.
 *
 * Every step by which the process changes files under $CUZK_CRASH_DIR is an event, numbered from
 * 1 in the order the process makes them: a write to a file there (write, pwrite), an fsync or
 * fdatasync of one, a rename, unlink, mkdir or rmdir there. With $CUZK_CRASH_TRACE set, each
 * event is appended to that file as "N kind path". With $CUZK_CRASH_AT=N, the process kills
 * itself with SIGKILL at event N, before the step is made; a write is torn first (half of its
 * bytes written), as a process killed inside a write would leave it. Nothing else changes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long crash_at = -1;
static long events = 0;
static char dir[PATH_MAX];
static size_t dir_len = 0;
static int trace_fd = -1;
static int ready = 0;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_rmdir)(const char *);

__attribute__((constructor)) static void init(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    real_mkdir = dlsym(RTLD_NEXT, "mkdir");
    real_mkdirat = dlsym(RTLD_NEXT, "mkdirat");
    real_rmdir = dlsym(RTLD_NEXT, "rmdir");
    const char *d = getenv("CUZK_CRASH_DIR");
    if (d && realpath(d, dir)) {
        dir_len = strlen(dir);
    } else if (d) {
        /* Not made yet: the service makes it. */
        strncpy(dir, d, sizeof dir - 1);
        dir_len = strlen(dir);
    }
    const char *at = getenv("CUZK_CRASH_AT");
    if (at) crash_at = atol(at);
    const char *trace = getenv("CUZK_CRASH_TRACE");
    if (trace) trace_fd = open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ready = 1;
}

/* Whether `path` (absolute, or relative to `at`: a directory fd or AT_FDCWD) lies under the
 * crash dir; its absolute form in `out`. */
static int under(int at, const char *path, char *out) {
    if (!ready || dir_len == 0 || !path) return 0;
    if (path[0] == '/') {
        snprintf(out, PATH_MAX, "%s", path);
    } else {
        char base[PATH_MAX], link[64];
        ssize_t n;
        if (at == AT_FDCWD) {
            if (!getcwd(base, sizeof base)) return 0;
            n = (ssize_t)strlen(base);
        } else {
            snprintf(link, sizeof link, "/proc/self/fd/%d", at);
            n = readlink(link, base, sizeof base - 1);
            if (n < 0) return 0;
            base[n] = 0;
        }
        if (snprintf(out, PATH_MAX, "%.2047s/%.2047s", base, path) >= PATH_MAX) return 0;
    }
    return strncmp(out, dir, dir_len) == 0 && (out[dir_len] == '/' || out[dir_len] == 0);
}

static int fd_under(int fd, char *out) {
    char link[64];
    struct stat st;
    if (!ready || dir_len == 0 || fstat(fd, &st) != 0 ||
        (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, PATH_MAX - 1);
    if (n < 0) return 0;
    out[n] = 0;
    return strncmp(out, dir, dir_len) == 0 && (out[dir_len] == '/' || out[dir_len] == 0);
}

/* Counts an event; returns 1 when the process must die at it (the caller tears its write
 * first, then calls die()). */
static int event(const char *kind, const char *path) {
    long n = __atomic_add_fetch(&events, 1, __ATOMIC_SEQ_CST);
    int now = n == crash_at;
    if (trace_fd >= 0) {
        char line[PATH_MAX + 64];
        int len = snprintf(line, sizeof line, "%ld %s %s%s\n", n, kind, path, now ? " KILL" : "");
        if (len > (int)sizeof line - 1) len = sizeof line - 1;
        real_write(trace_fd, line, (size_t)len);
    }
    return now;
}

static void die(void) {
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

ssize_t write(int fd, const void *buf, size_t count) {
    char p[PATH_MAX];
    if (count > 0 && fd_under(fd, p) && event("write", p)) {
        if (count > 1) real_write(fd, buf, count / 2);
        die();
    }
    return real_write(fd, buf, count);
}

static ssize_t pwrite_with(ssize_t (*real)(int, const void *, size_t, off_t), int fd,
                           const void *buf, size_t count, off_t offset) {
    char p[PATH_MAX];
    if (count > 0 && fd_under(fd, p) && event("write", p)) {
        if (count > 1) real(fd, buf, count / 2, offset);
        die();
    }
    return real(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    return pwrite_with(real_pwrite, fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    return pwrite_with(real_pwrite64, fd, buf, count, offset);
}

int fsync(int fd) {
    char p[PATH_MAX];
    if (fd_under(fd, p) && event("fsync", p)) die();
    return real_fsync(fd);
}

int fdatasync(int fd) {
    char p[PATH_MAX];
    if (fd_under(fd, p) && event("fdatasync", p)) die();
    return real_fdatasync(fd);
}

int rename(const char *from, const char *to) {
    char p[PATH_MAX];
    if (under(AT_FDCWD, to, p) && event("rename", p)) die();
    return real_rename(from, to);
}

int renameat(int fromdir, const char *from, int todir, const char *to) {
    char p[PATH_MAX];
    if (under(todir, to, p) && event("rename", p)) die();
    return real_renameat(fromdir, from, todir, to);
}

int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags) {
    char p[PATH_MAX];
    if (under(todir, to, p) && event("rename", p)) die();
    return real_renameat2(fromdir, from, todir, to, flags);
}

int unlink(const char *path) {
    char p[PATH_MAX];
    if (under(AT_FDCWD, path, p) && event("unlink", p)) die();
    return real_unlink(path);
}

int unlinkat(int at, const char *path, int flags) {
    char p[PATH_MAX];
    if (under(at, path, p) && event((flags & AT_REMOVEDIR) ? "rmdir" : "unlink", p)) die();
    return real_unlinkat(at, path, flags);
}

int mkdir(const char *path, mode_t mode) {
    char p[PATH_MAX];
    if (under(AT_FDCWD, path, p) && event("mkdir", p)) die();
    return real_mkdir(path, mode);
}

int mkdirat(int at, const char *path, mode_t mode) {
    char p[PATH_MAX];
    if (under(at, path, p) && event("mkdir", p)) die();
    return real_mkdirat(at, path, mode);
}

int rmdir(const char *path) {
    char p[PATH_MAX];
    if (under(AT_FDCWD, path, p) && event("rmdir", p)) die();
    return real_rmdir(path);
}

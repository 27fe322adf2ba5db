/* Work in a forked child (see jobs.h). */
#define _POSIX_C_SOURCE 200809L

#include "run/jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <unistd.h>

/* Writes all of buf to fd (retrying on EINTR); 1 on success. */
static int write_all(int fd, const void *buf, size_t size) {
    const char *p = buf;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        p += n;
        size -= (size_t)n;
    }
    return 1;
}

/* Reads up to size bytes from fd into buf until end of file (retrying on EINTR); the count. */
static size_t read_all(int fd, void *buf, size_t size) {
    char *p = buf;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, p + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got;
}

/* In a new child of `parent`: end with it (SIGTERM when it ends; at once if it already has). */
static void die_with(pid_t parent) {
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    if (getppid() != parent) _exit(143);
}

/* fork() after flushing stdio; the child dies with this process. */
static pid_t job_fork(void) {
    const pid_t parent = getpid();
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) die_with(parent);
    return pid;
}

pid_t pbfapp_job_start(int (*fn)(void *arg), void *arg) {
    const pid_t pid = job_fork();
    if (pid == 0) _exit(fn(arg));
    return pid;
}

pid_t pbfapp_job_exec(const char *path, char *const argv[], int stdin_fd, int *error) {
    extern char **environ;
    int fd[2]; /* exec's errno comes back on it; closed by a successful exec */
    if (pipe(fd) != 0) {
        *error = errno;
        return -1;
    }
    fcntl(fd[1], F_SETFD, FD_CLOEXEC);
    const pid_t pid = job_fork();
    if (pid < 0) {
        *error = errno;
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) { /* only async-signal-safe calls from here: the parent may have threads */
        close(fd[0]);
        setpgid(0, 0);
        if (stdin_fd != 0) {
            dup2(stdin_fd, 0);
            close(stdin_fd);
        }
        execve(path, argv, environ);
        int e = errno;
        (void)!write(fd[1], &e, sizeof e);
        _exit(127);
    }
    close(fd[1]);
    int e = 0;
    ssize_t n;
    do {
        n = read(fd[0], &e, sizeof e);
    } while (n < 0 && errno == EINTR);
    close(fd[0]);
    if (n == (ssize_t)sizeof e) { /* exec failed: the child has ended */
        int status = 0;
        pbfapp_job_wait(pid, &status);
        *error = e;
        return -1;
    }
    return pid;
}

pid_t pbfapp_job_wait(pid_t pid, int *status) {
    pid_t w;
    do {
        w = waitpid(pid, status, 0);
    } while (w < 0 && errno == EINTR);
    return w;
}

int pbfapp_job_run(void (*fn)(void *arg, void *result), void *arg, void *result, size_t size,
                   pbfapp_job_outcome *outcome) {
    memset(outcome, 0, sizeof *outcome);
    int fd[2];
    if (pipe(fd) != 0) {
        outcome->failed = "pipe";
        outcome->error = errno;
        return 0;
    }
    pid_t pid = job_fork();
    if (pid < 0) {
        outcome->failed = "fork";
        outcome->error = errno;
        close(fd[0]);
        close(fd[1]);
        return 0;
    }
    if (pid == 0) {
        close(fd[0]);
        void *res = malloc(size ? size : 1);
        const int ok = res && (fn(arg, res), write_all(fd[1], res, size));
        close(fd[1]);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    const size_t got = read_all(fd[0], result, size);
    close(fd[0]);
    int status = 0;
    pbfapp_job_wait(pid, &status);
    outcome->status = status;
    return got == size;
}

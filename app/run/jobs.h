/*
 * Work in a child process of its own (fork): its memory, threads and device runtimes stay out of
 * the parent, which keeps no OpenMP pool or device open across forks (`pbf bench` measures each
 * run and the machine's limits this way; `pbf validate` runs its cases and gnuplot so). The
 * child's result, plain data without pointers, comes back through a pipe, or its exit status is
 * the result. A child dies with the process that started it (Linux: SIGTERM when its parent
 * ends), so that stopping a command stops its jobs.
 */
#ifndef PBFAPP_JOBS_H
#define PBFAPP_JOBS_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a job ended when it gave no whole result. */
typedef struct pbfapp_job_outcome {
    const char *failed; /* "pipe" or "fork" when the job could not start (error: its errno) */
    int error;
    int status; /* the child's wait status (WIFEXITED, WIFSIGNALED...) */
} pbfapp_job_outcome;

/* Runs fn(arg, result) in a forked child (stdio flushed first) and copies the `size` bytes it
 * leaves in its result into `result`. Returns 1 when they all came back; else 0, with *outcome
 * saying why (result untouched when the job could not start, else partly overwritten). */
int pbfapp_job_run(void (*fn)(void *arg, void *result), void *arg, void *result, size_t size,
                   pbfapp_job_outcome *outcome);

/* Starts fn(arg) in a forked child (stdio flushed first) whose exit status is fn's return
 * value; returns its pid, or -1 (errno set). Several may run at once (pbf validate --jobs N). */
pid_t pbfapp_job_start(int (*fn)(void *arg), void *arg);

/* Runs the program `path` (argv, the environment) in a child that dies with this process
 * (SIGTERM when it ends, also by SIGKILL), in a process group of its own (Ctrl-C reaches this
 * process only), its standard input `stdin_fd` (closed in the child after the copy). Returns
 * its pid, or -1 with *error the errno of fork or exec. */
pid_t pbfapp_job_exec(const char *path, char *const argv[], int stdin_fd, int *error);

/* waitpid(pid, status, 0), retried when a signal interrupts it; its return value. pid -1: any
 * child. */
pid_t pbfapp_job_wait(pid_t pid, int *status);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_JOBS_H */

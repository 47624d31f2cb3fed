/*
 * pidfdOpen(pid) and pidfdSendSignal(fd, signal): a signal that can only reach the
 * process the caller identified.
 *
 * kill(pid) names a number, which the kernel gives to the next process once the first
 * is reaped: a check of /proc/PID/stat followed by kill(pid) leaves a window in which
 * the PID can change hands. A pidfd names the process itself. The signal strategy opens
 * one, then checks the start time in /proc (the process that holds the PID after the
 * open is the one the pidfd names, if its start time is the one observed before the
 * open), then signals through the pidfd: a process reaped meanwhile is ESRCH, never
 * another one. Linux 5.3 and later (RHEL 8's 4.18 may lack it): ENOSYS then, and the
 * caller falls back to its check and kill(pid).
 */
#include "pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errors.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int int_arg(napi_env env, napi_callback_info info, size_t want, int32_t *out) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) return 0;
  for (size_t i = 0; i < want; i++) {
    if (napi_get_value_int32(env, argv[i], &out[i]) != napi_ok) return 0;
  }
  return 1;
}

/* pidfdOpen(pid): a close-on-exec pidfd (the caller closes it), or throws (ESRCH, ENOSYS). */
napi_value pidfd_open_js(napi_env env, napi_callback_info info) {
  int32_t args[1];
  if (!int_arg(env, info, 1, args) || args[0] <= 0) {
    throw_type_error(env, "pidfdOpen(pid) expects a positive integer");
    return NULL;
  }
  long fd = syscall(SYS_pidfd_open, (pid_t)args[0], 0);
  if (fd < 0) {
    throw_errno(env, errno, "pidfd_open");
    return NULL;
  }
  /* pidfd_open sets O_CLOEXEC on every pidfd it makes. */
  napi_value result;
  NAPI_CALL(env, napi_create_int32(env, (int32_t)fd, &result));
  return result;
}

/* pidfdSendSignal(fd, signal): undefined, or throws (ESRCH when the process is gone). */
napi_value pidfd_send_signal_js(napi_env env, napi_callback_info info) {
  int32_t args[2];
  if (!int_arg(env, info, 2, args) || args[0] < 0 || args[1] <= 0) {
    throw_type_error(env, "pidfdSendSignal(fd, signal) expects a pidfd and a signal number");
    return NULL;
  }
  if (syscall(SYS_pidfd_send_signal, args[0], args[1], NULL, 0) < 0) {
    throw_errno(env, errno, "pidfd_send_signal");
    return NULL;
  }
  return NULL;
}

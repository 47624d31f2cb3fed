/* A process's exit as an event: pidfd_open(2) (Linux 5.3) gives a file descriptor that
 * polls readable once the process has exited, whoever its parent is, so an agent that
 * is not ovnkube-node's parent (hostPID, another container) learns of its exit at once
 * instead of at its next look at /proc. Points:
 *  1. The fd names the process itself, not its number: a PID reused after the exit is
 *     never mistaken for it. pidfd_open fails with ESRCH when the process is already gone
 *     (the caller then takes it as exited).
 *  2. The callback fires at most once; the handle is then released (poll stopped, fd
 *     closed). close() before that releases it with no callback. A handle the JavaScript
 *     side dropped is released by its finalizer.
 *  3. The poll handle is unref'd: a watch alone never keeps the process alive.
 *  4. No libc wrapper (glibc 2.36 has one, Debian 11's does not): the raw syscall. */
#include "pidfd_watch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "errors.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture (asm-generic) */
#endif

typedef struct {
  int fd;
  bool closed;
  bool finalized;
  bool polling;
  uv_poll_t poll;
  napi_env env;
  napi_ref on_exit;
  napi_async_context async_context;
} pidfd_watch_t;

static void on_closed(uv_handle_t *handle) {
  pidfd_watch_t *w = handle->data;
  close(w->fd);
  w->fd = -1;
  w->polling = false;
  if (w->finalized) free(w);
}

static void release(pidfd_watch_t *w) {
  if (w->closed) return;
  w->closed = true;
  if (w->on_exit) {
    napi_delete_reference(w->env, w->on_exit);
    w->on_exit = NULL;
  }
  if (w->async_context) {
    napi_async_destroy(w->env, w->async_context);
    w->async_context = NULL;
  }
  if (w->polling) {
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, on_closed);
  } else {
    close(w->fd);
    w->fd = -1;
  }
}

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  pidfd_watch_t *w = data;
  w->finalized = true;
  bool close_pending = w->polling;
  release(w);
  if (!close_pending) free(w);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)status;
  (void)events;
  pidfd_watch_t *w = handle->data;
  if (w->closed || w->on_exit == NULL) return;
  napi_env env = w->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value callback, global, result;
  napi_get_reference_value(env, w->on_exit, &callback);
  napi_get_global(env, &global);
  /* Point 2: released before the callback, which may throw. The async context is kept
   * for the call and destroyed right after it. */
  napi_async_context context = w->async_context;
  w->async_context = NULL;
  release(w);
  /* A throw of onExit goes where a throw of any event's callback goes: process
   * 'uncaughtException' (napi_fatal_exception), not dropped in this uv callback. */
  if (napi_make_callback(env, context, global, callback, 0, NULL, &result) == napi_pending_exception) {
    napi_value err;
    if (napi_get_and_clear_last_exception(env, &err) == napi_ok) napi_fatal_exception(env, err);
  }
  napi_async_destroy(env, context);
  napi_close_handle_scope(env, scope);
}

/* watch(pid, onExit): a handle; onExit() is called once when the process has exited. */
napi_value pidfd_watch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], handle;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t pid = 0;
  napi_valuetype type = napi_undefined;
  if (argc >= 2) napi_typeof(env, argv[1], &type);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &pid) != napi_ok || pid <= 0 || type != napi_function) {
    throw_type_error(env, "pidfdWatch(pid, onExit) expects a positive pid and a function");
    return NULL;
  }
  int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (fd < 0) {
    throw_errno(env, errno, "pidfd_open");
    return NULL;
  }
  pidfd_watch_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    close(fd);
    throw_errno(env, ENOMEM, "calloc");
    return NULL;
  }
  w->fd = fd;
  w->env = env;
  uv_loop_t *loop;
  napi_value resource_name;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || napi_create_string_utf8(env, "PidfdWatch", NAPI_AUTO_LENGTH, &resource_name) != napi_ok ||
      napi_create_object(env, &handle) != napi_ok || napi_async_init(env, handle, resource_name, &w->async_context) != napi_ok ||
      napi_create_reference(env, argv[1], 1, &w->on_exit) != napi_ok) {
    /* Nothing polls yet: release() closes the fd and drops what was made. */
    release(w);
    free(w);
    napi_throw_error(env, "ERR_NAPI", "pidfdWatch: setting up the watch failed");
    return NULL;
  }
  w->poll.data = w;
  int rc = uv_poll_init(loop, &w->poll, fd);
  if (rc == 0) {
    w->polling = true;
    uv_unref((uv_handle_t *)&w->poll);
    rc = uv_poll_start(&w->poll, UV_READABLE, on_poll);
  }
  if (napi_wrap(env, handle, w, finalize, NULL, NULL) != napi_ok) {
    /* No finalizer will run: free it here, or once the poll handle is closed (on_closed). */
    w->finalized = true;
    bool close_pending = w->polling;
    release(w);
    if (!close_pending) free(w);
    napi_throw_error(env, "ERR_NAPI", "napi_wrap failed");
    return NULL;
  }
  if (rc != 0) {
    release(w);
    throw_errno(env, -rc, "uv_poll_start");
    return NULL;
  }
  return handle;
}

/* close(handle): stops watching; no callback comes after it. */
napi_value pidfd_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  pidfd_watch_t *w = NULL;
  if (napi_unwrap(env, argv[0], (void **)&w) != napi_ok || w == NULL) {
    throw_type_error(env, "not a pidfd watch");
    return NULL;
  }
  release(w);
  return NULL;
}

/*
 * An AF_NETLINK socket for Node, polled by libuv.
 *
 * Why not the npm `netlink` package's socket: it aborts the whole process when a
 * multicast subscription overflows (ENOBUFS), cannot set NETLINK_GET_STRICT_CHK or
 * NETLINK_EXT_ACK, and its errors carry no errno. Here:
 *  1. The socket is non-blocking; libuv tells JavaScript when it is readable and
 *     JavaScript drains it with recv() until recv() returns null.
 *  2. recv() returns one whole datagram: it peeks at the datagram's real length
 *     (MSG_PEEK|MSG_TRUNC) and reads it whole, so a datagram is never cut (a truncated
 *     read is still reported, EMSGSIZE). EINTR is retried; EAGAIN is "nothing queued".
 *  3. ENOBUFS ("the kernel dropped notifications for this socket") is thrown as an
 *     ordinary Error with code 'ENOBUFS'; the socket stays usable. Callers treat it
 *     as "resync", never as fatal.
 *  4. Datagrams not sent by the kernel (nl_pid != 0) are skipped, and the next one read
 *     within the same call: any local process may unicast to our port id, and only the
 *     kernel speaks for the routing table.
 *  5. Polling survives a socket error. An overflow sets the socket's error, poll()
 *     reports POLLERR, and libuv then stops the handle for good and calls back with
 *     a negative status (UV_EBADF). Left alone, no event would ever be read again.
 *     So on an error status of a socket that is still open, polling is started
 *     again before JavaScript is called; JavaScript drains as usual, and recv()
 *     returns the pending error (ENOBUFS), which also clears it, so the re-armed
 *     poll does not report it twice. The callback gets (status, rearm): rearm is 0,
 *     or the negative libuv error when polling could not be started again.
 *  6. errno is saved right after the call that failed, before any other call
 *     (N-API, close) can overwrite it.
 *  7. recv() reads into the caller's buffer, which JavaScript keeps per socket: a
 *     recvmsg() that offers 32 KiB or more makes the kernel build dump replies of 32 KiB
 *     instead of one page, as `ip` does, so a dump of a large table takes fewer
 *     datagrams, and no datagram costs an allocation.
 */
#include "netlink_socket.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "errors.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

typedef struct {
  int fd;
  bool closed;     /* close() was called: fd is being or has been released */
  bool finalized;  /* the JavaScript object is gone */
  bool polling;
  uv_poll_t poll;
  napi_env env;
  napi_ref on_readable;
  napi_async_context async_context;
} nl_socket;

static void on_poll_closed(uv_handle_t *handle) {
  nl_socket *s = handle->data;
  close(s->fd);
  s->fd = -1;
  s->polling = false;
  if (s->finalized) free(s);
}

static void release(nl_socket *s) {
  if (s->closed) return;
  s->closed = true;
  if (s->on_readable) {
    napi_delete_reference(s->env, s->on_readable);
    s->on_readable = NULL;
  }
  if (s->async_context) {
    napi_async_destroy(s->env, s->async_context);
    s->async_context = NULL;
  }
  if (s->polling) {
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, on_poll_closed);
  } else {
    close(s->fd);
    s->fd = -1;
  }
}

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  nl_socket *s = data;
  s->finalized = true;
  bool close_pending = s->polling;
  release(s);
  /* With a poll handle, on_poll_closed frees once libuv is done with it. */
  if (!close_pending) free(s);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)events;
  nl_socket *s = handle->data;
  if (s->closed || s->on_readable == NULL) return;
  /* Point 5: libuv has stopped the handle; start it again first, so that even a
   * callback that throws leaves the socket polled. */
  int rearm = status < 0 ? uv_poll_start(&s->poll, UV_READABLE, on_poll) : 0;
  napi_env env = s->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value callback, global, result, argv[2];
  napi_get_reference_value(env, s->on_readable, &callback);
  napi_get_global(env, &global);
  napi_create_int32(env, status, &argv[0]);
  napi_create_int32(env, rearm, &argv[1]);
  /* napi_make_callback runs microtasks and routes exceptions to
   * 'uncaughtException', as any libuv-driven Node callback does. */
  napi_make_callback(env, s->async_context, global, callback, 2, argv, &result);
  napi_close_handle_scope(env, scope);
}

static bool get_bool(napi_env env, napi_value obj, const char *name) {
  bool has = false, value = false;
  napi_value v;
  if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has) return false;
  napi_get_named_property(env, obj, name, &v);
  napi_get_value_bool(env, v, &value);
  return value;
}

static int64_t get_int(napi_env env, napi_value obj, const char *name, int64_t fallback) {
  bool has = false;
  napi_value v;
  int64_t value = fallback;
  if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has) return fallback;
  napi_get_named_property(env, obj, name, &v);
  if (napi_get_value_int64(env, v, &value) != napi_ok) return fallback;
  return value;
}

static nl_socket *unwrap(napi_env env, napi_value obj) {
  nl_socket *s = NULL;
  if (napi_unwrap(env, obj, (void **)&s) != napi_ok || s == NULL) {
    throw_type_error(env, "not a netlink socket");
    return NULL;
  }
  if (s->closed) {
    throw_errno(env, EBADF, "netlink");
    return NULL;
  }
  return s;
}

/* Reads up to *argc arguments into argv; the first must be an open socket handle. */
static nl_socket *socket_call(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  size_t wanted = *argc;
  for (size_t i = 0; i < wanted; i++) napi_get_undefined(env, &argv[i]);
  if (napi_get_cb_info(env, info, argc, argv, NULL, NULL) != napi_ok) {
    napi_throw_error(env, "ERR_NAPI", "napi_get_cb_info failed");
    return NULL;
  }
  return unwrap(env, argv[0]);
}

static int set_int_opt(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof value);
}

/* Joins the multicast groups listed in opts[name]. An optional group the kernel does
 * not know (EINVAL: older kernels lack e.g. RTNLGRP_NEXTHOP) is skipped. Returns 0,
 * or the errno of the join that failed. */
static int join_groups(napi_env env, int fd, napi_value opts, const char *name, bool optional) {
  bool has = false;
  napi_has_named_property(env, opts, name, &has);
  if (!has) return 0;
  napi_value groups;
  uint32_t n = 0;
  napi_get_named_property(env, opts, name, &groups);
  napi_get_array_length(env, groups, &n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value g;
    int32_t group = 0;
    napi_get_element(env, groups, i, &g);
    napi_get_value_int32(env, g, &group);
    if (set_int_opt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group) < 0) {
      int err = errno;
      if (optional && err == EINVAL) continue;
      return err;
    }
  }
  return 0;
}

/* open({protocol, groups: number[], optionalGroups: number[], rcvbuf, strictCheck, extAck}, onReadable) */
napi_value netlink_open(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], handle;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_valuetype t0 = napi_undefined, t1 = napi_undefined;
  if (argc >= 1) napi_typeof(env, argv[0], &t0);
  if (argc >= 2) napi_typeof(env, argv[1], &t1);
  if (t0 != napi_object || t1 != napi_function) {
    throw_type_error(env, "open(options, onReadable) expects an object and a function");
    return NULL;
  }
  napi_value opts = argv[0];
  int protocol = (int)get_int(env, opts, "protocol", NETLINK_ROUTE);
  int64_t rcvbuf = get_int(env, opts, "rcvbuf", 0);
  bool strict = get_bool(env, opts, "strictCheck");
  bool ext_ack = get_bool(env, opts, "extAck");

  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, protocol);
  if (fd < 0) {
    throw_errno(env, errno, "socket");
    return NULL;
  }
  /* Point 6: each failing call records its errno at once. */
  const char *failed = NULL;
  int err = 0;
  if (rcvbuf > 0 && set_int_opt(fd, SOL_SOCKET, SO_RCVBUFFORCE, (int)rcvbuf) < 0 &&
      set_int_opt(fd, SOL_SOCKET, SO_RCVBUF, (int)rcvbuf) < 0) {
    err = errno;
    failed = "setsockopt(SO_RCVBUF)";
  }
  /* NETLINK_GET_STRICT_CHK came with Linux 4.20; where it is missing (ENOPROTOOPT) a dump
     holds every table and the caller keeps the main table's rows itself (PrefixFilter). */
  if (!failed && strict && set_int_opt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1) < 0 && errno != ENOPROTOOPT) {
    err = errno;
    failed = "setsockopt(NETLINK_GET_STRICT_CHK)";
  }
  if (!failed && ext_ack && set_int_opt(fd, SOL_NETLINK, NETLINK_EXT_ACK, 1) < 0) {
    err = errno;
    failed = "setsockopt(NETLINK_EXT_ACK)";
  }
  struct sockaddr_nl local = {.nl_family = AF_NETLINK};
  if (!failed && bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
    err = errno;
    failed = "bind";
  }
  if (!failed && (err = join_groups(env, fd, opts, "groups", false)) != 0) failed = "setsockopt(NETLINK_ADD_MEMBERSHIP)";
  if (!failed && (err = join_groups(env, fd, opts, "optionalGroups", true)) != 0)
    failed = "setsockopt(NETLINK_ADD_MEMBERSHIP)";
  if (failed) {
    close(fd);
    throw_errno(env, err, failed);
    return NULL;
  }

  nl_socket *s = calloc(1, sizeof *s);
  if (s == NULL) {
    close(fd);
    throw_errno(env, ENOMEM, "calloc");
    return NULL;
  }
  s->fd = fd;
  s->env = env;
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  napi_value resource_name;
  napi_create_string_utf8(env, "NetlinkSocket", NAPI_AUTO_LENGTH, &resource_name);
  napi_create_object(env, &handle);
  napi_async_init(env, handle, resource_name, &s->async_context);
  napi_create_reference(env, argv[1], 1, &s->on_readable);
  s->poll.data = s;
  int rc = uv_poll_init(loop, &s->poll, fd);
  if (rc == 0) {
    s->polling = true;
    rc = uv_poll_start(&s->poll, UV_READABLE, on_poll);
  }
  if (napi_wrap(env, handle, s, finalize, NULL, NULL) != napi_ok) {
    release(s);
    napi_throw_error(env, "ERR_NAPI", "napi_wrap failed");
    return NULL;
  }
  if (rc != 0) {
    release(s);
    throw_errno(env, -rc, "uv_poll_start");
    return NULL;
  }
  return handle;
}

/* send(handle, buffer): sends one datagram to the kernel; returns bytes sent. */
napi_value netlink_send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  nl_socket *s = socket_call(env, info, &argc, argv);
  if (s == NULL) return NULL;
  void *data;
  size_t length;
  if (napi_get_buffer_info(env, argv[1], &data, &length) != napi_ok) {
    throw_type_error(env, "send(handle, buffer) expects a Buffer");
    return NULL;
  }
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  ssize_t n;
  do {
    n = sendto(s->fd, data, length, 0, (struct sockaddr *)&kernel, sizeof kernel);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    throw_errno(env, errno, "sendto");
    return NULL;
  }
  napi_create_int64(env, n, &result);
  return result;
}

/* recv(handle, buffer): reads one whole datagram from the kernel into buffer and returns
 * its length; null when nothing is queued; -size, reading nothing, when the datagram is
 * longer than buffer (call again with one of that size). Throws ENOBUFS when the kernel
 * dropped messages (point 3). */
napi_value netlink_recv(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  nl_socket *s = socket_call(env, info, &argc, argv);
  if (s == NULL) return NULL;
  void *data;
  size_t capacity;
  if (napi_get_buffer_info(env, argv[1], &data, &capacity) != napi_ok) {
    throw_type_error(env, "recv(handle, buffer) expects a Buffer");
    return NULL;
  }
  for (;;) {
    ssize_t n;
    do {
      n = recv(s->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n >= 0 && (size_t)n > capacity) {
      napi_create_int64(env, -n, &result);
      return result;
    }
    struct sockaddr_nl from;
    struct iovec iov = {.iov_base = data, .iov_len = capacity};
    struct msghdr mh = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
    if (n >= 0) {
      do {
        n = recvmsg(s->fd, &mh, MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        napi_get_null(env, &result);
        return result;
      }
      throw_errno(env, errno, "recvmsg");
      return NULL;
    }
    if (mh.msg_flags & MSG_TRUNC) {
      throw_errno(env, EMSGSIZE, "recvmsg");
      return NULL;
    }
    if (from.nl_pid != 0) continue;
    napi_create_int64(env, n, &result);
    return result;
  }
}

/* portId(handle): the port id the kernel assigned at bind. */
napi_value netlink_port_id(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  nl_socket *s = socket_call(env, info, &argc, argv);
  if (s == NULL) return NULL;
  struct sockaddr_nl local;
  socklen_t len = sizeof local;
  if (getsockname(s->fd, (struct sockaddr *)&local, &len) < 0) {
    throw_errno(env, errno, "getsockname");
    return NULL;
  }
  napi_create_uint32(env, local.nl_pid, &result);
  return result;
}

/* setRef(handle, bool): whether this socket keeps the event loop alive. */
napi_value netlink_set_ref(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  bool ref = true;
  nl_socket *s = socket_call(env, info, &argc, argv);
  if (s == NULL) return NULL;
  napi_get_value_bool(env, argv[1], &ref);
  if (s->polling) {
    if (ref)
      uv_ref((uv_handle_t *)&s->poll);
    else
      uv_unref((uv_handle_t *)&s->poll);
  }
  return NULL;
}

/* close(handle): idempotent. */
napi_value netlink_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  nl_socket *s = NULL;
  if (napi_unwrap(env, argv[0], (void **)&s) != napi_ok || s == NULL) {
    throw_type_error(env, "not a netlink socket");
    return NULL;
  }
  release(s);
  return NULL;
}

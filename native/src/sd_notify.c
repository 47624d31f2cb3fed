/*
 * sd_notify: one datagram to the socket named by $NOTIFY_SOCKET.
 *
 * Node cannot send AF_UNIX datagrams, and spawning systemd-notify per message
 * races PID 1 (the short-lived sender may be gone before systemd attributes the
 * message to our unit). This sends from the agent's own PID, synchronously.
 * The address is a filesystem path, or an abstract name written with a leading
 * '@': the first byte becomes NUL and the address length is exact (abstract
 * names are not NUL-terminated, so a longer length would name another socket).
 */
#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "errors.h"

/* send(socketPath, message): returns the bytes sent. */
napi_value sd_notify_send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 2];
  size_t path_len = 0;
  if (argc < 2 || napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len) != napi_ok) {
    throw_type_error(env, "send(socketPath, message) expects two strings");
    return NULL;
  }
  size_t message_len = 0;
  if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &message_len) != napi_ok) {
    throw_type_error(env, "send(socketPath, message) expects two strings");
    return NULL;
  }

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (path_len == 0 || path_len > sizeof addr.sun_path - (path[0] == '@' ? 0 : 1) ||
      (path[0] != '@' && path[0] != '/')) {
    throw_errno(env, path_len == 0 ? EINVAL : (path[0] != '@' && path[0] != '/') ? EINVAL : ENAMETOOLONG,
                "sd_notify");
    return NULL;
  }
  memcpy(addr.sun_path, path, path_len);
  socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len);
  if (path[0] == '@')
    addr.sun_path[0] = '\0';
  else
    addr_len += 1; /* the terminating NUL of a filesystem path */

  char *message = NULL;
  char stack_buf[1024];
  message = message_len + 1 <= sizeof stack_buf ? stack_buf : NULL;
  napi_value buffer;
  if (message == NULL) NAPI_CALL(env, napi_create_buffer(env, message_len + 1, (void **)&message, &buffer));
  napi_get_value_string_utf8(env, argv[1], message, message_len + 1, &message_len);

  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw_errno(env, errno, "socket");
    return NULL;
  }
  ssize_t n;
  do {
    n = sendto(fd, message, message_len, MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  close(fd);
  if (n < 0) {
    throw_errno(env, err, "sendto");
    return NULL;
  }
  napi_create_int64(env, n, &result);
  return result;
}

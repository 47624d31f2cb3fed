/*
 * lockFile(path): one agent per node.
 *
 * Node has no flock(2). A lock held by flock belongs to the open file description,
 * so the kernel drops it when the process dies, however it dies: a SIGKILLed agent
 * never blocks its successor, which a pid file alone could not promise. The fd is
 * returned to JavaScript and must stay open for the life of the process; it is
 * close-on-exec so that no child inherits the lock.
 */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <unistd.h>

#include "errors.h"

/* lockFile(path): { fd, readOnly }, or throws (code EAGAIN, syscall 'flock') when another
 * process holds the lock. */
napi_value lock_file(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char path[PATH_MAX + 1];
  size_t path_len = 0;
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len) != napi_ok) {
    throw_type_error(env, "lockFile(path) expects a string");
    return NULL;
  }
  if (path_len == 0 || path_len >= PATH_MAX) {
    throw_errno(env, path_len == 0 ? ENOENT : ENAMETOOLONG, "open");
    return NULL;
  }

  /* O_NOFOLLOW: the caller rewrites the file with our pid, and a symlink planted in
   * the state directory must not turn that into a write to some other file. */
  int fd;
  do {
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  } while (fd < 0 && errno == EINTR);
  /* A state directory on a file system turned read-only (ext4's errors=remount-ro, a
   * full disk remounted) keeps its lock file: flock needs no write access, so the
   * agent can still start, hold the node and report why it refuses changes. */
  int read_only = 0;
  if (fd < 0 && errno == EROFS) {
    read_only = 1;
    do {
      fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == ENOENT) errno = EROFS;
  }
  if (fd < 0) {
    throw_errno(env, errno, "open");
    return NULL;
  }
  int rc;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    int err = errno;
    close(fd);
    throw_errno(env, err, "flock");
    return NULL;
  }

  napi_value result, v;
  NAPI_CALL(env, napi_create_object(env, &result));
  NAPI_CALL(env, napi_create_int32(env, fd, &v));
  NAPI_CALL(env, napi_set_named_property(env, result, "fd", v));
  NAPI_CALL(env, napi_get_boolean(env, read_only, &v));
  NAPI_CALL(env, napi_set_named_property(env, result, "readOnly", v));
  return result;
}

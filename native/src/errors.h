#ifndef GWMODE_ERRORS_H
#define GWMODE_ERRORS_H
#include <node_api.h>

/* Throws a JavaScript Error shaped like Node's own system errors:
 * message "<syscall> <CODE>: <strerror>", with errno (positive), code and syscall. */
void throw_errno(napi_env env, int err, const char *syscall);

/* Throws a TypeError with code ERR_INVALID_ARG_TYPE. */
void throw_type_error(napi_env env, const char *message);

#define NAPI_CALL(env, call)                                                   \
  do {                                                                         \
    if ((call) != napi_ok) {                                                   \
      bool pending_ = false;                                                   \
      napi_is_exception_pending((env), &pending_);                             \
      if (!pending_) napi_throw_error((env), "ERR_NAPI", #call " failed");     \
      return NULL;                                                             \
    }                                                                          \
  } while (0)

#endif

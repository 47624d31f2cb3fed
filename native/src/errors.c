#include "errors.h"

#include <stdio.h>
#include <string.h>
#include <uv.h>

void throw_errno(napi_env env, int err, const char *syscall) {
  /* libuv error codes are negated errno values on Linux, so uv_err_name gives
   * the same names Node uses ('ENOBUFS', 'EPERM', ...). */
  const char *code = uv_err_name(-err);
  char message[256];
  snprintf(message, sizeof message, "%s %s: %s", syscall, code, strerror(err));

  napi_value msg, error, v;
  if (napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg) != napi_ok) return;
  if (napi_create_error(env, NULL, msg, &error) != napi_ok) return;
  napi_create_int32(env, err, &v);
  napi_set_named_property(env, error, "errno", v);
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, error, "code", v);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, error, "syscall", v);
  napi_throw(env, error);
}

void throw_type_error(napi_env env, const char *message) {
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
}

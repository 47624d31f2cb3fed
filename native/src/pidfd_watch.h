#ifndef GWMODE_PIDFD_WATCH_H
#define GWMODE_PIDFD_WATCH_H
#include <node_api.h>

napi_value pidfd_watch(napi_env env, napi_callback_info info);
napi_value pidfd_close(napi_env env, napi_callback_info info);

#endif

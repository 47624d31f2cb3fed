#ifndef GWMODE_PIDFD_H
#define GWMODE_PIDFD_H
#include <node_api.h>

napi_value pidfd_open_js(napi_env env, napi_callback_info info);
napi_value pidfd_send_signal_js(napi_env env, napi_callback_info info);

#endif

#ifndef GWMODE_LOCK_H
#define GWMODE_LOCK_H
#include <node_api.h>

napi_value lock_file(napi_env env, napi_callback_info info);

#endif

#ifndef GWMODE_MEMORY_H
#define GWMODE_MEMORY_H
#include <node_api.h>

napi_value malloc_trim_all(napi_env env, napi_callback_info info);

#endif

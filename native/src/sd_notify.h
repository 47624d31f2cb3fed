#ifndef GWMODE_SD_NOTIFY_H
#define GWMODE_SD_NOTIFY_H
#include <node_api.h>

napi_value sd_notify_send(napi_env env, napi_callback_info info);

#endif

#ifndef GWMODE_NETLINK_SOCKET_H
#define GWMODE_NETLINK_SOCKET_H
#include <node_api.h>

napi_value netlink_open(napi_env env, napi_callback_info info);
napi_value netlink_send(napi_env env, napi_callback_info info);
napi_value netlink_recv(napi_env env, napi_callback_info info);
napi_value netlink_port_id(napi_env env, napi_callback_info info);
napi_value netlink_set_ref(napi_env env, napi_callback_info info);
napi_value netlink_close(napi_env env, napi_callback_info info);

#endif

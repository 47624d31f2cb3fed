/* The native addon: a netlink socket, sd_notify and flock, nothing else.
 * Everything above the socket (message encoding, decoding) is done in
 * TypeScript with the npm `netlink` package's codec. */
#include <node_api.h>

#include "lock.h"
#include "netlink_socket.h"
#include "sd_notify.h"

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"netlinkOpen", NULL, netlink_open, NULL, NULL, NULL, napi_enumerable, NULL},
      {"netlinkSend", NULL, netlink_send, NULL, NULL, NULL, napi_enumerable, NULL},
      {"netlinkRecv", NULL, netlink_recv, NULL, NULL, NULL, napi_enumerable, NULL},
      {"netlinkPortId", NULL, netlink_port_id, NULL, NULL, NULL, napi_enumerable, NULL},
      {"netlinkSetRef", NULL, netlink_set_ref, NULL, NULL, NULL, napi_enumerable, NULL},
      {"netlinkClose", NULL, netlink_close, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sdNotify", NULL, sd_notify_send, NULL, NULL, NULL, napi_enumerable, NULL},
      {"lockFile", NULL, lock_file, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

{
  "targets": [
    {
      "target_name": "gwmode_native",
      "sources": ["src/addon.c", "src/netlink_socket.c", "src/sd_notify.c", "src/lock.c", "src/errors.c"],
      "cflags": ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}

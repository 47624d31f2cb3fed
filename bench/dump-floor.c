/* The kernel's floor for a route dump: one strict-check RTM_GETROUTE dump of the main IPv4
 * table, as the agent sends it, read into a 64 KiB buffer and counted, nothing decoded.
 * bench/observe-prefix.ts compiles it with cc and times it as a whole process beside
 * `ip route show` and `ovn-gwmode-agent plan`: no reader of every route, in any language,
 * can take less than this. Prints the number of route messages read. */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

int main(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  struct sockaddr_nl local = {.nl_family = AF_NETLINK};
  int one = 1;
  if (fd < 0 || bind(fd, (struct sockaddr *)&local, sizeof local) < 0 ||
      setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one) < 0) {
    perror("dump-floor: socket");
    return 1;
  }
  struct {
    struct nlmsghdr h;
    struct rtmsg r;
    struct rtattr a;
    unsigned int table;
  } req;
  memset(&req, 0, sizeof req);
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETROUTE;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.r.rtm_family = AF_INET;
  req.r.rtm_table = RT_TABLE_MAIN;
  req.a.rta_len = RTA_LENGTH(sizeof req.table);
  req.a.rta_type = RTA_TABLE;
  req.table = RT_TABLE_MAIN;
  if (send(fd, &req, sizeof req, 0) < 0) {
    perror("dump-floor: send");
    return 1;
  }
  static char buf[65536];
  long routes = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      perror("dump-floor: recv");
      return 1;
    }
    int len = (int)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE) {
        printf("%ld\n", routes);
        return 0;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        fprintf(stderr, "dump-floor: the kernel refused the dump\n");
        return 1;
      }
      if (h->nlmsg_type == RTM_NEWROUTE) routes++;
    }
  }
}

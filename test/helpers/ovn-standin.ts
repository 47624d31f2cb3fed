// What ovnkube-node does to the node's service route at start, per version, as a shell body
// for FakeOvnkube (src/demo/fake-ovnkube.ts) on the OVN test bed (test/helpers/ovn.ts).
// A stop-gap for the bed's tests and bench until the faithful per-version stand-in of
// branch `standin` (test/helpers/ovnkube-standin.ts) lands; only the service path is here.
//
// 4.8/4.9 (ovn-kubernetes cae56d918, go-controller/pkg/node/management-port_linux.go):
//  - createPlatformManagementPort -> tearDownManagementPortConfig: LinkAddrFlush (every
//    non-link-local address of ovn-k8s-mp0), LinkRoutesDel(link, nil) (every route through
//    it), then setupManagementPortConfig: the address back, and for each of allSubnets (the
//    service CIDRs too in local mode) LinkRoutesAdd, a create-exclusive RouteAdd whose EEXIST
//    is logged at V(5) and skipped: the stale br-ex route stays (the bug); then the neighbour
//    entry of the .1 (LinkNeighAdd). `ip route add` has the same kernel semantics
//    (NLM_F_CREATE|NLM_F_EXCL).
//  - shared mode: node.go configureSvcRouteViaBridge, LinkRoutesAdd of SVC via br-ex's default
//    gateway, EEXIST ignored; the MTU on it came with 78cf7be68 (domain.md).
// 4.10+ (68cdb3891 "like in shared"; 5701be2df for the masquerade next hop): the service route
// goes via br-ex in both modes, via the default gateway (4.10, 4.11) or 169.254.169.4 (4.12+).
// The mp0 teardown does not touch it, and is left out.
// The body writes "START_NS END_NS [ADDRESS_NS]" (CLOCK_REALTIME, ns) of its start-up to MARKS: the
// window in which it flushed mp0 (a service probe started inside it may fail, by ovnkube-node's
// design), and for 4.8 when mp0's address was back (the first moment a mp0 route can be put).
import { BED } from './ovn.js';
import { IDLE } from '../../src/demo/fake-ovnkube.js';

export type Version = '4.8' | '4.10' | '4.11' | '4.12';

const SVC = '10.96.0.0/16';

export function serviceRouteOf(version: Version, mode: 'local' | 'shared'): string {
  if (version === '4.12') return `${SVC} via ${BED.masqNextHop} dev br-ex mtu 1400`;
  if (version === '4.8' && mode === 'local') return `${SVC} via ${BED.routerIp} dev ovn-k8s-mp0`;
  return `${SVC} via ${BED.brexGateway} dev br-ex mtu 1400`;
}

/** The shell body: start-up as `version` does it in `mode`, its window written to `marks`, then idle until SIGTERM. */
export function startBody(version: Version, mode: 'local' | 'shared', marks: string): string {
  const startUp =
    version === '4.8'
      ? [
          'ip -4 addr flush dev ovn-k8s-mp0 scope global',
          'ip -4 route flush dev ovn-k8s-mp0',
          `ip addr add ${BED.mp0Ip}/24 dev ovn-k8s-mp0`,
          't1=$(date +%s%N)',
          ...(mode === 'local' ? [`ip route add ${serviceRouteOf('4.8', 'local')} 2>/dev/null`] : []),
          `ip neigh replace ${BED.routerIp} lladdr ${BED.routerMac} dev ovn-k8s-mp0`,
          ...(mode === 'shared' ? [`ip route add ${serviceRouteOf('4.8', 'shared')} 2>/dev/null`] : []),
        ]
      : [`ip route add ${serviceRouteOf(version, mode)} 2>/dev/null`];
  return [
    `t0=$(date +%s%N)`,
    ...startUp.map((c) => `${c} || :`),
    `echo "$t0 $(date +%s%N) \${t1:-}" >> ${marks}`,
    IDLE,
  ].join('; ');
}

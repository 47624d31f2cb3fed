// Flags shared by `run`, `plan` and `apply`. yargs' .env('OVN_GWMODE') lets every
// flag come from OVN_GWMODE_<FLAG_IN_UPPER_SNAKE_CASE> as well.
import type { Argv } from 'yargs';

export const DEFAULT_SOCKET = '/run/ovn-gwmode-agent/agent.sock';

export function agentOptions<T>(y: Argv<T>) {
  return y
    .option('mode-file', { type: 'string', describe: 'file, ConfigMap volume directory or manifest holding the desired gateway mode' })
    .option('service-cidr', { type: 'string', array: true, describe: 'service CIDR (repeatable, comma lists allowed; IPv4 and IPv6)' })
    .option('ovnkube-config', { type: 'string', describe: 'ovnkube.conf, for service-cidrs, mtu and next-hop the flags leave out' })
    .option('gateway-interface', { type: 'string', default: 'br-ex' })
    .option('management-interface', { type: 'string', default: 'ovn-k8s-mp0' })
    .option('layout', { type: 'string', default: 'auto', describe: 'auto | legacy (4.8/4.9) | routing-via-host (4.10+)' })
    .option('ovnkube-mode-check', { type: 'string', default: 'proc', describe: 'proc: act only when ovnkube-node runs the desired mode; off: trust the mode file' })
    .option('mtu', { type: 'string', describe: 'MTU of shared-mode service routes (default: ovnkube.conf [default] mtu)' })
    .option('gateway-nexthop', { type: 'string', array: true, describe: 'shared-mode next hop per family (default: the gateway interface\'s default route)' })
    .option('socket', { type: 'string', default: DEFAULT_SOCKET })
    .option('state-dir', { type: 'string', default: '/var/lib/ovn-gwmode-agent' })
    .option('resync-interval', { type: 'string', default: '60', describe: 'seconds, or with a unit: 500ms, 2m' })
    .option('restart', { type: 'string', default: 'cri', describe: 'how to restart ovnkube-node after a migration: cri | signal | none' })
    .option('cri-endpoint', { type: 'string', describe: 'CRI socket (default: the first of /var/run/crio/crio.sock, /run/containerd/containerd.sock)' })
    .option('ovnkube-namespace', { type: 'string', default: 'openshift-ovn-kubernetes' })
    .option('ovnkube-container', { type: 'string', default: 'ovnkube-node' })
    .option('restart-grace', { type: 'string', default: '30', describe: 'seconds the runtime gives ovnkube-node to stop' })
    .option('restart-min-interval', { type: 'string', default: '5m', describe: 'at most one restart per interval (and three an hour)' })
    .option('restart-timeout', { type: 'string', default: '5m', describe: 'how long to wait for the new ovnkube-node' })
    .option('settle', { type: 'string', default: '60', describe: 'how long the routes must hold after a restart before Converged' })
    .option('dry-run', { type: 'boolean', default: false, describe: 'plan, log and report; never change the kernel' })
    .option('log-level', { type: 'string', default: 'info' });
}

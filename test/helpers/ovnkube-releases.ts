// What each OpenShift release puts on a node for ovnkube-node, as the tests' fixtures:
// the command line and the ovnkube.conf that CNO renders, and the host's RHCOS
// /etc/os-release. Read from openshift/cluster-network-operator at the tip of each
// release branch: release-4.8 f9c68257e, release-4.9 275ca80b4, release-4.10 c7855f10e,
// release-4.11 ba3cfe686, release-4.12 8924dff9c (bindata/network/ovn-kubernetes/
// ovnkube-node.yaml and 004-config.yaml; self-hosted/ from 4.11).
import { rhcosOsRelease } from './os-release.js';

export type Release = '4.8' | '4.8-fixed' | '4.9' | '4.9-fixed' | '4.10' | '4.11' | '4.12';

export const RELEASES: readonly Release[] = ['4.8', '4.8-fixed', '4.9', '4.9-fixed', '4.10', '4.11', '4.12'];

/** The OpenShift minor a release (fixed z-stream or not) belongs to. */
export const minorOf = (release: Release): string => release.replace('-fixed', '');

/** 4.8/4.9, where the agent acts; 4.10 and later route services via br-ex in both modes. */
export const isLegacy = (release: Release): boolean => ['4.8', '4.9'].includes(minorOf(release));

/** The cluster the fixtures describe: the seed node's (src/demo/netns.ts). */
export const CLUSTER = {
  node: 'node1',
  mtu: 1400,
  clusterSubnets: '10.244.0.0/16/24',
  hostSubnet: '10.244.1.0/24',
  serviceCidr: '10.96.0.0/16',
  defaultGateway: '172.18.0.1',
} as const;

/**
 * The argv of ovnkube-node: the words of the script's `exec /usr/bin/ovnkube --init-node
 * "${K8S_NODE}" ...` after the shell's expansion, `${gateway_mode_flags}` unquoted and so
 * split (ovnkube-node.yaml: release-4.8 f9c68257e lines 281-317; release-4.9 275ca80b4
 * 281-326, `--disable-snat-multiple-gws` only with OVN_DISABLE_SNAT_MULTIPLE_GWS, off by
 * default; release-4.10 c7855f10e 318-382, the same in 4.11 and 4.12). Template values
 * are a plausible cluster's; the loglevel is the container's OVN_KUBE_LOG_LEVEL, "4".
 */
export function ovnkubeArgv(release: Release, mode: 'local' | 'shared', binary = '/usr/bin/ovnkube'): string[] {
  const db = (port: number) => ['ssl:10.0.0.3', 'ssl:10.0.0.4', 'ssl:10.0.0.5'].map((h) => `${h}:${port}`).join(',');
  const tls = (which: 'nb' | 'sb') => [
    `--${which}-client-privkey`,
    '/ovn-cert/tls.key',
    `--${which}-client-cert`,
    '/ovn-cert/tls.crt',
    `--${which}-client-cacert`,
    '/ovn-ca/ca-bundle.crt',
    `--${which}-cert-common-name`,
    'ovn',
  ];
  const head = [
    binary,
    '--init-node',
    CLUSTER.node,
    '--nb-address',
    db(9641),
    '--sb-address',
    db(9642),
    ...tls('nb'),
    ...tls('sb'),
    '--config-file=/run/ovnkube-config/ovnkube.conf',
    '--loglevel',
    '4',
    '--inactivity-probe=180000',
    '--gateway-mode',
    mode,
    '--gateway-interface',
    'br-ex',
  ];
  if (isLegacy(release)) return [...head, '--metrics-bind-address', '127.0.0.1:29103', '--metrics-enable-pprof'];
  return [
    ...head,
    '--metrics-bind-address',
    '127.0.0.1:29103',
    '--ovn-metrics-bind-address',
    '127.0.0.1:29105',
    '--metrics-enable-pprof',
    '--export-ovs-metrics',
    '--disable-snat-multiple-gws',
  ];
}

/**
 * ovnkube.conf as the ovnkube-config ConfigMap renders it (004-config.yaml). 4.8 always
 * says `mode=local` (the flag is the truth); 4.9 renders the mode; 4.10 adds
 * `[kubernetes] platform-type` (and routable-mtu when set); 4.11 healthz-bind-address and
 * enable-egress-qos; 4.12 enable-udp-aggregation. No release renders a masquerade subnet.
 */
export function ovnkubeConf(release: Release, mode: 'local' | 'shared'): string {
  const minor = minorOf(release);
  const from = (m: string) => Number(minor.split('.')[1]) >= Number(m.split('.')[1]);
  const lines = [
    '[default]',
    `mtu="${CLUSTER.mtu}"`,
    `cluster-subnets="${CLUSTER.clusterSubnets}"`,
    'encap-port="6081"',
    'enable-lflow-cache=true',
    'lflow-cache-limit-kb=1048576',
    ...(from('4.12') ? ['enable-udp-aggregation=true'] : []),
    '',
    '[kubernetes]',
    `service-cidrs="${CLUSTER.serviceCidr}"`,
    'ovn-config-namespace="openshift-ovn-kubernetes"',
    'apiserver="https://api-int.cluster.example.com:6443"',
    'host-network-namespace="openshift-host-network"',
    ...(from('4.10') ? ['platform-type="BareMetal"'] : []),
    ...(from('4.11') ? ['healthz-bind-address="0.0.0.0:10256"'] : []),
    '',
    '[ovnkubernetesfeature]',
    'enable-egress-ip=true',
    'enable-egress-firewall=true',
    ...(from('4.11') ? ['enable-egress-qos=true'] : []),
    '',
    '[gateway]',
    `mode=${minor === '4.8' ? 'local' : mode}`,
    'nodeport=true',
  ];
  return lines.join('\n') + '\n';
}

/** The host's /etc/os-release on RHCOS of the release's minor (test/helpers/os-release.ts). */
export const osRelease = (release: Release): string => rhcosOsRelease(minorOf(release));

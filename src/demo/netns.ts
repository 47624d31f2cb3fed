// Throwaway network namespaces on the real kernel, for the demo and the tests, made with `ip`
// commands: what the agent sees is what an admin would see.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export class Netns {
  readonly name: string;

  /** A new namespace, or (`existing`) one made by someone else, e.g. the OVN test bed's node, which it then owns. */
  constructor(existing?: string) {
    this.name = existing ?? `gwt-${randomBytes(4).toString('hex')}`;
    if (existing) return;
    execFileSync('ip', ['netns', 'add', this.name]);
    this.ip('link set lo up');
  }

  /** Runs `ip -n NAME <args>`; args is split on spaces. */
  ip(args: string): string {
    return execFileSync('ip', ['-n', this.name, ...args.split(/\s+/).filter(Boolean)], { encoding: 'utf8' });
  }

  destroy(): void {
    spawnSync('ip', ['netns', 'del', this.name]);
  }
}

/**
 * The seed's node in ns: br-ex 172.18.0.2/16 with the default route, ovn-k8s-mp0 10.244.1.2/24 with
 * the cluster MTU 1400 (as OVN-Kubernetes sets it), the stale shared-mode route 10.96.0.0/16 via
 * br-ex mtu 1400; with gw0 also ovn-k8s-gw0, which 4.8/4.9 local mode leaves on a node.
 */
export function seedNode(ns: Netns, gw0: boolean): void {
  ns.ip('link add br-ex type bridge');
  ns.ip('link set br-ex up');
  ns.ip('addr add 172.18.0.2/16 dev br-ex');
  ns.ip('route add default via 172.18.0.1 dev br-ex');
  ns.ip('link add ovn-k8s-mp0 type veth peer name mp0-peer');
  ns.ip('link set mp0-peer up');
  ns.ip('link set ovn-k8s-mp0 mtu 1400 up');
  ns.ip('addr add 10.244.1.2/24 dev ovn-k8s-mp0');
  ns.ip('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400');
  if (!gw0) return;
  ns.ip('link add ovn-k8s-gw0 type veth peer name gw0-peer');
  ns.ip('link set ovn-k8s-gw0 up');
  ns.ip('addr add 169.254.0.1/20 dev ovn-k8s-gw0');
}

// One full observation of the node: links, addresses, the routes of every service
// CIDR and the default routes, and ovnkube-node's mode.
import type { OvnkubeObservation, Observation } from '../core/types.js';
import { DEFAULT_ROUTE } from '../core/planner.js';
import type { Dataplane } from '../dataplane/types.js';
import { parseCidr, type Cidr } from '../net/cidr.js';

export type OvnkubeProbe = () => Promise<OvnkubeObservation>;

export const TRUSTED_OVNKUBE: OvnkubeProbe = async () => ({ mode: null, pid: null, detail: 'not checked (--ovnkube-mode-check off)' });

export async function observe(dataplane: Dataplane, serviceCidrs: Cidr[], probe: OvnkubeProbe): Promise<Observation> {
  const families = new Set(serviceCidrs.map((c) => c.family));
  const prefixes = [...serviceCidrs, ...[...families].map((f) => parseCidr(DEFAULT_ROUTE[f]))];
  // Links first: every route's interface name is resolved from this one dump.
  const links = await dataplane.links();
  const [addresses, ovnkube, ...routeLists] = await Promise.all([
    dataplane.addresses(),
    probe(),
    ...prefixes.map((p) => dataplane.routesFor(p, links)),
  ]);
  const routes = new Map(prefixes.map((p, i) => [p.text, routeLists[i] ?? []]));
  return { links, addresses, routes, ovnkube };
}

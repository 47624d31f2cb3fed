// One full observation of the node: links, addresses, the routes of every watched
// prefix (service CIDRs and default routes), and ovnkube-node.
import type { Watched } from '../core/route.js';
import type { OvnkubeObservation, Observation } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';

export type OvnkubeProbe = () => Promise<OvnkubeObservation>;

export async function observe(dataplane: Dataplane, watched: Watched, probe: OvnkubeProbe): Promise<Observation> {
  // Links first: every route's interface name is resolved from this one dump.
  const links = await dataplane.links();
  const [addresses, ovnkube, routes] = await Promise.all([dataplane.addresses(), probe(), dataplane.routes(watched.prefixes, links)]);
  return { links, addresses, routes, ovnkube };
}

// One full observation of the node: links, addresses, the routes of every watched
// prefix (service CIDRs and default routes), and ovnkube-node.
import type { Watched } from '../core/route.js';
import type { OvnkubeObservation, Observation } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';

/**
 * ovnkube-node as /proc shows it. `routeEventOnly`: the pass was woken by route
 * notifications alone, so the probe may reuse its last scan where it can prove it
 * current (src/ovnkube/proc.ts, OvnkubeScanner).
 */
export type OvnkubeProbe = (hint?: { routeEventOnly: boolean }) => Promise<OvnkubeObservation>;

export async function observe(
  dataplane: Dataplane,
  watched: Watched,
  probe: OvnkubeProbe,
  routeEventOnly = false,
): Promise<Observation> {
  // Links first: every route's interface name is resolved from this one answer.
  const links = await dataplane.links();
  const [addresses, ovnkube, routes] = await Promise.all([
    dataplane.addresses(),
    probe({ routeEventOnly }),
    dataplane.routes(watched.prefixes, links),
  ]);
  return { links, addresses, routes, ovnkube };
}

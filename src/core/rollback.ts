// `rollback`: putting back the routes the journal's migration replaced. Pure: the migration and
// the observation in, the replaces (all or none: half a rollback leaves the families in different
// modes) or the refusals out. The old route is put back only where the rules still hold it right:
//  1. Only where the planner would act: never on a routing-via-host (4.10+) node
//     (RoutingViaHostLayout), nor one of unknown release without --layout legacy (LayoutUnknown).
//  2. Each recorded route still as the migration left it (same key, the one route of its prefix,
//     ours by the planner's rules, the next hop it set): else someone changed it, and putting back
//     would undo that (RouteNotAsLeft). Never a /0 (an older agent's journal may record one).
//  3. The old next hop is still the one its mode takes: for ovn-k8s-mp0 the .1 of its subnet
//     (ManagementSubnetChanged), for br-ex --gateway-nexthop or its default route's (GatewayNexthopChanged).
//  4. The old route's device, ovn-k8s-mp0 or br-ex, must exist and be up, and br-ex in any case.
//  5. A route found as before the migration is skipped (an `apply` stopped before it, a rollback
//     interrupted after it); nothing left: NothingToRollBack. So is a rollback on record as done on
//     a node rule 1 now refuses (upgraded since): a fleet script counts it as done, not failed.
//  6. Never against ovnkube-node, as every door: not while it runs the migration's mode (OvnkubeOtherMode),
//     nor a shared one's route via mp0 (OvnkubeFallbackRoute), nor, unless --ovnkube-mode-check off, while
//     its mode cannot be seen (OvnkubeModeUnknown: the next may run the migration's mode, or be 4.10+).
import type { Migration } from './migration.js';
import { detectLayout, expectedNexthop, layoutUnknown, modeUnseen, ownedRoute, type PlanInput } from './planner.js';
import { reason, type Reason, type ReasonCode } from './reasons.js';
import { renderNextHop, sameNextHop } from './route.js';
import type { GatewayMode, Observation, PlannerConfig, ReplaceAction } from './types.js';
import { parseCidr } from '../net/cidr.js';

export interface RollbackPlan {
  /** The replaces that put the migration's routes back, in the journal's order; empty when refused. */
  actions: ReplaceAction[];
  /** Why nothing is done (each with the route it concerns); empty when the plan may be carried out. */
  refusals: Reason[];
}

const refused = (code: ReasonCode, why: string): RollbackPlan => ({ actions: [], refusals: [reason(code, why)] });

export function planRollback(migration: Migration | null, observed: Observation, config: PlannerConfig): RollbackPlan {
  if (migration === null) return refused('NothingToRollBack', 'the journal records no migration');
  const { mode, routes } = migration;
  if (routes.length === 0) return refused('NothingToRollBack', `the ${mode} migration replaced no route`);
  const input = { desired: { mode, source: { path: '', error: null } }, config, observed };
  const layout = detectLayout(input);
  // Rolled back, then upgraded: done, not refused (a 4.10+ route is right in both modes). Of unknown
  // release, only with every route still as before the migration (rule 5): else nobody can tell.
  const asBefore = () => routes.every((r) => putBack(r, mode, input) === null);
  const viaHost = layout.layout === 'routing-via-host';
  if (migration.rollback?.doneAt != null && (viaHost || (layout.layout === 'unknown' && asBefore()))) {
    const why = `the ${mode} migration was rolled back already (${layout.evidence}): the agent changes nothing here`;
    return refused('NothingToRollBack', why);
  }
  if (layout.layout === 'unknown') return refused('LayoutUnknown', layoutUnknown(input, layout));
  if (viaHost) {
    const why = `routing-via-host layout (${layout.evidence}): a service route via ${config.gatewayInterface} is right in both modes; nothing is put back`;
    return refused('RoutingViaHostLayout', why);
  }
  const results = routes.map((r) => putBack(r, mode, input));
  const refusals = results.filter((r): r is Reason => r !== null && 'code' in r);
  const actions = results.filter((r): r is ReplaceAction => r !== null && 'key' in r);
  if (refusals.length > 0) return { actions: [], refusals };
  if (actions.length === 0)
    return refused('NothingToRollBack', `the routes the ${mode} migration replaced are as they were before it`);
  const o = observed.ovnkube;
  const pid = o.pid !== null ? ` (pid ${o.pid})` : '';
  const other = `ovnkube-node${pid} runs --gateway-mode ${mode}, the mode the migration moved to: putting the old routes back under it leaves the stale route it cannot replace; switch the cluster's gateway mode back instead (its rollout rewrites the route itself)`;
  if (o.modes.includes(mode)) return refused('OvnkubeOtherMode', other);
  const kept = `ovnkube-node${pid} runs shared and keeps the route via ${config.managementInterface} on purpose while the cluster's topology version is old (an upgrade), or until its restart in shared mode moves it to ${config.gatewayInterface}: nothing is put back`;
  if (mode === 'local' && o.modes.includes('shared')) return refused('OvnkubeFallbackRoute', kept);
  const unseen = modeUnseen(o, config.ovnkubeModeCheck === 'proc');
  const off = 'with ovnkube-node stopped, --ovnkube-mode-check off puts the routes back';
  return unseen === null ? { actions, refusals } : refused('OvnkubeModeUnknown', `${unseen}: ${off}`);
}

/** The replace that puts one recorded route back, if the rules still hold it right; null: it is as before. */
function putBack(
  recorded: Migration['routes'][number],
  mode: GatewayMode,
  input: PlanInput,
): ReplaceAction | Reason | null {
  const { observed, config } = input;
  const { from, to, key } = recorded;
  const { prefix, table, priority } = key;
  const cidr = parseCidr(prefix);
  const no = (code: ReasonCode, why: string) => reason(code, `${prefix}: ${why}`);
  const slash0 = `${prefix} is a default route, never a service route: the journal cannot be right about it; nothing is put back`;
  if (cidr.length === 0) return reason('NotOurRoute', slash0);
  const owned = ownedRoute(cidr, observed.routes.get(prefix) ?? [], config);
  if ('blocked' in owned) return owned.blocked;
  const now = owned.route;
  const sameKey = now.key.table === table && now.key.priority === priority;
  if (sameKey && sameNextHop(now.nextHop, from)) return null;
  if (!sameKey || !sameNextHop(now.nextHop, to)) {
    const why = `${prefix} is ${renderNextHop(now.nextHop)} metric ${now.key.priority}; the migration left it ${renderNextHop(to)} metric ${priority}: changed since, not putting back over it`;
    return reason('RouteNotAsLeft', why);
  }
  // Rule 3 (the planner's next hop for the old route's mode, with its device's current index) and rule 4.
  const mp0 = from.dev === config.managementInterface;
  const { gatewayInterface: brEx, managementInterface: mp0Name } = config;
  const elsewhere = `the old device ${from.dev ?? '(none)'} is neither ${brEx} nor ${mp0Name}`;
  if (!mp0 && from.dev !== brEx) return no('NotOurRoute', elsewhere);
  const hop = expectedNexthop(mp0 ? 'local' : 'shared', key.family, input);
  if ('blocked' in hop) return no(hop.blocked.code, hop.blocked.message);
  const { oif, gateway: via } = hop.expected;
  const why = mp0
    ? `the old next hop ${from.gateway} is not the first address of ${mp0Name}'s subnet any more (now ${via})`
    : `the old next hop ${from.gateway} is not ${brEx}'s any more (now ${via}: --gateway-nexthop, ovnkube.conf's [gateway] next-hop (--ovnkube-config), else its default route's): ovnkube-node would start on a dead one`;
  if (via !== from.gateway) return no(mp0 ? 'ManagementSubnetChanged' : 'GatewayNexthopChanged', why);
  const back = { ...from, oif };
  const what = `put ${prefix} back: ${renderNextHop(now.nextHop)} -> ${renderNextHop(back)} (before the ${mode} migration)`;
  const { protocol, scope, type, nextHop } = now;
  return { key: now.key, protocol, scope, type, from: nextHop, to: back, reason: reason('RollingBack', what) };
}

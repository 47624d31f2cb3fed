// `rollback`: putting back the routes the journal's migration replaced. Pure: the
// observation and the migration in, the replaces (all or none) or the refusals out;
// the command carries the replaces out with the dataplane's replace, which never
// creates a route.
//
// The old route is put back only where the layout rules still hold it right:
//  1. Only on a node the planner would act on: never on a routing-via-host (4.10+) node,
//     where a br-ex service route is right in both modes (RoutingViaHostLayout), nor on
//     one whose release is unknown unless --layout legacy states it (LayoutUnknown).
//  2. Each recorded route must still be there in the shape the migration left it
//     (same key, the one route of its prefix, ours by the planner's rules, the next
//     hop the migration set): one changed since was changed by someone else, and
//     putting back over it would undo their change, not ours.
//  3. A local-mode next hop is the .1 of ovn-k8s-mp0's subnet: when the subnet
//     changed, the old next hop is wrong now (ManagementSubnetChanged).
//  4. The old route's device must exist and be up.
//  5. A recorded route found as it was before the migration is skipped: it was never
//     replaced (an `apply` interrupted, or killed, before it got there; the journal
//     records a migration's routes before the first replace) or it is back already
//     (a rollback interrupted after putting it back). Nothing left: NothingToRollBack.
//  6. Never while ovnkube-node is seen running the migration's mode (OvnkubeOtherMode).
// One refusal refuses all: a rollback of half a migration leaves the families in
// different modes, which no ovnkube-node runs.
import type { Migration } from './migration.js';
import { detectLayout, layoutUnknown, managementNexthop, ownedRoute } from './planner.js';
import { reason, type Reason } from './reasons.js';
import { renderNextHop, sameNextHop, type NextHop } from './route.js';
import type { Observation, PlannerConfig, ReplaceAction } from './types.js';
import { parseCidr } from '../net/cidr.js';

export interface RollbackPlan {
  /** The replaces that put the migration's routes back, in the journal's order; empty when refused. */
  actions: ReplaceAction[];
  /** Why nothing is done (each with the route it concerns); empty when the plan may be carried out. */
  refusals: Reason[];
}

export function planRollback(migration: Migration | null, observed: Observation, config: PlannerConfig): RollbackPlan {
  if (migration === null || migration.routes.length === 0) {
    return {
      actions: [],
      refusals: [
        reason(
          'NothingToRollBack',
          migration === null ? 'the journal records no migration' : `the ${migration.mode} migration replaced no route`,
        ),
      ],
    };
  }
  const input = { desired: { mode: migration.mode, source: { path: '', error: null } }, config, observed };
  const layout = detectLayout(input);
  if (layout.layout === 'unknown')
    return { actions: [], refusals: [reason('LayoutUnknown', layoutUnknown(input, layout))] };
  if (layout.layout === 'routing-via-host') {
    return {
      actions: [],
      refusals: [
        reason(
          'RoutingViaHostLayout',
          `routing-via-host layout (${layout.evidence}): a service route via ${config.gatewayInterface} is right in both modes; nothing is put back`,
        ),
      ],
    };
  }
  const actions: ReplaceAction[] = [];
  const refusals: Reason[] = [];
  for (const recorded of migration.routes) {
    const prefix = recorded.key.prefix;
    if (parseCidr(prefix).length === 0) {
      // A /0 is never a service CIDR (src/config/settings.ts); an older agent's journal may record one.
      const why = `${prefix} is a default route, never a service route: the journal cannot be right about it; nothing is put back`;
      refusals.push(reason('NotOurRoute', why));
      continue;
    }
    const routes = observed.routes.get(prefix) ?? [];
    const owned = ownedRoute(parseCidr(prefix), routes, config);
    if ('blocked' in owned) {
      refusals.push(owned.blocked);
      continue;
    }
    const now = owned.route;
    if (
      now.key.table === recorded.key.table &&
      now.key.priority === recorded.key.priority &&
      sameNextHop(now.nextHop, recorded.from)
    )
      continue;
    if (
      now.key.table !== recorded.key.table ||
      now.key.priority !== recorded.key.priority ||
      !sameNextHop(now.nextHop, recorded.to)
    ) {
      refusals.push(
        reason(
          'RouteNotAsLeft',
          `${prefix} is ${renderNextHop(now.nextHop)} metric ${now.key.priority}; the migration left it ${renderNextHop(recorded.to)} metric ${recorded.key.priority}: changed since, not putting back over it`,
        ),
      );
      continue;
    }
    const back = oldNextHop(recorded.from, recorded.key.family, observed, config, prefix);
    if ('refused' in back) {
      refusals.push(back.refused);
      continue;
    }
    actions.push({
      key: now.key,
      protocol: now.protocol,
      scope: now.scope,
      type: now.type,
      from: now.nextHop,
      to: back.to,
      reason: reason(
        'RollingBack',
        `put ${prefix} back: ${renderNextHop(now.nextHop)} -> ${renderNextHop(back.to)} (before the ${migration.mode} migration)`,
      ),
    });
  }
  if (refusals.length > 0) return { actions: [], refusals };
  if (actions.length === 0) {
    return {
      actions: [],
      refusals: [
        reason('NothingToRollBack', `the routes the ${migration.mode} migration replaced are as they were before it`),
      ],
    };
  }
  // Rule 6: never under an ovnkube-node that runs the migration's mode (as every door waits on
  // one running the other mode): its routes are the migrated ones, and the old route put back
  // under it is the stale one it cannot replace itself. A rollout to the old mode rewrites the
  // route itself and leaves nothing to roll back.
  const running = observed.ovnkube.modes.find((m) => m === migration.mode);
  if (running) {
    const detail = observed.ovnkube.pid !== null ? ` (pid ${observed.ovnkube.pid})` : '';
    const refusal = `ovnkube-node${detail} runs --gateway-mode ${running}, the mode the migration moved to: putting the old routes back under it leaves the stale route it cannot replace; switch the cluster's gateway mode back instead (its rollout rewrites the route itself)`;
    return { actions: [], refusals: [reason('OvnkubeOtherMode', refusal)] };
  }
  return { actions, refusals };
}

/** The recorded old next hop, with its device's current index, if the rules still hold it right. */
function oldNextHop(
  from: NextHop,
  family: 4 | 6,
  observed: Observation,
  config: PlannerConfig,
  prefix: string,
): { to: NextHop } | { refused: Reason } {
  const link = observed.links.find((l) => l.name === from.dev);
  if (from.dev === null || !link)
    return {
      refused: reason(
        from.dev === config.managementInterface ? 'ManagementLinkMissing' : 'GatewayLinkMissing',
        `${prefix}: the old device ${from.dev ?? '(none)'} does not exist`,
      ),
    };
  if (!link.up)
    return {
      refused: reason(
        from.dev === config.managementInterface ? 'ManagementLinkDown' : 'GatewayLinkDown',
        `${prefix}: the old device ${from.dev} is down`,
      ),
    };
  if (from.dev === config.managementInterface) {
    const hop = managementNexthop(link, family, observed.addresses);
    if ('blocked' in hop) return { refused: hop.blocked };
    if (hop.via !== from.gateway) {
      return {
        refused: reason(
          'ManagementSubnetChanged',
          `${prefix}: the old next hop ${from.gateway ?? '(none)'} is not the first address of ${config.managementInterface}'s subnet any more (now ${hop.via})`,
        ),
      };
    }
  }
  return { to: { ...from, oif: link.index } };
}

// Every refusal, wait and degradation carries a stable code and a message that may change: scripts
// and alerts match on codes (docs/status.md, "Reason codes", says what each means).
export const REASON_CODES = [
  'ModeNotRead', // no valid desired mode yet: nothing is done
  'ModeFileInvalid', // the file turned bad: the last valid mode is kept
  'RoutingViaHostLayout', // 4.10+ (or --layout routing-via-host): service routes via br-ex are correct in both modes
  'LayoutUnknown', // no evidence of the OpenShift release and no --layout legacy: nothing is changed
  'OvnkubeModeUnknown',
  'OvnkubeOtherMode', // the operator has not rolled the new mode out yet
  'OvnkubeFallbackRoute', // shared desired, a service route via ovn-k8s-mp0: ovnkube-node's own (upgrade window) or its restart to come
  'GatewayLinkMissing',
  'GatewayLinkDown',
  'ManagementLinkMissing',
  'ManagementLinkDown',
  'ManagementAddressUnusable', // not exactly one usable address, the subnet's second, per family
  'NoDefaultRoute', // shared mode: no next hop to take from br-ex's default route
  'NoRoute',
  'SeveralRoutes',
  'NotOurRoute', // multipath, not unicast, TOS, another device, a link-local next hop
  'InSync',
  'AlreadyShared',
  'Replacing',
  'DryRun',
  'RepairsSuspended', // something keeps setting a route back: the agent stopped repairing
  'RestartPathBroken', // checked before the first replace: no runtime, not one container
  'RestartAwaited', // --restart none, or a restart requested: waiting for a new ovnkube-node
  'RestartHeld', // a restart is owed, but held: a dry run, a 4.10+ or unknown release, shared mode, ovnkube-node seen in the other mode
  'RestartRateLimited',
  'RestartFailed',
  'RestartTimedOut',
  'Settling',
  'ReconcileFailed',
  'JournalUnwritable', // the state directory is full or read-only: no change is made that the journal cannot record
  'NothingToRollBack', // no migration on record, or it replaced nothing
  'RouteNotAsLeft', // the route is no longer what the migration made it: someone else changed it since
  'ManagementSubnetChanged', // the old local-mode next hop is no longer the .1 of ovn-k8s-mp0's subnet
  'GatewayNexthopChanged', // the old shared-mode next hop is no longer br-ex's (--gateway-nexthop, default route)
  'RollingBack',
] as const;

export type ReasonCode = (typeof REASON_CODES)[number];

export interface Reason {
  code: ReasonCode;
  message: string;
}

export const reason = (code: ReasonCode, message: string): Reason => ({ code, message });

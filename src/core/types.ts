// The values the pure core works on: what was observed, what is wanted, and the plan.
import type { InterfaceAddress, KernelRoute, Link } from '../dataplane/types.js';
import type { Cidr, Family } from '../net/cidr.js';

export type GatewayMode = 'local' | 'shared';
export type LayoutSetting = 'auto' | 'legacy' | 'routing-via-host';
export type Layout = 'legacy' | 'routing-via-host' | 'unknown';
export type Phase = 'Converged' | 'Waiting' | 'Progressing' | 'Degraded';

export interface DesiredMode {
  mode: GatewayMode | null;
  source: { path: string; error: string | null };
}

/** ovnkube-node as seen from /proc (or not looked at: check 'off'). */
export interface OvnkubeObservation {
  mode: GatewayMode | null;
  pid: number | null;
  /** Why mode is null: no process, no flag, several processes disagreeing. */
  detail: string | null;
}

export interface Observation {
  links: Link[];
  addresses: InterfaceAddress[];
  /** Main-table routes of each service CIDR (key: Cidr.text) and of the default routes ("0.0.0.0/0", "::/0"). */
  routes: Map<string, KernelRoute[]>;
  ovnkube: OvnkubeObservation;
}

export interface PlannerConfig {
  serviceCidrs: Cidr[];
  gatewayInterface: string;
  managementInterface: string;
  layout: LayoutSetting;
  ovnkubeModeCheck: 'proc' | 'off';
  mtu: number | null;
  gatewayNexthop: Partial<Record<Family, string>>;
  dryRun: boolean;
}

export interface RouteShape {
  dev: string | null;
  via: string | null;
  mtu: number | null;
}

export interface RouteStatus {
  cidr: string;
  family: Family;
  observed: RouteShape | null;
  expected: RouteShape | null;
  inSync: boolean;
}

/** One atomic replace, with everything needed to carry it out and to log it. */
export interface ReplaceAction {
  cidr: Cidr;
  from: RouteShape;
  to: RouteShape;
  table: number;
  priority: number;
  protocol: number;
  scope: number;
  type: number;
  oif: number;
  reason: string;
}

export interface Plan {
  phase: Phase;
  layout: Layout;
  reasons: string[];
  warnings: string[];
  routes: RouteStatus[];
  actions: ReplaceAction[];
}

// The values the pure core works on: what was observed, what is wanted, and the plan.
import type { Cidr, Family } from '../net/cidr.js';
import type { Reason } from './reasons.js';
import type { InterfaceAddress, Link, NextHop, Route, RouteReplace } from './route.js';

export type GatewayMode = 'local' | 'shared';
export type Layout = 'legacy' | 'routing-via-host' | 'unknown';
export type Phase = 'Converged' | 'Waiting' | 'Progressing' | 'Degraded';

/** The node's OpenShift release, as far as the evidence goes (platform.ts). */
export type Release = '4.8-4.9' | '4.10+' | 'unknown';

/** The os-release fields looked at (VERSION: RHCOS's build; VERSION_ID: the OpenShift minor); error: why none (no evidence). */
export interface OsRelease {
  path: string;
  id: string | null;
  openshiftVersion: string | null;
  version: string | null;
  versionId: string | null;
  error: string | null;
}

/** ovnkube.conf's keys that only a 4.10+ operator renders, as found (`[kubernetes] platform-type="AWS"`). */
export interface ConfEvidence {
  path: string;
  keys: string[];
}

export interface DesiredMode {
  mode: GatewayMode | null;
  /** detail: why the mode is what it is, where that is not the text at face value (a ConfigMap read as CNO reads it). */
  source: { path: string; error: string | null; detail?: string | null };
}

/** ovnkube-node as seen from /proc (whatever --ovnkube-mode-check says). */
export interface OvnkubeObservation {
  /** null with no process, no flag, or processes that disagree. */
  mode: GatewayMode | null;
  /** Every mode of an ovnkube --init-node process that may be this node's (unreadable, disagreeing included). */
  modes: GatewayMode[];
  pid: number | null;
  /** The process's identity across PID reuse ("pid N start T"); null without one process. */
  id: string | null;
  /** Why mode is null. */
  detail: string | null;
  /** A flag only the 4.10+ operator renders, with its pid ("--export-ovs-metrics (pid 42)"): platform.ts, rule 1. */
  release410Plus: string | null;
}

export interface Observation {
  links: Link[];
  addresses: InterfaceAddress[];
  /** Main-table routes of each watched prefix (key: Cidr.text): service CIDRs and default routes. */
  routes: Map<string, Route[]>;
  ovnkube: OvnkubeObservation;
}

export interface PlannerConfig {
  serviceCidrs: Cidr[];
  gatewayInterface: string;
  managementInterface: string;
  layout: 'auto' | 'legacy' | 'routing-via-host';
  ovnkubeModeCheck: 'proc' | 'off';
  mtu: number | null;
  gatewayNexthop: Partial<Record<Family, string>>;
  /** Next hops of the 4.10+ layout named by ovnkube.conf's masquerade subnets (their .4). */
  masqueradeNexthops: string[];
  osRelease: OsRelease;
  /** null without --ovnkube-config. */
  confEvidence: ConfEvidence | null;
  dryRun: boolean;
}

export interface RouteStatus {
  cidr: string;
  family: Family;
  observed: NextHop | null;
  /** Several next hops: `observed` cannot say which. */
  multipath: boolean;
  expected: NextHop | null;
  inSync: boolean;
}

/** One atomic replace, with what it was (to log it, and to put it back). */
export interface ReplaceAction extends RouteReplace {
  from: NextHop;
  reason: Reason;
}

export interface Plan {
  layout: Layout;
  platform: { release: Release; evidence: string };
  /** Replaces to carry out, all or none: the planner never plans half a migration. */
  actions: ReplaceAction[];
  /** What stops the plan, or what it concludes (InSync, Replacing, ...). */
  reasons: Reason[];
  /** A precondition fails (phase Waiting). */
  blocked: boolean;
  /** --dry-run: neither a replace nor a restart is carried out. */
  dryRun: boolean;
  /** ovnkube-node runs the other mode, or its mode is unknown: the plan waits on it (a rollout, a start). */
  awaitsOvnkube: boolean;
  warnings: string[];
  routes: RouteStatus[];
}

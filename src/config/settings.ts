// The agent's settings, resolved and checked once: flags (or OVN_GWMODE_* variables),
// then ovnkube.conf for what the flags leave out. A bad value is a ConfigError that
// names the flag; the CLI prints it on one line and exits 2.
import type { GatewayMode, PlannerConfig } from '../core/types.js';
import { addressInSubnet, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { readFile } from 'node:fs/promises';
import { parseListenAddress } from '../metrics/address.js';
import { parseDuration } from './duration.js';
import { readOvnkubeConf, type OvnkubeConf } from './ovnkube-conf.js';
import { DEFAULT_OS_RELEASE, readOsRelease } from './os-release.js';
import type { ConfEvidence } from '../core/platform.js';

export class ConfigError extends Error {
  readonly code = 'ERR_GWMODE_CONFIG';
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`--${flag}: ${message}`);
  }
}

/** What `plan` and `apply` read: the planner's inputs, without the daemon's. */
export interface RawPlanOptions {
  modeFile?: string;
  serviceCidr?: Array<string | number>;
  ovnkubeConfig?: string;
  osRelease?: string;
  gatewayInterface: string;
  managementInterface: string;
  layout: string;
  ovnkubeModeCheck: string;
  mtu?: number | string;
  gatewayNexthop?: Array<string>;
  logLevel: string;
}

export interface RawRunOptions extends RawPlanOptions {
  socket: string;
  socketGroup?: string | number;
  stateDir: string;
  resyncInterval: string | number;
  restart: string;
  criEndpoint?: string;
  ovnkubeNamespace: string;
  ovnkubeContainer: string;
  restartGrace: string | number;
  restartMinInterval: string | number;
  restartMaxPerHour: string | number;
  restartTimeout: string | number;
  settle: string | number;
  dryRun: boolean;
  metricsAddress?: string;
}

/** What `plan` and `apply` need: the planner's part, where the mode and ovnkube-node's mode come from. */
export interface PlanSettings extends PlannerConfig {
  modeFile: string;
  ovnkubeConfig: string | null;
  /** [gateway] mode of ovnkube.conf: what ovnkube-node runs when its command line has no --gateway-mode. */
  ovnkubeConfMode: GatewayMode | null;
  logLevel: string;
}

/** Everything `run` needs: the planner's part, and the shell's. */
export interface Settings extends PlanSettings {
  socket: string;
  /** The gid that may use the socket besides root; null: root's group only. */
  socketGroup: number | null;
  stateDir: string;
  resyncIntervalMs: number;
  restart: 'cri' | 'signal' | 'none';
  criEndpoint: string | null;
  ovnkubeNamespace: string;
  ovnkubeContainer: string;
  restartGraceMs: number;
  restartMinIntervalMs: number;
  /** At most this many restart requests in any hour. */
  restartMaxPerHour: number;
  restartTimeoutMs: number;
  settleMs: number;
  /** HOST:PORT of the TCP listener serving only /metrics; null: the socket's /metrics only. */
  metricsAddress: string | null;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(flag, `"${value}" is not one of ${allowed.join(', ')}`);
}

const splitList = (values: Array<string | number> | undefined): string[] =>
  (values ?? [])
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter(Boolean);

function interfaceName(flag: string, value: string): string {
  if (!/^[^\s/]{1,15}$/.test(value)) throw new ConfigError(flag, `"${value}" is not an interface name`);
  return value;
}

function duration(flag: string, value: string | number): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new ConfigError(flag, (err as Error).message);
  }
}

const REPEATABLE = new Set(['serviceCidr', 'gatewayNexthop', 'service-cidr', 'gateway-nexthop']);

/** A flag given twice: the last one wins, except for the repeatable ones (yargs makes arrays of both). */
export function lastWins<T extends object>(raw: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) out[k] = Array.isArray(v) && !REPEATABLE.has(k) ? v[v.length - 1] : v;
  return out as T;
}

/** The planner's settings; dry run off (plan never changes the kernel; apply sets its own --dry-run). */
export async function resolvePlanSettings(given: RawPlanOptions): Promise<PlanSettings> {
  const raw = lastWins(given);
  if (!raw.modeFile)
    throw new ConfigError('mode-file', 'required: the file or ConfigMap volume holding the desired gateway mode');
  let conf: OvnkubeConf | null = null;
  if (raw.ovnkubeConfig) {
    try {
      conf = await readOvnkubeConf(raw.ovnkubeConfig);
    } catch (err) {
      // A system error by its code (ENOENT); a conf not read by its line and why.
      const e = err as NodeJS.ErrnoException;
      throw new ConfigError(
        'ovnkube-config',
        `${raw.ovnkubeConfig}: ${e.errno !== undefined && e.code ? e.code : e.message}`,
      );
    }
  }

  const cidrFlag = raw.serviceCidr && raw.serviceCidr.length > 0 ? 'service-cidr' : 'ovnkube-config';
  const cidrTexts = cidrFlag === 'service-cidr' ? splitList(raw.serviceCidr) : (conf?.serviceCidrs ?? []);
  if (cidrTexts.length === 0) {
    throw new ConfigError(
      'service-cidr',
      'no service CIDR given (and no [kubernetes] service-cidrs in --ovnkube-config)',
    );
  }
  const serviceCidrs: Cidr[] = [];
  const from = cidrFlag === 'service-cidr' ? '' : `${raw.ovnkubeConfig}: [kubernetes] service-cidrs: `;
  for (const text of cidrTexts) {
    try {
      const cidr = parseCidr(text);
      // A /0 is the default route, which every node has via br-ex's gateway: the very shape of a
      // shared-mode service route, so the node's way out would be moved into ovn-k8s-mp0.
      if (cidr.length === 0) throw new Error(`"${text}" is a default route, never a service network`);
      if (!serviceCidrs.some((c) => c.text === cidr.text)) serviceCidrs.push(cidr);
    } catch (err) {
      throw new ConfigError(cidrFlag, `${from}${(err as Error).message}`);
    }
  }

  let mtu: number | null = conf?.mtu ?? null;
  if (raw.mtu !== undefined && raw.mtu !== '') {
    mtu = Number(raw.mtu);
    if (!Number.isInteger(mtu) || mtu < 68 || mtu > 65535)
      throw new ConfigError('mtu', `"${raw.mtu}" is not an MTU (68-65535)`);
  }

  const gatewayNexthop: Partial<Record<Family, string>> = {};
  const hopFlag = raw.gatewayNexthop && raw.gatewayNexthop.length > 0 ? 'gateway-nexthop' : 'ovnkube-config';
  const hops = hopFlag === 'gateway-nexthop' ? splitList(raw.gatewayNexthop) : (conf?.nextHop ?? []);
  for (const hop of hops) {
    try {
      const a = parseAddress(hop);
      if (gatewayNexthop[a.family]) throw new Error(`two IPv${a.family} next hops given`);
      gatewayNexthop[a.family] = a.text;
    } catch (err) {
      throw new ConfigError(hopFlag, (err as Error).message);
    }
  }

  // The 4.10+ next hop is the .4 of each masquerade subnet ovnkube.conf names.
  const masqueradeNexthops: string[] = [];
  for (const text of conf?.masqueradeSubnets ?? []) {
    try {
      const subnet = parseCidr(text);
      masqueradeNexthops.push(addressInSubnet(subnet, subnet.length, 4).text);
    } catch (err) {
      throw new ConfigError('ovnkube-config', `[gateway] masquerade subnet: ${(err as Error).message}`);
    }
  }

  const confMode = conf?.mode === 'local' || conf?.mode === 'shared' ? conf.mode : null;
  // Read here, at start and on reload: a node's release changes only with a reboot.
  const osRelease = await readOsRelease(raw.osRelease || DEFAULT_OS_RELEASE);
  return {
    modeFile: raw.modeFile,
    serviceCidrs,
    ovnkubeConfig: raw.ovnkubeConfig ?? null,
    ovnkubeConfMode: confMode,
    gatewayInterface: interfaceName('gateway-interface', raw.gatewayInterface),
    managementInterface: interfaceName('management-interface', raw.managementInterface),
    layout: oneOf('layout', raw.layout, ['auto', 'legacy', 'routing-via-host'] as const),
    ovnkubeModeCheck: oneOf('ovnkube-mode-check', raw.ovnkubeModeCheck, ['proc', 'off'] as const),
    mtu,
    gatewayNexthop,
    masqueradeNexthops,
    osRelease,
    confEvidence: raw.ovnkubeConfig && conf ? confEvidence(raw.ovnkubeConfig, conf) : null,
    dryRun: false,
    logLevel: oneOf('log-level', raw.logLevel, LOG_LEVELS),
  };
}

/** The keys of ovnkube.conf that only a 4.10+ network operator renders (core/platform.ts says which and why). */
function confEvidence(path: string, conf: OvnkubeConf): ConfEvidence {
  const keys = conf.platformType === null ? [] : [`[kubernetes] platform-type="${conf.platformType}"`];
  for (const subnet of conf.masqueradeSubnets) keys.push(`[gateway] masquerade subnet ${subnet}`);
  return { path, keys };
}

/** A gid, or a group name looked up in /etc/group (the agent has no NSS; a DaemonSet has no LDAP). */
async function groupId(value: string | number | undefined): Promise<number | null> {
  if (value === undefined || value === '') return null;
  const text = String(value);
  if (/^\d+$/.test(text)) {
    const gid = Number(text);
    if (gid > 0xfffffffe) throw new ConfigError('socket-group', `"${text}" is not a gid`);
    return gid;
  }
  let groups: string;
  try {
    groups = await readFile('/etc/group', 'utf8');
  } catch (err) {
    throw new ConfigError(
      'socket-group',
      `cannot look "${text}" up in /etc/group (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give a gid`,
    );
  }
  for (const line of groups.split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === text && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw new ConfigError('socket-group', `no group "${text}" in /etc/group`);
}

export async function resolveSettings(given: RawRunOptions): Promise<Settings> {
  const raw = lastWins(given);
  const base = await resolvePlanSettings(raw);
  const resyncIntervalMs = duration('resync-interval', raw.resyncInterval);
  if (resyncIntervalMs < 1000) throw new ConfigError('resync-interval', 'must be at least 1s');
  return {
    ...base,
    socket: raw.socket,
    socketGroup: await groupId(raw.socketGroup),
    stateDir: raw.stateDir,
    resyncIntervalMs,
    restart: oneOf('restart', raw.restart, ['cri', 'signal', 'none'] as const),
    criEndpoint: raw.criEndpoint || null,
    ovnkubeNamespace: raw.ovnkubeNamespace,
    ovnkubeContainer: raw.ovnkubeContainer,
    restartGraceMs: duration('restart-grace', raw.restartGrace),
    restartMinIntervalMs: duration('restart-min-interval', raw.restartMinInterval),
    restartMaxPerHour: perHour(raw.restartMaxPerHour),
    restartTimeoutMs: duration('restart-timeout', raw.restartTimeout),
    settleMs: duration('settle', raw.settle),
    dryRun: raw.dryRun,
    metricsAddress: metricsAddress(raw.metricsAddress),
  };
}

function perHour(value: string | number): number {
  const n = Number(value);
  if (String(value).trim() === '' || !Number.isInteger(n) || n < 1 || n > 1_000_000)
    throw new ConfigError('restart-max-per-hour', `"${value}" is not a whole number from 1 to 1000000`);
  return n;
}

function metricsAddress(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  try {
    const { host, port } = parseListenAddress(value);
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  } catch (err) {
    throw new ConfigError('metrics-address', (err as Error).message);
  }
}

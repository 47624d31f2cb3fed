// The agent's settings, resolved and checked once: flags (or OVN_GWMODE_* variables), then
// ovnkube.conf for what the flags leave out. A bad value is a ConfigError naming the flag: exit 2.
import { readFile } from 'node:fs/promises';
import { noOsRelease, parseOsRelease, type ConfEvidence, type OsRelease } from '../core/platform.js';
import { parseDuration } from '../clock.js';
import { readRegularFile } from '../read-regular.js';
import { parseListenAddress } from '../metrics/address.js';
import { addressInSubnet, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { list, readOvnkubeConf } from './ovnkube-conf.js';

export class ConfigError extends Error {
  readonly code = 'ERR_GWMODE_CONFIG';
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`--${flag}: ${message}`);
  }
}

/** What `plan` and `apply` read, as yargs gives it (text: settings.ts parses every value). */
type PlanText = Record<'gatewayInterface' | 'managementInterface' | 'layout' | 'ovnkubeModeCheck' | 'logLevel', string>;
type PlanLists = Record<'serviceCidr' | 'gatewayNexthop', string[]>;
export type RawPlanOptions = PlanText &
  Partial<Record<'modeFile' | 'ovnkubeConfig' | 'osRelease' | 'mtu', string> & PlanLists>;

/** What `run` reads besides. */
export type RawRunOptions = RawPlanOptions &
  Record<'socket' | 'stateDir' | 'restart' | 'ovnkubeNamespace' | 'ovnkubeContainer' | 'restartMaxPerHour', string> &
  Record<'resyncInterval' | 'restartGrace' | 'restartMinInterval' | 'restartTimeout' | 'settle', string> &
  Partial<Record<'socketGroup' | 'criEndpoint' | 'metricsAddress', string>> & { dryRun: boolean };

/** What `plan` and `apply` need: the planner's part (a PlannerConfig), where the mode and ovnkube-node's mode come from. */
export type PlanSettings = Awaited<ReturnType<typeof resolvePlanSettings>>;
/** Everything `run` needs: the planner's part, and the shell's. */
export type Settings = Awaited<ReturnType<typeof resolveSettings>>;

/** The only values of a flag, with what each means for --help (cli/options.ts); yargs' own refusal would name no flag. */
export const CHOICES = {
  layout: {
    auto: 'from the evidence',
    legacy: 'a 4.8/4.9 node without evidence (4.10+ evidence wins)',
    'routing-via-host': 'never change',
  },
  'ovnkube-mode-check': {
    proc: 'act only when ovnkube-node is seen running the desired mode',
    off: 'also act when its mode cannot be seen; one seen running the other mode is waited for all the same',
  },
  'log-level': { fatal: '', error: '', warn: '', info: '', debug: '', trace: '', silent: '' },
  restart: {
    cri: 'stop its container through the runtime, and kubelet starts a new one',
    signal: 'SIGTERM to its process, and its supervisor starts a new one',
    none: 'never',
  },
} as const;

/** fn's value, or its error as a ConfigError naming the flag (after `prefix`). */
function flag<T>(name: string, fn: () => T, prefix = ''): T {
  try {
    return fn();
  } catch (err) {
    throw err instanceof ConfigError ? err : new ConfigError(name, prefix + (err as Error).message);
  }
}

function oneOf<F extends keyof typeof CHOICES>(name: F, value: string): keyof (typeof CHOICES)[F] {
  if (Object.hasOwn(CHOICES[name], value)) return value as keyof (typeof CHOICES)[F];
  throw new ConfigError(name, `"${value}" is not one of ${Object.keys(CHOICES[name]).join(', ')}`);
}

const splitList = (values: string[] | undefined): string[] => list((values ?? []).join(','));

function interfaceName(name: string, value: string): string {
  // The kernel's: at most 15 bytes (IFNAMSIZ, its NUL included), no space or slash.
  if (!/^[^\s/]+$/.test(value) || Buffer.byteLength(value) > 15)
    throw new ConfigError(name, `"${value}" is not an interface name`);
  return value;
}

const REPEATABLE = new Set(['serviceCidr', 'gatewayNexthop', 'service-cidr', 'gateway-nexthop']);

/** A flag given twice: the last one wins, except for the repeatable ones (yargs makes arrays of both). */
export function lastWins<T extends object>(raw: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) out[k] = Array.isArray(v) && !REPEATABLE.has(k) ? v[v.length - 1] : v;
  return out as T;
}

/** The planner's settings; dry run off (plan never changes the kernel; apply sets its own --dry-run). */
export async function resolvePlanSettings(given: RawPlanOptions) {
  const raw = lastWins(given);
  if (!raw.modeFile)
    throw new ConfigError('mode-file', 'required: the file or ConfigMap volume holding the desired gateway mode');
  const file = raw.ovnkubeConfig;
  // A system error by its code (ENOENT); a conf not read by its line and why.
  const unread = (e: NodeJS.ErrnoException) => {
    throw new ConfigError('ovnkube-config', `${file}: ${e.errno !== undefined && e.code ? e.code : e.message}`);
  };
  const conf = file ? await readOvnkubeConf(file).catch(unread) : null;

  const flagged = raw.serviceCidr?.length ? splitList(raw.serviceCidr) : null;
  const [cidrFlag, from] = flagged
    ? ['service-cidr', '']
    : ['ovnkube-config', `${raw.ovnkubeConfig}: [kubernetes] service-cidrs: `];
  const serviceCidrs: Cidr[] = [];
  for (const text of flagged ?? conf?.serviceCidrs ?? []) {
    const cidr = flag(cidrFlag, () => parseCidr(text), from);
    // A /0 is the default route, via br-ex's gateway like a shared-mode service route: it would move into ovn-k8s-mp0.
    if (cidr.length === 0)
      throw new ConfigError(cidrFlag, `${from}"${text}" is a default route, never a service network`);
    if (!serviceCidrs.some((c) => c.text === cidr.text)) serviceCidrs.push(cidr);
  }
  if (serviceCidrs.length === 0)
    throw new ConfigError(
      'service-cidr',
      'no service CIDR given (and no [kubernetes] service-cidrs in --ovnkube-config)',
    );

  let mtu: number | null = conf?.mtu ?? null;
  if (raw.mtu !== undefined && raw.mtu !== '') {
    mtu = Number(raw.mtu);
    if (!Number.isInteger(mtu) || mtu < 68 || mtu > 65535)
      throw new ConfigError('mtu', `"${raw.mtu}" is not an MTU (68-65535)`);
  }

  const gatewayNexthop: Partial<Record<Family, string>> = {};
  const hopFlag = raw.gatewayNexthop?.length ? 'gateway-nexthop' : 'ovnkube-config';
  for (const hop of raw.gatewayNexthop?.length ? splitList(raw.gatewayNexthop) : (conf?.nextHop ?? [])) {
    const a = flag(hopFlag, () => parseAddress(hop));
    if (gatewayNexthop[a.family]) throw new ConfigError(hopFlag, `two IPv${a.family} next hops given`);
    gatewayNexthop[a.family] = a.text;
  }

  // The 4.10+ next hop is the .4 of each masquerade subnet ovnkube.conf names.
  const masqueradeNexthops = (conf?.masqueradeSubnets ?? []).map((text) => {
    const subnet = flag('ovnkube-config', () => parseCidr(text), '[gateway] masquerade subnet: ');
    return addressInSubnet(subnet, subnet.length, 4).text;
  });

  // The keys of ovnkube.conf that only a 4.10+ network operator renders (core/platform.ts says which and why).
  const confKeys = conf && [
    ...(conf.platformType === null ? [] : [`[kubernetes] platform-type="${conf.platformType}"`]),
    ...conf.masqueradeSubnets.map((subnet) => `[gateway] masquerade subnet ${subnet}`),
  ];
  return {
    modeFile: raw.modeFile,
    serviceCidrs,
    ovnkubeConfig: raw.ovnkubeConfig ?? null,
    // What ovnkube-node runs when its command line has no --gateway-mode.
    ovnkubeConfMode: (['local', 'shared'] as const).find((m) => m === conf?.mode) ?? null,
    gatewayInterface: interfaceName('gateway-interface', raw.gatewayInterface),
    managementInterface: interfaceName('management-interface', raw.managementInterface),
    layout: oneOf('layout', raw.layout),
    ovnkubeModeCheck: oneOf('ovnkube-mode-check', raw.ovnkubeModeCheck),
    mtu,
    gatewayNexthop,
    masqueradeNexthops,
    // Read here, at start and on reload: a node's release changes only with a reboot.
    osRelease: await readOsRelease(raw.osRelease || '/etc/os-release'),
    confEvidence:
      raw.ovnkubeConfig && confKeys ? ({ path: raw.ovnkubeConfig, keys: confKeys } satisfies ConfEvidence) : null,
    dryRun: false,
    logLevel: oneOf('log-level', raw.logLevel),
  };
}

/** The host's os-release (a real one is under 1 KiB). Never fatal: a file not read is no evidence, and then nothing changes. */
async function readOsRelease(file: string): Promise<OsRelease> {
  try {
    return parseOsRelease((await readRegularFile(file, 64 * 1024)).toString('utf8'), file);
  } catch (err) {
    return noOsRelease(file, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
}

/** A gid, or a group name looked up in /etc/group (the agent has no NSS; a DaemonSet has no LDAP). */
async function groupId(value: string | number | undefined): Promise<number | null> {
  if (value === undefined || value === '') return null;
  const text = String(value);
  if (/^\d+$/.test(text)) {
    if (Number(text) > 0xfffffffe) throw new ConfigError('socket-group', `"${text}" is not a gid`);
    return Number(text);
  }
  const groups = await readFile('/etc/group', 'utf8').catch((err: NodeJS.ErrnoException) => {
    const why = err.code ?? err.message;
    throw new ConfigError('socket-group', `cannot look "${text}" up in /etc/group (${why}); give a gid`);
  });
  for (const line of groups.split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === text && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw new ConfigError('socket-group', `no group "${text}" in /etc/group`);
}

export async function resolveSettings(given: RawRunOptions) {
  const raw = lastWins(given);
  const base = await resolvePlanSettings(raw);
  const duration = (name: string, value: string) => flag(name, () => parseDuration(value));
  const resyncIntervalMs = duration('resync-interval', raw.resyncInterval);
  if (resyncIntervalMs < 1000) throw new ConfigError('resync-interval', 'must be at least 1s');
  const perHour = Number(raw.restartMaxPerHour);
  if (String(raw.restartMaxPerHour).trim() === '' || !Number.isInteger(perHour) || perHour < 1 || perHour > 1e6)
    throw new ConfigError('restart-max-per-hour', `"${raw.restartMaxPerHour}" is not a whole number from 1 to 1000000`);
  const at = raw.metricsAddress;
  const metrics = at ? flag('metrics-address', () => parseListenAddress(at)) : null;
  return {
    ...base,
    socket: raw.socket,
    socketGroup: await groupId(raw.socketGroup),
    stateDir: raw.stateDir,
    resyncIntervalMs,
    restart: oneOf('restart', raw.restart),
    criEndpoint: raw.criEndpoint || null,
    ovnkubeNamespace: raw.ovnkubeNamespace,
    ovnkubeContainer: raw.ovnkubeContainer,
    restartGraceMs: duration('restart-grace', raw.restartGrace),
    restartMinIntervalMs: duration('restart-min-interval', raw.restartMinInterval),
    restartMaxPerHour: perHour,
    restartTimeoutMs: duration('restart-timeout', raw.restartTimeout),
    settleMs: duration('settle', raw.settle),
    dryRun: raw.dryRun,
    metricsAddress:
      metrics && (metrics.host.includes(':') ? `[${metrics.host}]:${metrics.port}` : `${metrics.host}:${metrics.port}`),
  };
}

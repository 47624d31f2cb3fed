// The flags of each command, and the OVN_GWMODE_* variables that stand for them.
//
// Each command declares only the flags it uses, so that its --help is true and yargs'
// strict mode catches a misplaced one. Every `run` flag can also come from
// OVN_GWMODE_<FLAG_IN_UPPER_SNAKE_CASE>; each command reads only the variables of its
// own flags and leaves the rest to the others, because one environment (a DaemonSet
// container's, /etc/default/ovn-gwmode-agent) serves `run` and the `health` probe alike.
import type { Argv, Options } from 'yargs';
import { UsageError } from './exit-codes.js';

export const DEFAULT_SOCKET = '/run/ovn-gwmode-agent/agent.sock';
export const DEFAULT_STATE_DIR = '/var/lib/ovn-gwmode-agent';
export const ENV_PREFIX = 'OVN_GWMODE_';

export const COMMANDS = ['run', 'status', 'health', 'plan', 'apply', 'rollback', 'events'] as const;
export type Command = (typeof COMMANDS)[number];

type OptionSet = Record<string, Options>;

/** What the planner reads: `plan`, `apply` and `run`. */
const PLANNER: OptionSet = {
  'mode-file': { type: 'string', describe: 'file, ConfigMap volume directory or manifest holding the desired gateway mode' },
  'service-cidr': { type: 'string', array: true, describe: 'service CIDR (repeatable, comma lists allowed; IPv4 and IPv6)' },
  'ovnkube-config': { type: 'string', describe: 'ovnkube.conf, for service-cidrs, mtu and next-hop the flags leave out' },
  'gateway-interface': { type: 'string', default: 'br-ex' },
  'management-interface': { type: 'string', default: 'ovn-k8s-mp0' },
  'os-release': { type: 'string', default: '/etc/os-release', describe: "the host's os-release: RHCOS names the OpenShift release in it" },
  layout: { type: 'string', default: 'auto', describe: 'auto (from the evidence) | legacy (a 4.8/4.9 node without evidence; 4.10+ evidence wins) | routing-via-host (never change)' },
  'ovnkube-mode-check': { type: 'string', default: 'proc', describe: 'proc: act only when ovnkube-node runs the desired mode; off: trust the mode file' },
  mtu: { type: 'string', describe: 'MTU of shared-mode service routes (default: ovnkube.conf [default] mtu)' },
  'gateway-nexthop': { type: 'string', array: true, describe: "shared-mode next hop per family (default: the gateway interface's default route)" },
  'log-level': { type: 'string', default: 'info' },
};

const SOCKET: OptionSet = { socket: { type: 'string', default: DEFAULT_SOCKET, describe: "the agent's status socket" } };

const STATE_DIR: OptionSet = {
  'state-dir': { type: 'string', default: DEFAULT_STATE_DIR, describe: 'restart journal, and the lock that keeps one agent per node' },
};

const DRY_RUN: OptionSet = { 'dry-run': { type: 'boolean', default: false, describe: 'plan, log and report; never change the kernel' } };

/** Only the daemon's. */
const DAEMON: OptionSet = {
  ...SOCKET,
  'socket-group': { type: 'string', describe: "group (name or gid) that may use the socket, besides root: the socket's and its new directory's group" },
  'resync-interval': { type: 'string', default: '60', describe: 'seconds, or with a unit: 500ms, 2m' },
  restart: { type: 'string', default: 'cri', describe: 'how to restart ovnkube-node after a migration: cri | signal | none' },
  'cri-endpoint': { type: 'string', describe: 'CRI socket (default: the first of /var/run/crio/crio.sock, /run/containerd/containerd.sock)' },
  'ovnkube-namespace': { type: 'string', default: 'openshift-ovn-kubernetes' },
  'ovnkube-container': { type: 'string', default: 'ovnkube-node' },
  'restart-grace': { type: 'string', default: '30', describe: 'seconds the runtime gives ovnkube-node to stop' },
  'restart-min-interval': { type: 'string', default: '5m', describe: 'at most one restart per interval' },
  'restart-max-per-hour': { type: 'string', default: '3', describe: 'at most this many restarts in any hour' },
  'restart-timeout': { type: 'string', default: '5m', describe: 'how long to wait for the new ovnkube-node' },
  settle: { type: 'string', default: '60', describe: 'how long the routes must hold after a restart before Converged' },
  ...DRY_RUN,
  'metrics-address': { type: 'string', describe: 'HOST:PORT of a TCP listener serving only /metrics (default: none; the socket serves /metrics)' },
};

/** The flags that settings variables can stand for: exactly `run`'s. */
const SETTINGS: OptionSet = { ...PLANNER, ...STATE_DIR, ...DAEMON };

// No defaults: yargs counts a default as given, and status's --json and --brief conflict.
const JSON_OUT: OptionSet = { json: { type: 'boolean', describe: 'the raw JSON' } };

/**
 * rollback reads the journal and the kernel, not the desired mode nor ovnkube-node; the
 * route it puts back is the journal's (next hop and MTU as they were), so neither --mtu
 * nor --gateway-nexthop would change anything.
 */
const { 'mode-file': _modeFile, 'ovnkube-mode-check': _modeCheck, mtu: _mtu, 'gateway-nexthop': _nexthop, ...ROLLBACK_PLANNER } = PLANNER;

export const COMMAND_OPTIONS: Record<Command, OptionSet> = {
  run: SETTINGS,
  status: { ...SOCKET, ...JSON_OUT, brief: { type: 'boolean', describe: 'one line' }, watch: { type: 'boolean', describe: 'follow the agent live: redrawn on a terminal, a line per change otherwise' } },
  health: { ...SOCKET, ready: { type: 'boolean', default: false, describe: 'ask /readyz instead of /healthz' } },
  plan: { ...PLANNER, ...JSON_OUT },
  // apply honours a dry run too: the environment that holds a DaemonSet's or a unit's
  // OVN_GWMODE_DRY_RUN serves a one-shot apply run beside it (kubectl exec, a shell on the node).
  apply: { ...PLANNER, ...STATE_DIR, ...DRY_RUN, ...JSON_OUT },
  rollback: { ...ROLLBACK_PLANNER, ...STATE_DIR, yes: { type: 'boolean', default: false, describe: 'carry the plan out (without it, only print it)' } },
  events: { ...SOCKET, ...JSON_OUT, since: { type: 'string', describe: 'only the events of the last DURATION: 90s, 10m, 1h' } },
};

/** Flags that must not be given together (yargs' `conflicts`; the quick parser of dispatch.ts leaves such lines to it). */
export const CONFLICTS: Partial<Record<Command, Array<[string, string]>>> = {
  status: [
    ['json', 'brief'],
    ['watch', 'json'],
  ],
};

/** OVN_GWMODE_MODE_FILE -> mode-file */
const flagOf = (variable: string): string => variable.slice(ENV_PREFIX.length).toLowerCase().replaceAll('_', '-');
const variableOf = (flag: string): string => ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_');

export class EnvError extends Error {
  readonly code = 'ERR_GWMODE_ENV';
}

/** A boolean flag given a value that is no boolean: `--dry-run=maybe`. */
export class FlagValueError extends Error {
  readonly code = 'ERR_GWMODE_FLAG_VALUE';
}

const show = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);

const TRUE_WORDS = ['true', '1', 'yes', 'on'];
const FALSE_WORDS = ['false', '0', 'no', 'off'];
export const BOOLEAN_SPELLINGS = 'true/false, 1/0, yes/no, on/off';

/**
 * A boolean's usual spellings, in any case; undefined for anything else. yargs takes only
 * `true` as true and everything else (`1`, `yes`, `True`) silently as false: a dry run
 * spelt `1` would act. So every boolean value is read here, and what is not one is refused.
 */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (FALSE_WORDS.includes(word)) return false;
  return undefined;
}

const isBooleanFlag = (command: Command, flag: string): boolean => COMMAND_OPTIONS[command][flag]?.type === 'boolean';
const kebab = (flag: string) => flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * The command line with each value of a boolean flag (`--dry-run=1`, `--json yes`) spelt
 * `--flag=true` or `--flag=false`, which both parsers read right; a value that is no
 * boolean is a FlagValueError naming the flag. No command takes a positional argument,
 * so a boolean word after a boolean flag can only be its value.
 */
export function normalizeBooleanFlags(args: readonly string[]): string[] {
  const command = COMMANDS.find((c) => c === args.find((a) => !a.startsWith('-')));
  if (command === undefined) return [...args];
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const flag = m ? kebab(m[1]!) : undefined;
    if (m === null || flag === undefined || !isBooleanFlag(command, flag)) {
      out.push(arg);
      continue;
    }
    let text = m[2];
    if (text === undefined) {
      const next = args[i + 1];
      if (next === undefined || parseBoolean(next) === undefined) {
        out.push(arg);
        continue;
      }
      text = next;
      i++;
    }
    const value = parseBoolean(text);
    if (value === undefined) throw new FlagValueError(`--${flag}: ${show(text)} is not a boolean (${BOOLEAN_SPELLINGS})`);
    out.push(`--${m[1]}=${value}`);
  }
  return out;
}

/**
 * The values of `command`'s flags given by OVN_GWMODE_* variables. A variable that
 * names no settings flag at all is a typo, and is reported by its own name: the flag
 * yargs would make of it (`modefile`) is not what the operator wrote. A boolean's value
 * is given as `true` or `false` (parseBoolean), or refused naming the variable.
 */
export function envValues(command: Command, env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || value === undefined) continue;
    const flag = flagOf(variable);
    // Own keys only: `in` would take OVN_GWMODE_CONSTRUCTOR for a setting (Object.prototype's).
    if (!Object.hasOwn(SETTINGS, flag)) {
      const squash = (f: string) => f.replaceAll('-', '');
      const near = Object.keys(SETTINGS).find((f) => squash(f) === squash(flag));
      throw new EnvError(`${variable}: no such setting${near ? `; did you mean ${variableOf(near)}?` : ''} (the variables are ${ENV_PREFIX}<RUN_FLAG_IN_UPPER_SNAKE_CASE>)`);
    }
    if (!Object.hasOwn(COMMAND_OPTIONS[command], flag)) continue;
    if (isBooleanFlag(command, flag)) {
      const b = parseBoolean(value);
      if (b === undefined) throw new EnvError(`${variable}: ${show(value)} is not a boolean (${BOOLEAN_SPELLINGS})`);
      values[flag] = String(b);
    } else {
      values[flag] = value;
    }
  }
  return values;
}

/** A usage error: one line, exit 2 (src/cli/exit-codes.ts). */
export function usageError(message: string): never {
  throw new UsageError(message);
}

/** Declares `command`'s flags, with the values its variables give as the next layer below the command line. */
export function withOptions<T>(y: Argv<T>, command: Command, env: Record<string, string>): Argv<T> {
  return y.options(COMMAND_OPTIONS[command]).config(env) as unknown as Argv<T>;
}

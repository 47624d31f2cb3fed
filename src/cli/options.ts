// The whole command line, declared once in the form yargs takes and read by yargs: every
// command's flags, --help (test/cli/reference.test.ts holds docs/cli.md and the man page to it),
// one-line usage errors, and the handler each command runs. Every `run` flag can also come from
// OVN_GWMODE_<FLAG>; each command reads only its own flags' variables (one environment serves
// `run` and its probes). Not yargs' `.env()`: it would hand `plan` the daemon's variables (a
// strict-mode refusal), and could not name a misspelt one as written.
import yargs, { type Argv, type Options } from 'yargs';
import { CHOICES } from '../config/settings.js';
import { VERSION } from '../version.js';
import { failure, UsageError, type CommandResult, type ExitCode } from './exit-codes.js';

const ENV_PREFIX = 'OVN_GWMODE_';

const choices = (flag: keyof typeof CHOICES, what: string) =>
  `${what}: ${Object.entries<string>(CHOICES[flag])
    .map(([c, meaning]) => (meaning ? `${c} (${meaning})` : c))
    .join(' | ')}`;

/** A flag that takes a value, kept as text: settings.ts reads it (yargs would make `--mtu 1400` a number). */
const text = (describe: string, more: Options = {}): Options => ({ type: 'string', describe, ...more });
const defaults = (value: string, describe: string): Options => text(describe, { default: value });
/** No default value: what stands in for it, as --help says it. */
const otherwise = (describe: string, defaultDescription: string, array = false): Options =>
  text(describe, { defaultDescription, ...(array ? { array } : {}) });

export const FLAGS = {
  'mode-file': text('file, ConfigMap volume directory or manifest holding the desired gateway mode (required)'),
  'service-cidr': otherwise(
    'service CIDR (repeatable, comma lists allowed; IPv4 and IPv6; a /0, the default route, is refused)',
    "--ovnkube-config's service-cidrs",
    true,
  ),
  'ovnkube-config': text('ovnkube.conf, for service-cidrs, mtu and next-hop the flags leave out'),
  'gateway-interface': defaults('br-ex', "the OVS bridge of shared mode's service routes"),
  'management-interface': defaults('ovn-k8s-mp0', "the management port of local mode's service routes"),
  'os-release': defaults('/etc/os-release', "the host's os-release: RHCOS names the OpenShift release in it"),
  layout: defaults('auto', choices('layout', 'which service routes this node has')),
  'ovnkube-mode-check': defaults('proc', choices('ovnkube-mode-check', "how ovnkube-node's gateway mode is checked")),
  mtu: otherwise('MTU of shared-mode service routes', "ovnkube.conf's routable-mtu or mtu, else ovn-k8s-mp0's MTU"),
  'gateway-nexthop': otherwise('shared-mode next hop, one per family', "the gateway interface's default route", true),
  'log-level': defaults('info', choices('log-level', 'least severe log line written')),
  'state-dir': defaults(
    '/var/lib/ovn-gwmode-agent',
    'restart journal (plan reads it), and the lock that keeps one agent per node',
  ),
  socket: defaults('/run/ovn-gwmode-agent/agent.sock', "the agent's status socket"),
  'socket-group': otherwise(
    "group (name or gid) that may use the socket, besides root: the socket's and its new directory's group",
    "root's",
  ),
  'resync-interval': defaults('60', 'seconds, or with a unit: 500ms, 2m'),
  restart: defaults('cri', choices('restart', 'how to restart ovnkube-node after a migration')),
  'cri-endpoint': otherwise('CRI socket', '/var/run/crio/crio.sock, else /run/containerd/containerd.sock'),
  'ovnkube-namespace': defaults('openshift-ovn-kubernetes', "ovnkube-node's pod namespace, for --restart cri"),
  'ovnkube-container': defaults('ovnkube-node', "ovnkube-node's container name, for --restart cri"),
  'restart-grace': defaults('30', 'seconds the runtime gives ovnkube-node to stop'),
  'restart-min-interval': defaults('5m', 'at most one restart per interval'),
  'restart-max-per-hour': defaults('3', 'at most this many restarts in any hour'),
  'restart-timeout': defaults('5m', 'how long to wait for the new ovnkube-node'),
  settle: defaults('60', 'how long the routes must hold after a restart before Converged'),
  'dry-run': { type: 'boolean', default: false, describe: 'plan, log and report; never change the kernel' },
  'metrics-address': otherwise('a TCP listener serving only /metrics', 'none: the socket serves /metrics'),
  // No defaults on these: yargs counts a default as given, and status's --json and --brief conflict.
  json: { type: 'boolean', describe: 'the raw JSON' },
  brief: { type: 'boolean', describe: 'one line' },
  watch: { type: 'boolean', describe: 'follow the agent live: redrawn on a terminal, a line per change otherwise' },
  ready: { type: 'boolean', default: false, describe: 'ask /readyz instead of /healthz' },
  yes: { type: 'boolean', default: false, describe: 'carry the plan out (without it, only print it)' },
  since: text('only the events of the last DURATION: 90s, 10m, 1h'),
} satisfies Record<string, Options>;

type Flag = keyof typeof FLAGS;

/** FLAGS in --help order, from `first` to `last`. */
const flagsFrom = (first: Flag, last: Flag): Flag[] => {
  const all = Object.keys(FLAGS) as Flag[];
  return all.slice(all.indexOf(first), all.indexOf(last) + 1);
};
/** What the planner reads: `plan`, `apply` and `run`. */
const PLANNER = flagsFrom('mode-file', 'log-level');
/** rollback reads no desired mode, and puts back the journal's routes (next hop and MTU as they were). */
const NOT_ROLLBACK: Flag[] = ['mode-file', 'mtu'];

interface CommandSpec {
  summary: string;
  flags: Flag[];
  conflicts?: Array<[Flag, Flag]>;
  exits: Partial<Record<ExitCode, string>>;
}

const BAD_USAGE = 'a bad flag, value or OVN_GWMODE_* variable';

export const COMMANDS = ['run', 'status', 'health', 'plan', 'apply', 'rollback', 'events'] as const;
export type Command = (typeof COMMANDS)[number];

export const COMMAND_SPECS: Record<Command, CommandSpec> = {
  run: {
    summary: 'run the agent: watch the mode file and the kernel, keep the service routes right',
    flags: flagsFrom('mode-file', 'metrics-address'),
    exits: {
      0: 'stopped by SIGTERM or SIGINT',
      1: 'another agent holds the node (its lock or its socket), or an unexpected error (logged before the exit)',
      2: `${BAD_USAGE}, ovnkube.conf, the socket group or the metrics address; or a socket or state directory it may not write`,
    },
  },
  status: {
    summary: 'ask a running agent how the node is',
    flags: ['socket', 'json', 'brief', 'watch'],
    conflicts: [
      ['json', 'brief'],
      ['watch', 'json'],
    ],
    exits: {
      0: 'Converged',
      1: 'not Converged',
      2: `the agent cannot be reached or refuses the caller (--watch: went away), or ${BAD_USAGE}`,
    },
  },
  health: {
    summary: 'the liveness (or, with --ready, readiness) probe',
    flags: ['socket', 'ready'],
    exits: {
      0: 'healthy (with --ready: ready)',
      1: 'not healthy (not ready)',
      2: `the agent cannot be reached or refuses the caller, or ${BAD_USAGE}`,
    },
  },
  plan: {
    summary: 'observe once and print what the agent would do',
    flags: [...PLANNER, 'state-dir', 'json'],
    exits: {
      0: 'nothing to do',
      1: 'something to do (a replace, or the restart a journaled migration owes), or the agent would wait or refuse (the reasons say why)',
      2: `${BAD_USAGE}, or ovnkube.conf`,
    },
  },
  apply: {
    summary: 'observe once, carry the plan out and verify',
    flags: [...PLANNER, 'state-dir', 'dry-run', 'json'],
    exits: {
      0: 'every route is in the desired mode; a restart of ovnkube-node the migration owes is left to the agent (its left: line names it)',
      1: 'something left to do, refused, failed or interrupted; or an agent holds the node',
      2: `${BAD_USAGE}, ovnkube.conf, or a state directory that takes no writes`,
    },
  },
  rollback: {
    summary: "print how the journal's last migration would be put back; with --yes, put it back",
    flags: [...PLANNER.filter((f) => !NOT_ROLLBACK.includes(f)), 'state-dir', 'yes'],
    exits: {
      0: 'put back (without --yes: the plan may be carried out), or nothing to roll back (NothingToRollBack)',
      1: "refused (the reason and its code are printed, among them: RoutingViaHostLayout on a node with 4.10+ evidence, LayoutUnknown on a node of unknown release unless --layout legacy states it, OvnkubeOtherMode while ovnkube-node runs the migration's mode, OvnkubeFallbackRoute while a shared one keeps its route via ovn-k8s-mp0, OvnkubeModeUnknown while its mode cannot be seen unless --ovnkube-mode-check off), failed or interrupted; or an agent holds the node",
      2: `${BAD_USAGE}, a --service-cidr that does not name every CIDR of the migration, or a journal it cannot read`,
    },
  },
  events: {
    summary: 'what the agent did on this node, oldest first (its last 256 events)',
    flags: ['socket', 'json', 'since'],
    exits: {
      0: 'the events were printed',
      2: `the agent cannot be reached, refuses the caller or is older than this command, or ${BAD_USAGE}`,
    },
  },
};

/** What the codes mean across commands. */
export const EXIT_STATUS: Record<ExitCode, string> = {
  0: 'done, converged, or nothing to do',
  1: 'not converged, refused, failed or interrupted, or another agent holds the node',
  2: 'a person must change something first: bad usage or configuration, a missing permission, the agent unreachable',
};

export const COMMAND_OPTIONS = Object.fromEntries(
  COMMANDS.map((c) => [c, Object.fromEntries(COMMAND_SPECS[c].flags.map((f) => [f, FLAGS[f]]))]),
) as Record<Command, Record<string, Options>>;

/** mode-file -> OVN_GWMODE_MODE_FILE: the variable of each of `run`'s flags, and only of those. */
export const variableOf = (flag: string): string => ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_');

const show = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);

/** A boolean's usual spellings, in any case: yargs takes anything but `true` as false, so a dry run spelt `1` would act. */
const BOOLEANS = new Map(['true', '1', 'yes', 'on', 'false', '0', 'no', 'off'].map((w, i) => [w, i < 4]));
function parseBoolean(text: string, what: string): boolean {
  const value = BOOLEANS.get(text.toLowerCase());
  if (value === undefined)
    throw new UsageError(`${what}: ${show(text)} is not a boolean (true/false, 1/0, yes/no, on/off)`);
  return value;
}

const kebab = (flag: string) => flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Each boolean flag's value (`--dry-run=1`, `--json yes`) spelt as yargs reads it right (no command takes a positional). */
function normalizeBooleanFlags(args: readonly string[]): string[] {
  const command = COMMANDS.find((c) => c === args.find((a) => !a.startsWith('-')));
  const out: string[] = [];
  const rest = [...args];
  for (let arg = rest.shift(); arg !== undefined; arg = rest.shift()) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const flag = kebab(m?.[1] ?? '');
    if (m === null || command === undefined || COMMAND_OPTIONS[command][flag]?.type !== 'boolean') {
      out.push(arg);
      continue;
    }
    const text = m[2] ?? (BOOLEANS.has(rest[0]?.toLowerCase() ?? '') ? rest.shift() : undefined);
    out.push(text === undefined ? arg : `--${m[1]}=${parseBoolean(text, `--${flag}`)}`);
  }
  return out;
}

/** The values of `command`'s flags given by OVN_GWMODE_* variables; one that names no `run` flag is a typo, named as written. */
export function envValues(command: Command, env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  const settings = COMMAND_OPTIONS.run;
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || value === undefined) continue;
    const flag = variable.slice(ENV_PREFIX.length).toLowerCase().replaceAll('_', '-');
    // Own keys only: `in` would take OVN_GWMODE_CONSTRUCTOR for a setting (Object.prototype's).
    if (!Object.hasOwn(settings, flag)) {
      const squash = (f: string) => f.replaceAll('-', '');
      const near = Object.keys(settings).find((f) => squash(f) === squash(flag));
      throw new UsageError(
        `${variable}: no such setting${near ? `; did you mean ${variableOf(near)}?` : ''} (the variables are ${ENV_PREFIX}<RUN_FLAG_IN_UPPER_SNAKE_CASE>)`,
      );
    }
    if (!Object.hasOwn(COMMAND_OPTIONS[command], flag)) continue;
    const boolean = COMMAND_OPTIONS[command][flag]?.type === 'boolean';
    values[flag] = boolean ? String(parseBoolean(value, variable)) : value;
  }
  return values;
}

/** Declares `command`'s flags, with the values its variables give as the next layer below the command line. */
export function withOptions<T>(y: Argv<T>, command: Command, env: Record<string, string>): Argv<T> {
  return y.options(COMMAND_OPTIONS[command]).config(env) as unknown as Argv<T>;
}

type Handler = (argv: Record<string, unknown>) => Promise<CommandResult>;

// Imported when they run: the probes load neither the addon nor netlink nor the logger. yargs'
// argv carries each flag camelCased, as the commands' options name them (not checked: `never`).
const kernel = () => import('./commands.js');
const ask = () => import('./ask.js');

const HANDLERS: Record<Command, Handler> = {
  run: async (argv) => (await kernel()).runCommand(argv as never),
  status: async (argv) => (await ask())[argv.watch === true ? 'watchCommand' : 'statusCommand'](argv as never),
  health: async (argv) => (await ask()).healthCommand(argv as never),
  plan: async (argv) => (await kernel()).planCommand(argv as never),
  apply: async (argv) => (await kernel()).applyCommand(argv as never),
  rollback: async (argv) => (await kernel()).rollbackCommand(argv as never),
  events: async (argv) => (await ask()).eventsCommand(argv as never),
};

const NAMED = `name a command: ${COMMANDS.slice(0, -1).join(', ')} or ${COMMANDS.at(-1)}`;

/** The exit codes, as --help ends: `exit status: 0 ...; 1 ...`. */
const exitStatus = (exits: Partial<Record<ExitCode, string>>) =>
  `exit status: ${Array.from(Object.entries(exits), ([code, meaning]) => `${code} ${meaning}`).join('; ')}`;

/** The command's flags, with its OVN_GWMODE_* variables under them; a misspelt variable is a usage error. */
const options = (command: Command) => (y: Argv) => {
  let withFlags = withOptions(y, command, envValues(command, process.env));
  for (const [a, b] of COMMAND_SPECS[command].conflicts ?? []) withFlags = withFlags.conflicts(a, b);
  return withFlags.epilogue(exitStatus(COMMAND_SPECS[command].exits));
};

/** yargs' complaint as one line naming what was wrong: its "Unknown arguments" tells no flag from a stray word. */
function explain(args: string[], message: string): string {
  const names = /^Unknown arguments?: (.*)$/.exec(message)?.[1]?.split(', ');
  if (names === undefined) return message;
  const typed = new Set(args.filter((a) => a.startsWith('-')).map((a) => a.replace(/^-+/, '').split('=')[0]));
  const flags = names.filter((n) => typed.has(n)).map((n) => (n.length === 1 ? `-${n}` : `--${n}`));
  if (flags.length > 0) return `unknown flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')}`;
  const command = args.find((a) => !a.startsWith('-'));
  if (command !== undefined && !(COMMANDS as readonly string[]).includes(command))
    return `unknown command "${command}": ${NAMED}`;
  return `unexpected argument${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`;
}

/** What --help ends with besides the exit codes: where the rest is, also from a clone, where `man NAME` finds nothing. */
const MORE =
  'every command and flag: man ovn-gwmode-agent\nfrom a clone: man ./packaging/man/ovn-gwmode-agent.8 (or docs/cli.md)';

/** Parses args with yargs and runs the command's handler; --help and --version are exit 0. */
export async function parseWithYargs(given: string[], handlers = HANDLERS): Promise<CommandResult> {
  let result: CommandResult = { code: 0 };
  const args = normalizeBooleanFlags(given);
  let y = yargs(args).scriptName('ovn-gwmode-agent');
  for (const command of COMMANDS) {
    const handle = async (argv: Record<string, unknown>) => void (result = await handlers[command](argv));
    y = y.command(command, COMMAND_SPECS[command].summary, options(command), handle);
  }
  await y
    .epilogue(`${exitStatus(EXIT_STATUS)}\n${MORE}`)
    .demandCommand(1, NAMED)
    .strict()
    .version('version', 'print the version', VERSION)
    .help('help', 'show this help')
    .fail((msg, err) => {
      if (err) throw err;
      throw new UsageError(explain(args, msg));
    })
    .parseAsync();
  return result;
}

/** The command line's result: a typed error that escaped the command is mapped here (exit-codes.ts); any other is a bug and thrown. */
export function commandLine(args: string[]): Promise<CommandResult> {
  return parseWithYargs(args).catch((err: unknown) => failure(err));
}

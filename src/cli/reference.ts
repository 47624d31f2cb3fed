// The command line, declared once: every command, its summary and exit codes, every flag
// (type, default, value, choices, description) and which commands take it.
//
// Everything that describes the command line is made from this and nothing else: the
// yargs setup and so --help (options.ts, yargs.ts), docs/cli.md and the manual page
// ovn-gwmode-agent(8) (manual.ts; `npm run docs:cli` writes both, and
// test/cli/reference.test.ts fails when they, or --help, differ from it). Every command
// line loads this module, so it holds data only, no prose pages.
//
// The environment variables are not declared flag by flag: every `run` flag, and only
// those, has one, OVN_GWMODE_<FLAG_IN_UPPER_SNAKE_CASE> (variableOf, options.ts says why).

export const DEFAULT_SOCKET = '/run/ovn-gwmode-agent/agent.sock';
export const DEFAULT_STATE_DIR = '/var/lib/ovn-gwmode-agent';
export const ENV_PREFIX = 'OVN_GWMODE_';

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** Given more than once, or as a comma list, it adds up (yargs' `array`). */
  readonly repeatable?: true;
  /** The value the flag has when not given (yargs counts it as given: see JSON). */
  readonly default?: string | boolean;
  /** What stands in when not given, where that is no fixed value (yargs' `defaultDescription`). */
  readonly defaultText?: string;
  /** The value's placeholder in a synopsis: PATH, DURATION. */
  readonly value?: string;
  /**
   * The only values taken, each with what it means (empty: the name says it). Checked by
   * src/config/settings.ts, not by yargs, whose refusal would name no flag; the reference
   * test holds the two lists equal.
   */
  readonly choices?: Readonly<Record<string, string>>;
  readonly describe: string;
}

const flags = <T extends Record<string, FlagSpec>>(f: T): T => f;

export const FLAGS = flags({
  'mode-file': {
    type: 'string',
    value: 'PATH',
    describe: 'file, ConfigMap volume directory or manifest holding the desired gateway mode (required)',
  },
  'service-cidr': {
    type: 'string',
    repeatable: true,
    value: 'CIDR',
    defaultText: "--ovnkube-config's service-cidrs",
    describe: 'service CIDR (repeatable, comma lists allowed; IPv4 and IPv6; a /0, the default route, is refused)',
  },
  'ovnkube-config': {
    type: 'string',
    value: 'PATH',
    describe: 'ovnkube.conf, for service-cidrs, mtu and next-hop the flags leave out',
  },
  'gateway-interface': {
    type: 'string',
    value: 'DEV',
    default: 'br-ex',
    describe: "the OVS bridge of shared mode's service routes",
  },
  'management-interface': {
    type: 'string',
    value: 'DEV',
    default: 'ovn-k8s-mp0',
    describe: "the management port of local mode's service routes",
  },
  'os-release': {
    type: 'string',
    value: 'PATH',
    default: '/etc/os-release',
    describe: "the host's os-release: RHCOS names the OpenShift release in it",
  },
  layout: {
    type: 'string',
    default: 'auto',
    choices: {
      auto: 'from the evidence',
      legacy: 'a 4.8/4.9 node without evidence (4.10+ evidence wins)',
      'routing-via-host': 'never change',
    },
    describe: 'which service routes this node has',
  },
  'ovnkube-mode-check': {
    type: 'string',
    default: 'proc',
    choices: {
      proc: 'act only when ovnkube-node is seen running the desired mode',
      off: 'also act when its mode cannot be seen; one seen running the other mode is waited for all the same',
    },
    describe: "how ovnkube-node's gateway mode is checked",
  },
  mtu: {
    type: 'string',
    value: 'BYTES',
    defaultText: "ovnkube.conf's routable-mtu or mtu, else ovn-k8s-mp0's MTU",
    describe: 'MTU of shared-mode service routes',
  },
  'gateway-nexthop': {
    type: 'string',
    repeatable: true,
    value: 'ADDRESS',
    defaultText: "the gateway interface's default route",
    describe: 'shared-mode next hop, one per family',
  },
  'log-level': {
    type: 'string',
    default: 'info',
    choices: { fatal: '', error: '', warn: '', info: '', debug: '', trace: '', silent: '' },
    describe: 'least severe log line written',
  },
  'state-dir': {
    type: 'string',
    value: 'DIR',
    default: DEFAULT_STATE_DIR,
    describe: 'restart journal, and the lock that keeps one agent per node',
  },
  socket: { type: 'string', value: 'PATH', default: DEFAULT_SOCKET, describe: "the agent's status socket" },
  'socket-group': {
    type: 'string',
    value: 'GROUP',
    defaultText: "root's",
    describe: "group (name or gid) that may use the socket, besides root: the socket's and its new directory's group",
  },
  'resync-interval': {
    type: 'string',
    value: 'DURATION',
    default: '60',
    describe: 'seconds, or with a unit: 500ms, 2m',
  },
  restart: {
    type: 'string',
    default: 'cri',
    choices: {
      cri: 'stop its container through the runtime, and kubelet starts a new one',
      signal: 'SIGTERM to its process, and its supervisor starts a new one',
      none: 'never',
    },
    describe: 'how to restart ovnkube-node after a migration',
  },
  'cri-endpoint': {
    type: 'string',
    value: 'PATH',
    defaultText: '/var/run/crio/crio.sock, else /run/containerd/containerd.sock',
    describe: 'CRI socket',
  },
  'ovnkube-namespace': {
    type: 'string',
    value: 'NAME',
    default: 'openshift-ovn-kubernetes',
    describe: "ovnkube-node's pod namespace, for --restart cri",
  },
  'ovnkube-container': {
    type: 'string',
    value: 'NAME',
    default: 'ovnkube-node',
    describe: "ovnkube-node's container name, for --restart cri",
  },
  'restart-grace': {
    type: 'string',
    value: 'DURATION',
    default: '30',
    describe: 'seconds the runtime gives ovnkube-node to stop',
  },
  'restart-min-interval': {
    type: 'string',
    value: 'DURATION',
    default: '5m',
    describe: 'at most one restart per interval',
  },
  'restart-max-per-hour': {
    type: 'string',
    value: 'N',
    default: '3',
    describe: 'at most this many restarts in any hour',
  },
  'restart-timeout': {
    type: 'string',
    value: 'DURATION',
    default: '5m',
    describe: 'how long to wait for the new ovnkube-node',
  },
  settle: {
    type: 'string',
    value: 'DURATION',
    default: '60',
    describe: 'how long the routes must hold after a restart before Converged',
  },
  'dry-run': { type: 'boolean', default: false, describe: 'plan, log and report; never change the kernel' },
  'metrics-address': {
    type: 'string',
    value: 'HOST:PORT',
    defaultText: 'none: the socket serves /metrics',
    describe: 'a TCP listener serving only /metrics',
  },
  // No defaults on these: yargs counts a default as given, and status's --json and --brief conflict.
  json: { type: 'boolean', describe: 'the raw JSON' },
  brief: { type: 'boolean', describe: 'one line' },
  watch: { type: 'boolean', describe: 'follow the agent live: redrawn on a terminal, a line per change otherwise' },
  ready: { type: 'boolean', default: false, describe: 'ask /readyz instead of /healthz' },
  yes: { type: 'boolean', default: false, describe: 'carry the plan out (without it, only print it)' },
  since: { type: 'string', value: 'DURATION', describe: 'only the events of the last DURATION: 90s, 10m, 1h' },
});

export type Flag = keyof typeof FLAGS;

/** yargs' own, on every command. */
export const BUILTIN_FLAGS = { help: 'show this help', version: 'print the version' } as const;

/** What the planner reads: `plan`, `apply` and `run`. */
const PLANNER = [
  'mode-file',
  'service-cidr',
  'ovnkube-config',
  'gateway-interface',
  'management-interface',
  'os-release',
  'layout',
  'ovnkube-mode-check',
  'mtu',
  'gateway-nexthop',
  'log-level',
] as const satisfies readonly Flag[];

/** Only the daemon's. */
const DAEMON = [
  'socket',
  'socket-group',
  'resync-interval',
  'restart',
  'cri-endpoint',
  'ovnkube-namespace',
  'ovnkube-container',
  'restart-grace',
  'restart-min-interval',
  'restart-max-per-hour',
  'restart-timeout',
  'settle',
  'dry-run',
  'metrics-address',
] as const satisfies readonly Flag[];

/**
 * rollback reads the journal, the kernel and ovnkube-node (always from /proc: its 4.10+
 * flags refuse it), not the desired mode; the route it puts back is the journal's (next hop
 * and MTU as they were), so neither --mtu nor --gateway-nexthop would change anything.
 */
const NOT_ROLLBACK: readonly Flag[] = ['mode-file', 'ovnkube-mode-check', 'mtu', 'gateway-nexthop'];

export type ExitCode = 0 | 1 | 2;

export interface CommandSpec {
  readonly summary: string;
  /** Its flags, in the order --help lists them. */
  readonly flags: readonly Flag[];
  /** Flags that must not be given together (yargs' `conflicts`). */
  readonly conflicts?: ReadonlyArray<readonly [Flag, Flag]>;
  /** What each exit code means for this command. */
  readonly exits: Readonly<Partial<Record<ExitCode, string>>>;
}

const BAD_USAGE = 'a bad flag, value or OVN_GWMODE_* variable';

export const COMMANDS = ['run', 'status', 'health', 'plan', 'apply', 'rollback', 'events'] as const;
export type Command = (typeof COMMANDS)[number];

export const COMMAND_SPECS: Readonly<Record<Command, CommandSpec>> = {
  run: {
    summary: 'run the agent: watch the mode file and the kernel, keep the service routes right',
    flags: [...PLANNER, 'state-dir', ...DAEMON],
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
    flags: [...PLANNER, 'json'],
    exits: {
      0: 'nothing to do',
      1: 'something to do, or the agent would wait or refuse (the reasons say why)',
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
      1: "refused (the reason and its code are printed: LayoutUnknown on a node of unknown release unless --layout legacy states it, OvnkubeOtherMode while ovnkube-node runs the migration's mode), failed or interrupted; or an agent holds the node",
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
export const EXIT_STATUS: Readonly<Record<ExitCode, string>> = {
  0: 'done, converged, or nothing to do',
  1: 'not converged, refused, failed or interrupted, or another agent holds the node',
  2: 'a person must change something first: bad usage or configuration, a missing permission, the agent unreachable',
};

/** The flags settings variables can stand for: exactly `run`'s. */
export const SETTINGS_FLAGS: readonly Flag[] = COMMAND_SPECS.run.flags;

/** mode-file -> OVN_GWMODE_MODE_FILE */
export const variableOf = (flag: string): string => ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_');

/** The variable that stands for a flag, or null: only `run`'s flags have one. */
export const variableFor = (flag: Flag): string | null => (SETTINGS_FLAGS.includes(flag) ? variableOf(flag) : null);

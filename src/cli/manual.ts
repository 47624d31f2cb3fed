// docs/cli.md and the manual page ovn-gwmode-agent(8), made from reference.ts: the
// commands, flags, variables and exit codes come from there, so --help, the page and the
// manual cannot drift apart; this module adds only the prose around them (what the agent
// is, its files). `npm run docs:cli` writes both files; test/cli/reference.test.ts fails
// when a checked-in one differs from what this makes. The CLI never loads this module.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  BUILTIN_FLAGS,
  COMMAND_SPECS,
  COMMANDS,
  DEFAULT_SOCKET,
  DEFAULT_STATE_DIR,
  ENV_PREFIX,
  EXIT_STATUS,
  FLAGS,
  SETTINGS_FLAGS,
  variableFor,
  variableOf,
  type Command,
  type ExitCode,
  type Flag,
} from './reference.js';

const NAME = 'ovn-gwmode-agent';
const PURPOSE = 'move OVN-Kubernetes service routes between shared and local gateway mode, safely';

/** Paragraphs of DESCRIPTION. */
const DESCRIPTION = [
  `${NAME} runs on each node of an OpenShift 4.8 or 4.9 cluster with OVN-Kubernetes. It reads the desired gateway mode from a file (or a ConfigMap volume), watches the node's service routes over rtnetlink, and replaces each service route that does not match the mode with the one it needs: a replace, never a delete and an add, so services never lose their route. After a migration it restarts ovnkube-node once.`,
  'Safety comes first: it acts only on a node it knows to be 4.8/4.9, only while ovnkube-node runs the desired mode and the links are up; otherwise it waits and says why, with a stable reason code. It never claims to fix egress firewall, whose rules live in the OVN northbound database.',
  '`run` is the agent; `status`, `health` and `events` ask a running agent over its UNIX socket; `plan`, `apply` and `rollback` act once, without it.',
];

/** Flag values are given as `--flag VALUE` or `--flag=VALUE`; booleans as below. */
const BOOLEANS =
  'A boolean flag takes no value, or one of true/false, 1/0, yes/no, on/off in any case (`--flag=WORD`, `--flag WORD`); any other value is refused (exit 2).';

const ENVIRONMENT = [
  `Every \`run\` flag can come from \`${ENV_PREFIX}<FLAG_IN_UPPER_SNAKE_CASE>\`; a flag on the command line wins. The other commands read the variables of the flags they have and leave the rest alone, so one environment (the unit's /etc/default/${NAME}, a DaemonSet container's) serves \`run\` and its probes. An ${ENV_PREFIX}* variable that names no \`run\` flag is refused (exit 2), naming it.`,
];

const FILES: ReadonlyArray<readonly [string, string]> = [
  [
    DEFAULT_SOCKET,
    'the status socket (`--socket`): `status`, `health`, `events` and `/metrics`; root and `--socket-group` only.',
  ],
  [
    `${DEFAULT_STATE_DIR}/lock`,
    'the lock that keeps one agent per node (`--state-dir`); `run`, `apply` and `rollback --yes` take it.',
  ],
  [
    `${DEFAULT_STATE_DIR}/migration-journal.json`,
    'the restart journal: the last migration, the restart it owes, a rollback under way.',
  ],
  [`/etc/default/${NAME}`, `the unit's settings, ${ENV_PREFIX}* variables (the Debian package's conffile).`],
  ['/etc/os-release', 'RHCOS names the OpenShift release in it (`--os-release`).'],
];

const SEE_ALSO = ['ip-route(8)', 'systemctl(1)', 'journalctl(1)'];
const SEE_ALSO_DOCS = `The documentation: README.md and docs/ in the source and the npm package, /usr/share/doc/${NAME} in the Debian package: what each phase and reason code means (docs/status.md), how to install and operate the agent.`;

// ---------------------------------------------------------------------------------------
// What both renderings say, as plain text with `code` spans.

const valueOf = (flag: Flag): string | undefined => {
  const spec = FLAGS[flag];
  if (spec.type === 'boolean') return undefined;
  const choices = 'choices' in spec ? spec.choices : undefined;
  return choices ? Object.keys(choices).join('|') : (('value' in spec ? spec.value : undefined) ?? 'VALUE');
};

const defaultOf = (flag: Flag): string | undefined => {
  const spec = FLAGS[flag];
  if ('defaultText' in spec && spec.defaultText !== undefined) return spec.defaultText;
  return 'default' in spec && spec.default !== undefined ? String(spec.default) : undefined;
};

const commandsOf = (flag: Flag): Command[] => COMMANDS.filter((c) => COMMAND_SPECS[c].flags.includes(flag));

/** Every flag, once, in the order the commands first list them. */
const ALL_FLAGS: Flag[] = [...new Set(COMMANDS.flatMap((c) => COMMAND_SPECS[c].flags))];

const conflictsOf = (c: Command): string[] =>
  (COMMAND_SPECS[c].conflicts ?? []).map(([a, b]) => `--${a} and --${b} exclude each other`);

const exitsOf = (c: Command): Array<[ExitCode, string]> =>
  Object.entries(COMMAND_SPECS[c].exits).map(([code, text]) => [Number(code) as ExitCode, text]);

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

// ---------------------------------------------------------------------------------------
// docs/cli.md

/** Text for a table cell: a '|' would end it, a '*' start emphasis. */
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('*', '\\*');
const code = (text: string) => `\`${text}\``;

function flagMeaningMd(flag: Flag): string {
  const spec = FLAGS[flag];
  const choices = 'choices' in spec ? spec.choices : undefined;
  if (!choices) return spec.describe;
  if (Object.values(choices).every((m) => m === ''))
    return `${spec.describe}: one of ${Object.keys(choices).map(code).join(', ')}`;
  const each = Object.entries(choices).map(([c, meaning]) => (meaning ? `${code(c)}: ${meaning}` : code(c)));
  return `${spec.describe}: ${each.join('; ')}`;
}

export function renderMarkdown(): string {
  const out: string[] = [];
  out.push(`# ${NAME}: commands, flags, exit codes`, '');
  out.push(
    `<!-- Made by \`npm run docs:cli\` from src/cli/reference.ts, as --help and the manual page ${NAME}(8) are: edit that, not this. -->`,
    '',
  );
  out.push(`${NAME}: ${PURPOSE}.`, '', ...DESCRIPTION.flatMap((p) => [p, '']));
  out.push(
    '## Synopsis',
    '',
    '```',
    ...COMMANDS.map((c) => `${NAME} ${c} [OPTION]...`),
    `${NAME} --help | --version`,
    '```',
    '',
  );
  out.push(`Each command's \`--help\` lists its flags and exit codes. ${BOOLEANS}`, '');

  out.push('## Commands', '');
  for (const c of COMMANDS) {
    const spec = COMMAND_SPECS[c];
    out.push(`### ${c}`, '', `${capitalized(spec.summary)}.`, '');
    out.push(
      `Flags: ${spec.flags.map((f) => code(`--${f}`)).join(', ')}.${conflictsOf(c)
        .map((t) => ` ${t.replace(/--[a-z-]+/g, (m) => code(m))}.`)
        .join('')}`,
      '',
    );
    out.push('| exit | meaning |', '| --- | --- |', ...exitsOf(c).map(([n, t]) => `| ${n} | ${cell(t)} |`), '');
  }

  out.push(
    '## Flags',
    '',
    'Every flag, with the commands that take it and the variable that can stand for it (see Environment).',
    '',
  );
  out.push('| flag | default | variable | commands | meaning |', '| --- | --- | --- | --- | --- |');
  for (const f of ALL_FLAGS) {
    const value = valueOf(f);
    const name = code(`--${f}${value ? ` ${value}` : ''}`);
    const variable = variableFor(f);
    out.push(
      `| ${cell(name)} | ${cell(defaultOf(f) ?? '')} | ${variable ? code(variable) : ''} | ${commandsOf(f).join(', ')} | ${cell(flagMeaningMd(f))} |`,
    );
  }
  out.push(...Object.entries(BUILTIN_FLAGS).map(([f, t]) => `| ${code(`--${f}`)} | | | all | ${t} |`), '');

  out.push('## Environment', '', ...ENVIRONMENT.flatMap((p) => [p, '']));

  out.push(
    '## Exit status',
    '',
    '| exit | meaning |',
    '| --- | --- |',
    ...Object.entries(EXIT_STATUS).map(([n, t]) => `| ${n} | ${cell(t)} |`),
    '',
  );
  out.push('Each command says what its codes mean under [Commands](#commands).', '');

  out.push('## Files', '', ...FILES.map(([p, t]) => `- ${code(p)}: ${t}`), '');
  out.push(
    '## See also',
    '',
    `${SEE_ALSO.join(', ')}; [status.md](status.md) for the phases and reason codes the agent reports.`,
    '',
  );
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------
// ovn-gwmode-agent(8)

/** Text for roff: a backslash is \e, each '-' the ASCII one (\-), `code` bold, no line starting a request. */
function roff(text: string): string {
  const escaped = text.replaceAll('\\', '\\e').replaceAll('-', '\\-');
  const marked = escaped.replace(/`([^`]+)`/g, '\\fB$1\\fR');
  return /^[.']/.test(marked) ? `\\&${marked}` : marked;
}

/** A roff paragraph: one sentence per line, as groff and diff both like. */
const sentences = (text: string): string[] => text.split(/(?<=[.;:]) (?=[A-Z`/])/).map(roff);

const flagRoff = (flag: string, value: string | undefined) =>
  `\\fB${roff(`--${flag}`)}\\fR${value ? ` \\fI${roff(value)}\\fR` : ''}`;

export function renderRoff(): string {
  const out: string[] = [];
  out.push(
    `.\\" Made by npm run docs:cli from src/cli/reference.ts, as --help and docs/cli.md are: edit that, not this.`,
  );
  out.push(`.TH ${roff(NAME.toUpperCase())} 8 "" "${roff(NAME)}" "System Administration"`);
  // No hyphenation, ragged right: a flag or path broken across lines cannot be copied.
  out.push('.nh', '.ad l');
  out.push('.SH NAME', `${roff(NAME)} \\- ${roff(PURPOSE)}`);

  out.push('.SH SYNOPSIS');
  for (const c of COMMANDS) out.push(`.B ${roff(NAME)} ${roff(c)}`, '[\\fIOPTION\\fR]...', '.br');
  out.push(`.B ${roff(NAME)}`, `\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR`);

  out.push('.SH DESCRIPTION');
  DESCRIPTION.forEach((p, i) => out.push(...(i > 0 ? ['.PP'] : []), ...sentences(p)));

  out.push('.SH COMMANDS');
  for (const c of COMMANDS) {
    const spec = COMMAND_SPECS[c];
    out.push('.TP', `.B ${roff(c)}`, `${roff(capitalized(spec.summary))}.`);
    out.push('.br', `Flags: ${spec.flags.map((f) => flagRoff(f, undefined)).join(', ')}.`);
    for (const t of conflictsOf(c)) out.push(`${roff(capitalized(t))}.`);
    out.push(
      '.br',
      `Exit status: ${exitsOf(c)
        .map(([n, t]) => `${n} ${roff(t)}`)
        .join('; ')}.`,
    );
  }

  out.push('.SH OPTIONS', ...sentences(BOOLEANS));
  for (const f of ALL_FLAGS) {
    const spec = FLAGS[f];
    out.push('.TP', flagRoff(f, valueOf(f)));
    // Not capitalised: a description may start with a name (ovnkube.conf).
    out.push(`${roff(spec.describe)}.`);
    const choices = 'choices' in spec ? spec.choices : undefined;
    if (choices && Object.values(choices).every((m) => m === '')) {
      out.push(`One of: ${Object.keys(choices).map(roff).join(', ')}.`);
    } else if (choices) {
      out.push('One of:', '.RS');
      for (const [choice, meaning] of Object.entries(choices)) out.push('.TP', `.B ${roff(choice)}`, roff(meaning));
      out.push('.RE', '.IP');
    }
    const def = defaultOf(f);
    if (def !== undefined) out.push(`Default: ${roff(def)}.`);
    const variable = variableFor(f);
    if (variable) out.push(`Variable: \\fB${roff(variable)}\\fR.`);
    out.push(`Commands: ${commandsOf(f).map(roff).join(', ')}.`);
  }
  for (const [f, t] of Object.entries(BUILTIN_FLAGS))
    out.push('.TP', flagRoff(f, undefined), `${roff(capitalized(t))}.`);

  out.push('.SH ENVIRONMENT', ...ENVIRONMENT.flatMap(sentences));
  // A line each, broken at the space when the page is narrow.
  out.push('.PP');
  for (const f of SETTINGS_FLAGS) out.push(`\\fB${roff(variableOf(f))}\\fR (${flagRoff(f, undefined)})`, '.br');

  out.push('.SH "EXIT STATUS"');
  for (const [n, t] of Object.entries(EXIT_STATUS)) out.push('.TP', `.B ${n}`, `${roff(capitalized(t))}.`);
  out.push('.PP', 'Each command says what its codes mean under', '.BR COMMANDS .');

  out.push('.SH FILES');
  for (const [p, t] of FILES) out.push('.TP', `.I ${roff(p)}`, roff(capitalized(t)));

  out.push('.SH "SEE ALSO"');
  SEE_ALSO.forEach((ref, i) => {
    const open = ref.indexOf('(');
    out.push(`.BR ${roff(ref.slice(0, open))} (${ref.slice(open + 1)}${i < SEE_ALSO.length - 1 ? ',' : ''}`);
  });
  out.push('.PP', ...sentences(SEE_ALSO_DOCS));
  return out.join('\n') + '\n';
}

/** Where each rendering is checked in, relative to the repository root. */
export const OUTPUTS = { 'docs/cli.md': renderMarkdown, 'packaging/man/ovn-gwmode-agent.8': renderRoff } as const;

// `node dist/src/cli/manual.js` (npm run docs:cli): writes both files into the checkout.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  for (const [file, render] of Object.entries(OUTPUTS)) {
    writeFileSync(`${root}/${file}`, render());
    process.stdout.write(`wrote ${file}\n`);
  }
}

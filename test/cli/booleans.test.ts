// The command line as yargs reads it (src/cli/options.ts): what the handlers get for a
// boolean flag or variable, whatever its spelling, and the lines refused with exit 2.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { failure, type CommandResult } from '../../src/cli/exit-codes.js';
import { COMMAND_OPTIONS, COMMANDS, parseWithYargs, type Command } from '../../src/cli/options.js';

type Argv = Record<string, unknown>;

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

test("a lone '-' after a flag is refused as yargs refuses it, with exit code 2", async () => {
  for (const args of [
    ['run', '--mode-file', '-'],
    ['status', '--socket', '-'],
  ]) {
    const r = spawnSync(process.execPath, [MAIN, ...args], {
      encoding: 'utf8',
      timeout: 20_000,
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OVN_GWMODE_'))),
    });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /unexpected argument "-"/);
  }
});

/**
 * The command line as main.ts runs it (yargs, its errors mapped to a result), with handlers that
 * capture what the command would get instead of running, under exactly the OVN_GWMODE_* variables
 * given. The real process's exit code and streams for a bad dry run: test/config/fuzz.test.ts's hostile sample.
 */
async function parsed(args: string[], vars: Record<string, string>) {
  // An environment of its own for the call, put back after: the real one is never changed.
  const saved = process.env;
  process.env = { ...Object.fromEntries(Object.entries(saved).filter(([k]) => !k.startsWith('OVN_GWMODE_'))), ...vars };
  let seen: { command: string; argv: Argv } | undefined;
  try {
    const handlers = Object.fromEntries(
      COMMANDS.map((c) => [
        c,
        async (argv: Argv) => ((seen = { command: c, argv }), { code: 0 as const, stdout: `the ${c} handler ran` }),
      ]),
    ) as Parameters<typeof parseWithYargs>[1];
    const r: CommandResult = await parseWithYargs(args, handlers).catch((err: unknown) => failure(err));
    return { result: { code: r.code, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }, seen };
  } finally {
    process.env = saved;
  }
}

/** What the command's handler would get. */
async function dispatched(args: string[], vars: Record<string, string>): Promise<{ command: string; argv: Argv }> {
  const { result, seen } = await parsed(args, vars);
  assert.ok(seen, `${args.join(' ')} reached no handler: ${result.stderr}`);
  return seen;
}

/** Every boolean flag of every command, and the variable of those that have one (the settings flags: run's, and apply's --dry-run). */
const BOOLEANS: Array<{ command: Command; flag: string; variable: string | null }> = COMMANDS.flatMap((command) =>
  Object.entries(COMMAND_OPTIONS[command])
    .filter(([, o]) => o.type === 'boolean')
    .map(([flag]) => ({
      command,
      flag,
      variable: Object.hasOwn(COMMAND_OPTIONS.run, flag)
        ? `OVN_GWMODE_${flag.toUpperCase().replaceAll('-', '_')}`
        : null,
    })),
);

/** What a command needs besides the flag under test, so that the line is otherwise valid. */
const NEEDS: Partial<Record<Command, string[]>> = {
  run: ['--mode-file', '/m'],
  plan: ['--mode-file', '/m'],
  apply: ['--mode-file', '/m'],
};

const SPELLINGS: Array<[string, boolean]> = [
  ...['true', 'True', 'TRUE', '1', 'yes', 'Yes', 'YES', 'on', 'On', 'ON'].map((w): [string, boolean] => [w, true]),
  ...['false', 'False', 'FALSE', '0', 'no', 'No', 'NO', 'off', 'Off', 'OFF'].map((w): [string, boolean] => [w, false]),
];

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

test('every boolean flag and variable honours the usual spellings, in any case: --flag=WORD, --flag WORD and OVN_GWMODE_FLAG=WORD', async () => {
  assert.deepEqual(
    BOOLEANS.map((b) => `${b.command} --${b.flag}${b.variable ? ` ${b.variable}` : ''}`),
    [
      'run --dry-run OVN_GWMODE_DRY_RUN',
      'status --json',
      'status --brief',
      'status --watch',
      'health --ready',
      'plan --json',
      'apply --dry-run OVN_GWMODE_DRY_RUN',
      'apply --json',
      'rollback --yes',
      'events --json',
    ],
    'the table covers every boolean flag',
  );
  for (const { command, flag, variable } of BOOLEANS) {
    const base = [command, ...(NEEDS[command] ?? [])];
    for (const [word, value] of SPELLINGS) {
      const lines: Array<[string[], Record<string, string>, string]> = [
        [[...base, `--${flag}=${word}`], {}, `--${flag}=${word}`],
        [[...base, `--${flag}`, word], {}, `--${flag} ${word}`],
        [[...base, `--${camel(flag)}=${word}`], {}, `--${camel(flag)}=${word}`],
      ];
      if (variable) lines.push([base, { [variable]: word }, `${variable}=${word}`]);
      for (const [args, vars, what] of lines) {
        const got = await dispatched(args, vars);
        assert.equal(got.command, command);
        assert.equal(got.argv[flag], value, `${command} ${what}`);
        assert.equal(got.argv[camel(flag)], value, `${command} ${what} (camelCase)`);
      }
    }
    // The flag alone is true; a line's value wins over the variable's.
    assert.equal((await dispatched([...base, `--${flag}`], {})).argv[flag], true, `${command} --${flag}`);
    if (variable)
      assert.equal(
        (await dispatched([...base, `--${flag}=no`], { [variable]: 'yes' })).argv[flag],
        false,
        `${command} --${flag}=no over ${variable}=yes`,
      );
  }
});

/** The result of a line that must be refused; a handler reached says so instead of running. */
const refusal = async (args: string[], vars: Record<string, string> = {}) => (await parsed(args, vars)).result;

test('a boolean flag or variable given anything else is refused: exit 2, one line naming it and the value, nothing run', async () => {
  const spellings = 'true/false, 1/0, yes/no, on/off';
  for (const { command, flag, variable } of BOOLEANS) {
    const base = [command, ...(NEEDS[command] ?? [])];
    for (const bad of ['maybe', '']) {
      assert.deepEqual(
        await refusal([...base, `--${flag}=${bad}`]),
        {
          code: 2,
          stdout: '',
          stderr: `ovn-gwmode-agent: --${flag}: ${JSON.stringify(bad)} is not a boolean (${spellings}); see --help\n`,
        },
        `${command} --${flag}=${bad}`,
      );
    }
    if (variable) {
      for (const bad of ['enabled', '', ' 1', 'y']) {
        assert.deepEqual(
          await refusal(base, { [variable]: bad }),
          {
            code: 2,
            stdout: '',
            stderr: `ovn-gwmode-agent: ${variable}: ${JSON.stringify(bad)} is not a boolean (${spellings}); see --help\n`,
          },
          `${command} with ${variable}=${JSON.stringify(bad)}`,
        );
      }
    }
  }
});

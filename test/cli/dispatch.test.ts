// The quick parser of src/cli/dispatch.ts against yargs: on every plain line it gives the
// very flags yargs gives, and it leaves every other line to yargs.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { quickParse, type Argv } from '../../src/cli/dispatch.js';
import { COMMANDS } from '../../src/cli/options.js';
import { parseWithYargs } from '../../src/cli/yargs.js';

/** What yargs hands the command's handler for args under env (without its `_` and `$0`). */
async function yargsArgv(args: string[], env: Record<string, string>): Promise<Argv> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  let seen: Argv | undefined;
  try {
    const capture = async (argv: Argv) => void (seen = argv);
    await parseWithYargs(args, Object.fromEntries(COMMANDS.map((c) => [c, capture])) as Parameters<typeof parseWithYargs>[1]);
  } finally {
    for (const k of Object.keys(env)) {
      if (k in saved) process.env[k] = saved[k];
      else delete process.env[k];
    }
  }
  const { _, $0, ...flags } = seen!;
  return flags;
}

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

const PLAIN: string[][] = [
  ['status'],
  ['status', '--brief'],
  ['status', '--json', '--socket', '/x.sock'],
  ['status', '--socket=/x.sock', '--watch', '--brief'],
  ['health'],
  ['health', '--ready', '--socket', '/x.sock'],
  ['events', '--since', '10m', '--json'],
  ['run', '--mode-file', '/m', '--service-cidr', '10.96.0.0/16', '--service-cidr', 'fd00::/112', '--dry-run', '--restart', 'signal', '--resync-interval=5'],
  ['run', '--socket-group', '0', '--gateway-nexthop', '172.18.0.1', '--metrics-address', '127.0.0.1:9100'],
  ['plan', '--mode-file', '/m', '--json', '--mtu', '1400'],
  ['apply', '--mode-file=/m', '--state-dir', '/s', '--layout', 'legacy'],
  ['rollback', '--yes', '--service-cidr', '10.96.0.0/16,fd00::/112'],
];

const ENVS: Array<Record<string, string>> = [
  {},
  { OVN_GWMODE_SOCKET: '/env.sock' },
  { OVN_GWMODE_SERVICE_CIDR: '10.0.0.0/16', OVN_GWMODE_DRY_RUN: 'true', OVN_GWMODE_MTU: '1400', OVN_GWMODE_MODE_FILE: '/env-mode', OVN_GWMODE_SOCKET: '/env.sock' },
  { OVN_GWMODE_DRY_RUN: 'false', OVN_GWMODE_GATEWAY_NEXTHOP: '172.18.0.1' },
];

test('a plain command line gives the command the flags yargs would, with the variables under them', async () => {
  for (const env of ENVS) {
    for (const args of PLAIN) {
      const quick = quickParse(args, env);
      assert.ok(quick !== null, `${args.join(' ')} is plain`);
      assert.equal(quick.command, args[0]);
      assert.deepEqual(quick.argv, await yargsArgv(args, env), `${args.join(' ')} with ${JSON.stringify(env)}`);
    }
  }
});

test('every other line is left to yargs: help, version, typos, conflicts, repeats, stray words, odd variables', () => {
  const cases: Array<[string[], Record<string, string>]> = [
    [[], {}],
    [['--version'], {}],
    [['status', '--help'], {}],
    [['stauts'], {}],
    [['status', '--jsn'], {}],
    [['status', '--json', '--brief'], {}],
    [['status', '--watch', '--json'], {}],
    [['status', '--socket', '/a', '--socket', '/b'], {}],
    [['status', '--socket'], {}],
    [['health', 'now'], {}],
    [['plan', '--json=true', '--mode-file', '/m'], {}],
    [['plan', '--mode-file', '/m', '--resync-interval', '5'], {}],
    [['run', '--service-cidr', '10.96.0.0/16', 'fd00::/112'], {}],
    [['run', '--no-dry-run'], {}],
    [['run', '-h'], {}],
    [['run', '--mode-file', '-'], {}],
    [['status', '--socket', '-'], {}],
    [['status', '-'], {}],
    [['plan', '--mode-file', '/m', '-'], {}],
    [['status', '--socket=-'], {}],
    [['events', '--since=-5m'], {}],
    [['status'], { OVN_GWMODE_MODEFILE: '/m' }],
    [['run'], { OVN_GWMODE_DRY_RUN: 'yes' }],
  ];
  for (const [args, env] of cases) assert.equal(quickParse(args, env), null, `${args.join(' ')} with ${JSON.stringify(env)}`);
});

test("a lone '-' after a flag is refused as yargs refuses it, with exit code 2", async () => {
  for (const args of [['run', '--mode-file', '-'], ['status', '--socket', '-']]) {
    const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 20_000, env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OVN_GWMODE_'))) });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /unexpected argument "-"/);
  }
});

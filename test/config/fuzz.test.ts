// A seeded fuzz of what configures the agent (GWMODE_CONFIG_SEED=<seed> reproduces a
// run): 2,000 generated ovnkube.conf files, 2,000 generated flag sets, 2,000 generated
// environments, and a sample of them on the real command line. Each must resolve to
// settings within their bounds or be refused with a ConfigError (UsageError) naming the
// flag (variable): never another throw, a hang, or a value no timer or route can use.
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { UsageError } from '../../src/cli/exit-codes.js';
import { envValues } from '../../src/cli/options.js';
import { MAX_TIMER_MS as MAX_DURATION_MS } from '../../src/clock.js';
import { ConfigError, resolvePlanSettings, resolveSettings, type RawRunOptions } from '../../src/config/settings.js';
import { CLI } from '../helpers/agent.js';
import { bytes, fuzzCount, int, pick, prng, seedFrom, type Rng } from '../helpers/prng.js';

const seed = seedFrom('GWMODE_CONFIG_SEED', 77);

const CIDRS = [
  '10.96.0.0/16',
  'fd00:10:96::/112',
  '10.96.0.0/16,fd00:10:96::/112',
  '10.96.0.0/33',
  '10.96.0.1/16',
  '300.1.1.1/8',
  '::/0',
  '0.0.0.0/0',
  ',,,',
  ' ',
  'abc',
  '10.96.0.0',
  '10.96.0.0/16/16',
  '::ffff:10.96.0.0/112',
  '10.96.0.0/-1',
  '1'.repeat(300),
];
const NUMBERS = [
  '1400',
  '68',
  '65535',
  '67',
  '65536',
  '0',
  '-1',
  '1e3',
  '0x578',
  '1400.5',
  '"1400"',
  'NaN',
  'Infinity',
  '',
  ' ',
  '١٤٠٠',
  '99999999999999999999',
];
const ADDRESSES = [
  '172.18.0.1',
  'fd00::1',
  '172.18.0.1,fd00::1',
  '172.18.0.1,172.18.0.2',
  '172.18.0.256',
  'fe80::1%br-ex',
  '::',
  'x',
  '',
];
const MASQ = [
  '169.254.169.0/29',
  '169.254.0.0/17',
  'fd69::/125',
  '169.254.169.0/33',
  'bogus',
  '255.255.255.255/32',
  'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128',
];
const KEYS: Record<string, string[]> = {
  default: ['mtu', 'routable-mtu', 'encap-type'],
  kubernetes: ['service-cidrs', 'apiserver'],
  gateway: ['mode', 'next-hop', 'v4-masquerade-subnet', 'v6-masquerade-subnet'],
};
const valueFor = (rng: Rng, key: string): string =>
  key.includes('mtu')
    ? pick(rng, NUMBERS)
    : key === 'service-cidrs'
      ? pick(rng, CIDRS)
      : key === 'next-hop'
        ? pick(rng, ADDRESSES)
        : key.includes('masquerade')
          ? pick(rng, MASQ)
          : pick(rng, ['local', 'shared', 'Local', '', 'x'.repeat(1000)]);

// The reader refuses much that an ini reader took (a blank or oddly named variable, a bad section
// header, a byte order mark): the hostile shapes come often enough to be met, but not in
// every file, so that some files are valid and reach the settings' own checks.
const caseOf = (rng: Rng, name: string): string =>
  pick(rng, [name, name, name.toUpperCase(), name.replace(/(^|-)(\w)/g, (m) => m.toUpperCase())]);
const HOSTILE_SECTIONS = ['__proto__', 'constructor', 'default.x', '', '[nested]', 'gateway "sub"', 'gateway ""'];
const HOSTILE_KEYS = ['__proto__', 'toString', 'mtu[]', '', '-mtu', 'x_y'];

function ovnkubeConf(rng: Rng): string {
  const lines: string[] = [];
  for (let s = 0, n = int(rng, 5); s < n; s++) {
    const section = rng() < 0.85 ? pick(rng, Object.keys(KEYS)) : pick(rng, HOSTILE_SECTIONS);
    const header = rng() < 0.85 ? caseOf(rng, section) : section;
    lines.push(
      rng() < 0.9
        ? pick(rng, [`[${header}]`, ` [ ${header} ] `, `[${header}] ; rendered`])
        : pick(rng, [`[${header}`, `[${header}]]`]),
    );
    for (let k = 0, m = int(rng, 6); k < m; k++) {
      const key =
        rng() < 0.9
          ? pick(rng, [...(Object.hasOwn(KEYS, section) ? KEYS[section]! : []), 'mtu', 'service-cidrs'])
          : pick(rng, HOSTILE_KEYS);
      const name = caseOf(rng, key);
      const v = (): string => valueFor(rng, key);
      lines.push(
        rng() < 0.9
          ? pick(rng, [
              `${name}=${v()}`,
              `${name} = ${v()}`,
              `; ${name}=1`,
              `${name}="${v()}"`,
              `${name}=${v()} # was`,
              `${name}=${v()}\n${name}=${v()}`,
            ])
          : pick(rng, [`${name}`, `${name} ${v()}`, `${name}="${v()}`, `${name}=${v()}\\x`]),
      );
    }
  }
  let text = lines.join(pick(rng, ['\n', '\r\n', '\n\n']));
  const damage = int(rng, 12);
  if (damage === 0) text = text.slice(0, int(rng, text.length + 1));
  if (damage === 1) text = '\ufeff' + text;
  if (damage === 2) text = bytes(rng, int(rng, 1024)).toString('latin1');
  if (damage === 3) text = text + '\0' + bytes(rng, 16).toString('latin1');
  return text;
}

function checkSettings(s: { serviceCidrs: unknown[]; mtu: number | null }, what: string): void {
  assert.ok(s.serviceCidrs.length > 0, what);
  assert.ok(s.mtu === null || (Number.isInteger(s.mtu) && s.mtu >= 68 && s.mtu <= 65535), `${what}: mtu ${s.mtu}`);
}

test('2,000 generated ovnkube.conf files: settings within bounds or a ConfigError, nothing else', async (t) => {
  const rng = prng(seed);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-conffuzz-'));
  const outcome = { resolved: 0, refused: 0 };
  try {
    const file = path.join(dir, 'ovnkube.conf');
    for (let i = 0, n = fuzzCount(2000); i < n; i++) {
      const text = ovnkubeConf(rng);
      writeFileSync(file, text, 'latin1');
      const what = `case ${i} (seed ${seed}): ${JSON.stringify(text.slice(0, 200))}`;
      const withFlags = rng() < 0.3;
      try {
        const s = await resolvePlanSettings({
          modeFile: '/x',
          ovnkubeConfig: file,
          gatewayInterface: 'br-ex',
          managementInterface: 'ovn-k8s-mp0',
          layout: 'auto',
          ovnkubeModeCheck: 'proc',
          logLevel: 'info',
          ...(withFlags ? { serviceCidr: ['10.96.0.0/16'] } : {}),
        });
        checkSettings(s, what);
        outcome.resolved++;
      } catch (err) {
        assert.ok(err instanceof ConfigError, `${what}: ${String(err)}`);
        assert.ok(['ovnkube-config', 'service-cidr'].includes(err.flag), `${what}: ${err.message}`);
        assert.ok(!err.message.includes('\n'), `${what}: one line`);
        outcome.refused++;
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  t.diagnostic(`seed ${seed}: ${JSON.stringify(outcome)}`);
  assert.ok(outcome.resolved > 100 && outcome.refused > 100, 'the generator reaches both sides');
});

test('ovnkube.conf that is a FIFO, a device, a directory, huge or missing: a ConfigError at once, no hang', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-confspecial-'));
  try {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const huge = path.join(dir, 'huge');
    writeFileSync(huge, `[kubernetes]\nservice-cidrs=10.96.0.0/16\n${'#'.repeat(300 * 1024)}\n`);
    const cases: Array<[string, RegExp]> = [
      [fifo, /: not a regular file$/],
      ['/dev/zero', /: not a regular file$/],
      [dir, /: not a regular file$/],
      [huge, /: larger than 262144 bytes$/],
      [path.join(dir, 'missing'), /: ENOENT$/],
    ];
    for (const [file, expected] of cases) {
      const err = await resolvePlanSettings({
        modeFile: '/x',
        ovnkubeConfig: file,
        gatewayInterface: 'br-ex',
        managementInterface: 'ovn-k8s-mp0',
        layout: 'auto',
        ovnkubeModeCheck: 'proc',
        logLevel: 'info',
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ConfigError, `${file}: ${String(err)}`);
      assert.match(err.message, expected, file);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const HOSTILE = [
  '',
  ' ',
  '-1',
  '0',
  'NaN',
  'Infinity',
  '1e309',
  '99999999999999h',
  '25d',
  '2147483648ms',
  '2147483647ms',
  '0.0001ms',
  '1.5',
  '500ms',
  '2m',
  '\u0000',
  '../../etc',
  'x'.repeat(5000),
  'ümlaut',
  'br-ex br-ex',
  'a/b',
  'verylonginterfacename',
  'éééééééé',
];
const pickValue = (rng: Rng, good: string[]): string | string[] => {
  const v = rng() < 0.93 ? pick(rng, good) : pick(rng, HOSTILE);
  return rng() < 0.02 ? [v, pick(rng, HOSTILE)] : v;
};

function rawRun(rng: Rng): RawRunOptions {
  return {
    modeFile: rng() < 0.05 ? '' : '/x',
    serviceCidr:
      rng() < 0.9
        ? [pick(rng, ['10.96.0.0/16', 'fd00:10:96::/112', '10.96.0.0/16,fd00:10:96::/112'])]
        : rng() < 0.5
          ? [pick(rng, CIDRS)]
          : [],
    gatewayInterface: pickValue(rng, ['br-ex', 'eth0']) as string,
    managementInterface: pickValue(rng, ['ovn-k8s-mp0']) as string,
    layout: pickValue(rng, ['auto', 'legacy', 'routing-via-host', 'Auto']) as string,
    ovnkubeModeCheck: pickValue(rng, ['proc', 'off']) as string,
    mtu: (rng() < 0.9 ? pickValue(rng, ['1400', '1500', '']) : pick(rng, NUMBERS)) as string,
    gatewayNexthop:
      rng() < 0.5 ? undefined : [rng() < 0.8 ? pick(rng, ['172.18.0.1', 'fd00::1']) : pick(rng, ADDRESSES)],
    logLevel: pickValue(rng, ['info', 'debug', 'silent', 'INFO']) as string,
    socket: '/tmp/never/agent.sock',
    socketGroup: pickValue(rng, ['0', '4242', 'root', 'no-such-group', '4294967295', '-5']) as string,
    stateDir: '/tmp/never',
    resyncInterval: pickValue(rng, ['60', '1s', '500ms', '2m']) as string,
    restart: pickValue(rng, ['cri', 'signal', 'none', 'CRI']) as string,
    criEndpoint: rng() < 0.5 ? undefined : '/run/x.sock',
    ovnkubeNamespace: 'openshift-ovn-kubernetes',
    ovnkubeContainer: 'ovnkube-node',
    restartGrace: pickValue(rng, ['30', '1m']) as string,
    restartMinInterval: pickValue(rng, ['5m', '0']) as string,
    restartMaxPerHour: '3',
    restartTimeout: pickValue(rng, ['5m', '1h']) as string,
    settle: pickValue(rng, ['60', '0']) as string,
    dryRun: rng() < 0.5,
  };
}

test('2,000 generated flag sets: settings within bounds (timers a timer can wait) or a ConfigError naming the flag', async (t) => {
  const rng = prng(seed + 1);
  const outcome = { resolved: 0, refused: 0 };
  for (let i = 0, n = fuzzCount(2000); i < n; i++) {
    const raw = rawRun(rng);
    const what = `case ${i} (seed ${seed}): ${JSON.stringify(raw).slice(0, 400)}`;
    try {
      const s = await resolveSettings(raw);
      checkSettings(s, what);
      assert.ok(
        s.resyncIntervalMs >= 1000 && s.resyncIntervalMs <= MAX_DURATION_MS,
        `${what}: resync ${s.resyncIntervalMs}`,
      );
      for (const ms of [s.restartGraceMs, s.restartMinIntervalMs, s.restartTimeoutMs, s.settleMs])
        assert.ok(Number.isSafeInteger(ms) && ms >= 0 && ms <= MAX_DURATION_MS, `${what}: ${ms}`);
      assert.ok(s.socketGroup === null || (Number.isInteger(s.socketGroup) && s.socketGroup >= 0), what);
      // A name the kernel can hold: at most 15 bytes (IFNAMSIZ with its NUL).
      for (const name of [s.gatewayInterface, s.managementInterface])
        assert.ok(Buffer.byteLength(name) <= 15 && !/[\s/]/.test(name), `${what}: interface ${name}`);
      outcome.resolved++;
    } catch (err) {
      assert.ok(err instanceof ConfigError, `${what}: ${String(err)}`);
      assert.ok(!err.message.includes('\n'), `${what}: one line`);
      outcome.refused++;
    }
  }
  t.diagnostic(`seed ${seed}: ${JSON.stringify(outcome)}`);
  assert.ok(outcome.resolved > 20 && outcome.refused > 100, 'the generator reaches both sides');
  // Fifteen bytes, not fifteen characters: eight two-byte letters are no name the kernel can hold.
  const r = prng(seed);
  let good = rawRun(r);
  while (
    !(await resolveSettings(good).then(
      () => true,
      () => false,
    ))
  )
    good = rawRun(r);
  for (const name of ['ééééééé', 'éééééééé'])
    await resolveSettings({ ...good, gatewayInterface: name }).then(
      () => assert.equal(Buffer.byteLength(name), 14, `${name} taken`),
      (err: Error) => assert.match(err.message, /--gateway-interface: "éééééééé" is not an interface name/),
    );
});

test('2,000 generated environments: the values of known variables (a boolean spelt true or false), or a UsageError naming the variable', (t) => {
  const rng = prng(seed + 2);
  const names = [
    'OVN_GWMODE_MODE_FILE',
    'OVN_GWMODE_SOCKET',
    'OVN_GWMODE_SOCKET_GROUP',
    'OVN_GWMODE_MTU',
    'OVN_GWMODE_MODEFILE',
    'OVN_GWMODE_',
    'OVN_GWMODE__PROTO__',
    'OVN_GWMODE_CONSTRUCTOR',
    'OVN_GWMODE_mode_file',
    'OVN_GWMODE_MODE-FILE',
    'OVN_GWMODE_TO_STRING',
    'OVN_GWMODEX',
    'PATH',
    'OVN_GWMODE_DRY_RUN',
    'OVN_GWMODE_RESYNC_INTERVAL',
  ];
  const outcome = { read: 0, refused: 0 };
  for (let i = 0, n = fuzzCount(2000); i < n; i++) {
    const env: NodeJS.ProcessEnv = {};
    for (let k = 0, n = int(rng, 4); k < n; k++) env[pick(rng, names)] = pick(rng, HOSTILE);
    const command = pick(rng, ['run', 'status', 'health', 'plan', 'apply'] as const);
    try {
      const values = envValues(command, env);
      for (const key of Object.keys(values))
        assert.ok(!['__proto__', 'constructor', 'to-string'].includes(key), `case ${i}: ${key}`);
      if ('dry-run' in values)
        assert.ok(values['dry-run'] === 'true' || values['dry-run'] === 'false', `case ${i}: ${values['dry-run']}`);
      outcome.read++;
    } catch (err) {
      assert.ok(err instanceof UsageError, `case ${i}: ${String(err)}`);
      assert.match(err.message, /^OVN_GWMODE_\S*: no such setting|^OVN_GWMODE_DRY_RUN: .* is not a boolean/);
      outcome.refused++;
    }
  }
  t.diagnostic(`seed ${seed}: ${JSON.stringify(outcome)}`);
});

test('on the real command line, a sample of hostile flags and variables exits 2 with one line naming the flag or variable', () => {
  const rng = prng(seed + 3);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-clifuzz-'));
  try {
    const base = [
      'run',
      '--mode-file',
      path.join(dir, 'mode'),
      '--service-cidr',
      '10.96.0.0/16',
      '--socket',
      path.join(dir, 'agent.sock'),
      '--state-dir',
      dir,
    ];
    const bad: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
      [
        ['--resync-interval', '99999999999999h'],
        {},
        /^ovn-gwmode-agent: --resync-interval: "99999999999999h" is too long/,
      ],
      [['--mtu', pick(rng, ['0', '1e3', 'NaN', '65536'])], {}, /^ovn-gwmode-agent: --mtu: /],
      [['--layout', pick(rng, ['Auto', '', 'x'.repeat(300)])], {}, /^ovn-gwmode-agent: --layout: /],
      [
        ['--gateway-interface', pick(rng, ['a/b', 'verylonginterfacename', ' ', 'éééééééé'])],
        {},
        /^ovn-gwmode-agent: --gateway-interface: /,
      ],
      [['--settle', pick(rng, ['-1', '25d', 'soon'])], {}, /^ovn-gwmode-agent: --settle: /],
      [['--socket-group', 'no-such-group-here'], {}, /^ovn-gwmode-agent: --socket-group: /],
      [
        [],
        { OVN_GWMODE_MODEFILE: '/x' },
        /^ovn-gwmode-agent: OVN_GWMODE_MODEFILE: no such setting; did you mean OVN_GWMODE_MODE_FILE\?/,
      ],
      [[], { OVN_GWMODE___PROTO__: 'x' }, /^ovn-gwmode-agent: OVN_GWMODE___PROTO__: no such setting/],
      [[], { OVN_GWMODE_CONSTRUCTOR: 'x' }, /^ovn-gwmode-agent: OVN_GWMODE_CONSTRUCTOR: no such setting/],
      [[], { OVN_GWMODE_RESTART: pick(rng, ['CRI', 'kill', '']) }, /^ovn-gwmode-agent: --restart: /],
      [['--bogus-' + int(rng, 1000)], {}, /^ovn-gwmode-agent: unknown flag --bogus-\d+; see --help\n$/],
      // A dry run spelt in a way not taken would act: refused (every spelling: test/cli/booleans.test.ts).
      [[], { OVN_GWMODE_DRY_RUN: pick(rng, ['enabled', ' 1', 'y']) }, /^ovn-gwmode-agent: OVN_GWMODE_DRY_RUN: /],
      [['--dry-run=' + pick(rng, ['maybe', 'enable'])], {}, /^ovn-gwmode-agent: --dry-run: /],
    ];
    for (const [args, env, expected] of bad) {
      const r = spawnSync(process.execPath, [CLI, ...base, ...args], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, ...env },
      });
      const what = `${args.join(' ')} ${JSON.stringify(env)}`;
      assert.equal(r.status, 2, `${what}: ${r.stderr}`);
      assert.equal(r.stderr.split('\n').length, 2, `${what}: one line: ${r.stderr}`);
      assert.match(r.stderr, expected, what);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

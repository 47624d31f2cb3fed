// What each kind of process loads (recorded by test/fixtures/record-imports.ts, imports
// and require() calls both, since yaml and prom-client come by createRequire): the
// commands probes and people run often load the socket client and nothing of the
// kernel, the runtime, the logger, the metrics or yargs; the daemon loads gRPC only
// for a CRI restart, and the YAML parser only for a manifest.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CLI, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';

const RECORDER = fileURLToPath(new URL('../fixtures/record-imports.js', import.meta.url));

/** The parts of the agent and the packages a module URL belongs to, e.g. `@grpc/grpc-js`, `src/dataplane`. */
function partsOf(urls: string[]): Set<string> {
  const parts = new Set<string>();
  for (const url of urls) {
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    const own = /\/dist\/(src\/[^/]+)\//.exec(url);
    if (pkg) parts.add(pkg[1]!);
    else if (own) parts.add(own[1]!);
  }
  return parts;
}

function withLog<T>(fn: (log: string) => T): { result: T; parts: Set<string>; urls: string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-imports-'));
  const log = path.join(dir, 'imports.log');
  try {
    const result = fn(log);
    const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    return { result, parts: partsOf(urls), urls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CommonJS modules an import reached (the recorder's `commonjs-import` lines): on Node 20 each costs the daemon its export lexer. */
const importedCommonJs = (urls: string[]) =>
  urls.filter((u) => u.startsWith('commonjs-import ')).map((u) => u.slice('commonjs-import '.length));
/** Node's bundled undici, which an import of node:http loads on Node 24 (src/require.ts); the recorder lists Node's internal modules at exit. */
const undici = (urls: string[]) => urls.filter((u) => u.startsWith('node-internal:') && u.includes('undici'));

const PARSE = new URL('../../src/mode/parse.js', import.meta.url).href;
const METRICS = new URL('../../src/metrics/metrics.js', import.meta.url).href;

/** What a node process loads running an ESM snippet under the recorder. */
function loadedBy(code: string, ...args: string[]) {
  return withLog((log) =>
    spawnSync(process.execPath, ['--import', RECORDER, '--input-type=module', '-e', code, ...args], {
      encoding: 'utf8',
      env: { ...process.env, GWMODE_IMPORT_LOG: log },
    }),
  );
}

test('the recorder sees what comes by createRequire: the YAML parser for a manifest, not for a word; prom-client with the metrics', () => {
  const parse = `import { parseModeContent } from ${JSON.stringify(PARSE)}; console.log(JSON.stringify(parseModeContent(process.argv[1])));`;
  const manifest = loadedBy(
    parse,
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gateway-mode-config}\ndata: {mode: local}\n',
  );
  assert.equal(manifest.result.stdout, '{"mode":"local"}\n', manifest.result.stderr);
  assert.ok(manifest.parts.has('src/mode') && manifest.parts.has('yaml'), [...manifest.parts].join(', '));
  const word = loadedBy(parse, 'local');
  assert.equal(word.result.stdout, '{"mode":"local"}\n', word.result.stderr);
  assert.ok(word.parts.has('src/mode') && !word.parts.has('yaml'), [...word.parts].join(', '));

  const metrics = loadedBy(
    `import { AgentMetrics } from ${JSON.stringify(METRICS)}; console.log(typeof AgentMetrics);`,
  );
  assert.equal(metrics.result.stdout, 'function\n', metrics.result.stderr);
  assert.ok(metrics.parts.has('src/metrics') && metrics.parts.has('prom-client'), [...metrics.parts].join(', '));
});

const BUILTINS = fileURLToPath(new URL('../fixtures/builtins-at-exit.js', import.meta.url));

test("the probe commands load none of Node's worker or REPL modules (an import of node:util or node:fs does, on Node 24: src/require.ts)", () => {
  for (const args of [['status', '--brief'], ['health'], ['health', '--ready']]) {
    const { result, urls } = withLog((log) =>
      spawnSync(process.execPath, ['--import', BUILTINS, CLI, ...args, '--socket', '/nonexistent/agent.sock'], {
        encoding: 'utf8',
        env: { ...process.env, GWMODE_BUILTINS_LOG: log },
      }),
    );
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.ok(urls.includes('net'), `the list is read: ${urls.length} builtins`);
    assert.deepEqual(
      urls.filter((m) => m === 'worker_threads' || m.startsWith('internal/repl') || m === 'internal/worker'),
      [],
      args.join(' '),
    );
  }
});

const HEAVY = [
  'yargs',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'netlink',
  'pino',
  'prom-client',
  'chokidar',
  'yaml',
  'src/dataplane',
  'src/native',
  'src/agent',
  'src/cri',
  'src/metrics',
];

test('status, status --brief, --json, health, health --ready and events load the socket client and nothing heavy, not even node:http', () => {
  for (const args of [
    ['status'],
    ['status', '--brief'],
    ['status', '--json'],
    ['health'],
    ['health', '--ready'],
    ['events'],
  ]) {
    const { result, parts, urls } = withLog((log) =>
      spawnSync(process.execPath, ['--import', RECORDER, CLI, ...args, '--socket', '/nonexistent/agent.sock'], {
        encoding: 'utf8',
        env: { ...process.env, GWMODE_IMPORT_LOG: log },
      }),
    );
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /cannot reach the agent/);
    assert.ok(parts.has('src/status'), `${args.join(' ')} loaded the socket client: ${[...parts].join(', ')}`);
    assert.deepEqual(
      HEAVY.filter((p) => parts.has(p)),
      [],
      `${args.join(' ')} loaded ${[...parts].join(', ')}`,
    );
    assert.ok(
      urls.includes('node:net') && !urls.includes('node:http'),
      `${args.join(' ')} loaded ${urls.filter((u) => u.startsWith('node:')).join(', ')}`,
    );
  }
});

test('a line the quick parser leaves (--help, a typo) is read by yargs, and the recorder sees it', () => {
  const { result, parts } = withLog((log) =>
    spawnSync(process.execPath, ['--import', RECORDER, CLI, 'status', '--jsn'], {
      encoding: 'utf8',
      env: { ...process.env, GWMODE_IMPORT_LOG: log },
    }),
  );
  assert.equal(result.stderr, 'ovn-gwmode-agent: unknown flag --jsn; see --help\n');
  assert.ok(parts.has('yargs'));
  assert.ok(!parts.has('netlink'));
});

test('the daemon with --restart signal never loads gRPC, nor yargs, nor the YAML parser for a mode word, nor a CommonJS package by import, nor undici, even when it restarts ovnkube-node', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-imports-'));
  const log = path.join(dir, 'imports.log');
  try {
    // The stale shared-mode route and a mode file saying local: a migration and its restart by signal.
    await withAgent(
      { mode: 'local', env: { NODE_OPTIONS: `--import=${RECORDER}`, GWMODE_IMPORT_LOG: log } },
      async ({ agent, ovnkube }) => {
        await waitForStatus(
          agent,
          (s) => s.routes.every((r) => r.inSync) && s.restart?.migration?.restart === 'done',
          'the migration and its restart',
        );
        assert.ok(ovnkube.starts >= 2, 'ovnkube-node was restarted');
      },
    );
    const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const parts = partsOf(urls);
    // prom-client comes by createRequire: seeing it shows the recorder would see yaml too.
    assert.ok(
      parts.has('netlink') && parts.has('src/dataplane') && parts.has('src/restart') && parts.has('prom-client'),
      [...parts].join(', '),
    );
    assert.deepEqual(
      ['@grpc/grpc-js', '@grpc/proto-loader', 'src/cri', 'yargs', 'yaml'].filter((p) => parts.has(p)),
      [],
      [...parts].join(', '),
    );
    // pino, ipaddr.js and netlink's codec are CommonJS: required, never imported.
    assert.ok(
      ['pino', 'ipaddr.js'].every((p) => parts.has(p)),
      [...parts].join(', '),
    );
    assert.deepEqual(importedCommonJs(urls), []);
    assert.ok(
      urls.some((u) => u === 'node-internal:http'),
      'the recorder lists node:http among the internal modules',
    );
    assert.deepEqual(undici(urls), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the daemon with --restart cri does not load gRPC to start and serve (only a restart does), nor a CommonJS package by import, nor undici', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-imports-'));
  const log = path.join(dir, 'imports.log');
  try {
    // A quiet node: shared everywhere, nothing to migrate.
    await withAgent(
      {
        mode: 'shared',
        ovnkube: 'shared',
        args: [
          '--service-cidr',
          '10.96.0.0/16',
          '--mtu',
          '1400',
          '--restart',
          'cri',
          '--cri-endpoint',
          path.join(dir, 'no-runtime.sock'),
        ],
        env: { NODE_OPTIONS: `--import=${RECORDER}`, GWMODE_IMPORT_LOG: log },
      },
      async ({ agent, scratch }) => {
        const s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'a converged quiet node');
        assert.equal(s.restart?.strategy, 'cri');
        for (let i = 0; i < 20; i++)
          assert.equal(
            spawnSync('curl', ['-sf', '--unix-socket', scratch.socket, 'http://localhost/status']).status,
            0,
          );
      },
    );
    const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const parts = partsOf(urls);
    assert.ok(parts.has('src/restart'), [...parts].join(', '));
    assert.deepEqual(
      ['@grpc/grpc-js', '@grpc/proto-loader', 'src/cri'].filter((p) => parts.has(p)),
      [],
      [...parts].join(', '),
    );
    assert.deepEqual(importedCommonJs(urls), []);
    assert.ok(
      urls.some((u) => u === 'node-internal:http'),
      'the recorder lists node:http among the internal modules',
    );
    assert.deepEqual(undici(urls), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

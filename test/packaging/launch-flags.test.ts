// Every launcher of the daemon passes Node the same memory settings (docs/benchmarks.md, "The
// shipped Node flags"): the repository's systemd unit, the Debian package's unit built
// from it, and the container image's entrypoint. The image test also reads them from the
// running container's /proc/PID/cmdline; the Debian package test, from the installed unit.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SHIPPED_NODE_FLAGS as FLAGS } from '../helpers/node-flags.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const UNIT = path.join(ROOT, 'systemd', 'ovn-gwmode-agent.service');

const execStart = (unit: string): string[] => {
  const lines = unit.split('\n').filter((l) => l.startsWith('ExecStart='));
  assert.equal(lines.length, 1, lines.join('\n'));
  return lines[0]!.slice('ExecStart='.length).split(' ');
};

test('the systemd unit starts the daemon with the memory settings', () => {
  assert.deepEqual(execStart(readFileSync(UNIT, 'utf8')), [
    '/usr/bin/node',
    ...FLAGS,
    '/usr/lib/node_modules/ovn-gwmode-agent/dist/src/cli/main.js',
    'run',
  ]);
});

test("the Debian package's unit keeps them, with the bundled node; a unit without them fails its build", () => {
  const built = spawnSync('bash', [path.join(ROOT, 'packaging', 'deb', 'unit.sh'), UNIT, 'ovn-gwmode-agent'], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, built.stderr);
  assert.deepEqual(execStart(built.stdout), [
    '/usr/lib/ovn-gwmode-agent/bin/node',
    ...FLAGS,
    '/usr/lib/ovn-gwmode-agent/dist/src/cli/main.js',
    'run',
  ]);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-unit-'));
  try {
    const bare = path.join(dir, 'bare.service');
    writeFileSync(bare, readFileSync(UNIT, 'utf8').replace(` ${FLAGS.join(' ')} `, ' '));
    const refused = spawnSync('bash', [path.join(ROOT, 'packaging', 'deb', 'unit.sh'), bare, 'ovn-gwmode-agent'], {
      encoding: 'utf8',
    });
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /no node flags found/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the container image's entrypoint is node with the memory settings, then the staged main.js", () => {
  const containerfile = readFileSync(path.join(ROOT, 'packaging', 'container', 'Containerfile'), 'utf8');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(containerfile);
  assert.ok(entrypoint, 'an exec-form ENTRYPOINT');
  assert.deepEqual(JSON.parse(entrypoint[1]!), [
    '/usr/local/bin/node',
    ...FLAGS,
    '/opt/ovn-gwmode-agent/dist/src/cli/main.js',
  ]);
  // Where the build stage puts the agent.
  assert.match(containerfile, /app=\/out\/opt\/ovn-gwmode-agent\b/);
  assert.match(containerfile, /cp -r dist\/src \$app\/dist\//);
});

test('Node takes the memory settings: a 1 MB semi-space (a 2 MB young generation) and the flags in execArgv', () => {
  const script =
    "const v8 = require('v8'); const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space'); console.log(JSON.stringify({ argv: process.execArgv, young: young.space_size }))";
  const r = spawnSync(
    process.execPath,
    [...FLAGS, '-e', `const keep = []; for (let i = 0; i < 300000; i++) keep.push({ i }); ${script}`],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const { argv, young } = JSON.parse(r.stdout) as { argv: string[]; young: number };
  assert.deepEqual(argv.slice(0, 2), FLAGS);
  assert.ok(young <= 2 * 1024 * 1024, `young generation ${young} bytes`);
});

// `npm run demo` as the README says it: the demo node in a throwaway namespace, the agent
// against a mode file saying local, ip route before and after, the status by curl and by
// `status --brief`, and everything torn down.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { skipWithoutKernel } from './helpers/netns.js';

const DEMO = fileURLToPath(new URL('../src/demo/demo.js', import.meta.url));

test('npm run demo: the stale br-ex route becomes the ovn-k8s-mp0 one, the status says so, and nothing is left behind', (t) => {
  if (skipWithoutKernel(t)) return;
  const r = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = r.stdout;
  const section = (title: string) => {
    const start = out.indexOf(`\n=== ${title}`);
    assert.ok(start >= 0, `a section "${title}": ${out}`);
    const end = out.indexOf('\n=== ', start + 1);
    return out.slice(start, end < 0 ? undefined : end);
  };
  assert.match(section('a node in namespace'), /^10\.96\.0\.0\/16 via 172\.18\.0\.1 dev br-ex mtu 1400 ?$/m);
  const after = section('ip route show, after');
  assert.match(after, /^10\.96\.0\.0\/16 via 10\.244\.1\.1 dev ovn-k8s-mp0 ?$/m);
  assert.doesNotMatch(after, /br-ex mtu 1400/);
  const curl = section('curl --unix-socket');
  const status = JSON.parse(curl.slice(curl.indexOf('{')));
  assert.equal(status.phase, 'Converged');
  assert.equal(status.restart.count, 1, 'ovnkube-node restarted once');
  assert.match(
    section('ovn-gwmode-agent status --brief'),
    /^Converged desired=local ovnkube=local layout=legacy release=4\.8-4\.9 routes=1\/1 in sync: /m,
  );
  const torn = /^=== torn down: namespace (\S+) and (\S+) are gone$/m.exec(out);
  assert.ok(torn, out);
  assert.ok(!existsSync(`/run/netns/${torn[1]}`), 'the namespace is gone');
  assert.ok(!existsSync(torn[2]!), 'the scratch directory is gone');
});

/** PIDs whose command line mentions `text` (the demo's agent and stand-in name its scratch directory). */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

for (const { signals, exitCode } of [
  { signals: ['SIGINT'], exitCode: 130 },
  { signals: ['SIGTERM'], exitCode: 143 },
  // npm under bash passes a terminal's Ctrl-C on: node gets it twice.
  { signals: ['SIGINT', 'SIGINT'], exitCode: 130 },
] as const) {
  test(`npm run demo stopped by ${signals.join(' then ')} mid-run still tears everything down and exits ${exitCode}: no agent, no stand-in, no namespace, no scratch directory`, async (t) => {
    if (skipWithoutKernel(t)) return;
    const demo = spawn(process.execPath, [DEMO], { stdio: ['ignore', 'pipe', 'pipe'] });
    // A safety net against a teardown that hangs (it fails the test, naming the output), not a speed bound.
    const deadline = setTimeout(() => demo.kill('SIGKILL'), 60_000);
    let out = '';
    let ns: string | undefined;
    let dir: string | undefined;
    demo.stdout.setEncoding('utf8');
    demo.stderr.setEncoding('utf8');
    demo.stderr.on('data', (chunk: string) => (out += chunk));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      demo.once('exit', (code, stopped) => resolve([code, stopped])),
    );
    const closed = new Promise((resolve) => demo.once('close', resolve));
    try {
      // Stopped once the agent runs: its first JSON log line after the run section.
      await new Promise<void>((resolve, reject) => {
        demo.stdout.on('data', (chunk: string) => {
          out += chunk;
          const intro = /^=== a node in namespace (\S+) \(scratch directory (\S+)\):/m.exec(out);
          ns ??= intro?.[1];
          dir ??= intro?.[2];
          const run = out.indexOf('\n=== ovn-gwmode-agent run');
          if (run >= 0 && out.indexOf('\n{"level"', run) >= 0) resolve();
        });
        void exited.then(() => reject(new Error(`the demo ended before its agent ran: ${out}`)));
      });
      assert.ok(ns && dir, out);
      for (const signal of signals) demo.kill(signal);
      const [code, stopped] = await exited;
      assert.deepEqual([code, stopped], [exitCode, null], out);
      // Nothing left holding the demo's output open, so all of it can be read.
      assert.deepEqual(processesNaming(dir), [], `no agent or stand-in left running: ${out}`);
      await closed;
      assert.match(out, new RegExp(`^=== ${signals[0]}: tearing down$`, 'm'));
      const torn = /^=== torn down: namespace (\S+) and (\S+) are gone$/m.exec(out);
      assert.ok(torn, out);
      assert.deepEqual([torn[1], torn[2]], [ns, dir]);
      assert.ok(!existsSync(`/run/netns/${ns}`), 'the namespace is gone');
      assert.ok(!existsSync(dir), 'the scratch directory is gone');
    } finally {
      clearTimeout(deadline);
      // On a failure, what the demo left (the agent holds the demo's stdout open: the test would hang).
      if (demo.exitCode === null && demo.signalCode === null) demo.kill('SIGKILL');
      if (dir) for (const pid of processesNaming(dir)) process.kill(pid, 'SIGKILL');
      if (ns && existsSync(`/run/netns/${ns}`)) spawnSync('ip', ['netns', 'del', ns]);
      if (dir) rmSync(dir, { recursive: true, force: true });
      demo.stdout.destroy();
      demo.stderr.destroy();
    }
  });
}

// The prompt signal of ovnkube-node's exit: the real pidfd on real processes, and the quick
// look for the successor with a fake watcher and fake timers (no real time waited on).
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { addon } from '../../src/native/addon.js';
import {
  LOOK_FOR_MS,
  OvnkubeExitSignal,
  QUICK_FOR_MS,
  QUICK_MS,
  SLOW_MS,
  type ExitWatcher,
  type Timers,
} from '../../src/ovnkube/exit-signal.js';
import { within } from '../helpers/wait.js';

const quiet = { warn: () => undefined, debug: () => undefined };

test("a pidfd watch calls back once when the process exits, though the watcher is not its parent's waiter", async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  let calls = 0;
  let resolve!: () => void;
  const exited = new Promise<void>((r) => (resolve = r));
  // Held until the end: a handle dropped is released by its finalizer at the next GC, with
  // no callback (pidfd_watch.c, point 2), as the agent's own watch never is (exit-signal.ts).
  const handle = addon.pidfdWatch(child.pid!, () => (calls++, resolve()));
  child.kill('SIGTERM');
  await within(exited, 10_000, 'the pidfd callback');
  assert.equal(calls, 1);
  addon.pidfdClose(handle);
});

test('a pidfd watch closed before the exit never calls back', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  let calls = 0;
  const handle = addon.pidfdWatch(child.pid!, () => calls++);
  addon.pidfdClose(handle);
  addon.pidfdClose(handle);
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
  await new Promise((r) => setImmediate(r));
  assert.equal(calls, 0);
});

test("a throw of the exit callback reaches process 'uncaughtException', as a throw of any event's callback does", async () => {
  // In a process of its own: node:test would take the uncaught exception for this test's failure.
  const addonUrl = new URL('../../src/native/addon.js', import.meta.url).href;
  const script = `
    const { addon } = await import(${JSON.stringify(addonUrl)});
    const { spawn } = await import('node:child_process');
    process.on('uncaughtException', (err) => { console.log('caught: ' + err.message); process.exit(0); });
    const child = spawn('sleep', ['0.05']);
    globalThis.keep = addon.pidfdWatch(child.pid, () => { throw new Error('boom'); });
    setTimeout(() => { console.log('never caught'); process.exit(1); }, 10000);
  `;
  const run = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  run.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await within(
    new Promise<number | null>((resolve) => run.on('exit', resolve)),
    15_000,
    'the child process ends',
  );
  assert.deepEqual([code, out.trim()], [0, 'caught: boom']);
});

test('a pidfd watch of a process that is gone throws ESRCH', async () => {
  const child = spawn('true', { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  assert.throws(() => addon.pidfdWatch(child.pid!, () => undefined), { code: 'ESRCH', syscall: 'pidfd_open' });
});

/** Timers run by hand: advance(ms) fires what falls due, in order. */
function fakeTimers(): Timers & { advance(ms: number): void; pending(): number } {
  let t = 0;
  let timers: Array<{ at: number; fn: () => void; id: number }> = [];
  let next = 0;
  return {
    now: () => t,
    setTimeout: (fn, ms) => {
      const id = next++;
      timers.push({ at: t + ms, fn, id });
      return id;
    },
    clearTimeout: (id) => (timers = timers.filter((x) => x.id !== id)),
    advance(ms) {
      const end = t + ms;
      for (;;) {
        const due = timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((x) => x !== due);
        t = due.at;
        due.fn();
      }
      t = end;
    },
    pending: () => timers.length,
  };
}

function fakeWatcher(): ExitWatcher & { exit(pid: number): void; watched: number[]; gone: Set<number> } {
  const live = new Map<number, () => void>();
  const w = {
    watched: [] as number[],
    gone: new Set<number>(),
    watch(pid: number, onExit: () => void) {
      if (w.gone.has(pid)) throw Object.assign(new Error('pidfd_open ESRCH'), { code: 'ESRCH' });
      w.watched.push(pid);
      live.set(pid, onExit);
      return { close: () => live.delete(pid) };
    },
    exit(pid: number) {
      w.gone.add(pid);
      const cb = live.get(pid);
      live.delete(pid);
      cb?.();
    },
  };
  return w;
}

test('the exit of the watched ovnkube-node wakes the loop at once, then every 20 ms until a pass sees its successor', () => {
  const timers = fakeTimers();
  const watcher = fakeWatcher();
  const wakes: string[] = [];
  const signal = new OvnkubeExitSignal((why) => wakes.push(why), quiet, watcher, timers);
  signal.follow(100);
  signal.follow(100);
  assert.deepEqual(watcher.watched, [100], 'one watch per process');
  watcher.exit(100);
  assert.deepEqual(wakes, ['ovnkube-node exited']);
  signal.follow(null); // a pass in the gap sees none
  timers.advance(5 * QUICK_MS);
  assert.equal(wakes.length, 6);
  signal.follow(200); // the successor
  timers.advance(LOOK_FOR_MS);
  assert.equal(wakes.length, 6, 'no wake-up once the successor is seen');
  assert.deepEqual(watcher.watched, [100, 200]);
  signal.close();
});

test('the quick look slows down after two seconds and ends after thirty when no successor comes', () => {
  const timers = fakeTimers();
  const watcher = fakeWatcher();
  let wakes = 0;
  const signal = new OvnkubeExitSignal(() => wakes++, quiet, watcher, timers);
  signal.follow(100);
  watcher.exit(100);
  timers.advance(QUICK_FOR_MS);
  const quick = wakes;
  assert.equal(quick, 1 + QUICK_FOR_MS / QUICK_MS);
  timers.advance(LOOK_FOR_MS);
  assert.equal(wakes, quick + (LOOK_FOR_MS - QUICK_FOR_MS) / SLOW_MS);
  assert.equal(timers.pending(), 0);
});

test('a process gone before its watch counts as exited; close stops everything', () => {
  const timers = fakeTimers();
  const watcher = fakeWatcher();
  const wakes: string[] = [];
  const signal = new OvnkubeExitSignal((why) => wakes.push(why), quiet, watcher, timers);
  watcher.gone.add(7);
  signal.follow(7);
  assert.deepEqual(wakes, ['ovnkube-node exited']);
  signal.close();
  timers.advance(LOOK_FOR_MS);
  assert.equal(wakes.length, 1);
  assert.equal(timers.pending(), 0);
});

test('a watcher that cannot work (an old kernel) is said once and leaves the periodic look', () => {
  const warned: unknown[] = [];
  const broken: ExitWatcher = {
    watch: () => {
      throw Object.assign(new Error('pidfd_open ENOSYS'), { code: 'ENOSYS' });
    },
  };
  const signal = new OvnkubeExitSignal(
    () => assert.fail('no wake-up'),
    { warn: (o: unknown) => warned.push(o), debug: () => undefined } as never,
    broken,
    fakeTimers(),
  );
  signal.follow(1);
  signal.follow(2);
  assert.equal(warned.length, 1);
});

test('a pass that still sees the exited ovnkube-node neither ends the look for its successor nor watches it again', () => {
  const timers = fakeTimers();
  const watcher = fakeWatcher();
  const wakes: string[] = [];
  const signal = new OvnkubeExitSignal((why) => wakes.push(why), quiet, watcher, timers);
  signal.follow(100);
  watcher.exit(100);
  signal.follow(null);
  signal.follow(100); // /proc still lists it
  timers.advance(5 * QUICK_MS);
  assert.deepEqual(watcher.watched, [100]);
  assert.deepEqual(wakes, [
    'ovnkube-node exited',
    ...Array<string>(5).fill('looking for the successor of ovnkube-node'),
  ]);
  signal.close();
});

test('a pidfd refused by a seccomp profile (EPERM) is said once and leaves the periodic look for good', () => {
  const warned: unknown[] = [];
  let tries = 0;
  const refused: ExitWatcher = {
    watch: () => {
      tries++;
      throw Object.assign(new Error('pidfd_open EPERM'), { code: 'EPERM' });
    },
  };
  const signal = new OvnkubeExitSignal(
    () => assert.fail('no wake-up'),
    { warn: (o: unknown) => warned.push(o), debug: () => undefined } as never,
    refused,
    fakeTimers(),
  );
  signal.follow(1);
  signal.follow(2);
  assert.deepEqual([tries, warned.length], [1, 1]);
});

test('a passing failure to watch (EMFILE) is tried again at the next pass, for the same process too, and warned once', () => {
  const warned: unknown[] = [];
  const watcher = fakeWatcher();
  let failures = 2;
  const flaky: ExitWatcher = {
    watch: (pid, onExit) => {
      if (failures-- > 0) throw Object.assign(new Error('pidfd_open EMFILE'), { code: 'EMFILE' });
      return watcher.watch(pid, onExit);
    },
  };
  const wakes: string[] = [];
  const signal = new OvnkubeExitSignal(
    (why) => wakes.push(why),
    { warn: (o: unknown) => warned.push(o), debug: () => undefined } as never,
    flaky,
    fakeTimers(),
  );
  signal.follow(100);
  signal.follow(100);
  assert.deepEqual(watcher.watched, []);
  signal.follow(100);
  assert.deepEqual(watcher.watched, [100], 'watched once the failure passed');
  assert.equal(warned.length, 1);
  watcher.exit(100);
  assert.deepEqual(wakes, ['ovnkube-node exited']);
  signal.close();
});

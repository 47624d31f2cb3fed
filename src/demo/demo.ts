// `npm run demo` (as root): the seed's node in a throwaway network namespace, the agent run against
// a mode file saying `local`, the route before and after, the status fetched with curl and by
// `status --brief`, and everything torn down (test/demo.test.ts runs it).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchStatus } from '../status/client.js';
import { FakeOvnkube } from './fake-ovnkube.js';
import { Netns, seedNode } from './netns.js';
import { terminate } from './process.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const say = (text: string) => process.stdout.write(`\n=== ${text}\n`);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DEMO_FLAGS = '--service-cidr 10.96.0.0/16 --mtu 1400 --restart signal --settle 3';

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    process.stderr.write('npm run demo needs root: it makes a network namespace (try: sudo npm run demo)\n');
    process.exit(1);
  }
  let dir: string | undefined;
  let ns: Netns | undefined;
  let ovnkube: FakeOvnkube | undefined;
  let agent: ReturnType<typeof spawn> | undefined;
  let tornDown: Promise<void> | undefined;
  const teardown = () =>
    (tornDown ??= (async () => {
      await terminate(agent);
      ovnkube?.stop();
      ns?.destroy();
      if (dir) rmSync(dir, { recursive: true, force: true });
      say(`torn down: namespace ${ns?.name ?? '(none made)'} and ${dir ?? '(none made)'} are gone`);
    })());
  // Ctrl-C, or a SIGTERM (a test's timeout), from the first step on: the same teardown, then
  // the first signal's exit code. Later signals wait for it (npm under bash passes a
  // terminal's Ctrl-C on: node gets it twice).
  let stoppedBy: NodeJS.Signals | undefined;
  for (const [signal, code] of Object.entries({ SIGINT: 130, SIGTERM: 143 }) as Array<[NodeJS.Signals, number]>) {
    process.on(signal, () => {
      if (stoppedBy) return say(`${signal}: already tearing down`);
      stoppedBy = signal;
      say(`${signal}: tearing down`);
      void teardown().finally(() => process.exit(code));
    });
  }
  let failure: unknown;
  try {
    dir = mkdtempSync(path.join(tmpdir(), 'gwmode-demo-'));
    ns = new Netns();
    seedNode(ns, true);
    ovnkube = new FakeOvnkube(ns, dir);
    const socket = path.join(dir, 'run', 'agent.sock');
    const modeFile = path.join(dir, 'gateway-mode');
    say(
      `a node in namespace ${ns.name} (scratch directory ${dir}): shared-mode route left behind, ovnkube-node now in local mode; ip route show, before`,
    );
    // The demo plays kubelet: when the agent stops ovnkube-node, a new one starts.
    ovnkube.start('local', { respawn: true });
    writeFileSync(modeFile, 'local\n');
    // The fields the agent reads of an RHCOS 4.9 host's os-release (test/helpers/os-release.ts
    // writes the whole file): the agent acts only on a release it knows.
    const osRelease = path.join(dir, 'os-release');
    writeFileSync(osRelease, 'ID="rhcos"\nVERSION_ID="4.9"\nOPENSHIFT_VERSION="4.9"\n');
    process.stdout.write(ns.ip('route show'));

    const flags = ['--mode-file', modeFile, '--os-release', osRelease, ...DEMO_FLAGS.split(' ')];
    say(`ovn-gwmode-agent run ${flags.join(' ')} (JSON logs)`);
    const args = [...flags, '--socket', socket, '--state-dir', path.join(dir, 'state')];
    agent = spawn('ip', ['netns', 'exec', ns.name, process.execPath, CLI, 'run', ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    let phase = '';
    for (let i = 0; i < 200 && phase !== 'Converged'; i++) {
      await pause(100);
      phase = (await fetchStatus(socket).catch(() => undefined))?.phase ?? '';
    }

    say('ip route show, after');
    process.stdout.write(ns.ip('route show'));

    say(`curl --unix-socket ${socket} http://localhost/status`);
    process.stdout.write(execFileSync('curl', ['-s', '--unix-socket', socket, 'http://localhost/status']));

    say(`ovn-gwmode-agent status --brief --socket ${socket}`);
    const brief = spawnSync(process.execPath, [CLI, 'status', '--brief', '--socket', socket], { encoding: 'utf8' });
    process.stdout.write(brief.stdout + brief.stderr);
    if (phase !== 'Converged') process.exitCode = 1;
  } catch (err) {
    failure = err;
  } finally {
    await teardown();
  }
  // A command killed by the same Ctrl-C fails the step it was in: the signal says why, and
  // its handler, run at the next turn of the event loop, exits with its code.
  await new Promise((r) => setImmediate(r));
  if (stoppedBy) return;
  if (failure) throw failure;
}

await main();

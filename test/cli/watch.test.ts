// `status --watch` as a person sees it: under a real pseudo-terminal (tmux), the
// screen read back with capture-pane while a migration happens; and in a pipe, one
// line per change.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CLI, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const ARGS = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tmuxSkipReason =
  spawnSync('sh', ['-c', 'command -v tmux']).status === 0
    ? undefined
    : 'tmux is not installed (apt-get install tmux; .ci/run does)';

/** A tmux server of our own (its own socket name), one session running `command`. */
class Terminal {
  readonly name = `gwmode-${randomBytes(4).toString('hex')}`;
  constructor(command: string) {
    const r = spawnSync(
      'tmux',
      ['-L', this.name, '-f', '/dev/null', 'new-session', '-d', '-x', '160', '-y', '50', '-s', 'watch', command],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
  }
  screen(): string {
    return spawnSync('tmux', ['-L', this.name, 'capture-pane', '-p', '-J', '-t', 'watch'], { encoding: 'utf8' }).stdout;
  }
  /** Reads the screen until pred holds (bounded: a safety net, not a speed assertion). */
  async until(pred: (screen: string) => boolean, what: string): Promise<string> {
    let last = '';
    for (let i = 0; i < 300; i++) {
      last = this.screen();
      if (pred(last)) return last;
      await pause(100);
    }
    throw new Error(`the terminal never showed ${what}; screen:\n${last}`);
  }
  close(): void {
    spawnSync('tmux', ['-L', this.name, 'kill-server']);
  }
}

test('status --watch follows a migration live: redrawn in place on a terminal, a line per change in a pipe', async (t) => {
  if (skipWithoutKernel(t)) return;
  if (tmuxSkipReason) {
    process.stderr.write(`SKIPPED (${tmuxSkipReason}): ${t.name}\n`);
    return t.skip(tmuxSkipReason);
  }
  await withAgent({ mode: 'shared', ovnkube: 'shared', args: ARGS }, async ({ scratch, ovnkube, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged' && s.desiredMode === 'shared', 'shared Converged');
    const watch = `${process.execPath} ${CLI} status --watch --socket ${scratch.socket}`;
    const term = new Terminal(`${watch}; echo "watch exited $?"; sleep 60`);
    const piped = spawn(process.execPath, [CLI, 'status', '--watch', '--socket', scratch.socket], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lines = '';
    piped.stdout.on('data', (d: Buffer) => (lines += d.toString()));
    const pipedExit = new Promise((resolve) => piped.on('exit', resolve));
    try {
      let screen = await term.until((s) => /^phase: +Converged/m.test(s), 'Converged');
      assert.match(screen, /^desired mode: +shared/m);
      assert.match(screen, /^pending restart: no$/m);
      // Both watchers are connected before anything changes.
      for (let i = 0; i < 100 && !/Converged desired=shared/.test(lines); i++) await pause(100);

      scratch.writeMode('local');
      screen = await term.until((s) => /^phase: +Waiting/m.test(s), 'Waiting');
      assert.match(screen, /^desired mode: +local/m);
      assert.match(screen, /desired mode shared -> local$/m, 'the event among the last events');
      ovnkube.start('local', { respawn: true });
      screen = await term.until(
        (s) => /^phase: +Converged/m.test(s) && /^desired mode: +local/m.test(s),
        'local Converged',
      );
      assert.match(screen, /^ {2}ok {2}10\.96\.0\.0\/16: via 10\.244\.1\.1 dev ovn-k8s-mp0$/m);
      assert.match(
        screen,
        /replace 10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0 \(done\)$/m,
      );
      assert.match(screen, /restart ovnkube-node \(signal, to local\): stopped pid \d+$/m);
      // Redrawn in place: one screen, not a scroll of them.
      assert.equal(screen.match(/^phase:/gm)?.length, 1);

      // The pipe got a line per change, no screen control.
      for (let i = 0; i < 100 && !/Converged desired=local/.test(lines); i++) await pause(100);
      const got = lines.trimEnd().split('\n');
      const statusLines = got.filter((l) => /^\S+Z (Converged|Waiting|Progressing|Degraded) desired=/.test(l));
      assert.match(statusLines[0]!, /^\S+Z Converged desired=shared /);
      assert.ok(
        got.some((l) => /^\S+Z Waiting desired=local /.test(l)),
        lines,
      );
      assert.ok(
        got.some((l) => / replace 10\.96\.0\.0\/16: .* \(done\)$/.test(l)),
        lines,
      );
      assert.match(got.at(-1)!, /^\S+Z Converged desired=local /);
      assert.ok(!lines.includes('\x1b'), 'no escape sequence');
      // A line per change: never the same line twice in a row while nothing changes.
      const bare = got.map((l) => l.replace(/^\S+Z /, ''));
      assert.ok(
        bare.every((l, i) => i === 0 || l !== bare[i - 1]),
        lines,
      );

      // The agent going away ends the watch, exit 2.
      await agent.stop();
      assert.equal(await within(pipedExit, 10_000, 'the piped watch ends with the agent'), 2);
      await term.until((s) => /watch exited 2/.test(s), 'the terminal watch ending');
    } finally {
      piped.kill('SIGTERM');
      term.close();
    }
  });
});

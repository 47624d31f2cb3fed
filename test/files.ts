// The test files `npm test` runs: every one, or under GWMODE_SUITE_REPEAT=1 (.ci/run's second
// runtime, Node.js 24, the image's and the Debian package's) those of what a runtime changes, the
// others named on stderr as skipped. What a runtime changes is Node's side of the agent: its
// process and the CLI's (start-up, signals, timers, the loop, capabilities, the terminal), the
// addon (compiled against the runtime's headers: netlink, the lock, sd_notify), http and net (the
// status socket, its abuse, the probes, metrics), grpc-js (its errors, a real containerd) and
// chokidar's file watching. Everything else is the agent's own JavaScript over those (the rules,
// the commands, the journal, chaos, the version matrix, the real OVN, a flood of the same requests)
// or brings its own Node.js (the image, the Debian package, whose test runs its unit under
// systemd), and ran under the first runtime of the same CI run.
//   node dist/test/files.js
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DIST = fileURLToPath(new URL('..', import.meta.url));
const RUNTIME = [
  'test/agent/agent.test.js',
  'test/agent/capabilities.test.js',
  'test/agent/rollout-wakeup.test.js',
  'test/agent/sigterm.test.js',
  'test/cli/lock.test.js',
  'test/cli/probes.test.js',
  'test/cli/watch.test.js',
  'test/dataplane/differential.test.js',
  'test/dataplane/kernel.test.js',
  'test/dataplane/native.test.js',
  'test/demo.test.js',
  'test/events/agent-events.test.js',
  'test/metrics/metrics.test.js',
  'test/mode/source.test.js',
  'test/restart/agent-restart.test.js',
  'test/restart/cri-faults.test.js',
  'test/restart/signal.test.js',
  'test/status/abuse.test.js',
  'test/status/client.test.js',
  'test/status/server.test.js',
  'test/systemd/notify.test.js',
  'test/systemd/supervisor.test.js',
];
const REPEAT_SKIP_REASON = 'runtime-independent: ran under the first runtime of this CI run';

const all = readdirSync(path.join(DIST, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => `test/${f}`)
  .sort();
const repeat = process.env.GWMODE_SUITE_REPEAT === '1';
for (const f of all.filter((f) => repeat && !RUNTIME.includes(f)))
  process.stderr.write(`SKIPPED (${REPEAT_SKIP_REASON}): ${f}\n`);
const missing = RUNTIME.filter((f) => !all.includes(f));
if (missing.length > 0) throw new Error(`test/files.ts names test files that do not exist: ${missing.join(', ')}`);
process.stdout.write(`${(repeat ? RUNTIME : all).map((f) => path.join('dist', f)).join('\n')}\n`);

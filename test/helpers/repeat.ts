// Tests of what does not depend on the Node.js that runs the suite run once per CI run. The
// image ships its own Node.js 24, the .deb and the npm tarball are built and installed the same
// way whatever runs the suite, and the version matrix and the real OVN drive the agent's logic on
// the kernel. .ci/run sets GWMODE_SUITE_REPEAT=1 for its second runtime, where these skip loudly,
// by name, keeping the whole run well under 20 minutes.
// The rule: a test skips on the repeat only if what it adds to the suite is the same on every
// runtime. Either nothing it exercises runs on the suite's runtime (the packages bring their own
// Node.js; the faithful ovnkube-node stand-in of test/matrix/standin.test.ts is a C program and a
// shell script, its tests start no agent), or what it adds is the agent's decisions over releases
// and layouts (the matrix, the real OVN: pure logic, whose every runtime-dependent path is run
// under the repeat by the other tests). What depends on the runtime, and so is never skipped: the
// agent and the CLI as processes (spawned with process.execPath: startup, signals, the loop), the
// native addon (compiled against that runtime's headers; netlink), Node's http/net/dgram internals (the status socket and its abuse, the probes,
// sd_notify, metrics), grpc-js (CRI, containerd, chaos), chokidar and fs watching, timers.
import type { TestContext } from 'node:test';

export const REPEAT_SKIP_REASON =
  'runtime-independent: ran under the first runtime of this CI run (GWMODE_SUITE_REPEAT=1)';

/** Skips the test loudly on the suite's repeat under a second runtime. Returns true when skipped. */
export function skipOnRepeat(t: TestContext): boolean {
  if (process.env.GWMODE_SUITE_REPEAT !== '1') return false;
  process.stderr.write(`SKIPPED (${REPEAT_SKIP_REASON}): ${t.name}\n`);
  t.skip(REPEAT_SKIP_REASON);
  return true;
}

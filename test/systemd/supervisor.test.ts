// The supervisor's stuck threshold (shared with /healthz) runs on the monotonic clock: a
// wall clock stepped forward by NTP during a pass is no stuck loop (that would withhold
// the watchdog ping and have systemd kill a healthy agent), one stepped back hides none.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { pino } from 'pino';
import type { StatusReport } from '../../src/status/report.js';
import { Supervisor, type Supervised } from '../../src/systemd/supervisor.js';

test('stuck means a pass running longer than the threshold on the monotonic clock, whatever the wall clock does', () => {
  const clock = {
    mono: 5_000_000,
    wallMs: 1_700_000_000_000,
    now() {
      return this.mono;
    },
    wall() {
      return this.wallMs;
    },
  };
  const agent: Supervised = {
    isReady: () => true,
    isBusy: () => true,
    lastProgressAt: () => 5_000_000,
    status: () => ({}) as StatusReport,
  };
  const supervisor = new Supervisor(
    { enabled: true, notify: () => undefined },
    pino({ level: 'silent' }),
    10_000_000,
    clock,
  );
  assert.equal(supervisor.stuckAfterMs(), 10_000);
  clock.wallMs += 86_400_000;
  clock.mono += 9_000;
  assert.equal(supervisor.isStuck(agent), false, 'a day of wall clock in 9 s of pass');
  clock.wallMs -= 30 * 86_400_000;
  clock.mono += 2_000;
  assert.equal(supervisor.isStuck(agent), true, '11 s of pass, the wall clock a month back');
});

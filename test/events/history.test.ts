// The event history as a ring: bounded, in order, each event also one log line with
// the same fields; phase events only when the phase or its reason codes change.
import { strict as assert } from 'node:assert';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { renderEvent } from '../../src/cli/ask.js';
import { EventHistory, HISTORY_SIZE } from '../../src/events/history.js';
import type { StatusReport } from '../../src/status/report.js';

function rig() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const clock = {
    t: Date.parse('2026-12-02T12:00:00.000Z'),
    now: () => 0,
    wall() {
      return this.t;
    },
  };
  const history = new EventHistory(clock, pino({ level: 'info' }, sink));
  return { history, clock, lines };
}

const status = (
  phase: StatusReport['phase'],
  reasonCodes: StatusReport['reasonCodes'],
  reasons = reasonCodes.map(String),
): StatusReport => ({ phase, reasonCodes, reasons }) as StatusReport;

test(`keeps the last ${HISTORY_SIZE} events, oldest first, numbered without gaps`, () => {
  const { history } = rig();
  for (let i = 0; i < HISTORY_SIZE + 44; i++) history.modeFileError(`/etc/mode`);
  const events = history.list();
  assert.equal(events.length, HISTORY_SIZE);
  assert.equal(events[0]!.seq, 45);
  assert.equal(events.at(-1)!.seq, HISTORY_SIZE + 44);
  assert.ok(events.every((e, i) => i === 0 || e.seq === events[i - 1]!.seq + 1));
});

test('a phase event when the phase or its reason codes change, not when only a message does', () => {
  const { history } = rig();
  history.onStatus(status('Waiting', ['OvnkubeOtherMode']));
  history.onStatus(status('Waiting', ['OvnkubeOtherMode'], ['said otherwise']));
  history.onStatus(status('Degraded', ['ReconcileFailed'], ['attempt 1']));
  history.onStatus(status('Degraded', ['ReconcileFailed'], ['attempt 2']));
  history.onStatus(status('Converged', ['InSync']));
  assert.deepEqual(
    history.list().map((e) => [e.from, e.to, e.reasons]),
    [
      [null, 'Waiting', ['OvnkubeOtherMode']],
      ['Waiting', 'Degraded', ['ReconcileFailed']],
      ['Degraded', 'Converged', ['InSync']],
    ],
  );
});

test('each event is also one structured log line with the same fields, at the clock time', () => {
  const { history, clock, lines } = rig();
  history.replace({
    cidr: '10.96.0.0/16',
    mode: 'local',
    before: 'via 172.18.0.1 dev br-ex mtu 1400',
    after: 'via 10.244.1.1 dev ovn-k8s-mp0',
    result: 'done',
    code: null,
  });
  clock.t += 1500;
  history.restart({
    strategy: 'cri',
    mode: 'local',
    result: 'failed',
    target: 'container 0123',
    code: 'ERR_GWMODE_CRI',
  });
  const events = history.list();
  assert.equal(events[1]!.at, '2026-12-02T12:00:01.500Z');
  assert.equal(lines.length, 2);
  assert.deepEqual(
    lines.map((l) => l.event),
    events,
  );
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['event replace', 'event restart'],
  );
  assert.deepEqual(history.list(Date.parse('2026-12-02T12:00:01Z')), [events[1]]);
});

test('a failing pass is one event while it fails the same way; retries are not new events', () => {
  const { history } = rig();
  history.reconciled(0, 1, 'ENOENT');
  history.reconciled(0, 1, 'ENOENT');
  history.reconciled(0, 1, 'EPERM');
  history.reconciled(0, 1, null);
  history.reconciled(0, 1, 'EPERM');
  assert.deepEqual(
    history.list().map((e) => e.code),
    ['ENOENT', 'EPERM', 'EPERM'],
  );
});

test('events render as one line each, the time first', () => {
  const { history } = rig();
  history.desiredModeChanged(null, 'local');
  history.replace({
    cidr: '10.96.0.0/16',
    mode: 'local',
    before: 'via 172.18.0.1 dev br-ex mtu 1400',
    after: 'via 10.244.1.1 dev ovn-k8s-mp0',
    result: 'done',
    code: null,
  });
  history.restart({ strategy: 'signal', mode: 'local', result: 'stopped', target: 'pid 42', code: null });
  history.onStatus(status('Converged', ['InSync']));
  assert.deepEqual(history.list().map(renderEvent), [
    '2026-12-02T12:00:00.000Z desired mode none -> local',
    '2026-12-02T12:00:00.000Z replace 10.96.0.0/16: via 172.18.0.1 dev br-ex mtu 1400 -> via 10.244.1.1 dev ovn-k8s-mp0 (done)',
    '2026-12-02T12:00:00.000Z restart ovnkube-node (signal, to local): stopped pid 42',
    '2026-12-02T12:00:00.000Z phase - -> Converged [InSync]',
  ]);
});

test('losses of notifications in a row are one event with a count: a storm does not flush the story', () => {
  const { history } = rig();
  history.desiredModeChanged(null, 'local');
  for (let i = 0; i < 1000; i++) history.notificationsLost();
  const events = history.list();
  assert.deepEqual(
    events.map((e) => e.kind),
    ['desired-mode', 'notifications-lost'],
  );
  assert.equal(events[1]?.count, 1000);
});

// The real agent's event history during a migration: GET /v1/events on the socket,
// the `events` command, and the log lines carrying the same events.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { AgentEvent } from '../../src/events/history.js';
import { cli, curl, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';

test('a migration is told by GET /v1/events and `events`: the desired mode, the replace before and after, the restart, the phases', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const r = curl(agent.scratch.socket, '/v1/events');
    assert.equal(r.code, 200);
    const events = (r.body as { events: AgentEvent[] }).events;
    const kinds = events.map(
      (e) => `${e.kind}${e.result ? `:${e.result}` : ''}${e.kind === 'phase' ? `:${e.to}` : ''}`,
    );
    // A pass may come before the mode file is read (a file written just before a start is read
    // once left alone for 200 ms; the helper backdates it, which this does not count on): phases apart.
    assert.deepEqual(kinds.filter((k) => !k.startsWith('phase:')).slice(0, 3), [
      'desired-mode',
      'replace:done',
      'restart:stopped',
    ]);
    // The phase may show Progressing before or after the new ovnkube-node is seen.
    assert.ok(kinds.indexOf('restart:completed') > kinds.indexOf('restart:stopped'), kinds.join(' '));
    assert.equal(kinds.at(-1), 'phase:Converged');
    const replace = events.find((e) => e.kind === 'replace')!;
    assert.equal(replace.before, 'via 172.18.0.1 dev br-ex mtu 1400');
    assert.equal(replace.after, 'via 10.244.1.1 dev ovn-k8s-mp0');
    assert.equal(replace.cidr, '10.96.0.0/16');

    // The log carries the same events, field for field.
    // (the last lines may still be on their way through the pipe: bounded wait).
    const logged = () =>
      agent
        .logs()
        .filter((l) => l.component === 'events')
        .map((l) => l.event);
    for (let i = 0; i < 100 && logged().length < events.length; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(logged().slice(0, events.length), events);

    const text = cli(ns, ['events', '--socket', agent.scratch.socket]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^\S+Z replace 10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0 \(done\)$/m,
    );
    assert.match(text.stdout.trimEnd().split('\n').at(-1)!, /phase \S+ -> Converged \[InSync\]$/);
    const json = cli(ns, ['events', '--json', '--since', '1h', '--socket', agent.scratch.socket]);
    assert.deepEqual(JSON.parse(json.stdout), events);
    assert.deepEqual(
      JSON.parse(cli(ns, ['events', '--json', '--since', '0s', '--socket', agent.scratch.socket]).stdout),
      [],
      'nothing happened since now',
    );
    const bad = cli(ns, ['events', '--since', 'lately', '--socket', agent.scratch.socket]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^ovn-gwmode-agent: --since: "lately" is not a duration/);
    assert.equal(curl(agent.scratch.socket, '/v1/events?since=yesterday').code, 400);
  });
});

// The dataplane under injected faults, on the fake kernel at the transport
// (test/helpers/fake-transport.ts): every fault is run through the same migration
// pass, retried as the agent retries; each must show up as its own error code (or
// not at all, where the dataplane absorbs it), be consumed exactly as armed, and
// leave the dataplane answering exactly what the kernel holds.
import { strict as assert } from 'node:assert';
import { test, type TestContext } from 'node:test';
import { MAX_DUMP_ATTEMPTS } from '../../src/dataplane/channel.js';
import { KernelDataplane } from '../../src/dataplane/kernel.js';
import type { DataplaneEvent } from '../../src/dataplane/types.js';
import { parseCidr } from '../../src/net/cidr.js';
import type { Route, RouteReplace, Watched } from '../../src/core/route.js';
import { FakeKernel, route, type Fault, type FakeRoute } from '../helpers/fake-transport.js';

const TIMEOUT_MS = 1000;
const WATCHED: Watched = {
  prefixes: ['10.96.0.0/16', '0.0.0.0/0', 'fd00:10:96::/112', '::/0'].map(parseCidr),
  links: ['br-ex', 'ovn-k8s-mp0'],
};

function toLocalMode(prefix: string, gateway: string, priority: number): RouteReplace {
  return {
    key: { prefix, family: prefix.includes(':') ? 6 : 4, table: 254, priority },
    protocol: 3,
    scope: 0,
    type: 1,
    to: { dev: 'ovn-k8s-mp0', oif: 4, gateway, mtu: null },
  };
}

/** The fake kernel's routes as routes() reports them. */
function expected(kernel: FakeKernel, prefix: string): Route[] {
  const names = new Map(kernel.links.map((l) => [l.index, l.name]));
  return kernel.mainRoutes(prefix).map((r: FakeRoute) => ({
    key: { prefix, family: prefix.includes(':') ? 6 : 4, table: r.table, priority: r.priority },
    nextHop: { dev: r.oif === null ? null : (names.get(r.oif) ?? null), oif: r.oif, gateway: r.gateway, mtu: r.mtu },
    protocol: r.protocol,
    scope: r.scope,
    type: r.type,
    tos: r.tos,
    multipath: false,
    unmodelled: [],
  }));
}

async function assertAnswersKernel(dp: KernelDataplane, kernel: FakeKernel): Promise<void> {
  const links = await dp.links(['br-ex', 'ovn-k8s-mp0']);
  const routes = await dp.routes(WATCHED.prefixes, links);
  for (const p of WATCHED.prefixes) assert.deepEqual(routes.get(p.text), expected(kernel, p.text), p.text);
}

/** One pass of the agent: observe, replace both service routes, observe again to verify. */
async function migrationPass(dp: KernelDataplane): Promise<void> {
  const links = await dp.links(['br-ex', 'ovn-k8s-mp0']);
  await dp.addresses(links);
  await dp.routes(WATCHED.prefixes, links);
  await dp.replaceRoute(toLocalMode('10.96.0.0/16', '10.244.1.1', 0));
  await dp.replaceRoute(toLocalMode('fd00:10:96::/112', 'fd00:10:244:1::1', 1024));
  const after = await dp.routes(WATCHED.prefixes, links);
  assert.equal(after.get('10.96.0.0/16')?.[0]?.nextHop.dev, 'ovn-k8s-mp0');
  assert.equal(after.get('fd00:10:96::/112')?.[0]?.nextHop.dev, 'ovn-k8s-mp0');
}

interface Scenario {
  fault: Fault;
  times: number;
  /** The code of the first pass's error; undefined when the dataplane absorbs the fault. */
  error: string | undefined;
  /** A `lost` event with this code must have been delivered. */
  lost?: string;
  /** Drives mock timers for a request that is never answered. */
  timers?: boolean;
}

const scenarios: Scenario[] = [
  { fault: 'dump-interrupted', times: MAX_DUMP_ATTEMPTS - 1, error: undefined },
  { fault: 'dump-interrupted', times: MAX_DUMP_ATTEMPTS, error: 'EINTR' },
  { fault: 'route-dump-einval', times: 1, error: 'EINVAL' },
  { fault: 'replace-enetunreach', times: 1, error: 'ENETUNREACH' },
  { fault: 'no-answer', times: 1, error: 'ERR_GWMODE_NETLINK_TIMEOUT', timers: true },
  { fault: 'stale-reply', times: 1, error: undefined },
  { fault: 'truncated-reply', times: 1, error: 'ERR_GWMODE_NETLINK_DECODE' },
  { fault: 'truncated-notification', times: 1, error: undefined, lost: 'ERR_GWMODE_NETLINK_DECODE' },
  { fault: 'enobufs', times: 1, error: undefined, lost: 'ENOBUFS' },
  { fault: 'request-enobufs', times: 1, error: 'ENOBUFS' },
];

/** Everything here runs on the fake kernel in memory; a hang is a failure, not a wait. */
const LIMIT = { timeout: 30_000 };

/** Runs the pass; with mock timers, moves the clock past the request timeout when the kernel drops a request. */
async function run(t: TestContext, kernel: FakeKernel, scenario: Scenario, pass: () => Promise<void>): Promise<void> {
  if (!scenario.timers) return pass();
  const dropped = kernel.unanswered();
  const done = pass();
  await Promise.race([dropped, done.catch(() => undefined)]);
  t.mock.timers.tick(TIMEOUT_MS);
  return done;
}

for (const scenario of scenarios) {
  test(
    `under fault ${scenario.fault} x${scenario.times}: the pass ${scenario.error ? `fails once with ${scenario.error}, then ` : ''}converges, and the fault was consumed`,
    LIMIT,
    async (t) => {
      if (scenario.timers) t.mock.timers.enable({ apis: ['setTimeout'] });
      const kernel = new FakeKernel();
      const dp = new KernelDataplane({ transport: kernel, requestTimeoutMs: TIMEOUT_MS });
      const events: DataplaneEvent[] = [];
      const sub = dp.subscribe(WATCHED, (e) => events.push(e));
      try {
        kernel.inject(scenario.fault, scenario.times);
        const errors: Array<{ code?: string }> = [];
        for (let attempt = 0; attempt < 3; attempt++) {
          try {
            await run(t, kernel, scenario, () => migrationPass(dp));
            break;
          } catch (err) {
            errors.push(err as { code?: string });
          }
        }
        assert.deepEqual(
          errors.map((e) => e.code),
          scenario.error ? [scenario.error] : [],
        );
        // Notifications are read on a later turn of the loop (as libuv polls); a pass need not yield to one.
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(kernel.consumed(scenario.fault), scenario.times);
        kernel.assertAllConsumed();
        if (scenario.lost)
          assert.ok(events.some((e) => e.kind === 'lost' && (e.error as { code?: string }).code === scenario.lost));
        assert.equal(kernel.mainRoutes('10.96.0.0/16')[0]?.gateway, '10.244.1.1');
        await assertAnswersKernel(dp, kernel);
      } finally {
        sub.close();
        dp.close();
      }
    },
  );
}

test('ENETUNREACH on a replace carries the kernel text and changes nothing', LIMIT, async () => {
  const kernel = new FakeKernel();
  const dp = new KernelDataplane({ transport: kernel });
  try {
    kernel.inject('replace-enetunreach');
    await assert.rejects(
      dp.replaceRoute(toLocalMode('10.96.0.0/16', '192.0.2.1', 0)),
      (err: Error & { code?: string; extAck?: string }) => {
        assert.equal(err.code, 'ENETUNREACH');
        assert.equal(err.extAck, 'Nexthop has invalid gateway');
        return true;
      },
    );
    assert.equal(kernel.mainRoutes('10.96.0.0/16')[0]?.gateway, '172.18.0.1');
    kernel.assertAllConsumed();
  } finally {
    dp.close();
  }
});

test('a dump the kernel ends with an error reports its ext-ack text', LIMIT, async () => {
  const kernel = new FakeKernel();
  const dp = new KernelDataplane({ transport: kernel });
  try {
    kernel.inject('route-dump-einval');
    await assert.rejects(
      dp.routes([parseCidr('10.96.0.0/16')], kernel.links),
      (err: Error & { code?: string; extAck?: string }) => {
        assert.equal(err.code, 'EINVAL');
        assert.equal(err.extAck, 'Invalid values in header for FIB dump request');
        return true;
      },
    );
    kernel.assertAllConsumed();
  } finally {
    dp.close();
  }
});

test(
  'a kernel without NETLINK_GET_STRICT_CHK (ENOPROTOOPT, before Linux 4.20) dumps every table: only main-table routes are answered',
  LIMIT,
  async () => {
    const kernel = new FakeKernel();
    kernel.routes.push(
      route('10.96.0.0/16', '10.244.1.1', 4, null, { table: 100 }),
      route('fd00:10:96::/112', 'fd00:10:244:1::1', 4, null, { table: 1000, priority: 1024 }),
    );
    kernel.inject('no-strict-check');
    const dp = new KernelDataplane({ transport: kernel });
    try {
      await assertAnswersKernel(dp, kernel);
      kernel.assertAllConsumed();
    } finally {
      dp.close();
    }
  },
);

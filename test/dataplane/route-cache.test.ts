// The route cache's rules (src/dataplane/route-cache.ts), one per row: a notification
// applied to what a dump showed, including the replays of changes the dump already
// reflects, either lands on the kernel's state or asks for a re-dump.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  AF_INET,
  AF_INET6,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  type DecodedRoute,
} from '../../src/dataplane/codec.js';
import { RouteCache } from '../../src/dataplane/route-cache.js';

const P = '10.96.0.0/16';

function r(gateway: string, priority = 0, extra: Partial<DecodedRoute> = {}): DecodedRoute {
  return {
    family: AF_INET,
    dstLen: 16,
    dst: Buffer.from([10, 96, 0, 0]),
    table: 254,
    tos: 0,
    protocol: 3,
    scope: 0,
    type: 1,
    priority,
    gateway: Buffer.from(gateway.split('.').map(Number)),
    oif: 2,
    mtu: undefined,
    nhid: undefined,
    nexthops: undefined,
    unmodelled: [],
    ...extra,
  };
}

type Step = ['new' | 'del', number, DecodedRoute];

const ADD = NLM_F_CREATE | NLM_F_EXCL;
/** IPv4 and IPv6 routes over two links at once (RTA_MULTIPATH). */
const multipath4 = r('0.0.0.0', 0, {
  gateway: undefined,
  oif: undefined,
  nexthops: [
    { oif: 2, gateway: undefined },
    { oif: 4, gateway: undefined },
  ],
});
const v6 = (extra: Partial<DecodedRoute>) => r('0.0.0.0', 1024, { family: AF_INET6, gateway: undefined, ...extra });
const multipath6 = v6({
  oif: undefined,
  nexthops: [
    { oif: 2, gateway: undefined },
    { oif: 4, gateway: undefined },
  ],
});
const multipath6Reordered = v6({
  oif: undefined,
  nexthops: [
    { oif: 4, gateway: undefined },
    { oif: 2, gateway: undefined },
  ],
});

const rows: Array<{ name: string; dumped: DecodedRoute[]; steps: Step[]; expect: DecodedRoute[] | 'redump' }> = [
  {
    name: 'a replace swaps the route of that metric',
    dumped: [r('172.18.0.1')],
    steps: [['new', NLM_F_REPLACE, r('10.244.1.1')]],
    expect: [r('10.244.1.1')],
  },
  {
    name: 'a replace of an absent key adds it',
    dumped: [],
    steps: [['new', NLM_F_REPLACE, r('10.244.1.1')]],
    expect: [r('10.244.1.1')],
  },
  {
    name: 'an add of another metric adds a second route',
    dumped: [r('172.18.0.1')],
    steps: [['new', ADD, r('10.244.1.1', 100)]],
    expect: [r('172.18.0.1'), r('10.244.1.1', 100)],
  },
  {
    name: 'a delete removes the identical route only',
    dumped: [r('172.18.0.1'), r('10.244.1.1', 100)],
    steps: [['del', 0, r('10.244.1.1', 100)]],
    expect: [r('172.18.0.1')],
  },
  {
    name: 'replay: an add the dump already shows changes nothing',
    dumped: [r('172.18.0.1')],
    steps: [['new', ADD, r('172.18.0.1')]],
    expect: [r('172.18.0.1')],
  },
  {
    name: 'replay: a delete the dump already reflects changes nothing',
    dumped: [],
    steps: [['del', 0, r('172.18.0.1')]],
    expect: [],
  },
  {
    name: 'replay: add then replace, dump after both',
    dumped: [r('10.244.1.1')],
    steps: [
      ['new', ADD, r('172.18.0.1')],
      ['new', NLM_F_REPLACE, r('10.244.1.1')],
    ],
    expect: 'redump',
  },
  {
    name: 'replay: replace then replace back, dump after both',
    dumped: [r('172.18.0.1')],
    steps: [
      ['new', NLM_F_REPLACE, r('10.244.1.1')],
      ['new', NLM_F_REPLACE, r('172.18.0.1')],
    ],
    expect: [r('172.18.0.1')],
  },
  {
    name: 'replay: add, delete, add of another metric, dump after all',
    dumped: [r('10.244.1.1', 7)],
    steps: [
      ['new', NLM_F_CREATE, r('172.18.0.1')],
      ['del', 0, r('172.18.0.1')],
      ['new', NLM_F_CREATE, r('10.244.1.1', 7)],
    ],
    expect: [r('10.244.1.1', 7)],
  },
  {
    name: 'an append beside a route of the same metric is ambiguous',
    dumped: [r('172.18.0.1')],
    steps: [['new', NLM_F_CREATE | NLM_F_APPEND, r('10.244.1.1')]],
    expect: 'redump',
  },
  {
    name: 'a delete whose route differs from the cached one of that metric is ambiguous',
    dumped: [r('172.18.0.1')],
    steps: [['del', 0, r('10.244.1.1')]],
    expect: 'redump',
  },
  {
    name: 'IPv6: an appended next hop is ambiguous (the notification may not be the whole route)',
    dumped: [v6({ oif: 2 })],
    steps: [['new', NLM_F_CREATE | NLM_F_APPEND, v6({ oif: 4 })]],
    expect: 'redump',
  },
  {
    name: 'IPv6: a deleted sibling of a multipath route is ambiguous (the notification names only that next hop)',
    dumped: [multipath6],
    steps: [['del', 0, v6({ oif: 4 })]],
    expect: 'redump',
  },
  {
    name: 'IPv6: a multipath route added whole is applied, its next hops compared as a set',
    dumped: [],
    steps: [
      ['new', ADD, multipath6],
      ['new', ADD, multipath6Reordered],
    ],
    expect: [multipath6],
  },
  {
    name: 'IPv4 multipath routes are notified whole and replaced like any other',
    dumped: [r('172.18.0.1')],
    steps: [['new', NLM_F_REPLACE, multipath4]],
    expect: [multipath4],
  },
];

for (const row of rows) {
  test(`route cache: ${row.name}`, () => {
    const cache = new RouteCache([P]);
    cache.reset(new Map([[P, row.dumped]]));
    const applied = row.steps.every(([op, flags, route]) => cache.apply(P, op, flags, route));
    if (row.expect === 'redump') assert.equal(applied, false);
    else {
      assert.equal(applied, true);
      assert.deepEqual(cache.routes(P), row.expect);
    }
  });
}

test('route cache: the prefixes that depend on a link or on nexthop objects', () => {
  const cache = new RouteCache([P, '0.0.0.0/0']);
  cache.reset(
    new Map([
      [P, [r('10.244.1.1', 0, { oif: 4 })]],
      [
        '0.0.0.0/0',
        [
          {
            ...multipath4,
            nhid: 7,
            nexthops: [
              { oif: 2, gateway: undefined },
              { oif: 5, gateway: undefined },
            ],
          },
        ],
      ],
    ]),
  );
  assert.deepEqual(cache.prefixesUsingLink(4), [P]);
  assert.deepEqual(cache.prefixesUsingLink(5), ['0.0.0.0/0']);
  assert.deepEqual(cache.prefixesUsingLink(9), []);
  assert.deepEqual(cache.prefixesUsingNexthopObjects(), ['0.0.0.0/0']);
});

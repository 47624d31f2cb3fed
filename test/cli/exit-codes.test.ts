// The CLI's one table from typed errors to exit codes (src/cli/exit-codes.ts), and the
// rule that commands return their result: only the CLI's entry ends the process.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { exitCodeOf, failure, failureOf, UsageError } from '../../src/cli/exit-codes.js';
import { LockError, LockHeldError, StateDirUnwritableError } from '../../src/cli/lock.js';
import { ConfigError } from '../../src/config/settings.js';
import { MetricsAddressError } from '../../src/metrics/server.js';
import { JournalError } from '../../src/restart/journal.js';
import { RollbackCidrsError } from '../../src/agent/engine.js';
import { AgentDeniedError, AgentUnreachableError } from '../../src/status/client.js';
import { SocketInUseError, SocketPermissionError } from '../../src/status/server.js';

test('each typed error the CLI can meet has its exit code: 1 when another agent has the node, 2 when a person must change something', () => {
  const cases: Array<[Error, 1 | 2]> = [
    [new LockHeldError('/s/lock', 42), 1],
    [new SocketInUseError('another agent is serving on /x.sock'), 1],
    [new UsageError('unknown flag --x'), 2],
    [new ConfigError('--mtu', '--mtu: 9 is too small'), 2],
    [new LockError('cannot lock /s/lock: permission denied'), 2],
    [new StateDirUnwritableError('the state directory /s is not writable'), 2],
    [new SocketPermissionError('cannot make /x.sock'), 2],
    [new MetricsAddressError('cannot listen on 1.2.3.4:9'), 2],
    [new AgentUnreachableError('cannot reach the agent'), 2],
    [new AgentDeniedError('permission denied on /x.sock'), 2],
    [new JournalError('journal /s/j is corrupt'), 2],
    [new RollbackCidrsError('rollback: the migration replaced 10.0.0.0/16'), 2],
  ];
  for (const [err, code] of cases) assert.equal(exitCodeOf(err), code, err.constructor.name);
});

test('a refusal is one line naming the problem; another agent holding the node says why this command stops, a usage error points at --help', () => {
  assert.deepEqual(failureOf(new LockHeldError('/s/lock', 42), { held: 'not starting a second agent' }), {
    code: 1,
    stderr: 'ovn-gwmode-agent: another agent (pid 42) holds /s/lock; not starting a second agent\n',
  });
  assert.deepEqual(
    failureOf(new StateDirUnwritableError('the state directory /s is not writable'), { what: 'apply', held: 'unused' }),
    {
      code: 2,
      stderr: 'ovn-gwmode-agent: apply: the state directory /s is not writable\n',
    },
  );
  assert.deepEqual(failureOf(new UsageError('unknown flag --x')), {
    code: 2,
    stderr: 'ovn-gwmode-agent: unknown flag --x; see --help\n',
  });
});

test('an error no table names is a bug: it is not turned into an exit code but thrown on', () => {
  const bug = new TypeError('x is undefined');
  assert.equal(exitCodeOf(bug), null);
  assert.equal(failureOf(bug), null);
  assert.throws(
    () => failure(bug),
    (e) => e === bug,
  );
  assert.equal(exitCodeOf(Object.assign(new Error('odd'), { code: 'ENOENT' })), null);
});

// process.exit in the entries only: test/architecture.test.ts holds it for every file under src/.

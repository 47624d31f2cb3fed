// Carrying replaces out, all or none: a replace that fails puts back, in reverse
// order, every route this pass already changed (each to exactly what it was), so the
// families never end up in different modes. Then the error goes up.
import type { Logger } from 'pino';
import { renderNextHop } from '../core/route.js';
import type { ReplaceAction } from '../core/types.js';
import { NetlinkError } from '../dataplane/errors.js';
import type { Dataplane } from '../dataplane/types.js';
import type { ReplaceResult } from '../core/recorder.js';

/**
 * Whether a failed replace may still have happened: the kernel applies a change
 * before it answers, so a lost answer (a timeout, ENOBUFS on the request socket, a
 * reply that could not be read) says nothing. Only the kernel's own refusal (an
 * errno in its acknowledgement) or a request never sent means "not done".
 */
export function outcomeUnknown(err: unknown): boolean {
  // Everything changed before it was put back: the failed replace alone decides.
  if (err instanceof RevertedError) return outcomeUnknown(err.cause);
  const e = err as { code?: string; syscall?: string };
  if (e.code === 'ERR_GWMODE_NETLINK_TIMEOUT' || e.code === 'ENOBUFS') return true;
  return !(err instanceof NetlinkError) || e.syscall === 'recvmsg';
}

/** After the replaces the kernel does not show what they set. */
export class VerifyError extends Error {
  readonly code = 'ERR_GWMODE_VERIFY';
}

export class PutBackError extends Error {
  readonly code = 'ERR_GWMODE_PUT_BACK';
}

/**
 * A replace failed and every route changed before it was put back: the pass changed
 * nothing, provided the failed replace did not happen (its error is the cause, its
 * code this one's).
 */
export class RevertedError extends Error {
  readonly code: string;
  constructor(
    message: string,
    override readonly cause: unknown,
  ) {
    super(message, { cause });
    this.code = (cause as { code?: string }).code ?? 'ERR_GWMODE_REPLACE';
  }
}

/**
 * A one-shot command (`apply`, `rollback`) was told to stop (SIGTERM, SIGINT) between
 * two replaces: the replace in flight was finished, none was started after it, and
 * nothing was put back (putting back is a change too). `done` were carried out, `left`
 * were not.
 */
export class InterruptedError extends Error {
  readonly code = 'ERR_GWMODE_INTERRUPTED';
  constructor(
    readonly signal: string,
    readonly done: ReplaceAction[],
    readonly left: ReplaceAction[],
  ) {
    super(`interrupted by ${signal} after ${done.length} of ${done.length + left.length} replace(s)`);
  }
}

/** Told of each replace carried out, refused, or put back (the agent's recorders). */
export type OnReplace = (a: ReplaceAction, result: ReplaceResult, err: unknown) => void;

/** The signal a one-shot command was told to stop by, or null: asked before each replace. */
export type StopRequested = () => string | null;

export async function applyReplaces(
  dataplane: Pick<Dataplane, 'replaceRoute'>,
  log: Logger,
  actions: ReplaceAction[],
  onReplace: OnReplace = () => undefined,
  stopRequested: StopRequested = () => null,
): Promise<void> {
  const done: ReplaceAction[] = [];
  for (const a of actions) {
    const signal = stopRequested();
    if (signal !== null) throw new InterruptedError(signal, done, actions.slice(done.length));
    try {
      // The action goes to the dataplane as it is: it names the key it replaces and the next hop it sets.
      await dataplane.replaceRoute(a);
    } catch (err) {
      const failed = `replace of ${a.key.prefix} failed: ${(err as Error).message}`;
      onReplace(a, 'failed', err);
      if (done.length === 0) throw err;
      const notPutBack: string[] = [];
      for (const d of [...done].reverse()) {
        try {
          await dataplane.replaceRoute({ ...d, to: d.from });
          onReplace({ ...d, from: d.to, to: d.from }, 'put_back', null);
          log.warn(
            { cidr: d.key.prefix, before: renderNextHop(d.to), after: renderNextHop(d.from) },
            `put back ${d.key.prefix}: ${renderNextHop(d.to)} -> ${renderNextHop(d.from)} (${failed})`,
          );
        } catch (undoErr) {
          notPutBack.push(`${d.key.prefix}: ${(undoErr as Error).message}`);
          onReplace({ ...d, from: d.to, to: d.from }, 'put_back_failed', undoErr);
        }
      }
      if (notPutBack.length > 0)
        throw new PutBackError(`${failed}; could not put back ${notPutBack.join('; ')}`, { cause: err });
      throw new RevertedError(`${failed}; put back ${done.map((d) => d.key.prefix).join(', ')}`, err);
    }
    done.push(a);
    onReplace(a, 'done', null);
    log.info(
      {
        cidr: a.key.prefix,
        before: renderNextHop(a.from),
        after: renderNextHop(a.to),
        table: a.key.table,
        priority: a.key.priority,
      },
      `replaced route ${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`,
    );
  }
}

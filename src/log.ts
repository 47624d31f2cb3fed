// JSON logs on stdout for the node's log collector; one child logger per component.
import type { DestinationStream, Logger } from 'pino';
import { requireModule } from './require.js';

const { pino } = requireModule('pino') as typeof import('pino');

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino(
    { level, base: { agent: 'ovn-gwmode-agent' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination as DestinationStream,
  );
}

// JSON logs on stdout for the node's log collector; one child logger per component.
import { pino, type DestinationStream, type Logger } from 'pino';

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino(
    { level, base: { agent: 'ovn-gwmode-agent' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination as DestinationStream,
  );
}

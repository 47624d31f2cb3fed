import { readFileSync } from 'node:fs';

/** The package version, read once from package.json (two levels above dist/src). */
const read = () => readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
export const VERSION: string = (JSON.parse(read()) as { version: string }).version;

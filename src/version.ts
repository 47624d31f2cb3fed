import { readFileSync } from 'node:fs';

/** The package version, read once from package.json (two levels above dist/src). */
export const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
})();
